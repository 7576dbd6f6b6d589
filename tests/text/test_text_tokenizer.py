"""Sentence end detection: the reference table plus rules for many languages and scripts."""

from __future__ import annotations

import pytest

from rxvoice.text import (
    DefaultSentenceTokenizer,
    IncrementalSentenceTokenizer,
    LanguageProfile,
    SentenceTokenizer,
    SimpleTextAggregator,
    language_profile,
    match_end_of_sentence,
    normalize_language,
    register_language,
)

# The reference examples (pipecat-behavior §7.1), as (text, expected offset).
REFERENCE = [
    ("This is a sentence.", 19),
    ("This is a sentence...", 21),
    ("This is a sentence. This is another one", 19),
    ("This is for Mr. and Mrs. Jones.", 31),
    ("U.S.A. and N.A.S.A.", 19),
    ("My email is foo.bar@pipecat.ai.", 31),
    ("The number pi is 3.14159.", 25),
    ("It still early, it's 3:00 a.m.", 30),
    ("This is not a sentence,", 0),
    ("Ok, Mr. Smith let's ", 0),
    ("America, or the U.S", 0),
    ("The number pi is 3.14159", 0),
    ("Heute ist Dienstag, der 3", 0),
    ("こんにちは。元", 6),
    ("你好吗？我", 4),
    ("हैलो।अ", 5),
    ("Hello world.", 12),
    ("First sentence. Second incomplete", 15),
]

# Our own cases, as (text, first sentence or "" for none, language).
CASES = [
    # titles and Latin shorthands
    ("Dr. Smith is here. Next", "Dr. Smith is here.", "en"),
    ("Talk to Mrs. Jones today. Ok", "Talk to Mrs. Jones today.", "en"),
    ("Prof. Xavier and Gen. Patton met. Then", "Prof. Xavier and Gen. Patton met.", "en"),
    ("Use a tool, e.g. Python. Later", "Use a tool, e.g. Python.", "en"),
    ("Use a tool, i.e. the hammer. Later", "Use a tool, i.e. the hammer.", "en"),
    ("Apples, pears, etc. are fruit. Yes", "Apples, pears, etc. are fruit.", "en"),
    ("I like apples, pears, etc. They are good.", "I like apples, pears, etc.", "en"),
    ("It was Roe v. Wade. Next", "It was Roe v. Wade.", "en"),
    ("Cats vs. Dogs is a film. Ok", "Cats vs. Dogs is a film.", "en"),
    ("Ask Capt. Hook and Sgt. Pepper. Ok", "Ask Capt. Hook and Sgt. Pepper.", "en"),
    ('He said "Dr. Smith is here." Then left.', 'He said "Dr. Smith is here."', "en"),
    ("(Dr. Who) is on. Ok", "(Dr. Who) is on.", "en"),
    # number abbreviations and months
    ("See No. 5 for details. Ok", "See No. 5 for details.", "en"),
    ("No. I will not. Ok", "No.", "en"),
    ("See Fig. 3 above. Ok", "See Fig. 3 above.", "en"),
    ("We met on Jan. 5 last year. Ok", "We met on Jan. 5 last year.", "en"),
    ("Read pp. 10 to 12. Ok", "Read pp. 10 to 12.", "en"),
    # initials and initialisms
    ("John F. Kennedy was president. Ok", "John F. Kennedy was president.", "en"),
    ("J. R. R. Tolkien wrote it. Ok", "J. R. R. Tolkien wrote it.", "en"),
    ("So do I. Then we left.", "So do I.", "en"),
    ("I live in the U.S. The weather is nice.", "I live in the U.S.", "en"),
    ("The U.S. and Canada agree. Ok", "The U.S. and Canada agree.", "en"),
    ("Meet at 3 p.m. tomorrow. Ok", "Meet at 3 p.m. tomorrow.", "en"),
    ("Meet at 3 p.m. Then eat.", "Meet at 3 p.m.", "en"),
    # numbers, prices, times
    ("It costs $29.95/month. Sure", "It costs $29.95/month.", "en"),
    ("The price is $5. Then tax.", "The price is $5.", "en"),
    ("Pi is 3.14 and e is 2.72. Right", "Pi is 3.14 and e is 2.72.", "en"),
    ("Version 1.2.3 is out. Get it", "Version 1.2.3 is out.", "en"),
    ("It is 3:00 a.m. and dark. Ok", "It is 3:00 a.m. and dark.", "en"),
    ("The total was 1,234.56 euros. Ok", "The total was 1,234.56 euros.", "en"),
    ("Growth was 5.5%. Then it fell.", "Growth was 5.5%.", "en"),
    ("The answer is 42. Next", "The answer is 42.", "en"),
    # URLs, e-mail addresses, file names
    ("Visit https://example.com/a.b?c=1. Then click.", "Visit https://example.com/a.b?c=1.", "en"),
    ("Go to www.pipecat.ai. It is great", "Go to www.pipecat.ai.", "en"),
    ("Mail me at jane.doe@example.co.uk. Thanks", "Mail me at jane.doe@example.co.uk.", "en"),
    ("The file is report.final.pdf. Open it", "The file is report.final.pdf.", "en"),
    ("Is it example.com? Yes", "Is it example.com?", "en"),
    # ellipses
    ("Wait... what happened? Ok", "Wait... what happened?", "en"),
    ("Wait... What happened?", "Wait...", "en"),
    ("Well… maybe not. Ok", "Well… maybe not.", "en"),
    ("... and then it ended. Ok", "... and then it ended.", "en"),
    ("Hmm.... Interesting. Ok", "Hmm....", "en"),
    ("...", "", "en"),
    ("?!", "", "en"),
    # quotes, brackets, markdown
    ('"Why?" she asked. Ok', '"Why?" she asked.', "en"),
    ('"Stop!" he cried. Ok', '"Stop!" he cried.', "en"),
    ("She said 'hello.' Then left.", "She said 'hello.'", "en"),
    ("(This is an aside.) Next one", "(This is an aside.)", "en"),
    ('He said "hi". Then left.', 'He said "hi".', "en"),
    ("This is **important.** Next", "This is **important.**", "en"),
    ("“Really?” she asked.", "“Really?” she asked.", "en"),
    ('She said "Hello."', 'She said "Hello."', "en"),
    # numbered lists
    ("1. First item. Second", "1. First item.", "en"),
    ("Steps: 1. Open it. Next", "Steps: 1. Open it.", "en"),
    ("Intro\n2. Second step is here. Ok", "Intro\n2. Second step is here.", "en"),
    ("a. Apples are red. Ok", "a. Apples are red.", "en"),
    ("iv. Fourth item here. Ok", "iv. Fourth item here.", "en"),
    ("I. Introduction to it. Ok", "I. Introduction to it.", "en"),
    # other terminators, whitespace, edge cases
    ("First part; second part", "", "en"),
    ("First part; Second part. Ok", "First part; Second part.", "en"),
    ("First part; second part;", "First part; second part;", "en"),
    ("x = 1; y = 2. Next", "x = 1; y = 2.", "en"),
    ("Really? Yes.", "Really?", "en"),
    ("Stop! Now.", "Stop!", "en"),
    ("What?! No way", "What?!", "en"),
    ("Hello world", "", "en"),
    ("", "", "en"),
    ("   ", "", "en"),
    ("Hello world.   ", "Hello world.", "en"),
    ("  Hello. World", "  Hello.", "en"),
    ("Hello.\n\nWorld", "Hello.", "en"),
    ("Done.Next", "", "en"),
    ("Hello Mr.", "Hello Mr.", "en"),
    ("Привет. Как дела?", "Привет.", "ru"),
    ("Τι κάνεις; Καλά", "Τι κάνεις;", "el"),
    ("Τι κάνεις\u037e Καλά", "Τι κάνεις\u037e", "en"),
    ("Ήρθε π.χ. ο Γιάννης. Ναι", "Ήρθε π.χ. ο Γιάννης.", "el"),
    # German
    ("Heute ist der 3. Oktober. Morgen", "Heute ist der 3. Oktober.", "de"),
    ("Das kostet z. B. zehn Euro. Gut", "Das kostet z. B. zehn Euro.", "de"),
    ("Das ist z.B. gut. Ja", "Das ist z.B. gut.", "de"),
    ("Hr. Müller kommt. Gut", "Hr. Müller kommt.", "de"),
    ("Das Ergebnis ist 42. Danach gehen wir.", "Das Ergebnis ist 42.", "de"),
    ("Am 3. Mai beginnt es. Ja", "Am 3. Mai beginnt es.", "de"),
    ("Siehe S. 5 im Buch. Ok", "Siehe S. 5 im Buch.", "de"),
    ("Er kam 3. Oktober an. Ja", "Er kam 3. Oktober an.", "de"),
    ("Wir sind im 21. Jahrhundert. Ja", "Wir sind im 21. Jahrhundert.", "de"),
    ("Es war 3. Ok", "", "de"),
    ("Heute ist der 3. Oktober. Morgen", "Heute ist der 3. Oktober.", "de_DE"),
    ("Heute ist der 3. Oktober. Morgen", "Heute ist der 3. Oktober.", "DE-at"),
    # French
    ("M. Dupont est là. Bien", "M. Dupont est là.", "fr"),
    ("Voir p. ex. la page. Oui", "Voir p. ex. la page.", "fr"),
    ("Bonjour ! Comment ça va ?", "Bonjour !", "fr"),
    ("« Oui. » Il est parti.", "« Oui. »", "fr"),
    ("Mgr. Dupont arrive. Oui", "Mgr. Dupont arrive.", "fr"),
    # Spanish
    ("¿Cómo estás? Bien, gracias.", "¿Cómo estás?", "es"),
    ("¡Hola! ¿Qué tal?", "¡Hola!", "es"),
    ("El Sr. García llegó. Bien", "El Sr. García llegó.", "es"),
    ("La Dra. López opera hoy. Sí", "La Dra. López opera hoy.", "es"),
    ("Vive en EE. UU. desde 2010. Sí", "Vive en EE. UU. desde 2010.", "es"),
    # Chinese, Japanese, Korean
    ("你好。我很好", "你好。", "zh"),
    ("他说：“你好。”然后走了。", "他说：“你好。”", "zh"),
    ("谢谢!再见", "谢谢!", "zh"),
    ("这是Python3.11版本。好", "这是Python3.11版本。", "zh"),
    ("今天很好", "", "zh"),
    ("第3．5章", "", "zh"),
    ("真的吗？！是的", "真的吗？！", "zh"),
    ("「はい。」と言った。次", "「はい。」と言った。", "ja"),
    ("ありがとう！またね", "ありがとう！", "ja"),
    ("안녕하세요. 반갑습니다.", "안녕하세요.", "ko"),
    # Indic, Arabic, Urdu
    ("नमस्ते। आप कैसे हैं?", "नमस्ते।", "hi"),
    ("यह ठीक है॥ अगला", "यह ठीक है॥", "hi"),
    ("मूल्य 3.50 है। ठीक", "मूल्य 3.50 है।", "hi"),
    ("مرحبا؟ كيف حالك", "مرحبا؟", "ar"),
    ("مرحبا. كيف حالك", "مرحبا.", "ar"),
    ("یہ اچھا ہے۔ اگلا", "یہ اچھا ہے۔", "ur"),
    # Armenian, Ethiopic, Myanmar, Khmer, Tibetan
    ("Բարեւ։ Ինչպե՞ս ես", "Բարեւ։", "hy"),
    ("Ինչպե՞ս ես", "", "hy"),
    ("Ինչու՞", "Ինչու՞", "hy"),
    ("ሰላም። እንዴት ነህ", "ሰላም።", "am"),
    ("ደህና ነህ፧ አዎ", "ደህና ነህ፧", "am"),
    ("မင်္ဂလာပါ။ နေကောင်းလား", "မင်္ဂလာပါ။", "my"),
    ("សួស្តី។ សុខសប្បាយទេ", "សួស្តី។", "km"),
    ("བཀྲ་ཤིས་བདེ་ལེགས། ཁྱེད་", "བཀྲ་ཤིས་བདེ་ལེགས།", "bo"),
    # Thai and Lao: no sentence mark of their own
    ("สวัสดีครับ วันนี้อากาศดี", "", "th"),
    ("สวัสดี! วันนี้อากาศดี", "สวัสดี!", "th"),
    ("ราคา 3.50 บาท", "", "th"),
    ("ราคา 3.50 บาท. ครับ", "ราคา 3.50 บาท.", "th"),
    ("ສະບາຍ໌ດີ ເຈົ້າ", "", "lo"),
]


def test_the_table_is_large_enough() -> None:
    """The brief asks for at least 80 tokenizer cases."""
    assert len(REFERENCE) + len(CASES) >= 80


@pytest.mark.parametrize(("text", "expected"), REFERENCE, ids=[t for t, _ in REFERENCE])
def test_reference_examples(text: str, expected: int) -> None:
    """Every example of the reference table gives the reference offset."""
    assert match_end_of_sentence(text) == expected


@pytest.mark.parametrize(
    ("text", "sentence", "language"), CASES, ids=[f"{lang}:{t}" for t, _, lang in CASES]
)
def test_first_sentence(text: str, sentence: str, language: str) -> None:
    """The offset ends the expected first sentence (0 when there is none)."""
    assert text.startswith(sentence)
    assert match_end_of_sentence(text, language) == len(sentence)
    assert DefaultSentenceTokenizer(language).match_end_of_sentence(text) == len(sentence)


@pytest.mark.parametrize(
    ("text", "sentence", "language"), CASES + [(t, t[:e], "en") for t, e in REFERENCE]
)
def test_resuming_gives_the_same_answer(text: str, sentence: str, language: str) -> None:
    """Scanning a text grown character by character from each resume point agrees with one scan."""
    tokenizer = DefaultSentenceTokenizer(language)
    resume = 0
    eos = 0
    for end in range(1, len(text) + 1):
        eos, resume = tokenizer.scan_end_of_sentence(text, resume, end)
        assert eos == tokenizer.match_end_of_sentence(text[:end])
        if eos:
            break
    if not eos:
        assert tokenizer.match_end_of_sentence(text) == 0


def test_language_codes_are_normalized() -> None:
    """Language codes are lower-cased base codes; empty and "auto" mean English."""
    assert normalize_language("de_DE") == "de"
    assert normalize_language("PT-br") == "pt"
    assert normalize_language("") == "en"
    assert normalize_language("auto") == "en"
    assert normalize_language(None) == "en"
    assert language_profile("xx").abbreviations == language_profile("en").abbreviations


def test_extra_abbreviations_can_be_added() -> None:
    """A caller can teach the default tokenizer a domain's own abbreviations."""
    text = "Take the Rte. Nine north. Ok"
    assert match_end_of_sentence(text) == len("Take the Rte.")
    tokenizer = DefaultSentenceTokenizer("en", abbreviations={"Rte"})
    assert tokenizer.match_end_of_sentence(text) == len("Take the Rte. Nine north.")


def test_a_whole_profile_can_be_given() -> None:
    """A language without a built-in profile can bring its own."""
    profile = LanguageProfile(code="sv", abbreviations=frozenset({"bl.a", "t.ex"}))
    tokenizer = DefaultSentenceTokenizer(profile=profile)
    assert tokenizer.language == "sv"
    assert tokenizer.match_end_of_sentence("Det finns t.ex. Volvo. Ja") == len(
        "Det finns t.ex. Volvo."
    )


def test_registering_a_language_updates_the_defaults() -> None:
    """register_language takes effect even after the language was used."""
    text = "Vi ses kl. Tio. Ja"
    assert match_end_of_sentence(text, "xq") == len("Vi ses kl.")
    register_language(LanguageProfile(code="xq", abbreviations=frozenset({"kl"})))
    assert match_end_of_sentence(text, "xq") == len("Vi ses kl. Tio.")
    assert SimpleTextAggregator(language="xq").tokenizer.match_end_of_sentence(text) == len(
        "Vi ses kl. Tio."
    )


def test_the_default_tokenizer_satisfies_both_protocols() -> None:
    """The default tokenizer is a SentenceTokenizer that can also resume."""
    tokenizer: SentenceTokenizer = DefaultSentenceTokenizer()
    assert isinstance(tokenizer, IncrementalSentenceTokenizer)


class PipeTokenizer:
    """A toy tokenizer for a made-up language whose sentences end with '|'."""

    def match_end_of_sentence(self, text: str) -> int:
        """Offset just past the first '|', or 0."""
        return text.find("|") + 1


def test_a_custom_tokenizer_plugs_into_the_aggregator() -> None:
    """Any object with match_end_of_sentence drives the aggregator's boundaries."""
    tokenizer: SentenceTokenizer = PipeTokenizer()
    aggregator = SimpleTextAggregator(tokenizer=tokenizer)
    # A sentence character arms the lookahead; the tokenizer decides every cut.
    assert [a.text for a in aggregator.aggregate("one| two. three| four")] == [
        "one|",
        "two. three|",
    ]
    assert aggregator.aggregate(". five") == []
    flushed = aggregator.flush()
    assert flushed is not None
    assert flushed.text == "four. five"


class StrictTokenizer:
    """A non-incremental tokenizer: the default one behind the plain protocol."""

    def __init__(self) -> None:
        self.calls = 0
        self._inner = DefaultSentenceTokenizer()

    def match_end_of_sentence(self, text: str) -> int:
        """Delegate, counting calls."""
        self.calls += 1
        return self._inner.match_end_of_sentence(text)


def test_a_plain_protocol_tokenizer_gives_the_same_sentences() -> None:
    """Without the resumable method the aggregator re-asks on the buffer, with the same result."""
    text = "Hello Mr. Smith. It costs $29.95/month. Wait... what? Yes! Ok"
    plain = SimpleTextAggregator(tokenizer=StrictTokenizer())
    default = SimpleTextAggregator()
    got_plain = [a.text for t in text.split(" ") for a in plain.aggregate(t + " ")]
    got_default = [a.text for t in text.split(" ") for a in default.aggregate(t + " ")]
    assert (
        got_plain
        == got_default
        == [
            "Hello Mr. Smith.",
            "It costs $29.95/month.",
            "Wait... what?",
            "Yes!",
        ]
    )

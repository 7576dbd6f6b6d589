"""Does what the user said so far end like a finished turn? A transcript-completion signal, no model.

The audio end-of-turn model hears intonation and pauses; the words say what
it cannot: "I'd like to book a flight to" is unfinished whatever the pitch
does, "Yes, that's right." is finished however flatly it was said. This
module reads the end of a transcript and answers :class:`Completion`
``COMPLETE``, ``INCOMPLETE`` or ``UNSURE``, with the rule that decided it.
It is pure and fast (a few microseconds on a sentence): a stop strategy can
run it on every final transcript.

English is built in (:data:`ENGLISH`). Other languages are registered with
:func:`register_completion`, either as :class:`WordRules` (the same rules
over that language's word lists) or as any object with a
``judge(text) -> CompletionVerdict`` method. Text the rules cannot read (no
words, another script, a language with no rules, placeholders such as
``<noise>`` or ``[inaudible]``) is ``UNSURE``, never ``INCOMPLETE``: a turn is
never held open by words nobody can judge.

The rules work with and without the speech-to-text service's punctuation and
casing. Words at the end decide first, because many services put a period
after every final, even mid-sentence ("Can you send the."):

* ``INCOMPLETE``: a trailing conjunction, article, possessive, preposition,
  filler ("um", "uh", and "so" unless it is "I think so"), an open "if",
  "because", "whether", a contraction that needs more ("I'm", "it's"), a
  trailing comma, colon, dash or ellipsis; *tentatively* (``tentative``) a
  number, a spelled-out sequence of letters or a list still being read with
  no punctuation after it (a caller reading out digits pauses between groups).
* ``COMPLETE``: a question mark, an exclamation mark or a period after a
  word that can end a sentence; a closing word or phrase ("thanks",
  "thank you", "yes", "no", "okay", "bye", ...), punctuated or not.
* ``UNSURE``: everything else, e.g. unpunctuated words that end in a noun or
  a verb ("the fourteenth of march" may or may not go on).
"""

from __future__ import annotations

import enum
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from ..errors import ConfigurationError

__all__ = [
    "ENGLISH",
    "Completion",
    "CompletionRules",
    "CompletionVerdict",
    "WordRules",
    "completion_rules",
    "judge_completion",
    "register_completion",
]


class Completion(enum.Enum):
    """What the words say about the turn."""

    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    UNSURE = "unsure"


class CompletionVerdict(NamedTuple):
    """A judgement of a transcript's end.

    Attributes:
        completion: complete, incomplete or unsure.
        reason: the rule that decided, in words (for logs and reports).
        tentative: the rule is a leaning, not a certainty (a number or a
            spelled sequence still being read may also be its end).
    """

    completion: Completion
    reason: str
    tentative: bool = False


UNSURE_NO_WORDS = CompletionVerdict(Completion.UNSURE, "no words to judge")


@runtime_checkable
class CompletionRules(Protocol):
    """Judges one language's transcripts."""

    def judge(self, text: str) -> CompletionVerdict:
        """The verdict on ``text`` (the words of the turn so far). Never raises on any string."""
        ...


def _set(words: Iterable[str]) -> frozenset[str]:
    return frozenset(w.lower() for w in words)


def _split(text: str) -> frozenset[str]:
    return _set(text.split())


@dataclass(frozen=True)
class WordRules:
    """The completion rules over one language's word lists (all compared lower-cased).

    Attributes:
        code: the language code ("en").
        script: the Unicode script name prefix of the language's letters
            ("LATIN"); words mostly in other scripts are not judged (unsure).
        unfinished: words after which a sentence cannot end: conjunctions,
            articles, possessives, prepositions that need an object,
            subordinators ("if", "because", "whether"), contractions that
            need a complement ("i'm", "it's").
        fillers: hesitations ("um", "uh"): the speaker is still thinking.
        so_words: words that end "so" finished ("I think so", "I hope so");
            any other trailing "so" is a filler.
        particles: words that are prepositions but often end a sentence
            ("come in", "turn it on"): never decisive, and after a
            question word a trailing preposition is not decisive either.
        question_words: words that open a question ("what", "where").
        weak_enders: words that rarely end a statement but can end a
            question ("I", "can", "would"): incomplete unless a question
            mark follows.
        closers: words that finish a turn when they end it ("thanks",
            "yes", "bye", "please").
        closing_phrases: multi-word endings that finish a turn ("thank you",
            "that's all"), space-separated.
        number_words: number words ("one", "twenty", "hundred"); a run of
            them (or digits) at the end is a number being read.
        time_suffixes: letter pairs after a number that end a time ("a m", "p m").
        number_cues: words after which a single number is being read ("is", "number"); a
            lone number after other words ("a table for two") is not a sequence.
        domain_endings: words that end an e-mail or web address after "dot" ("com").
        that_openers: words after which a trailing "that" opens a clause ("I think
            that", "the thing is that"), unless a question word precedes ("what is that").
        known_words: extra words that show the text is in this language
            (the other lists count too); an unpunctuated text of three
            words or more with none of them is in another language (unsure).
    """

    code: str
    script: str
    unfinished: frozenset[str]
    fillers: frozenset[str]
    so_words: frozenset[str] = field(default_factory=frozenset)
    particles: frozenset[str] = field(default_factory=frozenset)
    question_words: frozenset[str] = field(default_factory=frozenset)
    weak_enders: frozenset[str] = field(default_factory=frozenset)
    closers: frozenset[str] = field(default_factory=frozenset)
    closing_phrases: frozenset[str] = field(default_factory=frozenset)
    number_words: frozenset[str] = field(default_factory=frozenset)
    time_suffixes: frozenset[str] = field(default_factory=frozenset)
    number_cues: frozenset[str] = field(default_factory=frozenset)
    domain_endings: frozenset[str] = field(default_factory=frozenset)
    that_openers: frozenset[str] = field(default_factory=frozenset)
    known_words: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not self.code.strip():
            raise ConfigurationError(f"WordRules needs a language code, got {self.code!r}")
        if not isinstance(self.script, str) or not self.script.strip():
            raise ConfigurationError(f"WordRules needs a script name (e.g. 'LATIN'), got {self.script!r}")
        for name in (
            "unfinished", "fillers", "so_words", "particles", "question_words", "weak_enders", "closers",
            "closing_phrases", "number_words", "time_suffixes", "number_cues", "domain_endings", "that_openers",
            "known_words",
        ):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ConfigurationError(f"WordRules.{name} must be a set of words, got {value!r}")
            object.__setattr__(self, name, _set(str(w) for w in value))
        phrases = frozenset(tuple(p.split()) for p in self.closing_phrases)
        object.__setattr__(self, "_phrases", phrases)
        object.__setattr__(self, "_longest", max((len(p) for p in phrases), default=0))
        vocabulary = (
            self.unfinished | self.fillers | self.particles | self.question_words | self.weak_enders
            | self.closers | self.number_words | self.known_words
        )
        object.__setattr__(self, "_vocabulary", vocabulary)

    def judge(self, text: str) -> CompletionVerdict:
        """The verdict on ``text``; see the module docs for the rules."""
        value: object = text  # callers may pass anything: never raise
        if not isinstance(value, str):
            return UNSURE_NO_WORDS
        words, tail = _tokens(value)
        if not words:
            return UNSURE_NO_WORDS
        if not self._readable(words):
            return CompletionVerdict(Completion.UNSURE, f"no {self.code} rules for this text")
        return self._decide(words, tail, tail == "" and _list_open(value))

    # -- the rules --------------------------------------------------------------------------

    def _readable(self, words: list[str]) -> bool:
        """Whether the words are in this language's script (and, for three or more, in its vocabulary)."""
        letters = [c for w in words for c in w if c.isalpha()]
        if not letters:
            return True  # digits only: a number is a number in any language
        ours = sum(1 for c in letters if _script(c) == self.script)
        if ours * 2 < len(letters) or not _script_of(words[-1], self.script):
            return False
        if len(words) >= 3:
            vocabulary: frozenset[str] = self._vocabulary  # type: ignore[attr-defined]
            known = sum(1 for w in words if w in vocabulary)
            return known * 5 >= len(words)  # a fifth of the words, at least, are this language's
        return True

    def _decide(self, words: list[str], tail: str, list_open: bool) -> CompletionVerdict:
        last = words[-1]
        before = words[-2] if len(words) > 1 else ""
        incomplete = Completion.INCOMPLETE
        if last in self.fillers:
            return CompletionVerdict(incomplete, f"a filler at the end ({last!r})")
        if last == "so" and before not in self.so_words:
            return CompletionVerdict(incomplete, "'so' at the end (more is coming)")
        if tail in _OPEN:
            return CompletionVerdict(incomplete, f"ends with {tail!r}")
        if last == "dot" or (len(last) == 1 and before == "dot"):
            return CompletionVerdict(incomplete, "an address being spelled", tentative=True)
        if last in self.unfinished and not self._question_ending(words, last):
            return CompletionVerdict(incomplete, f"ends with {last!r}")
        if last == "that" and before in self.that_openers:
            third = words[-3] if len(words) > 2 else ""
            if not (before in ("is", "was") and third in self.question_words):  # not "what is that"
                return CompletionVerdict(incomplete, f"an open '{before} that'")
        closing = self._closing(words)
        if closing is not None:
            return CompletionVerdict(Completion.COMPLETE, f"a closing word ({closing!r})")
        if tail == "?":
            return CompletionVerdict(Completion.COMPLETE, "a question")
        if last in self.weak_enders and tail not in _TERMINAL:
            return CompletionVerdict(incomplete, f"ends with {last!r}")
        if before == "dot" and last in self.domain_endings:
            return CompletionVerdict(Completion.COMPLETE, "an address ended")
        if self._is_time(words):
            if tail in _TERMINAL:
                return CompletionVerdict(Completion.COMPLETE, "a time, then a full stop")
            return CompletionVerdict(Completion.UNSURE, "a time")
        sequence = self._sequence(words)
        if sequence is not None and tail not in _TERMINAL:
            return CompletionVerdict(incomplete, f"{sequence} being read", tentative=True)
        if list_open:
            return CompletionVerdict(incomplete, "a list being read", tentative=True)
        if tail in _TERMINAL:
            return CompletionVerdict(Completion.COMPLETE, f"ends with {tail!r}")
        if last in self.weak_enders:
            return CompletionVerdict(Completion.UNSURE, f"ends with {last!r}")
        return CompletionVerdict(Completion.UNSURE, "no rule decides")

    def _question_ending(self, words: list[str], last: str) -> bool:
        """A preposition that ends a question ("where are you from") is not unfinished."""
        if last not in self.particles:
            return False
        return any(w in self.question_words for w in words[:-1][-8:])

    def _closing(self, words: list[str]) -> str | None:
        phrases: frozenset[tuple[str, ...]] = self._phrases  # type: ignore[attr-defined]
        longest: int = self._longest  # type: ignore[attr-defined]
        for n in range(min(longest, len(words)), 1, -1):
            if tuple(words[-n:]) in phrases:
                return " ".join(words[-n:])
        if words[-1] in self.closers:
            return words[-1]
        return None

    def _is_number(self, word: str) -> bool:
        return word.isdigit() or word in self.number_words or _ORDINAL.fullmatch(word) is not None

    def _is_time(self, words: list[str]) -> bool:
        if len(words) >= 2 and words[-1] in ("am", "pm") and self._is_number(words[-2]):
            return True
        return len(words) >= 3 and f"{words[-2]} {words[-1]}" in self.time_suffixes and self._is_number(words[-3])

    def _sequence(self, words: list[str]) -> str | None:
        last = words[-1]
        if self._is_number(last):
            before = words[-2] if len(words) > 1 else ""
            if self._is_number(before) or before in self.number_cues:
                return "a number"
            return None
        if len(last) == 1 and last.isalpha() and len(words) >= 2 and len(words[-2]) == 1 and words[-2].isalpha():
            return "a spelled sequence"
        return None



_TERMINAL = frozenset({".", "!", "?", "…?", "!?", "?!"})
_OPEN = frozenset({",", ";", ":", "-", "–", "—", "...", "…", "(", "/", "&", "+"})
_ORDINAL = re.compile(r"\d+(st|nd|rd|th)")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_TAG = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}")


def _tokens(text: str) -> tuple[list[str], str]:
    """The lower-cased words of ``text`` (tags removed) and its trailing punctuation ('' for none)."""
    clean = _TAG.sub(" ", unicodedata.normalize("NFKC", text))
    words = [w.replace("’", "'").lower() for w in _WORD.findall(clean)]
    if not words:
        return [], ""
    end = clean.rstrip()
    i = len(end)
    while i > 0 and not (end[i - 1].isalnum() or end[i - 1] in "'’"):
        i -= 1
    tail = "".join(c for c in end[i:] if not c.isspace() and c not in "\"'’”“)»]")
    if tail.startswith("..") or tail.startswith("…"):
        return words, "..."
    if tail:
        if "?" in tail:
            return words, "?"
        for c in tail:  # the first mark decides: "to," → ","; "yes." → "."
            return words, "." if c == "!" else c
    return words, ""


def _list_open(text: str) -> bool:
    """Short items between commas, no "and"/"or" before the last, no full stop: a list still being read."""
    sentence = re.split(r"[.!?…]", text)[-1]
    parts = [p.split() for p in sentence.split(",")]
    if len(parts) < 3 or not parts[-1]:
        return False
    items = parts[-3:]
    if any(not p or len(p) > 3 for p in items):
        return False
    return parts[-1][0].lower() not in ("and", "or", "&", "plus")


def _script(c: str) -> str:
    try:
        return unicodedata.name(c).split(" ", 1)[0]
    except ValueError:
        return ""


def _script_of(word: str, script: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return not letters or all(_script(c) == script for c in letters)


def _english() -> WordRules:
    return WordRules(
        code="en",
        script="LATIN",
        unfinished=_split(
            # conjunctions and subordinators
            "and or but nor plus because cause cos coz if whether unless although whereas while "
            "than whose "
            # articles and determiners that need a noun
            "a an the every "
            # possessives
            "my your our their its "
            # prepositions that need an object
            "to of for with from at into onto about by via per towards toward between among "
            "during without within upon despite versus including like "
            # contractions that need a complement
            "i'm i've i'd i'll you're you've you'll we're we've we'll they're they've they'll "
            "he's she's it's there's that's what's who's where's here's "
            "let's gonna wanna gotta "
            # words that open what follows
            "very such"
        ),
        fillers=_split("um uh uhm umm er erm eh hmm hm mm ah ahh"),
        so_words=_split(
            "think thought hope hoped guess believe suppose supposed expect imagine said say says "
            "told fear not do did does is was so that's it's i'm"
        ),
        particles=_split("at from for with about to of into like"),
        question_words=_split("what where who whom which how why when whose"),
        weak_enders=_split(
            "i we they he she is are am was were will would can could should shall must might may "
            "have has had do does did be been being not"
        ),
        closers=_split(
            "thanks thank thankyou cheers yes yeah yep yup no nope nah okay ok alright sure bye goodbye "
            "please great perfect fine right correct exactly wonderful brilliant lovely awesome "
            "cool done absolutely definitely hello hi hey sorry pardon"
        ),
        closing_phrases=frozenset({
            "thank you", "thank you very much", "thanks a lot", "that's all", "that is all", "that's it",
            "that is it", "all right", "of course", "no problem", "i see", "got it", "sounds good",
            "that's right", "that is right", "not really", "i think so", "i don't know", "i do", "i am",
            "i can", "i will", "i have", "i did", "we do", "we are", "we can", "we will", "it is",
            "it does", "it was", "it did", "that works", "for now", "see you", "you too",
        }),
        number_words=_split(
            "zero oh nought one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty "
            "seventy eighty ninety hundred thousand million double triple"
        ),
        time_suffixes=frozenset({"a m", "p m"}),
        number_cues=_split("is was number code pin zip postcode phone digits reference extension ext"),
        domain_endings=_split("com org net edu gov io co uk us ca de fr au info biz me"),
        that_openers=_split(
            "is was think thought said say says know knew hope believe mean means realize realized feel felt "
            "guess sure glad so such tell told hear heard see suppose noticed found agree thinking"
        ),
        known_words=_split(
            "it me you him her them us this that these those there here is are was were be been have has "
            "had do does did not no yes a an the i we they he she what which who how why when where "
            "can could would should will shall may might must just also then now today tomorrow "
            "some any all more most much many one two please thanks thank like want need get go"
        ),
    )


ENGLISH: WordRules = _english()
"""The built-in English rules."""

_lock = threading.Lock()
_RULES: dict[str, CompletionRules] = {"en": ENGLISH}


def _code(language: str) -> str:
    return language.strip().replace("_", "-").split("-", 1)[0].lower()


def register_completion(language: str, rules: CompletionRules) -> None:
    """Use ``rules`` for ``language`` (a code such as ``"de"`` or ``"pt-BR"``; the region is ignored).

    Registering ``"en"`` replaces the built-in English rules.

    Raises:
        ConfigurationError: an empty code, or ``rules`` without a ``judge(text)`` method.
    """
    if not isinstance(language, str) or not _code(language):
        raise ConfigurationError(f"register_completion needs a language code, got {language!r}")
    if not callable(getattr(rules, "judge", None)):
        raise ConfigurationError(f"completion rules need a judge(text) method, got {rules!r}")
    with _lock:
        _RULES[_code(language)] = rules


def completion_rules(language: str | None = "en") -> CompletionRules | None:
    """The rules registered for ``language`` (``None`` when it has none)."""
    code: object = "en" if language is None else language
    if not isinstance(code, str):
        return None
    return _RULES.get(_code(code))


def judge_completion(text: str, language: str | None = "en") -> CompletionVerdict:
    """Whether ``text`` ends like a finished turn, by the rules of ``language``.

    A language with no registered rules, or rules that raise, give ``UNSURE``.
    """
    rules = completion_rules(language)
    if rules is None:
        return CompletionVerdict(Completion.UNSURE, f"no completion rules for {language!r}")
    try:
        verdict: object = rules.judge(text)
    except Exception as exc:  # a caller's rules must not break a turn
        return CompletionVerdict(Completion.UNSURE, f"the {language!r} rules failed ({type(exc).__name__})")
    if not isinstance(verdict, CompletionVerdict):
        return CompletionVerdict(Completion.UNSURE, f"the {language!r} rules gave {verdict!r}")
    return verdict

"""The words' end-of-turn signal: learned from data, read on plain words, unsure on what it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxvoice.errors import ConfigurationError, ModelError, ModelNotFoundError
from rxvoice.turns.ending import (
    RulesWordsEnd,
    TrigramWordsEnd,
    WordsEnd,
    contracted,
    default_words_end,
    plain_words,
    pocketsphinx_lm_path,
    read_out,
    reading_end,
    reading_in_progress,
    reading_start,
    stt_confidence,
    wh_question_verb_came,
)


@pytest.fixture(scope="module")
def trigram() -> TrigramWordsEnd:
    return TrigramWordsEnd()


def test_plain_words_drop_case_punctuation_and_tags() -> None:
    assert plain_words("Can you send the. <noise> I'D like, um…") == ["can", "you", "send", "the", "i'd", "like", "um"]
    assert plain_words("") == [] and plain_words("...?!") == []


@pytest.mark.parametrize(("unfinished", "finished"), [
    ("can you", "thank you"),
    ("i would like to", "nope"),
    ("the twenty", "is there parking nearby"),
    ("i'd rather not wait until", "yes"),
    ("i need to cancel my booking because", "i lost my keys on the bus this morning"),
    ("could you send", "what time do you close on friday"),
])
def test_unfinished_words_are_less_likely_an_end_than_finished_ones(
    trigram: TrigramWordsEnd, unfinished: str, finished: str
) -> None:
    low, high = trigram.judge(unfinished), trigram.judge(finished)
    assert low.weight == high.weight == 1.0
    assert low.probability < 0.5 < high.probability


@pytest.mark.parametrize("text", ["i would like to", "thank you", "my number is four five", "yes"])
def test_a_full_stop_after_every_final_changes_nothing(trigram: TrigramWordsEnd, text: str) -> None:
    assert trigram.judge(text.capitalize() + ".") == trigram.judge(text)
    assert trigram.judge(text.upper() + "?") == trigram.judge(text)


@pytest.mark.parametrize(("spelled", "joined"), [
    ("thanks that is all", "thanks that's all"),
    ("i am", "i'm"),
    ("no i do not", "no i don't"),
    ("i cannot", "i can't"),
    ("it is what it is", "it's what it's"),
])
def test_either_spelling_of_a_contraction_reads_alike(trigram: TrigramWordsEnd, spelled: str, joined: str) -> None:
    assert contracted(spelled.split()) == joined.split()
    assert trigram.judge(spelled) == trigram.judge(joined)


def test_a_closing_spelled_out_reads_as_an_end(trigram: TrigramWordsEnd) -> None:
    assert trigram.judge("thanks that is all").probability > 0.5
    assert trigram.judge("what is").probability < 0.5 and trigram.judge("i am").probability < 0.5
    assert contracted(["is", "it"]) == ["is", "it"] and contracted([]) == []


def test_a_trailing_filler_says_more_is_coming(trigram: TrigramWordsEnd) -> None:
    assert trigram.judge("i'd like to book um").probability < 0.1


@pytest.mark.parametrize("text", ["", "   ", "<noise>", "[inaudible]", "что-то хочу сказать", "我想订一张桌子",
                                  "ich möchte gerne einen tisch reservieren", "können sie mir bitte helfen",
                                  "quiero reservar una mesa para dos"])
def test_what_it_cannot_read_is_unsure_and_weighs_nothing(trigram: TrigramWordsEnd, text: str) -> None:
    assert trigram.judge(text).weight == 0.0
    assert trigram.judge(text).probability == 0.5


def test_anything_but_a_string_is_unsure(trigram: TrigramWordsEnd) -> None:
    assert trigram.judge(None).weight == 0.0  # type: ignore[arg-type]


def test_the_stt_confidence_lowers_the_weight_never_the_direction(trigram: TrigramWordsEnd) -> None:
    sure, unsure = trigram.judge("i would like to"), trigram.judge("i would like to", confidence=0.3)
    assert unsure.probability == sure.probability and unsure.weight == pytest.approx(0.3)
    assert trigram.judge("i would like to", confidence=float("nan")).weight == 1.0
    assert trigram.judge("i would like to", confidence=7.0).weight == 1.0


@pytest.mark.parametrize(("result", "expected"), [
    (None, None), (0.8, 0.8), (1.5, None), ("0.9", None), ({"confidence": 0.4}, 0.4),
    ({"words": [{"word": "a", "probability": 0.2}, {"word": "b", "probability": 0.6}]}, 0.4),
    ({"words": [{"word": "a"}], "confidence": 0.7}, 0.7), ({"words": []}, None),
])
def test_the_confidence_is_read_from_the_frames_result(result: object, expected: float | None) -> None:
    got = stt_confidence(result)
    assert got == (None if expected is None else pytest.approx(expected))


def test_a_word_list_with_attributes_is_read_too() -> None:
    class Word:
        def __init__(self, p: float) -> None:
            self.probability = p

    class Result:
        words = (Word(0.9), Word(0.5))

    assert stt_confidence(Result()) == pytest.approx(0.7)


@pytest.mark.parametrize(("text", "reading"), [
    ("my number is four five", True), ("four five seven", True), ("the code is 4 7", True),
    ("my surname is k o w", True), ("j o r", True), ("it's jordan dot", True), ("a table for two", False),
    ("i need two", False), ("yes", False), ("", False), ("my name is jordan", False),
])
def test_a_reading_in_progress_is_seen_on_plain_words(text: str, reading: bool) -> None:
    assert reading_in_progress(plain_words(text)) is reading


@pytest.mark.parametrize(("text", "verdict"), [
    ("my number is five five five one two three four", 1.0),  # seven digits: a local phone number
    ("call me on four one five five five five one two three four", 1.0),  # ten: a national one
    ("the card is 4111 1111 1111 1111", 1.0),  # sixteen, as digit strings
    ("double five five one two three four", 1.0),  # "double five" reads two digits
    ("you can reach me on four one five", 0.0),  # an area code alone: no common complete length
    ("my number is four five six seven eight nine zero one", 0.0),
    ("nine one one", 0.0), ("twenty one", 0.0),
    ("my zip is nine four one zero three", 1.0), ("my zip code is nine four one", 0.0),
    ("my zip is five five five one two three four", 0.0),  # named: a ZIP code has five (or nine)
    ("my pin is 1234", 1.0), ("the last four are one two three four", 1.0), ("the last four are one two", 0.0),
    ("the code is a b 1 2 3 4 5 6 7", 0.0),  # letters and digits mixed: no common length
    ("my surname is m a r s h", 1.0),  # letters that spell a word the vocabulary knows
    ("my surname is b r e n", -1.0),  # letters that spell nothing yet
    ("yes", 0.0), ("", 0.0), ("a table for two", 0.0),
])
def test_a_readings_structure_says_whether_it_is_over(trigram: TrigramWordsEnd, text: str, verdict: float) -> None:
    assert reading_end(plain_words(text), trigram.known) == verdict


@pytest.mark.parametrize(("text", "came"), [
    ("which documents should i bring", True), ("what should i bring", True), ("what do you want", True),
    ("okay so which one should we pick", True), ("what does it cost", True),
    ("which documents should i", False),  # the verb has not come
    ("which documents should i bring to the", False), ("what should i tell the", False),
    ("what do you think about", False), ("who should i talk to", False),  # a preposition asks for more
    ("i know what you should bring", False),  # not a question: no inverted auxiliary
    ("where should i go", False),  # the question word is not the verb's object
    ("i need the", False), ("", False),
])
def test_a_wh_question_whose_verb_came_is_seen(text: str, came: bool) -> None:
    assert wh_question_verb_came(contracted(plain_words(text))) is came


def test_a_wh_question_whose_verb_came_does_not_say_more_is_coming(trigram: TrigramWordsEnd) -> None:
    """The fronted phrase is the verb's object: "i bring" reads as going on to a trigram, not here."""
    question = trigram.judge("which documents should i bring")
    assert question.probability == pytest.approx(0.5) and "question" in question.reason
    assert trigram.judge("i should bring").probability < 0.3  # no question: the object is still to come
    assert trigram.judge("which documents should i").probability < 0.3
    assert trigram.judge("what can i do for you").probability > 0.8  # a likelier end keeps its probability


def test_without_a_vocabulary_a_spelling_says_nothing() -> None:
    assert reading_end(plain_words("my surname is m a r s h")) == 0.0
    assert reading_end(plain_words("my number is five five five one two three four")) == 1.0

    def broken(word: str) -> bool:
        raise RuntimeError(word)

    assert reading_end(plain_words("m a r s h"), broken) == 0.0  # a failing vocabulary never breaks a turn


def test_a_missing_model_file_is_a_clear_error_at_construction(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no language model"):
        TrigramWordsEnd(tmp_path / "nothing.lm.bin")


def test_a_corrupt_model_file_is_a_clear_error_at_construction(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lm.bin"
    bad.write_bytes(b"\x00\x01 this is not a language model" * 200)
    with pytest.raises(ModelError, match="not a language model"):
        TrigramWordsEnd(bad)
    truncated = tmp_path / "truncated.lm.bin"
    truncated.write_bytes(pocketsphinx_lm_path().read_bytes()[:4096])
    with pytest.raises(ModelError):
        TrigramWordsEnd(truncated)


def test_bad_weights_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        TrigramWordsEnd(weights=(1.0, 2.0))
    with pytest.raises(ConfigurationError):
        TrigramWordsEnd(weights=(float("nan"),) * 6)
    with pytest.raises(ConfigurationError):
        TrigramWordsEnd(foreign_below=2.0)


def test_the_hand_rules_give_the_same_shape() -> None:
    rules = RulesWordsEnd()
    assert rules.judge("I want to").probability < 0.5 < rules.judge("Thanks.").probability
    assert rules.judge("the fourteenth of march") == WordsEnd(0.5, 0.0, "no rule decides")
    assert rules.judge("I want to", confidence=0.5).weight == 0.5


def test_the_default_is_the_trigram_model_for_english_and_the_rules_otherwise() -> None:
    assert isinstance(default_words_end("en"), TrigramWordsEnd)
    assert isinstance(default_words_end("en-GB"), TrigramWordsEnd)
    assert isinstance(default_words_end("de"), RulesWordsEnd)


@pytest.mark.parametrize(("text", "run"), [
    ("my account number is two zero three one", "two zero three one"),
    ("the last name is h a d", "h a d"),
    ("one two", "one two"),
    ("write to k o w dot", "k o w dot"),
    ("i want", ""),
    ("", ""),
])
def test_a_readings_start_is_where_its_numbers_or_letters_begin(text: str, run: str) -> None:
    words = text.split()
    assert " ".join(words[reading_start(words):]) == run


@pytest.mark.parametrize(("run", "out"), [
    ("four eight two", True), ("double five one", True), ("482", True), ("k o w", True),
    ("twenty five", False), ("six thirty", False), ("six p m", False), ("", False),
])
def test_a_code_or_a_name_is_read_out_one_symbol_at_a_time(run: str, out: bool) -> None:
    assert read_out(run.split()) is out

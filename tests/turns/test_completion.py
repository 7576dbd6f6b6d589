"""The transcript-completion signal: plain asserts on English, other languages, and totality."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxvoice.errors import ConfigurationError
from rxvoice.turns.completion import (
    ENGLISH,
    Completion,
    CompletionVerdict,
    WordRules,
    completion_rules,
    judge_completion,
    register_completion,
)

C, INC, U = Completion.COMPLETE, Completion.INCOMPLETE, Completion.UNSURE


def bare(text: str) -> str:
    """What an STT without punctuation or casing gives."""
    return re.sub(r"[^\w\s']", " ", text).lower()


UNFINISHED = [
    "I'd like to book a flight to", "Can you send the", "It was forty two dollars on Tuesday, so",
    "So I was wondering if", "preferably in the", "let me read you the", "Yes, the account is under my",
    "I called because", "I'm not sure whether", "We'd leave on a Thursday and", "Oh, and um",
    "I'll pay with, uh", "Hi, I'm", "and then I", "I would", "Thank you for", "I'd like",
    "So what I was thinking is that", "I just feel that",
]
FINISHED = [
    "Yes, that's right.", "What is the weather like in Paris today?", "Thanks.", "No.", "yes", "no thanks",
    "Okay, bye.", "Thank you very much", "That's all", "I think so.", "Can you help me?",
    "Great, we'll be there at four.", "Around six p.m.", "My email is jordan at gmail dot com.",
    "What is that?", "I like that.",
]


@pytest.mark.parametrize("text", UNFINISHED)
def test_unfinished_words_are_incomplete_with_and_without_punctuation(text: str) -> None:
    assert judge_completion(text).completion is INC, judge_completion(text)
    assert judge_completion(bare(text)).completion is INC, bare(text)
    assert judge_completion(text.upper()).completion is INC


@pytest.mark.parametrize("text", FINISHED)
def test_finished_turns_are_complete(text: str) -> None:
    assert judge_completion(text).completion is C, judge_completion(text)


@pytest.mark.parametrize("text", ["yes", "no", "thanks", "thank you", "okay cheers goodbye", "that is all"])
def test_closing_words_are_complete_without_punctuation(text: str) -> None:
    assert judge_completion(text).completion is C


def test_a_period_does_not_finish_a_trailing_function_word() -> None:
    """Many STTs put a period after every final: the words at the end decide first."""
    for text in ("Can you send the.", "I want to.", "My order number is, um.", "Yes, but only if."):
        assert judge_completion(text).completion is INC, text


def test_numbers_and_spelled_sequences_in_progress_are_tentatively_incomplete() -> None:
    for text in ("my order number is four five", "it's j o r d a n", "the code is 4 8 2", "jordan dot",
                 "dot k"):
        verdict = judge_completion(text)
        assert verdict.completion is INC and verdict.tentative, (text, verdict)
    assert judge_completion("The order number is seven seven three,").completion is INC
    # a full stop after the number: the speaker finished
    assert judge_completion("My order number is four five seven two.").completion is C
    # a lone number after other words is not a sequence
    assert judge_completion("a table for two").completion is U


def test_a_list_being_read_is_tentatively_incomplete() -> None:
    verdict = judge_completion("I need eggs, milk, bread")
    assert verdict.completion is INC and verdict.tentative
    assert judge_completion("I need eggs, milk, and bread.").completion is C


def test_a_trailing_comma_dash_or_ellipsis_is_incomplete() -> None:
    for text in ("fourteenth of March,", "I was thinking -", "well...", "so…"):
        assert judge_completion(text).completion is INC, text


def test_a_question_word_before_a_trailing_preposition_keeps_it_open() -> None:
    assert judge_completion("where are you from").completion is not INC
    assert judge_completion("what is it for?").completion is C
    assert judge_completion("I am calling from").completion is INC


def test_what_no_rule_decides_is_unsure() -> None:
    for text in ("the fourteenth of march", "i think someone copied my card", "come back the following monday"):
        assert judge_completion(text).completion is U, text


def test_text_nobody_can_judge_is_unsure_never_incomplete() -> None:
    for text in ("", "   ", "<speech 1>", "[inaudible]", "我想订一张桌子", "Я хотел бы заказать",
                 "je voudrais réserver une table pour", "quiero una mesa para dos y", "!!!", "🙂"):
        assert judge_completion(text).completion is U, text
    assert judge_completion("hello", language="xx").completion is U
    assert judge_completion(None).completion is U  # type: ignore[arg-type]


def test_another_language_can_be_registered() -> None:
    german = WordRules(
        code="de", script="LATIN",
        unfinished={"und", "oder", "der", "die", "das", "ein", "eine", "nach", "mit", "weil", "wenn"},
        fillers={"äh", "ähm"}, closers={"danke", "ja", "nein", "tschüss"},
    )
    register_completion("de-DE", german)
    try:
        assert completion_rules("de") is german
        assert judge_completion("Ich möchte einen Flug nach", language="de").completion is INC
        assert judge_completion("Ja, danke", language="de").completion is C
        assert judge_completion("Ich möchte einen Flug nach", language="en").completion is U
    finally:
        register_completion("de", ENGLISH)


def test_rules_that_raise_or_misbehave_give_unsure() -> None:
    class Broken:
        def judge(self, text: str) -> CompletionVerdict:
            raise RuntimeError("boom")

    class Odd:
        def judge(self, text: str) -> str:
            return "done"

    register_completion("zz", Broken())
    register_completion("zy", Odd())  # type: ignore[arg-type]
    assert judge_completion("hello and", language="zz").completion is U
    assert judge_completion("hello and", language="zy").completion is U


def test_bad_registrations_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        register_completion("", ENGLISH)
    with pytest.raises(ConfigurationError):
        register_completion("fr", object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        WordRules(code="", script="LATIN", unfinished=set(), fillers=set())
    with pytest.raises(ConfigurationError):
        WordRules(code="fr", script="LATIN", unfinished="et ou", fillers=set())  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_gets_a_verdict(text: str) -> None:
    """Total: every string gets a verdict with a reason, and it never raises."""
    verdict = judge_completion(text)
    assert isinstance(verdict, CompletionVerdict) and verdict.reason
    assert verdict.completion in (C, INC, U)


_SCRIPTS = [(0x4E00, 0x9FFF), (0x0627, 0x064A), (0x0905, 0x0939), (0xAC00, 0xD7A3), (0x0430, 0x044F),
            (0x05D0, 0x05EA)]
_LETTERS = (st.characters(min_codepoint=a, max_codepoint=b) for a, b in _SCRIPTS)
_non_latin = st.text(
    alphabet=st.one_of(*_LETTERS, st.sampled_from(" ,.?")),
    min_size=1, max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_non_latin)
def test_text_in_scripts_without_rules_is_never_incomplete(text: str) -> None:
    """CJK, Arabic, Devanagari, ... with no registered rules: unsure, so no turn waits on them."""
    assert judge_completion(text).completion is U


_words = st.lists(st.sampled_from(["I", "want", "the", "and", "book", "a", "table", "um", "to", "Paris", "yes",
                                   "four", "five", ",", ".", "?", "please"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(_words)
def test_casing_does_not_change_the_verdict(words: list[str]) -> None:
    text = " ".join(words)
    assert judge_completion(text.lower()).completion is judge_completion(text.upper()).completion

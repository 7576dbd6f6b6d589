"""split_text, TextSplitter and sentence_end: a growing text cut at boundaries, the rest kept."""

from __future__ import annotations

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import operators as ops
from reactivex.testing.marbles import marbles_testing

from rxvoice.errors import ConfigurationError
from rxvoice.operators import SentenceEnd, TextSplitter, sentence_end, split_text
from rxvoice.text import DefaultSentenceTokenizer, SimpleTextAggregator
from tests.support import REPO, load_script
from tests.text.test_text_properties import FRAGMENTS, split_points, texts_strategy

ISSUE = ["Hello Mr.", " Smith. Your", " order ships at 3.30 p.m. today! Anything"]


def newline(text: str) -> int:
    return text.find("\n") + 1


def pieces(chunks: list[str], boundary: object = None) -> list[str]:
    """Everything a fresh splitter emits for the chunks, the flushed rest included."""
    splitter = TextSplitter(sentence_end() if boundary is None else boundary)  # type: ignore[arg-type]
    out = [p for c in chunks for p in splitter.push(c)]
    out.extend(splitter.flush())
    return out


def sentences(chunks: list[str]) -> list[str]:
    """What SimpleTextAggregator (LLMText's default) makes of the chunks."""
    agg = SimpleTextAggregator()
    out = [u.text for c in chunks for u in agg.aggregate(c)]
    last = agg.flush()
    return out + ([last.text] if last is not None else [])


def trimmed(texts: list[str]) -> list[str]:
    """The pieces as the aggregators present units: spaces trimmed, blank ones left out."""
    return [t.strip(" ") for t in texts if t.strip()]


# ---------------------------------------------------------------------------------- marbles


def test_marbles_sentences_go_out_once_confirmed_and_the_rest_at_completion() -> None:
    """The issue's chunks: a sentence leaves with the chunk that confirms it; the last words at completion."""
    lookup = {"a": ISSUE[0], "b": ISSUE[1], "c": ISSUE[2]}
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-----b-----c-|", lookup).pipe(split_text()))
        assert got == exp(
            "-------x-----y-(z,|)",
            {"x": "Hello Mr. Smith.", "y": " Your order ships at 3.30 p.m. today!", "z": " Anything"},
        )


def test_marbles_any_boundary_function() -> None:
    """Lines: the boundary is a plain function of the text held."""
    lookup = {"a": "one\ntw", "b": "o\nthree", "c": "\n"}
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-c-|", lookup).pipe(split_text(newline)))
        assert got == exp("-x-y-z-|", {"x": "one\n", "y": "two\n", "z": "three\n"})


def test_marbles_a_boundary_that_raises_fails_the_stream() -> None:
    """The boundary's exception goes to on_error at the chunk that made it raise."""

    def boundary(text: str) -> int:
        if "!" in text:
            raise RuntimeError("bad text")
        return newline(text)

    lookup = {"a": "x\n", "b": "y!"}
    with marbles_testing() as (start, cold, _hot, exp):
        got = start(cold("-a-b-|", lookup).pipe(split_text(boundary)))
        assert got == exp("-x-#", {"x": "x\n"}, RuntimeError("bad text"))


# ------------------------------------------------------------------------- the sentence rules


def test_the_issue_example_as_a_plain_list() -> None:
    """Whole sentences, the next one's first words kept, nothing lost."""
    assert pieces(ISSUE) == ["Hello Mr. Smith.", " Your order ships at 3.30 p.m. today!", " Anything"]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (["Hello world. "], ["Hello world. "]),  # never confirmed: all of it at the end
        (["Hello world.", " How"], ["Hello world.", " How"]),
        (["It costs $29.", "95 today. Ok"], ["It costs $29.95 today.", " Ok"]),
        (["See e.g. this. ", "And"], ["See e.g. this.", " And"]),
        (['She said "Hi." Then'], ['She said "Hi."', " Then"]),
        (["你好。我", "很好。"], ["你好。", "我很好。"]),
        (["One. Two. Three"], ["One.", " Two.", " Three"]),
    ],
)
def test_sentence_ends_need_what_follows(chunks: list[str], expected: list[str]) -> None:
    """Abbreviations, prices, quotes and CJK, cut where the sentence aggregator would cut them."""
    assert pieces(chunks) == expected
    assert trimmed(pieces(chunks)) == sentences(chunks)


def test_sentence_end_reads_a_language() -> None:
    """A German ordinal before a month is no sentence end; the language picks the rule."""
    assert sentence_end(language="de")("Am 3. Oktober. Dann") == 14
    assert sentence_end()("Hello Mr. Smith. Your") == 16
    assert sentence_end()("Hello Mr.") == 0


def test_sentence_end_takes_any_tokenizer() -> None:
    """A tokenizer with only match_end_of_sentence is asked about the text up to its last visible character."""

    class Pipes:
        def match_end_of_sentence(self, text: str) -> int:
            return text.find("|") + 1

    assert pieces(["a | b", " | c"], SentenceEnd(Pipes())) == ["a |", " b |", " c"]
    assert pieces(["a |  "], SentenceEnd(Pipes())) == ["a |  "]  # nothing visible follows yet
    with pytest.raises(ConfigurationError):
        SentenceEnd(object())  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pieces_join_back_into_the_input(data: st.DataObject) -> None:
    """Whatever the text and however it is streamed, the pieces joined are the input exactly."""
    text = data.draw(texts_strategy)
    chunks = data.draw(split_points(text))
    for boundary in (None, newline):
        out = pieces(chunks, boundary)
        assert "".join(out) == text
        assert all(out)


PROSE = [f for f in FRAGMENTS if not any(ch in f for ch in "<>@/")]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_sentences_are_the_sentence_aggregators(data: st.DataObject) -> None:
    """On prose (words, abbreviations, numbers, quotes, CJK, Devanagari), cut exactly as SimpleTextAggregator cuts."""
    text = data.draw(st.lists(st.sampled_from(PROSE), max_size=40).map("".join))
    chunks = data.draw(split_points(text))
    assert trimmed(pieces(chunks)) == sentences(chunks)


def test_a_long_model_response_is_cut_as_llmtext_cuts_it() -> None:
    """The benchmark's 12k-token response: the same 750-odd sentences as the sentence aggregator."""
    corpus = load_script(REPO / "benchmarks" / "_text_corpus.py", "rxvoice_benchmark_text_corpus")
    tokens = corpus.stream_tokens(corpus.response_text(12_000))
    got = pieces(tokens)
    assert "".join(got) == "".join(tokens)
    assert trimmed(got) == sentences(tokens)
    assert len(got) > 700


# --------------------------------------------------------------------------- the machine


def test_machine_keeps_the_text_when_the_boundary_raises() -> None:
    """The text is kept before the boundary is asked, also when it fails after cutting pieces."""
    calls = 0

    def flaky(text: str) -> int:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("second look fails")
        return newline(text)

    s = TextSplitter(flaky)
    with pytest.raises(RuntimeError):
        s.push("a\nb\nc")
    assert s.held == "a\nb\nc"
    assert s.push("") == ()
    assert s.push("\n") == ["a\n", "b\n", "c\n"]


def test_machine_clamps_a_boundary_past_the_end() -> None:
    """A boundary beyond the text takes all of it, once."""
    s = TextSplitter(lambda text: len(text) + 5)
    assert s.push("abc") == ["abc"]
    assert s.held == ""
    assert s.flush() == ()


def test_machine_clear_forgets() -> None:
    """clear drops the held text; flush then has nothing."""
    s = TextSplitter(sentence_end())
    s.push("Half a sent")
    s.clear()
    assert s.flush() == ()


def test_refuses_what_is_not_a_boundary() -> None:
    """A boundary must be callable."""
    with pytest.raises(ConfigurationError):
        split_text("\n")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        TextSplitter(3)  # type: ignore[arg-type]


def test_each_subscription_splits_on_its_own() -> None:
    """Two subscriptions of one operator hold their own text."""
    op = split_text()
    got_a = reactivex.of("Alpha one. ", "Two").pipe(op, ops.to_list()).run()
    got_b = reactivex.of("Beta. ", "Gamma").pipe(op, ops.to_list()).run()
    assert got_a == ["Alpha one.", " Two"]
    assert got_b == ["Beta.", " Gamma"]


# ------------------------------------------------------------------------------ linear time


class CountingTokenizer(DefaultSentenceTokenizer):
    """The default tokenizer, counting the characters each scan reads."""

    def __init__(self) -> None:
        super().__init__("en")
        self.scanned = 0

    def scan_end_of_sentence(self, text: str, start: int = 0, end: int | None = None) -> tuple[int, int]:
        """Count, then delegate."""
        stop = len(text) if end is None else min(end, len(text))
        self.scanned += max(0, stop - start)
        return super().scan_end_of_sentence(text, start, end)


@pytest.mark.parametrize("unit", ["pi is 3.14 and e.g. this, Mr. Smith met the U.S. army and ", "plain words only "])
def test_a_long_unbroken_text_is_read_once(unit: str) -> None:
    """200k characters with no sentence end, in 4-character chunks: each character scanned a bounded number of times."""
    text = (unit * (200_000 // len(unit) + 1))[:200_000]
    tokenizer = CountingTokenizer()
    splitter = TextSplitter(SentenceEnd(tokenizer))
    for i in range(0, len(text), 4):
        assert splitter.push(text[i : i + 4]) == ()
    assert splitter.flush() == (text,)
    assert tokenizer.scanned <= 3 * len(text)

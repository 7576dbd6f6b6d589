"""The text operators: Sentence, LLMText and FullResponse, in virtual time."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex.subject import Subject

from rxvoice import frames as F
from rxvoice import pipeline
from rxvoice.aggregators import Completion, FullResponse, LLMText, Pair, Sentence
from rxvoice.errors import ConfigurationError
from rxvoice.pipeline import DOWN
from rxvoice.testing import COMPLETED, FrameMarbles, Recording
from rxvoice.text import MatchAction, PatternMatch, PatternPairAggregator, SimpleTextAggregator, SkipTagsAggregator

RS, RE = F.LLMFullResponseStartFrame(), F.LLMFullResponseEndFrame()
BASE: dict[str, Any] = {"S": RS, "E": RE, "I": F.InterruptionFrame(), "Z": F.EndFrame(), "X": F.CancelFrame()}


def tokens(*texts: str, skip_tts: bool | None = None) -> dict[str, F.Frame]:
    """Legend symbols 0-9, a-z for LLM tokens, in order."""
    symbols = "0123456789abcdefghijklmnopqrstuvwxyz"
    return {symbols[i]: F.LLMTextFrame(t, skip_tts=skip_tts) for i, t in enumerate(texts)}


def run(stage: Any, down: str, legend: dict[str, Any] | None = None, *, up: str = "", watch: Any = ()) -> Recording:
    m = FrameMarbles({**BASE, **(legend or {})})
    return m.run(stage, down=down, up=up, watch=watch)


def texts(rec: Recording, kind: type[F.Frame] = F.AggregatedTextFrame) -> list[str]:
    return [f.text for _, f in rec.of_type(kind)]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------ Sentence


def test_sentence_holds_until_a_sentence_end_is_confirmed() -> None:
    """Nothing goes out until what follows confirms a sentence end; then that sentence alone, the rest kept."""
    legend = {"a": F.TextFrame("Hello,"), "b": F.TextFrame(" world. "), "c": F.TextFrame("How")}
    rec = run(Sentence(), "a-b-c-|", legend)
    assert rec.down == [(400, F.TextFrame("Hello, world.")), (600, F.TextFrame(" How")), (600, COMPLETED)]


def test_sentence_pushes_whole_sentences_and_keeps_the_rest() -> None:
    """Abbreviations, decimals and "p.m." do not end a sentence; each sentence goes out whole, EndFrame flushes."""
    chunks = ["Hello Mr.", " Smith. Your", " order ships at 3.30 p.m. today! Anything"]
    legend = {str(i): F.TextFrame(c) for i, c in enumerate(chunks)}
    rec = run(Sentence(), "0-1-2-Z", legend)
    assert rec.down == [
        (200, F.TextFrame("Hello Mr. Smith.")),
        (400, F.TextFrame(" Your order ships at 3.30 p.m. today!")),
        (600, F.TextFrame(" Anything")),
        (600, F.EndFrame()),
    ]
    assert "".join(texts(rec, F.TextFrame)) == "".join(chunks)


def test_sentence_pushes_every_sentence_a_frame_completes() -> None:
    """One frame holding several sentences pushes each of them, in order."""
    rec = run(Sentence(), "a", {"a": F.TextFrame("One. Two! Three? Four")})
    assert texts(rec, F.TextFrame) == ["One.", " Two!", " Three?"]


def test_sentence_splits_a_word_stream_into_sentences() -> None:
    """The reference word stream becomes three sentence frames with their trailing spaces."""
    words = ["Hello, ", "world. ", "How ", "are ", "you? ", "I ", "am ", "fine! "]
    legend = {str(i): F.TextFrame(w) for i, w in enumerate(words)}
    rec = run(Sentence(), "01234567|", legend)
    assert texts(rec, F.TextFrame) == ["Hello, world.", " How are you?", " I am fine! "]
    assert all(type(f) is F.TextFrame for f in rec.down_frames())


def test_sentence_drops_interim_transcriptions() -> None:
    """An interim transcription is a guess: it is neither gathered nor forwarded."""
    legend = {"i": F.InterimTranscriptionFrame("Hel"), "a": F.TextFrame("Hi. ")}
    rec = run(Sentence(), "i-a-|", legend)
    assert rec.down_frames() == [F.TextFrame("Hi. ")]


def test_sentence_forwards_what_it_does_not_gather() -> None:
    """Exact-type matching: LLM tokens, transcriptions and other frames pass untouched, in order."""
    legend = {
        "l": F.LLMTextFrame("token. "),
        "t": F.TranscriptionFrame("heard. ", "u1", finalized=True),
        "g": F.AggregatedTextFrame("unit. "),
        "a": F.TextFrame("Plain"),
        "b": F.TextFrame(" text. Next"),
    }
    rec = run(Sentence(), "S-l-a-t-g-b-E", legend)
    assert rec.down_frames() == [
        RS, legend["l"], legend["t"], legend["g"], F.TextFrame("Plain text."), RE,
    ]


def test_sentence_flushes_the_rest_at_end_of_session() -> None:
    """EndFrame pushes what is left, then itself; so does the input completing."""
    rec = run(Sentence(), "a-Z", {"a": F.TextFrame("No end")})
    assert rec.down_frames() == [F.TextFrame("No end"), F.EndFrame()]
    rec = run(Sentence(), "a-|", {"a": F.TextFrame("Also no end")})
    assert rec.down_frames() == [F.TextFrame("Also no end")]


def test_sentence_keeps_its_buffer_across_an_interruption() -> None:
    """An interruption mid-sentence passes at once; the words gathered are not lost (the seed's rule)."""
    legend = {"a": F.TextFrame("Hello"), "b": F.TextFrame(" there. Bye")}
    rec = run(Sentence(), "a-I-b", legend)
    assert rec.down == [(200, F.InterruptionFrame()), (400, F.TextFrame("Hello there."))]


def test_sentence_leaves_upstream_frames_alone() -> None:
    """Text travelling upstream is not gathered."""
    rec = run(Sentence(), "", up="a", legend={"a": F.TextFrame("Up")})
    assert rec.up_frames() == [F.TextFrame("Up")]


def test_sentence_takes_any_tokenizer() -> None:
    """The tokenizer is pluggable: anything with match_end_of_sentence(text) -> int."""

    class Pipes:
        def match_end_of_sentence(self, text: str) -> int:
            return text.find("|") + 1

    rec = run(Sentence(Pipes()), "a-b-|", {"a": F.TextFrame("one. two"), "b": F.TextFrame(" | three")})
    assert texts(rec, F.TextFrame) == ["one. two |", " three"]
    with pytest.raises(ConfigurationError):
        Sentence(tokenizer=object())  # type: ignore[arg-type]


def test_sentence_reports_a_failing_tokenizer_and_keeps_the_text() -> None:
    """A tokenizer that raises is reported (on_error, ErrorFrame upstream); the text still goes out at the end."""

    class Broken:
        def match_end_of_sentence(self, text: str) -> int:
            raise RuntimeError("boom")

    sentence = Sentence(Broken())
    rec = run(sentence, "a-Z", {"a": F.TextFrame("Kept.")}, watch=[sentence])
    assert rec.down_frames() == [F.TextFrame("Kept."), F.EndFrame()]
    assert rec.event_names() == ["on_error"]
    assert rec.up_types() == ["ErrorFrame"]


def test_sentence_state_is_per_subscription() -> None:
    """Two subscriptions of one Sentence never share a buffer."""
    sentence = Sentence()
    a: Subject[F.Frame] = Subject()
    b: Subject[F.Frame] = Subject()
    out_a: list[F.Frame] = []
    out_b: list[F.Frame] = []
    a.pipe(sentence).subscribe(out_a.append)
    b.pipe(sentence).subscribe(out_b.append)
    a.on_next(F.TextFrame("Alpha "))
    b.on_next(F.TextFrame("Beta. Two"))
    a.on_next(F.TextFrame("end. Three"))
    assert out_a == [F.TextFrame("Alpha end.")]
    assert out_b == [F.TextFrame("Beta.")]


# ------------------------------------------------------------------------------------- LLMText


def test_llmtext_confirms_a_sentence_by_what_follows_and_flushes_at_the_end() -> None:
    """The seed's tokens: "Hello, world." goes out when "Next" arrives; "Next one" at the response end."""
    legend = tokens("Hello", ",", " world", ". ", "Next", " one")
    rec = run(LLMText(), "S012345E", legend)
    assert rec.down == [
        (0, RS),
        (500, F.AggregatedTextFrame("Hello, world.", raw_text="Hello, world.", append_to_context=True)),
        (700, F.AggregatedTextFrame("Next one", raw_text="Next one")),
        (700, RE),
    ]


def test_llmtext_consumes_the_tokens_it_gathers() -> None:
    """No LLMTextFrame leaves the operator; everything else passes in order."""
    legend = {**tokens("Hi. ", "There"), "t": F.TTSStartedFrame()}
    rec = run(LLMText(), "S-t-0-1-E", legend)
    assert rec.down_types() == [
        "LLMFullResponseStartFrame", "TTSStartedFrame", "AggregatedTextFrame", "AggregatedTextFrame",
        "LLMFullResponseEndFrame",
    ]


def test_llmtext_carries_the_skip_tts_decision() -> None:
    """Units take the token's skip_tts; the flushed unit takes the end frame's."""
    legend = {**tokens("One. ", "Two", skip_tts=True), "e": F.LLMFullResponseEndFrame(skip_tts=False)}
    rec = run(LLMText(), "S01e", legend)
    units = [f for _, f in rec.of_type(F.AggregatedTextFrame)]
    assert [(u.text, u.skip_tts) for u in units] == [("One.", True), ("Two", False)]  # type: ignore[attr-defined]


def test_llmtext_flushes_at_end_of_session() -> None:
    """EndFrame flushes what is held before it goes on."""
    rec = run(LLMText(), "S-0-Z", tokens("Unfinished"))
    assert rec.down_types() == ["LLMFullResponseStartFrame", "AggregatedTextFrame", "EndFrame"]


def test_llmtext_interruption_mid_sentence_drops_the_cut_off_text() -> None:
    """An interruption in the middle of a sentence drops it; the next response starts clean."""
    legend = tokens("Hello", " wor", "Fresh", " start.")
    rec = run(LLMText(), "S01I-S23E", legend)
    assert texts(rec) == ["Fresh start."]
    assert "InterruptionFrame" in rec.down_types()


def test_llmtext_interruption_mid_pattern_calls_no_handler() -> None:
    """Cut off inside an open pattern: its text is dropped and its handler never runs."""
    seen: list[PatternMatch] = []
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    agg.on_pattern_match("code", seen.append)
    legend = tokens("See <code>x", " = 1", "Ok. ", "Bye")
    rec = run(LLMText(agg), "S01I-S23E", legend)
    assert texts(rec) == ["See", "Ok.", "Bye"]
    assert seen == []


def test_llmtext_pattern_actions_and_types() -> None:
    """REMOVE deletes (handler called once), KEEP keeps its delimiters, AGGREGATE is a typed unit of its own."""
    seen: list[PatternMatch] = []
    agg = (
        PatternPairAggregator()
        .add_pattern("voice", "<voice>", "</voice>", MatchAction.REMOVE)
        .add_pattern("em", "<em>", "</em>", MatchAction.KEEP)
        .add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
        .on_pattern_match("voice", seen.append)
    )
    legend = tokens("Hi <voi", "ce>calm</voice> I am <em>very</em> glad. ", "See <code>x", " = 1</code> ok.")
    rec = run(LLMText(agg), "S0123E", legend)
    units = [(f.text, f.aggregated_by, f.raw_text) for _, f in rec.of_type(F.AggregatedTextFrame)]  # type: ignore[attr-defined]
    assert units == [
        ("Hi  I am <em>very</em> glad.", "sentence", "Hi  I am <em>very</em> glad."),
        ("See", "sentence", "See"),
        ("x = 1", "code", "<code>x = 1</code>"),
        ("ok.", "sentence", "ok."),
    ]
    assert seen == [PatternMatch("voice", "calm", "<voice>calm</voice>")]


def test_llmtext_skip_tags_keep_a_spelled_span_whole() -> None:
    """No sentence ends inside <spell>…</spell>."""
    legend = tokens("My email is <spell>foo.", "bar@pipecat.ai</spell>. ", "Thanks.")
    rec = run(LLMText(SkipTagsAggregator()), "S012E", legend)
    assert texts(rec) == ["My email is <spell>foo.bar@pipecat.ai</spell>.", "Thanks."]


def test_llmtext_token_mode_passes_tokens_through() -> None:
    """Token aggregation: one unit per token, typed "token", keeping its own spacing."""
    legend = tokens("Hello", " world")
    rec = run(LLMText(SimpleTextAggregator("token")), "S01E", legend)
    units = [f for _, f in rec.of_type(F.AggregatedTextFrame)]
    assert [(u.text, u.aggregated_by, u.includes_inter_frame_spaces) for u in units] == [  # type: ignore[attr-defined]
        ("Hello", "token", True), (" world", "token", True),
    ]


def test_llmtext_unbalanced_patterns() -> None:
    """An unclosed pattern is cut at the response end; a stray end delimiter is plain text."""
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    legend = tokens("Stray </code> here. ", "Then <code>never closed", " at all")
    rec = run(LLMText(agg), "S012E", legend)
    assert texts(rec) == ["Stray </code> here.", "Then"]


def test_llmtext_overlapping_patterns() -> None:
    """Two patterns sharing a start delimiter are refused; interleaved patterns do not nest."""
    with pytest.raises(ConfigurationError):
        PatternPairAggregator().add_pattern("a", "<x>", "</a>").add_pattern("b", "<x>", "</b>")
    agg = (
        PatternPairAggregator()
        .add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
        .add_pattern("v", "<v>", "</v>", MatchAction.REMOVE)
    )
    rec = run(LLMText(agg), "S0E", tokens("A <code>x <v>y</code> z</v> end."))
    units = [(f.text, f.aggregated_by) for _, f in rec.of_type(F.AggregatedTextFrame)]  # type: ignore[attr-defined]
    assert units == [("A", "sentence"), ("x <v>y", "code"), ("z</v> end.", "sentence")]


def test_llmtext_reset_clears_what_a_running_session_gathered() -> None:
    """reset() drops the held text of a live subscription (inside its session)."""
    op = LLMText()
    src: Subject[F.Frame] = Subject()
    out: list[F.Frame] = []
    src.pipe(op).subscribe(out.append)
    src.on_next(F.LLMTextFrame("Dropped"))
    op.reset()
    src.on_next(F.LLMTextFrame("Kept"))
    src.on_next(F.LLMFullResponseEndFrame())
    assert [f.text for f in out if isinstance(f, F.AggregatedTextFrame)] == ["Kept"]


def test_llmtext_leaves_upstream_frames_alone() -> None:
    """Tokens travelling upstream are not aggregated."""
    rec = run(LLMText(), "", up="0", legend=tokens("Up. "))
    assert rec.up_frames() == [F.LLMTextFrame("Up. ")]


def test_llmtext_gives_each_session_its_own_aggregator() -> None:
    """One aggregator instance, two live subscriptions: the second works on a copy; a factory builds one each."""
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    for op in (LLMText(agg), LLMText(lambda: SimpleTextAggregator())):
        a: Subject[F.Frame] = Subject()
        b: Subject[F.Frame] = Subject()
        out_a: list[F.Frame] = []
        out_b: list[F.Frame] = []
        a.pipe(op).subscribe(out_a.append)
        b.pipe(op).subscribe(out_b.append)
        a.on_next(F.LLMTextFrame("Alpha"))
        b.on_next(F.LLMTextFrame("Beta"))
        a.on_next(RE)
        b.on_next(RE)
        assert [f.text for f in out_a if isinstance(f, F.AggregatedTextFrame)] == ["Alpha"]
        assert [f.text for f in out_b if isinstance(f, F.AggregatedTextFrame)] == ["Beta"]


def test_llmtext_refuses_what_is_not_an_aggregator() -> None:
    """A value that is neither an aggregator nor a factory is a configuration error."""
    with pytest.raises(ConfigurationError):
        LLMText(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        reactivex.of(F.LLMTextFrame("x")).pipe(LLMText(lambda: "nope")).subscribe()  # type: ignore[arg-type,return-value]


def test_llmtext_feeds_the_assistant_the_written_form() -> None:
    """LLMText before the assistant: the context records each unit's raw text, joined with spaces."""
    pair = Pair()
    agg = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
    legend = tokens("Try ", "<code>x = 1</code>", " now. ", "Bye")
    run(pipeline(LLMText(agg), pair.assistant()), "S0123E", legend)
    assert [m["content"] for m in pair.context().messages] == ["Try <code>x = 1</code> now. Bye"]


def test_llmtext_as_a_stage_in_a_pipeline() -> None:
    """As a duplex stage it aggregates downstream and passes upstream frames both ways."""
    legend = {**tokens("Hi there"), "u": F.BotStartedSpeakingFrame()}
    rec = run(pipeline(LLMText()), "S-0-E", legend, up="u")
    assert rec.down_types() == ["LLMFullResponseStartFrame", "AggregatedTextFrame", "LLMFullResponseEndFrame"]
    assert rec.up_types() == ["BotStartedSpeakingFrame"]


# --------------------------------------------------------------------------------- FullResponse


def completions(rec: Recording) -> list[Completion]:
    return [p for _, p in rec.events_named("on_completion")]


def test_full_response_reports_a_whole_response_and_forwards_everything() -> None:
    """Start, tokens, end: one Completion(text, True); every frame leaves untouched."""
    full = FullResponse()
    legend = tokens("Hello ", "there!")
    rec = run(full, "S01E", legend, watch=[full])
    assert completions(rec) == [Completion("Hello there!", True)]
    assert rec.down_frames() == [RS, legend["0"], legend["1"], RE]


def test_full_response_reports_what_an_interruption_cut_short() -> None:
    """An interruption mid-response reports what was said so far, completed False; the next is whole."""
    full = FullResponse()
    legend = tokens("Hello ", "there!")
    rec = run(full, "S0I-S01E", legend, watch=[full])
    assert completions(rec) == [Completion("Hello ", False), Completion("Hello there!", True)]


def test_full_response_ignores_text_outside_a_response() -> None:
    """Tokens before the start frame are not gathered."""
    full = FullResponse()
    rec = run(full, "0-S1E", tokens("early ", "late"), watch=[full])
    assert completions(rec) == [Completion("late", True)]


def test_full_response_reports_an_empty_response() -> None:
    """Start then end reports empty text, completed."""
    full = FullResponse()
    rec = run(full, "SE", watch=[full])
    assert completions(rec) == [Completion("", True)]


def test_full_response_accounts_for_every_interruption() -> None:
    """As in both references, an interruption with no response in progress reports empty, not completed."""
    full = FullResponse()
    rec = run(full, "I", watch=[full])
    assert completions(rec) == [Completion("", False)]


def test_full_response_ignores_upstream_frames() -> None:
    """Frames travelling upstream are forwarded, not gathered."""
    full = FullResponse()
    rec = run(full, "", up="S0E", legend=tokens("up"), watch=[full])
    assert completions(rec) == []
    assert rec.up_types() == ["LLMFullResponseStartFrame", "LLMTextFrame", "LLMFullResponseEndFrame"]


def test_text_operators_are_processors_usable_both_ways() -> None:
    """Each operator works as source.pipe(op) and as a pipeline stage, with direction constants shared."""
    for op in (Sentence(), LLMText(), FullResponse()):
        got: list[F.Frame] = []
        reactivex.of(F.StartFrame()).pipe(op).subscribe(got.append)
        assert got == [F.StartFrame()]
        assert pipeline(op).stages[0] is op
    assert DOWN.opposite.opposite is DOWN

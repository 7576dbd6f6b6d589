"""A classifier-gated end of turn: any stop strategy's "end" is asked again, as a choice question.

:class:`ClassifierStop` wraps a stop strategy. When that strategy ends the
turn, the end is held and a :class:`TurnCompletionClassifier` is asked,
off the session, over the turn's words and the recent conversation:

* ``complete``: the held end goes through (the classifier agreed);
* ``short_pause`` / ``long_pause``: the turn stays open, bounded
  (``short_timeout``, ``long_timeout``: 5 s and 10 s by default): when the
  user goes on, the whole turn is asked again at its next end; when the
  bound passes in silence, the held end goes through;
* no answer within ``fail_open_after`` (1 s), an error, or an answer that is
  none of the three: the held end goes through, so a slow or broken
  classifier never adds more than ``fail_open_after`` of dead air.

Each verdict (and each failure) raises ``on_user_turn_classified`` with a
:class:`TurnClassified`. While the classifier thinks, the end is likely:
:class:`~rxvoice.turns.strategy.Likely` is raised, so a speculative reply
(``TurnsConfig(speculate=...)``) can be asked in that time.

:class:`CompletionClassifier` answers from the words alone
(:mod:`rxvoice.turns.completion`), for tests and offline use; an
OpenAI-compatible model answers in :class:`rxvoice.services.openai.OpenAITurnClassifier`.
Everything here is pure: the question runs as an
:class:`~rxvoice.turns.strategy.Analyze` effect, the bounds as timers.

.. marble::
    :alt: the inner strategy's end, held while the classifier answers

    inner   ----e-----------|
    answer  ------(complete)|
    [ ClassifierStop ]
    turn    ------E---------|
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from .._seconds import check_seconds
from ..errors import ConfigurationError
from ..frames import Frame, LLMContextAssistantTurnFrame, TranscriptionFrame, VADUserStartedSpeakingFrame
from .completion import Completion, completion_rules
from .reasons import TurnEndReason
from .reports import EVENT_USER_TURN_CLASSIFIED
from .strategy import (
    LIKELY,
    NOTHING,
    Analyze,
    Arm,
    Disarm,
    Effect,
    Effects,
    Finalize,
    Inference,
    Notify,
    StopStrategy,
)
from .words_wait import has_words

__all__ = [
    "ClassifierState",
    "ClassifierStop",
    "ClassifyRequest",
    "CompletionClassifier",
    "TurnClassified",
    "TurnCompletion",
    "TurnCompletionClassifier",
    "parse_completion",
]


class TurnCompletion(enum.Enum):
    """What a classifier says of a turn end."""

    COMPLETE = "complete"
    """The user is done and expects an answer."""
    SHORT_PAUSE = "short_pause"
    """The user paused and goes on within a few seconds."""
    LONG_PAUSE = "long_pause"
    """The user asked for time (looking something up, thinking)."""


_ALIASES: dict[str, TurnCompletion] = {
    "complete": TurnCompletion.COMPLETE, "completed": TurnCompletion.COMPLETE, "done": TurnCompletion.COMPLETE,
    "finished": TurnCompletion.COMPLETE, "a": TurnCompletion.COMPLETE, "●": TurnCompletion.COMPLETE,
    "short": TurnCompletion.SHORT_PAUSE, "short_pause": TurnCompletion.SHORT_PAUSE, "b": TurnCompletion.SHORT_PAUSE,
    "incomplete_short": TurnCompletion.SHORT_PAUSE, "◐": TurnCompletion.SHORT_PAUSE,
    "long": TurnCompletion.LONG_PAUSE, "long_pause": TurnCompletion.LONG_PAUSE, "c": TurnCompletion.LONG_PAUSE,
    "incomplete_long": TurnCompletion.LONG_PAUSE, "○": TurnCompletion.LONG_PAUSE,
}
_WORD = re.compile(r"[\w●◐○]+", re.UNICODE)


def parse_completion(answer: object) -> TurnCompletion | None:
    """A classifier's answer as a :class:`TurnCompletion` (``None``: junk).

    Takes the enum, or text whose first word is one of ``complete`` /
    ``short`` / ``long`` (also ``short_pause``, ``long_pause``, the letters of
    a choice question ``A``/``B``/``C``, or the markers ``●``/``◐``/``○``).
    """
    if isinstance(answer, TurnCompletion):
        return answer
    if not isinstance(answer, str):
        return None
    text = answer.strip().lower().replace(" pause", "_pause").replace("-", "_")
    m = _WORD.search(text)
    return _ALIASES.get(m.group(0)) if m else None


class ClassifyRequest(NamedTuple):
    """What a classifier is asked about: the turn's words so far and the recent conversation.

    ``conversation`` holds ``{"role", "content"}`` mappings, oldest first:
    the bot's turns (as the assistant wrote them) and the user's earlier
    turns, as this strategy heard them; ``words`` is the turn being judged.
    """

    words: str
    conversation: tuple[Mapping[str, str], ...] = ()


@runtime_checkable
class TurnCompletionClassifier(Protocol):
    """Judges whether a user turn is over: ``complete``, ``short_pause`` or ``long_pause``.

    ``classify`` runs off the session (it may block on a model); it returns
    a :class:`TurnCompletion` or text :func:`parse_completion` reads, and may
    raise (the inner strategy's end then stands).
    """

    def classify(self, request: ClassifyRequest) -> TurnCompletion | str:
        """The verdict on ``request``."""
        ...


_HOLD_ON = re.compile(
    r"\b(hold on|hang on|one (moment|sec|second|minute)|just a (moment|sec|second|minute)|"
    r"give me a (moment|sec|second|minute)|let me (check|see|look|think|find)|wait a (moment|sec|second|minute))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CompletionClassifier:
    """A rule-based classifier over the transcript-completion signal (offline, instant, for tests too).

    Finished words (or words no rule decides) are ``complete``; unfinished
    words ("a table for", "um") and a number or spelling being read are a
    ``short_pause``; asking for time ("hold on", "let me check") is a
    ``long_pause``.
    """

    language: str = "en"

    def classify(self, request: ClassifyRequest) -> TurnCompletion:
        words = request.words.strip()
        if _HOLD_ON.search(words[-60:]):
            return TurnCompletion.LONG_PAUSE
        rules = completion_rules(self.language)
        if rules is None or not words:
            return TurnCompletion.COMPLETE
        verdict = rules.judge(words)
        if verdict.completion is Completion.INCOMPLETE:
            return TurnCompletion.SHORT_PAUSE
        return TurnCompletion.COMPLETE


@dataclass(frozen=True, slots=True)
class TurnClassified:
    """The payload of ``on_user_turn_classified``.

    ``outcome``: ``complete``, ``short_pause``, ``long_pause`` (the
    classifier's verdict), ``pause_over`` (a pause's bound passed in silence:
    the turn ended), ``failed`` (the classifier raised, or answered junk) or
    ``timed_out`` (no answer within ``fail_open_after``); ``ended``: whether
    the turn ended on it; ``waited``: seconds since the inner strategy's end;
    ``detail``: the classifier's answer or error, in words.
    """

    outcome: str
    ended: bool
    waited: float
    words: str
    detail: str = ""


class ClassifierState(NamedTuple):
    """Where a classifier-gated decision stands (one session's, never mutated)."""

    inner: Any
    phase: str = "idle"
    """``idle``, ``asking`` (the end is held) or ``paused`` (a pause is being waited out)."""
    held: Effects = ()
    """The inner strategy's end (its inference and finalize), held."""
    ask: int = 0
    """Counts the questions asked (an answer to an older one is ignored)."""
    ended_at: float = 0.0
    """When the inner strategy ended the turn."""
    words: str = ""
    """The turn's words, as heard here."""
    conversation: tuple[Mapping[str, str], ...] = ()
    open: bool = False
    """A turn is open (an end outside one is the machine's to ignore, not a question to ask)."""


_FAIL_OPEN = "classifier.fail_open"
_PAUSE = "classifier.pause"
_ASK = "classifier.ask"
_OURS: Effects = (Disarm(_FAIL_OPEN), Disarm(_PAUSE))


def _split_end(effects: Effects) -> tuple[Effects, Effects]:
    """``(the rest, the end)``: the inner strategy's inference and finalize, taken out when it finalizes."""
    if not any(type(e) is Finalize for e in effects):
        return effects, NOTHING
    end = tuple(e for e in effects if type(e) is Finalize or type(e) is Inference)
    rest = tuple(e for e in effects if type(e) is not Finalize and type(e) is not Inference)
    return rest, end


def _with_detail(end: Effects, detail: str) -> Effects:
    """The held end, its reason saying what the classifier did."""
    out: list[Effect] = []
    for e in end:
        if isinstance(e, Finalize) and isinstance(e.reason, TurnEndReason):
            out.append(replace(e, reason=replace(e.reason, text=f"{e.reason.text}; {detail}")))
        else:
            out.append(e)
    return tuple(out)


@dataclass(frozen=True)
class ClassifierStop(StopStrategy[ClassifierState]):
    """Wraps a stop strategy: its end is confirmed by a turn-completion classifier (complete / short / long).

    Args:
        inner: The stop strategy whose end is asked about (e.g. ``FusedTurnStop(...)``).
        classifier: A :class:`TurnCompletionClassifier`.
        fail_open_after: Seconds the answer is awaited before the inner
            strategy's end stands, in ``(0, 10]``.
        short_timeout: Seconds a ``short_pause`` keeps the turn open without
            speech, in ``(0, 60]``.
        long_timeout: Seconds a ``long_pause`` keeps it open, in ``[short_timeout, 120]``.
        history: Messages of the conversation the classifier is given, in ``[0, 50]``.

    Raises:
        ConfigurationError: a parameter out of range, an ``inner`` that is
            not a stop strategy, a ``classifier`` without ``classify``.
    """

    inner: StopStrategy[Any] = field(default=None)  # type: ignore[arg-type]
    classifier: TurnCompletionClassifier = field(default_factory=CompletionClassifier)
    fail_open_after: float = 1.0
    short_timeout: float = 5.0
    long_timeout: float = 10.0
    history: int = 6
    _handles: frozenset[type[Frame]] = field(default=frozenset(), init=False, repr=False, compare=False)
    watched: ClassVar[frozenset[type[Frame]]] = frozenset(
        {TranscriptionFrame, VADUserStartedSpeakingFrame, LLMContextAssistantTurnFrame}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.inner, StopStrategy) or isinstance(self.inner, ClassifierStop):
            raise ConfigurationError(f"ClassifierStop wraps a stop strategy (not another ClassifierStop), "
                                     f"got {self.inner!r}")
        if not callable(getattr(self.classifier, "classify", None)):
            raise ConfigurationError(f"ClassifierStop needs a classifier with classify(request), got "
                                     f"{self.classifier!r}")
        check_seconds(self.fail_open_after, "ClassifierStop.fail_open_after", positive=True, high=10.0)
        check_seconds(self.short_timeout, "ClassifierStop.short_timeout", positive=True, high=60.0)
        check_seconds(self.long_timeout, "ClassifierStop.long_timeout", low=self.short_timeout, high=120.0)
        h = self.history
        if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h <= 50:
            raise ConfigurationError(f"ClassifierStop.history must be a whole number in 0..50, got {h!r}")
        object.__setattr__(self, "_handles", frozenset(self.inner.handles | self.watched))
        object.__setattr__(self, "enable_user_speaking_frames", self.inner.enable_user_speaking_frames)

    @property
    def handles(self) -> frozenset[type[Frame]]:  # type: ignore[override]
        return self._handles

    @property
    def resolves_proposals(self) -> bool:  # type: ignore[override]
        return self.inner.resolves_proposals

    @property
    def name(self) -> str:
        return f"ClassifierStop({self.inner.name})"

    # -- the held end --------------------------------------------------------------------------

    def _request(self, s: ClassifierState) -> ClassifyRequest:
        conversation = s.conversation[-self.history:] if self.history else ()
        return ClassifyRequest(s.words, conversation)

    def _inner(self, s: ClassifierState, inner: Any, effects: Effects, now: float) -> tuple[ClassifierState, Effects]:
        """The inner strategy's new state and effects: an end it decides is held and asked about."""
        rest, end = _split_end(effects)
        s = s._replace(inner=inner)
        if not end or not s.open:
            return s, effects if end else rest
        if s.phase == "asking":
            return s, rest  # the end already held is being asked about
        ask = s.ask + 1
        request = self._request(s)
        classifier = self.classifier

        def question(_resource: Any) -> Any:
            return classifier.classify(request)

        s = s._replace(phase="asking", held=end, ask=ask, ended_at=now)
        return s, (*rest, Disarm(_PAUSE), LIKELY, Analyze(f"{_ASK}:{ask}", question),
                   Arm(_FAIL_OPEN, self.fail_open_after))

    def _release(self, s: ClassifierState, now: float, outcome: str, detail: str) -> tuple[ClassifierState, Effects]:
        """The held end goes through (reported)."""
        report = TurnClassified(outcome, True, round(now - s.ended_at, 6), s.words, detail)
        end = _with_detail(s.held, f"classifier: {detail}")
        return s._replace(phase="idle", held=()), (*_OURS, Notify(EVENT_USER_TURN_CLASSIFIED, report), *end)

    # -- the strategy ---------------------------------------------------------------------------

    def initial(self) -> ClassifierState:
        return ClassifierState(self.inner.initial())

    def open_resource(self, sample_rate: int) -> Any:
        return self.inner.open_resource(sample_rate)

    def close_resource(self, resource: Any) -> None:
        self.inner.close_resource(resource)

    def on_frame(self, state: ClassifierState, frame: Frame, now: float) -> tuple[ClassifierState, Effects]:
        s = state
        t = type(frame)
        pre: Effects = NOTHING
        if t is LLMContextAssistantTurnFrame:
            text = getattr(frame, "text", "")
            if isinstance(text, str) and text.strip():
                s = s._replace(conversation=(*s.conversation, {"role": "assistant", "content": text.strip()}))
        elif t is TranscriptionFrame and has_words(frame):
            text = frame.text.strip()  # type: ignore[attr-defined]
            s = s._replace(words=f"{s.words} {text}" if s.words else text)
        elif t is VADUserStartedSpeakingFrame and s.phase != "idle":
            # The user went on: the held end (or the pause) is over; the whole turn is asked again at its next end.
            s = s._replace(phase="idle", held=(), ask=s.ask + 1)
            pre = _OURS
        if t not in self.inner.handles:
            return s, pre
        inner, effects = self.inner.on_frame(s.inner, frame, now)
        s, out = self._inner(s, inner, effects, now)
        return s, (*pre, *out)

    def on_timer(self, state: ClassifierState, key: str, now: float) -> tuple[ClassifierState, Effects]:
        s = state
        if key == _FAIL_OPEN:
            if s.phase != "asking":
                return s, NOTHING
            return self._release(s, now, "timed_out", f"no answer within {self.fail_open_after:g} s")
        if key == _PAUSE:
            if s.phase != "paused":
                return s, NOTHING
            return self._release(s, now, "pause_over", "the pause passed in silence")
        inner, effects = self.inner.on_timer(s.inner, key, now)
        return self._inner(s, inner, effects, now)

    def on_result(self, state: ClassifierState, key: str, value: Any, now: float) -> tuple[ClassifierState, Effects]:
        s = state
        if not key.startswith(f"{_ASK}:"):
            inner, effects = self.inner.on_result(s.inner, key, value, now)
            return self._inner(s, inner, effects, now)
        if key != f"{_ASK}:{s.ask}" or s.phase != "asking":
            return s, NOTHING  # an answer to a question nobody waits for any more
        if isinstance(value, BaseException):
            return self._release(s, now, "failed", f"the classifier failed ({type(value).__name__}: {value})")
        verdict = parse_completion(value)
        if verdict is None:
            return self._release(s, now, "failed", f"the classifier answered {str(value)[:40]!r}")
        if verdict is TurnCompletion.COMPLETE:
            return self._release(s, now, "complete", "complete")
        bound = self.short_timeout if verdict is TurnCompletion.SHORT_PAUSE else self.long_timeout
        report = TurnClassified(verdict.value, False, round(now - s.ended_at, 6), s.words, verdict.value)
        return s._replace(phase="paused"), (Disarm(_FAIL_OPEN), Notify(EVENT_USER_TURN_CLASSIFIED, report),
                                            Arm(_PAUSE, bound))

    def on_turn_started(self, state: ClassifierState, now: float) -> tuple[ClassifierState, Effects]:
        inner, effects = self.inner.on_turn_started(state.inner, now)
        s = state._replace(phase="idle", held=(), ask=state.ask + 1, words="", open=True)
        out = self._inner(s, inner, effects, now)
        return out[0], (*_OURS, *out[1])

    def on_turn_stopped(self, state: ClassifierState, now: float) -> tuple[ClassifierState, Effects]:
        inner, effects = self.inner.on_turn_stopped(state.inner, now)
        conversation = state.conversation
        if state.words:
            conversation = (*conversation, {"role": "user", "content": state.words})
        s = state._replace(phase="idle", held=(), ask=state.ask + 1, words="", conversation=conversation[-50:],
                           open=False)
        rest, _ = _split_end(effects)
        return s._replace(inner=inner), (*_OURS, *rest)

    def on_turn_resumed(self, state: ClassifierState, words: str, now: float) -> tuple[ClassifierState, Effects]:
        inner, effects = self.inner.on_turn_resumed(state.inner, words, now)
        conversation = state.conversation
        if conversation and conversation[-1].get("role") == "user" and conversation[-1].get("content") == words:
            conversation = conversation[:-1]  # the reopened turn is this one again
        s = state._replace(words=words.strip(), conversation=conversation)
        return self._inner(s, inner, effects, now)


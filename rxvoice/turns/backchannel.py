"""Backchannels: a user's "mm-hmm" while the bot speaks is not a barge-in.

While the bot speaks, speech the user starts is held for a moment instead
of interrupting at once, **only while its words can still turn out to be a
continuer** ("mm-hmm", "yeah", "right", "okay", "I see": a per-language
list, :func:`register_backchannels`, and a hook for a model):

* words that cannot begin a continuer ("wait", "no", "yeah but") barge in
  at once, on the first interim transcript that shows it;
* speech longer than ``max_duration`` (1 s) barges in when it reaches it;
* short speech whose final words are a continuer is a backchannel: the bot
  goes on, nothing enters the conversation, a ``UserBackchannelFrame`` goes
  downstream and ``on_user_backchannel`` fires;
* short speech whose final words are something else barges in then.

So that a real interruption still silences the bot as fast as without
backchannels, the bot's speech is **paused** the moment held speech starts
(``pause``, on by default): a ``BotSpeechPauseFrame`` goes downstream, and
the output stages (:class:`~rxvoice.services.tts.TTSService`, the
WebSocket transport's output) stop playing at once and keep the rest. Then:

* a backchannel, or speech with no words at all (a cough), resumes it: a
  ``BotSpeechResumeFrame`` plays the rest from where it paused, the bot's
  turn goes on, nothing is cancelled. Speech the VAD heard end whose
  interim words are already a continuer resumes it then, without waiting
  for the final words (which still decide: no continuer, and the bot is
  interrupted then; more speech, and it pauses again);
* a barge-in turns the pause into the interruption it is (the
  ``InterruptionFrame`` drops what was paused);
* a pause that lasts ``max_pause`` (2 s) is a barge-in, whatever is still
  undecided: the bot never stays silent longer than that for a held word.

What a backchannel costs is then a gap in the bot's speech (from the start
of the continuer to its final words), and what a real interruption costs is
the time until its words show, before the reply is cancelled and the turn
opens (the bot is already silent). ``pause=False`` keeps the bot talking
through held speech (it is cut when the words show): no gap for a
backchannel, a later stop for a barge-in. ``docs/turn-taking.md`` has the
measured figures.

:class:`BackchannelStart` is a start strategy: put it first in the start
chain (it halts the chain for the speech it holds, so no later strategy
starts a turn on it), e.g.
``TurnsConfig(start=[BackchannelStart(), VADStart(), TranscriptionStart()])``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from .._seconds import check_seconds
from ..errors import ConfigurationError
from ..frames import (
    BotSpeechPauseFrame,
    BotSpeechResumeFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    UserBackchannelFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..text.blank import is_blank
from .reports import EVENT_USER_BACKCHANNEL, iso8601
from .speculation import normalized_words
from .strategy import HALT, NOTHING, RESET_AGGREGATION, Arm, Disarm, Effects, Notify, Push, Start, StartStrategy

__all__ = [
    "BackchannelStart",
    "BackchannelState",
    "backchannel_phrases",
    "is_continuer",
    "may_be_continuer",
    "register_backchannels",
]

_PHRASES: dict[str, frozenset[tuple[str, ...]]] = {}


def _words(text: str) -> tuple[str, ...]:
    return tuple(normalized_words(text.replace("-", " ")).split())


def register_backchannels(language: str, phrases: Iterable[str]) -> None:
    """The continuers and assessments of ``language`` (``"en"``, ``"fr"``, ...), replacing any before."""
    parsed = frozenset(w for w in (_words(p) for p in phrases) if w)
    if not parsed:
        raise ConfigurationError(f"register_backchannels({language!r}) needs at least one phrase")
    _PHRASES[language.lower().split("-")[0]] = parsed


def backchannel_phrases(language: str) -> frozenset[tuple[str, ...]]:
    """The registered continuers of ``language`` as word tuples (empty when none are registered)."""
    return _PHRASES.get(language.lower().split("-")[0], frozenset())


register_backchannels("en", (
    "mm-hmm", "mhm", "mm", "hmm", "mmm", "uh-huh", "uh huh", "huh", "yeah", "yes", "yep", "yup", "ya", "right",
    "okay", "ok", "oh okay", "sure", "i see", "oh i see", "got it", "alright", "all right", "oh", "ah", "aha",
    "wow", "cool", "great", "nice", "good", "true", "exactly", "really", "oh really", "makes sense", "sounds good",
    "of course", "absolutely", "indeed", "perfect", "fine", "i know", "totally", "gotcha",
))
register_backchannels("de", ("mhm", "hm", "ja", "jaja", "genau", "okay", "ok", "aha", "ach so", "stimmt",
                             "richtig", "klar", "super", "gut", "verstehe", "alles klar"))
register_backchannels("fr", ("mhm", "hm", "oui", "ouais", "d'accord", "ok", "okay", "ah bon", "je vois",
                             "voilà", "exactement", "bien sûr", "ah", "oh", "super", "parfait"))
register_backchannels("es", ("mhm", "sí", "si", "vale", "claro", "ya", "ajá", "aja", "exacto", "bueno", "vale vale",
                             "ah", "oh", "perfecto", "entiendo", "de acuerdo"))

_MAX_WORDS = 6


def _parse(words: tuple[str, ...], phrases: frozenset[tuple[str, ...]], partial: bool) -> bool:
    """Whether ``words`` split into continuers (``partial``: the last one may be a continuer's beginning)."""
    if not words:
        return True
    longest = max((len(p) for p in phrases), default=0)
    for n in range(1, min(longest, len(words)) + 1):
        head = words[:n]
        if head in phrases and _parse(words[n:], phrases, partial):
            return True
    if partial:
        return any(p[:len(words)] == words and len(p) > len(words) for p in phrases)
    return False


def is_continuer(text: str, language: str = "en") -> bool:
    """Whether ``text`` is a continuer or an assessment (or a few: "yeah yeah", "oh okay right")."""
    words = _words(text)
    return 0 < len(words) <= _MAX_WORDS and _parse(words, backchannel_phrases(language), False)


def may_be_continuer(text: str, language: str = "en") -> bool:
    """Whether ``text`` (the words so far) can still turn out to be a continuer (no words: yes)."""
    words = _words(text)
    return len(words) <= _MAX_WORDS and _parse(words, backchannel_phrases(language), True)


class BackchannelState(NamedTuple):
    """Where one session's backchannel watch stands (never mutated)."""

    bot_speaking: bool = False
    turn_open: bool = False
    holding: bool = False
    """Speech that started while the bot spoke is held (no turn, no interruption yet)."""
    speech_start: float = 0.0
    """When the held speech began (its VAD start minus ``start_secs``)."""
    speaking: bool = False
    finals: str = ""
    """The final words of the held speech."""
    guess: str = ""
    """The latest interim words after those finals."""
    final_last: bool = False
    """The latest words are final (no interim since)."""
    user_id: str = ""
    stop_secs: float = 0.2
    """The VAD's stop window (learnt from its stops): speech ended that long before the VAD says so."""
    paused: bool = False
    """The bot's speech is paused (a ``BotSpeechPauseFrame`` went out, no resume or interruption yet)."""
    heard: bool = False
    """The VAD heard the held speech (so its stop says when the speech ended)."""


_CAP = "cap"
_WORDS = "words"
_PAUSE = "pause"
_TIMERS: Effects = (Disarm(_CAP), Disarm(_WORDS))
_PAUSE_FRAME = BotSpeechPauseFrame()
_RESUME_FRAME = BotSpeechResumeFrame()


@dataclass(frozen=True)
class BackchannelStart(StartStrategy[BackchannelState]):
    """While the bot speaks, a short continuer does not start a turn: the bot goes on (put it first).

    Args:
        max_duration: Speech longer than this (seconds, from its start) is a
            barge-in, whatever its words; in ``(0, 5]``.
        words_timeout: Seconds after held speech ends to wait for its final
            words; then the interim words decide (none at all: the bot goes
            on, nothing was said); in ``(0, 5]``.
        language: Whose continuers (:func:`register_backchannels`).
        judge: A hook for a model: ``judge(words)`` returns ``True`` (a
            continuer), ``False`` (not one) or ``None`` (the list decides).
            It runs inline, on every transcript of held speech: keep it fast.
        pause: Pause the bot's speech while held speech is decided
            (``BotSpeechPauseFrame``, then ``BotSpeechResumeFrame`` or the
            interruption), so a barge-in silences it as fast as without
            backchannels. Off: the bot talks on until the words decide.
        max_pause: The longest a pause may last (seconds, from the pause);
            then it is a barge-in; in ``(0, 5]``.
    """

    max_duration: float = 1.0
    words_timeout: float = 1.0
    language: str = "en"
    judge: Callable[[str], bool | None] | None = field(default=None, compare=False)
    pause: bool = True
    max_pause: float = 2.0
    enable_interruptions: bool = True
    enable_user_speaking_frames: bool = True
    handles: ClassVar[frozenset[type[Frame]]] = frozenset({
        BotStartedSpeakingFrame, BotStoppedSpeakingFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame,
        TranscriptionFrame, InterimTranscriptionFrame,
    })

    def __post_init__(self) -> None:
        check_seconds(self.max_duration, "BackchannelStart.max_duration", positive=True, high=5.0)
        check_seconds(self.words_timeout, "BackchannelStart.words_timeout", positive=True, high=5.0)
        check_seconds(self.max_pause, "BackchannelStart.max_pause", positive=True, high=5.0)
        if not isinstance(self.pause, bool):
            raise ConfigurationError(f"BackchannelStart.pause must be a bool, got {self.pause!r}")
        if not isinstance(self.language, str) or not backchannel_phrases(self.language):
            raise ConfigurationError(
                f"BackchannelStart.language: no continuers registered for {self.language!r} "
                "(register_backchannels adds them)"
            )
        if self.judge is not None and not callable(self.judge):
            raise ConfigurationError(f"BackchannelStart.judge must be callable, got {self.judge!r}")

    # -- the words -----------------------------------------------------------------------------

    def _judged(self, words: str) -> bool | None:
        if self.judge is None:
            return None
        try:
            verdict = self.judge(words)
        except Exception:  # an app's model must not break the turn: the list decides
            return None
        return verdict if isinstance(verdict, bool) else None

    def continuer(self, words: str) -> bool:
        """Whether ``words`` are a continuer (the hook first, then the list)."""
        judged = self._judged(words)
        return judged if judged is not None else is_continuer(words, self.language)

    def may_be(self, words: str) -> bool:
        """Whether ``words`` so far can still turn out to be a continuer."""
        if not words:
            return True
        judged = self._judged(words)
        if judged is not None:
            return judged
        return may_be_continuer(words, self.language)

    # -- outcomes ------------------------------------------------------------------------------

    def _pausing(self) -> bool:
        return self.pause and self.enable_interruptions  # without interruptions nothing would end the pause

    def _hold(self, s: BackchannelState) -> tuple[BackchannelState, Effects]:
        """Held speech begins: the bot's speech pauses now, for at most ``max_pause``."""
        if not self._pausing():
            return s, NOTHING
        return s._replace(paused=True), (Push(_PAUSE_FRAME), Arm(_PAUSE, self.max_pause))

    @staticmethod
    def _resume(s: BackchannelState) -> tuple[BackchannelState, Effects]:
        """The bot's turn goes on: the paused speech plays on (nothing when it was not paused)."""
        if not s.paused:
            return s, NOTHING
        return s._replace(paused=False), (Disarm(_PAUSE), Push(_RESUME_FRAME))

    def _barge_in(self, s: BackchannelState) -> tuple[BackchannelState, Effects]:
        # The interruption the turn's start sends drops what was paused: no resume.
        return s._replace(holding=False, paused=False), (*_TIMERS, Disarm(_PAUSE), Start(), HALT)

    def _backchannel(self, s: BackchannelState, words: str, now: float) -> tuple[BackchannelState, Effects]:
        frame = UserBackchannelFrame(words, s.user_id, iso8601(now))
        s, resumed = self._resume(s._replace(holding=False, finals="", guess=""))
        return s, (*_TIMERS, *resumed, RESET_AGGREGATION, Push(frame), Notify(EVENT_USER_BACKCHANNEL, frame), HALT)

    def _nothing_said(self, s: BackchannelState) -> tuple[BackchannelState, Effects]:
        s, resumed = self._resume(s._replace(holding=False, finals="", guess=""))
        return s, (*_TIMERS, *resumed, RESET_AGGREGATION, HALT)

    @staticmethod
    def _so_far(s: BackchannelState) -> str:
        return f"{s.finals} {s.guess}".strip() if s.guess else s.finals

    def _judge(self, s: BackchannelState, now: float) -> tuple[BackchannelState, Effects]:
        """Held speech with new words, or that just ended: barge in, call it a backchannel, or go on holding."""
        words = self._so_far(s)
        if not self.may_be(words):
            return self._barge_in(s)
        if not s.speaking and words and s.final_last:
            return self._backchannel(s, words, now) if self.continuer(words) else self._barge_in(s)
        if s.paused and s.heard and not s.speaking and words and self.continuer(words):
            # The speech is over and its interim words are a continuer: the bot goes on now, not at the final
            # words (which still decide: words that turn out to be no continuer interrupt then).
            s, resumed = self._resume(s)
            return s, (*resumed, HALT)
        return s, (HALT,)

    # -- the strategy ---------------------------------------------------------------------------

    def initial(self) -> BackchannelState:
        return BackchannelState()

    def on_frame(self, state: BackchannelState, frame: Frame, now: float) -> tuple[BackchannelState, Effects]:
        s = state
        t = type(frame)
        if t is BotStartedSpeakingFrame:
            return s._replace(bot_speaking=True), NOTHING
        if t is BotStoppedSpeakingFrame:
            # The bot finished (an output that does not pause, or its last sound already out): nothing to resume.
            return s._replace(bot_speaking=False, paused=False), ((Disarm(_PAUSE),) if s.paused else NOTHING)
        if s.turn_open:
            return s, NOTHING
        if t is VADUserStartedSpeakingFrame:
            if s.holding:
                s = s._replace(speaking=True, heard=True)  # more of the same held speech
                again: Effects = NOTHING
                if s.bot_speaking and not s.paused:
                    s, again = self._hold(s)  # resumed on its interim words, and it goes on: paused again
                return s, (*again, Disarm(_WORDS), HALT)
            if not s.bot_speaking:
                return s, NOTHING
            start = now - float(getattr(frame, "start_secs", 0.0))
            s, paused = self._hold(BackchannelState(True, False, True, start, True, stop_secs=s.stop_secs, heard=True))
            # Still speaking, as far as the VAD can tell, max_duration after the speech began: a barge-in.
            cap = start + self.max_duration + s.stop_secs - now
            return s, (*paused, Disarm(_WORDS), Arm(_CAP, max(0.0, cap)), HALT)
        if t is VADUserStoppedSpeakingFrame:
            stop_secs = float(getattr(frame, "stop_secs", 0.0))
            s = s._replace(stop_secs=stop_secs)
            if not s.holding:
                return s, NOTHING
            end = now - stop_secs
            s = s._replace(speaking=False)
            if end - s.speech_start > self.max_duration:
                return self._barge_in(s)
            s, judged = self._judge(s, now)
            return s, ((Arm(_WORDS, self.words_timeout), *judged) if s.holding else judged)
        # a transcript
        text = getattr(frame, "text", "")
        if not isinstance(text, str) or is_blank(text):
            return s, ((HALT,) if s.holding else NOTHING)
        final = t is TranscriptionFrame
        if not s.holding:
            if not s.bot_speaking:
                return s, NOTHING
            # Words the VAD did not hear while the bot speaks: held the same way, from now.
            if not self.may_be(text.strip()):
                return s, NOTHING  # the next strategy (a transcription start) barges in
            s, paused = self._hold(BackchannelState(True, False, True, now, False, stop_secs=s.stop_secs))
            effects: Effects = (*paused, Arm(_CAP, self.max_duration), Arm(_WORDS, self.words_timeout))
        else:
            effects = NOTHING
        uid = getattr(frame, "user_id", "") or s.user_id
        if final:
            finals = f"{s.finals} {text.strip()}".strip()
            s = s._replace(finals=finals, guess="", final_last=True, user_id=uid)
        else:
            s = s._replace(guess=text.strip(), final_last=False, user_id=uid)
        s, judged = self._judge(s, now)
        return s, (*effects, *judged)

    def on_timer(self, state: BackchannelState, key: str, now: float) -> tuple[BackchannelState, Effects]:
        s = state
        if key == _PAUSE and s.paused:
            if s.holding:
                return self._barge_in(s)  # paused for max_pause and still undecided: a barge-in
            return self._resume(s)  # a turn another strategy opened without an interruption: the bot goes on
        if not s.holding:
            return s, NOTHING
        if key == _CAP:
            if s.speaking:
                return self._barge_in(s)  # still talking at max_duration: a barge-in
            return s, NOTHING
        if key == _WORDS:  # the speech ended and its final words did not come
            words = self._so_far(s)
            if not words:
                return self._nothing_said(s)
            return self._backchannel(s, words, now) if self.continuer(words) else self._barge_in(s)
        return s, NOTHING

    def on_turn_started(self, state: BackchannelState, now: float) -> tuple[BackchannelState, Effects]:
        # A pause outlives a turn another strategy opened: its interruption drops the paused speech, and
        # when it has none, the bound resumes it (a resume here would play a moment before that interruption).
        return state._replace(turn_open=True, holding=False, finals="", guess=""), _TIMERS

    def on_turn_stopped(self, state: BackchannelState, now: float) -> tuple[BackchannelState, Effects]:
        return state._replace(turn_open=False), NOTHING

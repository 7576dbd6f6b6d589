"""Frame types: the values that travel through an rxvoice pipeline.

Frames are immutable (``frozen=True, slots=True``) so a frame handed to one
stage can never be changed under another. They come in three kinds, as in
Pipecat:

* **system** frames (interruptions, speaking and mute notices, cancel) are
  never held back: they pass every gate;
* **data** frames (audio, text, transcriptions, contexts) carry the
  conversation;
* **control** frames (response start and end, end of stream) delimit it.

A frame does not carry its direction: the stream it travels on does.
Class names and field names follow Pipecat where it has them, so Pipecat
users feel at home.

Frames check what they carry when they are made, so a bad value fails where
it was written, with a typed error, instead of deep inside a timer or an HTTP
request later:

* numbers (durations, latencies, timestamps, counts) must be real numbers in
  range: not ``bool``, not strings, not ``None``, not NaN or infinite, and no
  duration longer than :data:`MAX_SECONDS` (one day); flags must be ``bool``
  (:class:`~rxvoice.errors.InvalidFrameFieldError`);
* text must be a ``str`` (:class:`~rxvoice.errors.InvalidTranscriptError`);
  lone surrogates, which UTF-8 cannot encode, are repaired (a surrogate pair
  becomes its character, a lone half becomes U+FFFD), and a transcript with
  no visible character (whitespace or invisible characters only, such as a
  zero-width space or a byte-order mark) carries the empty string;
* tool calls must name a function and a call id, their arguments must be a
  mapping (or a string holding a JSON object) of JSON data, and a tool's
  result must be JSON data, finite numbers only
  (:class:`~rxvoice.errors.InvalidToolCallError`).
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ._seconds import MAX_SECONDS as _MAX_SECONDS
from ._seconds import check_seconds
from .errors import InvalidAudioError, InvalidFrameFieldError, InvalidToolCallError, InvalidTranscriptError
from .text.blank import is_blank, repair_surrogates

__all__ = [
    "DOWN",
    "MAX_SECONDS",
    "SPECULATION_OUTCOMES",
    "UP",
    "AggregatedTextFrame",
    "AggregationType",
    "BotBackchannelFrame",
    "BotSpeakingFrame",
    "BotSpeechPauseFrame",
    "BotSpeechResumeFrame",
    "BotStartedSpeakingFrame",
    "BotStoppedSpeakingFrame",
    "CancelFrame",
    "ControlFrame",
    "DataFrame",
    "Direction",
    "EagerEndOfTurnCancelFrame",
    "EndFrame",
    "ErrorFrame",
    "FatalErrorFrame",
    "Frame",
    "FrameKind",
    "FunctionCallCancelFrame",
    "FunctionCallFromLLM",
    "FunctionCallInProgressFrame",
    "FunctionCallResultFrame",
    "FunctionCallResultProperties",
    "FunctionCallsStartedFrame",
    "InputAudioRawFrame",
    "InterimTranscriptionFrame",
    "InterruptionFrame",
    "LLMAssistantPushAggregationFrame",
    "LLMContextAssistantTimestampFrame",
    "LLMContextAssistantTurnFrame",
    "LLMContextFrame",
    "LLMContextSummaryRequestFrame",
    "LLMContextSummaryResultFrame",
    "LLMFullResponseEndFrame",
    "LLMFullResponseStartFrame",
    "LLMMarkerFrame",
    "LLMMessagesAppendFrame",
    "LLMMessagesTransformFrame",
    "LLMMessagesUpdateFrame",
    "LLMRunFrame",
    "LLMServiceMetadataFrame",
    "LLMSetToolChoiceFrame",
    "LLMSetToolsFrame",
    "LLMSpeculationEndedFrame",
    "LLMSpeculativeContextFrame",
    "LLMSummarizeContextFrame",
    "LLMTextFrame",
    "LLMThoughtEndFrame",
    "LLMThoughtStartFrame",
    "LLMThoughtTextFrame",
    "MetricsFrame",
    "OutputAudioRawFrame",
    "ProposedUserStartedSpeakingFrame",
    "ProposedUserStoppedSpeakingFrame",
    "STTMetadataFrame",
    "STTMuteFrame",
    "SpeechControlParamsFrame",
    "StartFrame",
    "StopFrame",
    "SystemFrame",
    "TTSSpeakFrame",
    "TTSStartedFrame",
    "TTSStoppedFrame",
    "TTSTextFrame",
    "TextFrame",
    "TranscriptionFrame",
    "TranslationFrame",
    "TurnMetricsData",
    "UserBackchannelFrame",
    "UserIdleTimeoutUpdateFrame",
    "UserMuteStartedFrame",
    "UserMuteStoppedFrame",
    "UserSpeakingFrame",
    "UserStartedSpeakingFrame",
    "UserStoppedSpeakingFrame",
    "UserTurnInferenceCompletedFrame",
    "VADParamsUpdateFrame",
    "VADUserStartedSpeakingFrame",
    "VADUserStoppedSpeakingFrame",
    "is_system",
]


class Direction(enum.Enum):
    """Which way a frame travels: downstream (input to output) or back upstream."""

    DOWNSTREAM = "downstream"
    UPSTREAM = "upstream"

    @property
    def opposite(self) -> Direction:
        """The other direction."""
        return Direction.UPSTREAM if self is Direction.DOWNSTREAM else Direction.DOWNSTREAM


DOWN = Direction.DOWNSTREAM
"""Shorthand for ``Direction.DOWNSTREAM``: from the input (the user) towards the output (the speaker)."""
UP = Direction.UPSTREAM
"""Shorthand for ``Direction.UPSTREAM``: back towards the input (bot speaking, tool re-runs, summaries)."""


MAX_SECONDS = _MAX_SECONDS
"""The longest duration a frame may carry (seconds): one day. Longer ones overflow timers and mean nothing."""

_MAX_TIMESTAMP = 1e11
"""Timestamps are seconds of scheduler time (since the epoch, or from 0 in virtual time): below year 5000."""


def _field_error(frame: object, name: str, expected: str, value: object) -> InvalidFrameFieldError:
    return InvalidFrameFieldError(f"{type(frame).__name__}.{name} must be {expected}, got {value!r}")


def _seconds(frame: object, name: str, *, positive: bool = False, limit: float = MAX_SECONDS) -> None:
    """A duration (or a timestamp, with ``limit``) that must be a finite, non-negative real number in range."""
    value = getattr(frame, name)
    t = type(value)
    if (t is float or t is int) and (value > 0.0 if positive else value >= 0.0) and value <= limit:
        return
    check_seconds(value, f"{type(frame).__name__}.{name}", positive=positive, high=limit, error=InvalidFrameFieldError)


def _count(frame: object, name: str, minimum: int) -> None:
    value = getattr(frame, name)
    if type(value) is not int or value < minimum:
        raise _field_error(frame, name, f"an int >= {minimum}", value)


def _flag(frame: object, name: str, *, optional: bool = False) -> None:
    value = getattr(frame, name)
    if value is True or value is False or (optional and value is None):
        return
    raise _field_error(frame, name, "True, False or None" if optional else "True or False", value)


def _optional_str(frame: object, name: str) -> None:
    value = getattr(frame, name)
    if value is not None and not isinstance(value, str):
        raise _field_error(frame, name, "a string or None", value)


class FrameKind(enum.Enum):
    """The three kinds of frame."""

    SYSTEM = "system"
    DATA = "data"
    CONTROL = "control"


@dataclass(frozen=True, slots=True)
class Frame:
    """Base of every frame.

    ``kind`` says how the frame is treated by gates; ``interruptible`` says
    whether an interruption may discard it while it is held.
    """

    kind: ClassVar[FrameKind] = FrameKind.DATA
    interruptible: ClassVar[bool] = True

    @property
    def name(self) -> str:
        """The frame's type name, as Pipecat spells it."""
        return type(self).__name__


@dataclass(frozen=True, slots=True)
class SystemFrame(Frame):
    """Out of band: never held, never queued behind data."""

    kind: ClassVar[FrameKind] = FrameKind.SYSTEM
    interruptible: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class DataFrame(Frame):
    """The conversation's content, in order."""

    kind: ClassVar[FrameKind] = FrameKind.DATA


@dataclass(frozen=True, slots=True)
class ControlFrame(Frame):
    """Delimiters of the conversation's content, in order."""

    kind: ClassVar[FrameKind] = FrameKind.CONTROL


def is_system(frame: Frame) -> bool:
    """Whether ``frame`` is a system frame (passes every gate)."""
    return frame.kind is FrameKind.SYSTEM


# --------------------------------------------------------------------------
# Lifecycle


@dataclass(frozen=True, slots=True)
class StartFrame(SystemFrame):
    """The session starts; carries the audio rates the transports use."""

    audio_in_sample_rate: int = 16000
    audio_out_sample_rate: int = 24000

    def __post_init__(self) -> None:
        for name in ("audio_in_sample_rate", "audio_out_sample_rate"):
            rate = getattr(self, name)
            if type(rate) is not int or not 1000 <= rate <= 384000:
                raise _field_error(self, name, "an int in Hz (1000..384000)", rate)


@dataclass(frozen=True, slots=True)
class EndFrame(ControlFrame):
    """The session ends after what was sent before it."""

    interruptible: ClassVar[bool] = False
    reason: str | None = None

    def __post_init__(self) -> None:
        _optional_str(self, "reason")


@dataclass(frozen=True, slots=True)
class StopFrame(ControlFrame):
    """The pipeline stops but the session may resume."""

    interruptible: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class CancelFrame(SystemFrame):
    """The session stops now; what is held is committed, not processed."""

    reason: str | None = None

    def __post_init__(self) -> None:
        _optional_str(self, "reason")


@dataclass(frozen=True, slots=True)
class ErrorFrame(SystemFrame):
    """A stage reports an error as a value; the session goes on unless ``fatal``."""

    error: BaseException | str
    fatal: bool = False
    processor: str | None = None

    def __post_init__(self) -> None:
        _flag(self, "fatal")
        _optional_str(self, "processor")


@dataclass(frozen=True, slots=True)
class FatalErrorFrame(ErrorFrame):
    """An error after which the session cannot go on."""

    fatal: bool = True


@dataclass(frozen=True, slots=True)
class InterruptionFrame(SystemFrame):
    """The user barged in: bot output in flight is cancelled."""


# --------------------------------------------------------------------------
# User speech and turns


@dataclass(frozen=True, slots=True)
class VADUserStartedSpeakingFrame(SystemFrame):
    """Voice activity started.

    ``timestamp`` is the scheduler time (seconds) when the VAD decided, so
    speech began about ``start_secs`` before it.
    """

    start_secs: float = 0.0
    timestamp: float = 0.0

    def __post_init__(self) -> None:
        _seconds(self, "start_secs")
        _seconds(self, "timestamp", limit=_MAX_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class VADUserStoppedSpeakingFrame(SystemFrame):
    """Voice activity stopped; speech really ended about ``stop_secs`` before ``timestamp``."""

    stop_secs: float = 0.0
    timestamp: float = 0.0

    def __post_init__(self) -> None:
        _seconds(self, "stop_secs")
        _seconds(self, "timestamp", limit=_MAX_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class UserSpeakingFrame(SystemFrame):
    """Heartbeat while the VAD says the user is speaking (rate-limited)."""


@dataclass(frozen=True, slots=True)
class UserStartedSpeakingFrame(SystemFrame):
    """The user's turn started (a turn decision, not raw VAD)."""


@dataclass(frozen=True, slots=True)
class UserStoppedSpeakingFrame(SystemFrame):
    """The user's turn ended (a turn decision, not raw VAD)."""


@dataclass(frozen=True, slots=True)
class ProposedUserStartedSpeakingFrame(SystemFrame):
    """A service proposes that the user's turn started; a strategy decides."""


@dataclass(frozen=True, slots=True)
class ProposedUserStoppedSpeakingFrame(ControlFrame):
    """A service proposes that the turn ended (control, so it stays behind its transcript)."""


@dataclass(frozen=True, slots=True)
class UserTurnInferenceCompletedFrame(ControlFrame):
    """An external judge says the user's turn is semantically complete."""


@dataclass(frozen=True, slots=True)
class UserMuteStartedFrame(SystemFrame):
    """The user's input stops reaching the bot."""


@dataclass(frozen=True, slots=True)
class UserMuteStoppedFrame(SystemFrame):
    """The user's input reaches the bot again."""


@dataclass(frozen=True, slots=True)
class UserIdleTimeoutUpdateFrame(SystemFrame):
    """Changes the user-idle timeout at run time (0 turns idle detection off); seconds, 0..``MAX_SECONDS``."""

    timeout: float

    def __post_init__(self) -> None:
        _seconds(self, "timeout")


@dataclass(frozen=True, slots=True)
class SpeechControlParamsFrame(SystemFrame):
    """Announces the VAD and turn parameters in use."""

    vad_params: Any = None
    turn_params: Any = None


@dataclass(frozen=True, slots=True)
class VADParamsUpdateFrame(ControlFrame):
    """Reconfigures a VAD at run time."""

    params: Any


@dataclass(frozen=True, slots=True)
class STTMuteFrame(SystemFrame):
    """Asks a speech-to-text service to stop or resume listening."""

    mute: bool

    def __post_init__(self) -> None:
        _flag(self, "mute")


@dataclass(frozen=True, slots=True)
class STTMetadataFrame(SystemFrame):
    """A speech-to-text service describes itself.

    ``ttfs_p99_latency`` is how long (seconds, 99th percentile) the service
    takes from the end of speech to its final transcript; stop strategies use
    it to wait for the transcript that ends a turn (0..``MAX_SECONDS``).
    """

    service_name: str = ""
    ttfs_p99_latency: float = 1.0
    user_turn_strategies: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.service_name, str):
            raise _field_error(self, "service_name", "a string", self.service_name)
        _seconds(self, "ttfs_p99_latency")


@dataclass(frozen=True, slots=True)
class LLMServiceMetadataFrame(SystemFrame):
    """A language-model service describes itself."""

    service_name: str = ""
    is_realtime_service: bool = False
    user_turn_strategies: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.service_name, str):
            raise _field_error(self, "service_name", "a string", self.service_name)
        _flag(self, "is_realtime_service")


# --------------------------------------------------------------------------
# Bot speech


@dataclass(frozen=True, slots=True)
class BotStartedSpeakingFrame(SystemFrame):
    """The output transport started playing the bot's speech."""


@dataclass(frozen=True, slots=True)
class BotStoppedSpeakingFrame(SystemFrame):
    """The output transport finished playing the bot's speech."""


@dataclass(frozen=True, slots=True)
class BotSpeakingFrame(SystemFrame):
    """Heartbeat while the bot speaks."""


@dataclass(frozen=True, slots=True)
class BotSpeechPauseFrame(SystemFrame):
    """Asks the output stages to pause the bot's speech at once, keeping the rest (downstream).

    Sent when the user starts speaking over the bot and it is not known yet
    whether that is a barge-in or a backchannel ("mm-hmm"): the bot falls
    silent as fast as an interruption would silence it. A
    ``BotSpeechResumeFrame`` plays the rest from where it paused; an
    ``InterruptionFrame`` drops it. The bot's turn goes on meanwhile: no
    ``BotStoppedSpeakingFrame``. A stage with nothing playing passes it on.
    """


@dataclass(frozen=True, slots=True)
class BotSpeechResumeFrame(SystemFrame):
    """Asks the output stages to play the paused speech on from where it paused (downstream).

    Harmless when nothing is paused (an interruption dropped the speech, or
    it never paused).
    """


# --------------------------------------------------------------------------
# Audio


def _pcm_bytes(audio: object) -> bytes:
    if isinstance(audio, bytes):
        return audio
    if isinstance(audio, bytearray | memoryview):
        return bytes(audio)
    raise InvalidAudioError(
        f"audio must be 16-bit PCM bytes, not {type(audio).__name__}; "
        "convert numpy arrays with array.astype('<i2').tobytes()"
    )


def _check_pcm(audio: bytes, sample_rate: object, num_channels: object) -> None:
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or not (
        1000 <= sample_rate <= 384000
    ):
        raise InvalidAudioError(f"sample_rate must be an int in Hz (1000..384000), got {sample_rate!r}")
    if isinstance(num_channels, bool) or not isinstance(num_channels, int) or not (
        1 <= num_channels <= 32
    ):
        raise InvalidAudioError(f"num_channels must be an int from 1 to 32, got {num_channels!r}")
    width = 2 * num_channels
    if len(audio) % width:
        raise InvalidAudioError(
            f"audio holds {len(audio)} bytes, not a whole number of 16-bit "
            f"{num_channels}-channel samples ({width} bytes each)"
        )


@dataclass(frozen=True, slots=True)
class InputAudioRawFrame(SystemFrame):
    """Microphone audio: 16-bit little-endian PCM, validated on construction."""

    audio: bytes
    sample_rate: int = 16000
    num_channels: int = 1

    def __post_init__(self) -> None:
        audio = _pcm_bytes(self.audio)
        if audio is not self.audio:
            object.__setattr__(self, "audio", audio)
        _check_pcm(audio, self.sample_rate, self.num_channels)

    @property
    def num_frames(self) -> int:
        """Samples per channel."""
        return len(self.audio) // (2 * self.num_channels)

    @property
    def duration(self) -> float:
        """Seconds of audio."""
        return self.num_frames / self.sample_rate


@dataclass(frozen=True, slots=True)
class OutputAudioRawFrame(DataFrame):
    """Bot audio on its way to the speaker (16-bit PCM)."""

    audio: bytes
    sample_rate: int = 24000
    num_channels: int = 1

    def __post_init__(self) -> None:
        audio = _pcm_bytes(self.audio)
        if audio is not self.audio:
            object.__setattr__(self, "audio", audio)
        _check_pcm(audio, self.sample_rate, self.num_channels)


# --------------------------------------------------------------------------
# Text


class AggregationType(enum.StrEnum):
    """How a piece of aggregated text was cut."""

    SENTENCE = "sentence"
    WORD = "word"
    TOKEN = "token"


def _check_text(frame: TextFrame) -> None:
    text = frame.text
    if type(text) is not str:
        if not isinstance(text, str):
            raise InvalidTranscriptError(f"{type(frame).__name__}.text must be a str, got {type(text).__name__}")
        object.__setattr__(frame, "text", text := str(text))
    if not text.isascii():
        repaired = repair_surrogates(text)
        if repaired is not text:
            object.__setattr__(frame, "text", repaired)


def _check_text_flags(frame: TextFrame) -> None:
    """The three flags of every text frame are real bools (``skip_tts`` may be None): ``"no"`` is not false.

    Text frames are built per token and per spoken word: their ``__post_init__``
    first tests the flags by identity, inline, and calls this only when one is off.
    """
    _flag(frame, "skip_tts", optional=True)
    _flag(frame, "includes_inter_frame_spaces")
    _flag(frame, "append_to_context")


def _check_transcript(frame: TextFrame) -> None:
    """A text frame, and a transcript with nothing visible in it carries ``""`` (it holds no words)."""
    _check_text(frame)
    skip: object = frame.skip_tts  # what a caller passed, whatever the annotation says
    spaces: object = frame.includes_inter_frame_spaces
    append: object = frame.append_to_context
    if not ((spaces is True or spaces is False) and (append is True or append is False)
            and (skip is None or skip is True or skip is False)):
        _check_text_flags(frame)
    text = frame.text
    if text and is_blank(text):
        object.__setattr__(frame, "text", "")


@dataclass(frozen=True, slots=True)
class TextFrame(DataFrame):
    """Text on its way to a speech synthesizer or a context.

    ``includes_inter_frame_spaces`` says whether the text carries its own
    spacing (LLM tokens do) or needs a space to be joined with its neighbours
    (STT words do not).
    """

    text: str
    skip_tts: bool | None = field(default=None, kw_only=True)
    includes_inter_frame_spaces: bool = field(default=False, kw_only=True)
    append_to_context: bool = field(default=True, kw_only=True)

    def __post_init__(self) -> None:
        _check_text(self)
        skip: object = self.skip_tts  # what a caller passed, whatever the annotation says
        spaces: object = self.includes_inter_frame_spaces
        append: object = self.append_to_context
        if not ((spaces is True or spaces is False) and (append is True or append is False)
                and (skip is None or skip is True or skip is False)):
            _check_text_flags(self)


@dataclass(frozen=True, slots=True)
class LLMTextFrame(TextFrame):
    """A token (or a few) streamed by the model; carries its own spacing."""

    includes_inter_frame_spaces: bool = field(default=True, kw_only=True)


@dataclass(frozen=True, slots=True)
class TranscriptionFrame(TextFrame):
    """Final text from speech-to-text.

    ``finalized`` means the service committed: nothing more is coming for
    this utterance. ``timestamp`` is the service's own ISO 8601 stamp. A
    transcript with no visible character (whitespace, or only invisible
    characters such as U+200B or U+FEFF) is stored as ``""``: it holds no
    words, opens no turn and runs no model.
    """

    user_id: str = ""
    timestamp: str = ""
    language: str | None = None
    result: Any = None
    finalized: bool = False

    def __post_init__(self) -> None:
        _check_transcript(self)
        finalized: object = self.finalized
        if finalized is not True and finalized is not False:
            _flag(self, "finalized")


@dataclass(frozen=True, slots=True)
class InterimTranscriptionFrame(TextFrame):
    """A guess that the service will revise: never folded into a message."""

    user_id: str = ""
    timestamp: str = ""
    language: str | None = None
    result: Any = None

    def __post_init__(self) -> None:
        _check_transcript(self)


@dataclass(frozen=True, slots=True)
class TranslationFrame(TextFrame):
    """A translation of what the user said."""

    user_id: str = ""
    timestamp: str = ""
    language: str | None = None

    def __post_init__(self) -> None:
        _check_transcript(self)


@dataclass(frozen=True, slots=True)
class AggregatedTextFrame(TextFrame):
    """Text grouped by an aggregator (a sentence, a word, a pattern such as ``code``).

    ``raw_text`` is the text as written (with pattern delimiters); the
    context records it in preference to ``text``.
    """

    aggregated_by: str = AggregationType.SENTENCE.value
    raw_text: str | None = None
    context_id: str | None = None

    @property
    def text_type(self) -> str:
        """Pipecat's older name for ``aggregated_by``."""
        return self.aggregated_by

    def original(self) -> str:
        """The written form: ``raw_text`` when set, else ``text``."""
        return self.raw_text if self.raw_text is not None else self.text


@dataclass(frozen=True, slots=True)
class TTSTextFrame(AggregatedTextFrame):
    """A word or unit a synthesizer actually spoke."""


@dataclass(frozen=True, slots=True)
class TTSSpeakFrame(DataFrame):
    """Asks the synthesizer to say ``text`` (no model involved)."""

    text: str
    append_to_context: bool = True

    def __post_init__(self) -> None:
        _check_text(self)  # type: ignore[arg-type]
        _flag(self, "append_to_context")


@dataclass(frozen=True, slots=True)
class TTSStartedFrame(ControlFrame):
    """The synthesizer started an utterance; opens an assistant turn when it has none."""

    context_id: str | None = None
    append_to_context: bool = True

    def __post_init__(self) -> None:
        _flag(self, "append_to_context")


@dataclass(frozen=True, slots=True)
class TTSStoppedFrame(ControlFrame):
    """The synthesizer finished an utterance."""

    context_id: str | None = None


# --------------------------------------------------------------------------
# LLM output


@dataclass(frozen=True, slots=True)
class LLMFullResponseStartFrame(ControlFrame):
    """The model starts answering."""

    skip_tts: bool | None = None

    def __post_init__(self) -> None:
        _flag(self, "skip_tts", optional=True)


@dataclass(frozen=True, slots=True)
class LLMFullResponseEndFrame(ControlFrame):
    """The model finished answering."""

    skip_tts: bool | None = None

    def __post_init__(self) -> None:
        _flag(self, "skip_tts", optional=True)


@dataclass(frozen=True, slots=True)
class LLMThoughtStartFrame(ControlFrame):
    """A reasoning model starts a thought; ``llm`` names the provider when it is kept."""

    append_to_context: bool = False
    llm: str | None = None

    def __post_init__(self) -> None:
        _flag(self, "append_to_context")
        if self.append_to_context and not self.llm:
            raise ValueError("LLMThoughtStartFrame(append_to_context=True) needs llm= (the provider)")


@dataclass(frozen=True, slots=True)
class LLMThoughtTextFrame(DataFrame):
    """Part of a thought: never spoken, never part of the answer."""

    text: str
    includes_inter_frame_spaces: bool = True

    def __post_init__(self) -> None:
        _check_text(self)  # type: ignore[arg-type]
        _flag(self, "includes_inter_frame_spaces")


@dataclass(frozen=True, slots=True)
class LLMThoughtEndFrame(ControlFrame):
    """A thought ends; ``signature`` is the provider's opaque proof."""

    signature: Any = None


@dataclass(frozen=True, slots=True)
class LLMAssistantPushAggregationFrame(ControlFrame):
    """Commits what the assistant aggregator holds and closes its turn."""


@dataclass(frozen=True, slots=True)
class LLMMarkerFrame(DataFrame):
    """A turn-completion marker the model emitted (``●``, ``◐``, ``○``)."""

    marker: str
    append_to_context_immediately: bool = True

    def __post_init__(self) -> None:
        _flag(self, "append_to_context_immediately")


# --------------------------------------------------------------------------
# Context


@dataclass(frozen=True, slots=True)
class LLMContextFrame(DataFrame):
    """Asks the model to answer the conversation.

    ``context`` is the live, shared :class:`~rxvoice.context.LLMContext`;
    ``snapshot`` is the conversation exactly as it stood when the frame was
    made (a :class:`~rxvoice.context.ContextSnapshot`), which is what a model
    stage should send. ``speculation_id``, when set, says the answer a model
    stage holds for that :class:`LLMSpeculativeContextFrame` is this
    request's answer: release it instead of asking again (a stage that holds
    none, or does not speculate, answers as usual).
    """

    context: Any
    snapshot: Any = field(init=False, compare=False, repr=False)
    speculation_id: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshot", self.context.snapshot)
        if self.speculation_id is not None:
            _count(self, "speculation_id", 0)


@dataclass(frozen=True, slots=True)
class LLMRunFrame(DataFrame):
    """Run the model on the conversation as it stands."""


@dataclass(frozen=True, slots=True)
class LLMMessagesAppendFrame(DataFrame):
    """Append messages to the conversation (and run the model if ``run_llm``)."""

    messages: Sequence[Mapping[str, Any]]
    run_llm: bool | None = None

    def __post_init__(self) -> None:
        _flag(self, "run_llm", optional=True)


@dataclass(frozen=True, slots=True)
class LLMMessagesUpdateFrame(DataFrame):
    """Replace the conversation's messages; the system prompt and the tools stay.

    As in jargo (the Go port of Pipecat), the update keeps the conversation's
    system prompt (its leading system message) unless ``messages`` bring their
    own; the tools and the tool choice are never touched. Set
    ``keep_system_prompt=False`` to replace every message.
    """

    messages: Sequence[Mapping[str, Any]]
    run_llm: bool | None = None
    keep_system_prompt: bool = True

    def __post_init__(self) -> None:
        _flag(self, "run_llm", optional=True)
        _flag(self, "keep_system_prompt")


@dataclass(frozen=True, slots=True)
class LLMMessagesTransformFrame(DataFrame):
    """Rewrite the conversation's messages with a function of them."""

    transform: Callable[[list[dict[str, Any]]], Sequence[Mapping[str, Any]]]
    run_llm: bool | None = None

    def __post_init__(self) -> None:
        _flag(self, "run_llm", optional=True)


@dataclass(frozen=True, slots=True)
class LLMSetToolsFrame(DataFrame):
    """Replace the tools the model may call (OpenAI-shaped schemas)."""

    tools: Any


@dataclass(frozen=True, slots=True)
class LLMSetToolChoiceFrame(DataFrame):
    """Set the tool choice: ``"auto"``, ``"none"``, ``"required"`` or a dict."""

    tool_choice: Any


@dataclass(frozen=True, slots=True)
class LLMContextAssistantTurnFrame(DataFrame):
    """An assistant turn was written (markers stripped); broadcast both ways."""

    text: str
    timestamp: str


@dataclass(frozen=True, slots=True)
class LLMContextAssistantTimestampFrame(DataFrame):
    """When the assistant message just written was committed (ISO 8601)."""

    timestamp: str


# --------------------------------------------------------------------------
# Speculation: an answer asked for before the user's turn is decided


@dataclass(frozen=True, slots=True)
class LLMSpeculativeContextFrame(DataFrame):
    """Asks the model, early, for an answer it must hold: the user's turn is likely, not yet decided, over.

    ``snapshot`` is the conversation with the user's words so far as its
    last message (the shared conversation is not written). A model stage
    that speculates answers it into a hold: nothing goes downstream, and
    **no tool call starts** (an answer that asks for one is dropped, and
    asked again when the turn ends). An ``LLMContextFrame`` for the same
    conversation releases what is held at once; an
    :class:`EagerEndOfTurnCancelFrame` drops it. A stage that does not
    speculate passes the frame on unanswered, so nothing can come of it
    (Pipecat sends ``LLMContextFrame(speculation=True)``).
    """

    snapshot: Any
    speculation_id: int

    def __post_init__(self) -> None:
        _count(self, "speculation_id", 0)


@dataclass(frozen=True, slots=True)
class EagerEndOfTurnCancelFrame(SystemFrame):
    """Withdraws a speculative request (Pipecat's name): its held answer is dropped, nothing of it is said.

    ``speculation_id`` names the request (``None``: whatever is held);
    ``reason`` says why (the user went on, the words changed, the turn ended
    without words).
    """

    speculation_id: int | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.speculation_id is not None:
            _count(self, "speculation_id", 0)


SPECULATION_OUTCOMES = ("released", "dropped", "refused", "failed")
"""What can become of a speculative request (:class:`LLMSpeculationEndedFrame`)."""


@dataclass(frozen=True, slots=True)
class LLMSpeculationEndedFrame(SystemFrame):
    """What became of a speculative request; a model stage sends it upstream, to the user aggregator.

    ``outcome``: ``released`` (the turn ended with the same conversation:
    the held answer went out), ``dropped`` (withdrawn, or the conversation
    changed), ``refused`` (the answer asked for a tool: dropped before any
    tool started; the turn's end asks again) or ``failed`` (the request
    failed). ``tokens``: the pieces of the answer streamed for nothing (0
    when released).
    """

    speculation_id: int
    outcome: str
    reason: str = ""
    tokens: int = 0

    def __post_init__(self) -> None:
        _count(self, "speculation_id", 0)
        _count(self, "tokens", 0)
        if self.outcome not in SPECULATION_OUTCOMES:
            raise InvalidFrameFieldError(f"outcome must be one of {SPECULATION_OUTCOMES}, got {self.outcome!r}")


# --------------------------------------------------------------------------
# Backchannels: a continuer from one side while the other speaks


@dataclass(frozen=True, slots=True)
class UserBackchannelFrame(DataFrame):
    """The user said a continuer ("mm-hmm", "yeah") while the bot spoke: the bot goes on.

    Kept out of the conversation; the user aggregator raises
    ``on_user_backchannel`` for it. Not a text frame: nothing speaks it.
    """

    text: str
    user_id: str = ""
    timestamp: str = ""

    def __post_init__(self) -> None:
        _check_text(self)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class BotBackchannelFrame(TTSSpeakFrame):
    """Asks the synthesizer to say a continuer ("mm-hmm") during a long user turn.

    Spoken without opening a bot turn (nothing is written to the
    conversation, no ``BotStartedSpeakingFrame``, so the user's turn and the
    mute strategies do not notice it) and not cut off by an interruption.
    The assistant aggregator raises ``on_assistant_backchannel`` when it is
    spoken.
    """

    interruptible: ClassVar[bool] = False
    append_to_context: bool = False


# --------------------------------------------------------------------------
# Function calls


def _json_error(frame: object, name: str, value: object, exc: BaseException) -> InvalidToolCallError:
    shown = repr(value)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return InvalidToolCallError(
        f"{type(frame).__name__}.{name} must be JSON data (dicts, lists, strings, finite "
        f"numbers, booleans, None), got {shown}: {exc}"
    )


def _check_json(frame: object, name: str, value: object) -> None:
    """``value`` serializes as strict JSON (no NaN or infinity) and encodes as UTF-8."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        raise _json_error(frame, name, value, exc) from None


def _check_call_names(frame: Any, *, name_required: bool = True) -> None:
    call_id = frame.tool_call_id
    if not isinstance(call_id, str) or not call_id:
        raise InvalidToolCallError(f"{type(frame).__name__}.tool_call_id must be a non-empty string, got {call_id!r}")
    fn = frame.function_name
    if not isinstance(fn, str) or (name_required and not fn):
        raise InvalidToolCallError(f"{type(frame).__name__}.function_name must be a non-empty string, got {fn!r}")


def _check_arguments(frame: object, name: str = "arguments") -> None:
    """Arguments are a mapping of JSON data; a string holding a JSON object is parsed (``""`` means ``{}``)."""
    value = getattr(frame, name)
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            shown = value if len(value) <= 80 else value[:77] + "..."
            raise InvalidToolCallError(
                f"{type(frame).__name__}.{name} is a string that is not a JSON object: {shown!r}"
            ) from None
    if not isinstance(value, Mapping):
        raise InvalidToolCallError(
            f"{type(frame).__name__}.{name} must be a mapping of the call's arguments (or a string holding a JSON "
            f"object), got {type(value).__name__} {value!r:.80}"
        )
    if type(value) is not dict:
        value = dict(value)
    _check_json(frame, name, value)
    if value is not getattr(frame, name):
        object.__setattr__(frame, name, value)


@dataclass(frozen=True, slots=True)
class FunctionCallFromLLM:
    """A tool call the model asked for.

    ``arguments`` is a mapping of JSON data; a string holding a JSON object
    (as models stream them) is parsed, and ``""`` means no arguments.
    Anything else raises :class:`~rxvoice.errors.InvalidToolCallError`.
    """

    function_name: str
    tool_call_id: str
    arguments: Mapping[str, Any]
    context: Any = None

    def __post_init__(self) -> None:
        _check_call_names(self)
        _check_arguments(self)


@dataclass(frozen=True, slots=True)
class FunctionCallResultProperties:
    """How a tool result is handled.

    ``on_context_updated`` (sync or async, no arguments) runs once the result
    is in the context; ``is_final=False`` marks an intermediate update.
    """

    run_llm: bool | None = None
    on_context_updated: Callable[[], Any] | None = None
    is_final: bool = True

    def __post_init__(self) -> None:
        _flag(self, "run_llm", optional=True)
        _flag(self, "is_final")
        if self.on_context_updated is not None and not callable(self.on_context_updated):
            raise _field_error(self, "on_context_updated", "a callable or None", self.on_context_updated)


@dataclass(frozen=True, slots=True)
class FunctionCallsStartedFrame(SystemFrame):
    """The model asked for these calls (announcement only: nothing is written yet).

    ``function_calls`` is a list or tuple of :class:`FunctionCallFromLLM`
    (kept as a tuple); anything else raises
    :class:`~rxvoice.errors.InvalidToolCallError`.
    """

    function_calls: Sequence[FunctionCallFromLLM]

    def __post_init__(self) -> None:
        calls = self.function_calls
        if not isinstance(calls, list | tuple):
            raise InvalidToolCallError(
                f"FunctionCallsStartedFrame.function_calls must be a list of FunctionCallFromLLM, got "
                f"{type(calls).__name__} {calls!r:.80}"
            )
        for i, call in enumerate(calls):
            if not isinstance(call, FunctionCallFromLLM):
                raise InvalidToolCallError(
                    f"FunctionCallsStartedFrame.function_calls[{i}] must be a FunctionCallFromLLM, got "
                    f"{type(call).__name__} {call!r:.80}"
                )
        if type(calls) is not tuple:
            object.__setattr__(self, "function_calls", tuple(calls))


@dataclass(frozen=True, slots=True)
class FunctionCallInProgressFrame(ControlFrame):
    """A call runs now. ``cancel_on_interruption=False`` makes it an async call."""

    interruptible: ClassVar[bool] = False
    function_name: str
    tool_call_id: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    cancel_on_interruption: bool = True
    group_id: str | None = None

    def __post_init__(self) -> None:
        _check_call_names(self)
        _check_arguments(self)
        _flag(self, "cancel_on_interruption")
        _optional_str(self, "group_id")


@dataclass(frozen=True, slots=True)
class FunctionCallResultFrame(DataFrame):
    """A call's result (or an intermediate update of an async call).

    ``result`` must be JSON data (dicts, lists, strings, finite numbers,
    booleans, ``None``): a set, bytes, an arbitrary object, NaN or infinity
    raises :class:`~rxvoice.errors.InvalidToolCallError`, so the conversation
    only ever holds valid JSON. A string result is kept as it is (lone
    surrogates repaired).
    """

    interruptible: ClassVar[bool] = False
    function_name: str
    tool_call_id: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    run_llm: bool | None = None
    properties: FunctionCallResultProperties | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        _check_call_names(self, name_required=False)
        _check_arguments(self)
        result = self.result
        if isinstance(result, str):
            if not result.isascii():
                object.__setattr__(self, "result", repair_surrogates(result))
        elif result is not None:
            _check_json(self, "result", result)
        _flag(self, "run_llm", optional=True)
        if self.properties is not None and not isinstance(self.properties, FunctionCallResultProperties):
            raise _field_error(self, "properties", "a FunctionCallResultProperties or None", self.properties)
        _optional_str(self, "error")


@dataclass(frozen=True, slots=True)
class FunctionCallCancelFrame(SystemFrame):
    """A call was cancelled. ``run_llm`` is set when its own deadline cancelled it."""

    function_name: str
    tool_call_id: str
    run_llm: bool = False

    def __post_init__(self) -> None:
        _check_call_names(self, name_required=False)
        _flag(self, "run_llm")


# --------------------------------------------------------------------------
# Summarization


@dataclass(frozen=True, slots=True)
class LLMSummarizeContextFrame(ControlFrame):
    """Summarize the conversation now (``config``, a :class:`~rxvoice.summarization.SummaryConfig`, overrides).

    A ``config`` that is not a ``SummaryConfig`` is refused by the summarizer
    that receives the frame (``on_error``, nothing requested).
    """

    config: Any = None


@dataclass(frozen=True, slots=True)
class LLMContextSummaryRequestFrame(ControlFrame):
    """Asks the pipeline's model for a summary of ``context``."""

    request_id: str
    context: Any
    min_messages_to_keep: int
    target_context_tokens: int
    summarization_prompt: str
    summarization_timeout: float

    def __post_init__(self) -> None:
        _count(self, "min_messages_to_keep", 0)
        _count(self, "target_context_tokens", 1)
        _seconds(self, "summarization_timeout", positive=True)


@dataclass(frozen=True, slots=True)
class LLMContextSummaryResultFrame(ControlFrame):
    """A model's summary; ``last_summarized_index`` is -1 when nothing was summarized."""

    interruptible: ClassVar[bool] = False
    request_id: str
    summary: str
    last_summarized_index: int
    error: str | None = None

    def __post_init__(self) -> None:
        _count(self, "last_summarized_index", -1)
        if not isinstance(self.summary, str):
            raise _field_error(self, "summary", "a string", self.summary)
        _optional_str(self, "error")


# --------------------------------------------------------------------------
# Metrics


@dataclass(frozen=True, slots=True)
class TurnMetricsData:
    """An end-of-turn prediction."""

    processor: str
    is_complete: bool
    probability: float
    e2e_processing_time_ms: float = 0.0

    def __post_init__(self) -> None:
        _flag(self, "is_complete")
        p, ms = self.probability, self.e2e_processing_time_ms
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p):
            raise InvalidFrameFieldError(f"probability must be finite, got {p!r}")
        if isinstance(ms, bool) or not isinstance(ms, int | float) or not (math.isfinite(ms) and ms >= 0):
            raise InvalidFrameFieldError(f"e2e_processing_time_ms must be a finite number >= 0, got {ms!r}")


@dataclass(frozen=True, slots=True)
class MetricsFrame(SystemFrame):
    """Measurements a stage reports."""

    data: Sequence[Any]

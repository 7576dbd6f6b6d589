"""One conversation's Smart Turn state: the ``EndOfTurnStream`` the turn strategies drive.

:class:`~rxvoice.turns.TurnAnalyzerStop` opens one stream per session
(``SmartTurnAnalyzer().open_stream(rate)``) and feeds it every audio chunk
with the VAD's view of it; at each pause it asks, on a worker, for a
verdict. The stream is an :class:`~rxvoice.audio.turn.EndOfTurnBuffer` (what
the model should hear, the 3 s silence fallback) plus a judge (the model, or
a :class:`~rxvoice.audio.turn.SmartTurnBatcher` sharing it between sessions).

Input at any rate is buffered as it comes and the judged segment is
resampled to 16 kHz in one piece (libsoxr HQ, as Pipecat does), so the per
chunk cost on the session stays a copy; the resampling runs on the worker.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import InvalidAudioError
from ..pcm import AudioInput, Float32Array
from .end_of_turn import EndOfTurnBuffer
from .params import COMPLETE_THRESHOLD, EndOfTurnState, SmartTurnParams

__all__ = ["SmartTurnStream"]

Judge = Callable[[Float32Array], float]
"""16 kHz float32 segment → end-of-turn probability."""


class SmartTurnStream:
    """A session's end-of-turn stream (the ``EndOfTurnStream`` protocol) over Smart Turn.

    Threading: everything but :meth:`analyze` runs on the session;
    :meth:`analyze` runs on a worker while the session holds the other calls
    back (see :class:`rxvoice.turns.AnalyzerSession`), so no lock is needed.

    Args:
        judge: Gives the probability of a 16 kHz segment (a
            :meth:`SmartTurnAnalyzer.probability` or a batcher's).
        sample_rate: The rate of the appended audio (mono 16-bit PCM).
        params: Buffering parameters (Pipecat's defaults).
    """

    __slots__ = ("analyses", "buffer", "judge", "last_probability")

    def __init__(self, judge: Judge, sample_rate: int = 16000, params: SmartTurnParams | None = None) -> None:
        self.judge = judge
        self.buffer = EndOfTurnBuffer(sample_rate, params)
        self.analyses = 0
        """Model runs made for this stream (empty segments are not judged)."""
        self.last_probability: float | None = None

    @property
    def sample_rate(self) -> int:
        """The rate of the appended audio."""
        return self.buffer.sample_rate

    def append_audio(self, pcm: AudioInput, is_speech: bool) -> bool:
        """Buffer a chunk; ``True`` when 3 s of silence after speech ended the turn (then cleared).

        Raises:
            InvalidAudioError: not usable audio (the strategy skips the chunk).
        """
        return self.buffer.append_audio(pcm, is_speech) is EndOfTurnState.COMPLETE

    def analyze(self) -> tuple[bool, float | None]:
        """Judge the buffered turn: ``(is_complete, probability)``; complete clears the buffer.

        Nothing buffered: ``(False, None)`` without running the model.

        Raises:
            ModelError: the model failed (the strategy takes it as incomplete).
        """
        segment = self.buffer.segment()
        if segment.shape[0] == 0:
            return False, None
        try:
            probability = float(self.judge(segment))
        except InvalidAudioError:
            return False, None
        self.analyses += 1
        self.last_probability = probability
        complete = probability > COMPLETE_THRESHOLD
        if complete:
            self.buffer.clear()
        return complete, probability

    def clear(self) -> None:
        """Forget the buffered turn."""
        self.buffer.clear()

    def update_vad_start_secs(self, secs: float) -> None:
        """The VAD's confirmation delay: the segment starts this much earlier."""
        self.buffer.update_vad_start_secs(max(0.0, min(60.0, float(secs))))

    def close(self) -> None:
        """Release the audio (the session ended)."""
        self.buffer.clear()

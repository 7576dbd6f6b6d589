"""The late-tail rule: a transcript that arrives just after its turn was answered joins the next turn.

Speech-to-text can deliver the last words of a phrase after the turn they
belong to was closed and answered. Opening a new turn on them would
interrupt the answer being spoken and answer the same turn twice. So, in a
session with a VAD, a transcript that arrives within
``late_transcript_window`` seconds of an answered turn, with no VAD speech
since, does not open a turn: it is held and joins the next turn's message
(written at session end at the latest). After an empty turn, without a VAD,
or once speech was heard again, a transcript opens a turn as usual.
"""

from __future__ import annotations

__all__ = ["may_start"]


def may_start(
    turn_open: bool, vad_seen: bool, speech_since: bool, answered_at: float | None, now: float, window: float
) -> bool:
    """Whether a transcript arriving ``now`` may open a turn.

    Args:
        turn_open: A turn is open (the transcript simply joins it).
        vad_seen: The session has a VAD (a VAD frame was seen).
        speech_since: The VAD heard speech since the last turn ended.
        answered_at: When the last turn that wrote words ended (``None``:
            it was empty, or none ended yet).
        now: The scheduler time of the transcript.
        window: ``TurnsConfig.late_transcript_window``.
    """
    if turn_open or not vad_seen or speech_since or answered_at is None:
        return True
    return now - answered_at > window

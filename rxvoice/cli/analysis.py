"""Turn analysis of a recording: one import point for the pieces of a run.

The work is split by job: :mod:`rxvoice.cli.setups` (how a recording is
analyzed: the :class:`Setup`), :mod:`rxvoice.cli.observations` (what happens,
as values), :mod:`rxvoice.cli.score` (scoring against a transcript's labels)
and :mod:`rxvoice.cli.runner` (the run itself: the real VAD operator and turn
strategies on one timeline, :func:`analyze`). The names stay importable from
here.
"""

from __future__ import annotations

from .observations import (
    BotReply,
    Observation,
    Recovered,
    SpeechStarted,
    SpeechStopped,
    Turn,
    TurnStarted,
    Verdict,
    Words,
)
from .runner import CHUNK, Analysis, analyze, first_pass, placeholder_transcript
from .score import Score, check_transcript, score
from .setups import STOP_CHOICES, VAD_CHOICES, Setup, stop_strategy

_stop_strategy = stop_strategy  # the name before the split

__all__ = [
    "CHUNK",
    "STOP_CHOICES",
    "VAD_CHOICES",
    "Analysis",
    "BotReply",
    "Observation",
    "Recovered",
    "Score",
    "Setup",
    "SpeechStarted",
    "SpeechStopped",
    "Turn",
    "TurnStarted",
    "Verdict",
    "Words",
    "analyze",
    "check_transcript",
    "first_pass",
    "placeholder_transcript",
    "score",
    "stop_strategy",
]

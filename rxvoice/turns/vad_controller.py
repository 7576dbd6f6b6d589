"""Moved: the VAD controller is the audio side's (:mod:`rxvoice.audio.vad.controller`); these names warn."""

from __future__ import annotations

from .._moved import moved_names

__all__: list[str] = []  # the moved names are found through __getattr__, with a warning

# The controller's public names (rxvoice.audio.vad.controller.__all__), not imported from here: audio sits above.
__getattr__ = moved_names(__name__, "rxvoice.audio.vad.controller", {
    "VADAnalyzerLike", "VADControllerState", "VADDecision", "VADSettings", "vad_audio_idle", "vad_step",
})

"""What ``rxvoice serve`` runs: its options, and the turn settings they make."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..turns import (
    BackchannelStart,
    ClassifierStop,
    CompletionClassifier,
    TranscriptionStart,
    TurnCompletionClassifier,
    TurnsConfig,
    VADStart,
)
from ..turns.strategy import StopStrategy
from .setups import DEFAULT_SETUP, Setup

__all__ = ["STT_CHOICES", "TTS_CHOICES", "ServeOptions"]

STT_CHOICES = ("whisper", "pocketsphinx", "openai", "client", "none")
TTS_CHOICES = ("espeak", "openai", "paced")


@dataclass
class ServeOptions:
    """What ``rxvoice serve`` runs.

    Attributes:
        stt: ``whisper``, ``pocketsphinx``, ``openai``, ``client`` (the client sends its own words) or ``none``
            (placeholders: "(speech N)").
        tts: ``espeak``, ``openai`` or ``paced`` (words only, no audio).
        stop: a registered setup's name (as ``rxvoice turns --stop``).
        model: The Smart Turn model file (for ``smart-turn``).
        speech_timeout: ``SpeechTimeoutStop.user_speech_timeout``.
        llm: ``scripted`` or ``openai`` (``OPENAI_BASE_URL`` set: ``OPENAI_MODEL``, default gpt-4o-mini).
        allowed_origins: Other pages that may connect.
        max_sessions: Sessions at once (``None``: derived from the cores, see
            :func:`rxvoice.cli.server.default_max_sessions`).
        max_connections: Deprecated name of ``max_sessions``.
        token: The access token ``/ws`` requires (``None``: none).
        inference: Where Smart Turn (and remote STT) runs: ``in-process``, ``process-pool`` or ``ray``.
        inference_processes: Worker processes of ``process-pool``.
        ray_address: The Ray cluster of ``ray`` (``None``: a local instance).
        inference_timeout: Seconds a verdict is waited for before the fallback.
        workers: Server processes sharing the port.
        tls: ``(certificate, key)`` to serve https.
        speculate: Speculative replies (``TurnsConfig(speculate=True)``): the model is asked when the
            end is likely and its answer held; the page is told of each request and what became of it.
        backchannels: A ``BackchannelStart`` first in the start chain: "mm-hmm" while the bot speaks
            does not interrupt it.
        backchannel_pause: ``BackchannelStart(pause=...)``: the bot's speech pauses while held speech
            is decided (resumed after a continuer), or it talks on until the words decide.
        classifier: ``rules`` or ``model``: the stop strategy's end is asked again by a
            ``ClassifierStop`` (the completion rules, or the OpenAI-compatible model); ``None``: not.
        first_token_delay: The scripted model's seconds to its first token.
    """

    stt: str = "pocketsphinx"
    tts: str = "espeak"
    stop: str = DEFAULT_SETUP
    model: Path | None = None
    speech_timeout: float = 0.6
    llm: str = "scripted"
    allowed_origins: tuple[str, ...] = ()
    max_sessions: int | None = None
    max_connections: int | None = None
    token: str | None = None
    inference: str = "in-process"
    inference_processes: int = 1
    ray_address: str | None = None
    inference_timeout: float = 1.0
    workers: int = 1
    tls: tuple[Path, Path] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    speculate: bool = False
    backchannels: bool = False
    backchannel_pause: bool = True
    classifier: str | None = None
    first_token_delay: float = 0.2

    def __post_init__(self) -> None:
        if self.max_sessions is None and self.max_connections is not None:
            self.max_sessions = self.max_connections
        if self.max_sessions is None:
            from .server import default_max_sessions

            self.max_sessions = default_max_sessions(self.stt)

    @property
    def setup(self) -> Setup:
        """The turn setup shared with ``rxvoice turns``."""
        return Setup(stop=self.stop, model=self.model, speech_timeout=self.speech_timeout)

    def describe(self) -> dict[str, Any]:
        talk: dict[str, Any] = {}
        if self.speculate:
            talk["speculate"] = True
        if self.backchannels:
            talk["backchannels"] = True
            if not self.backchannel_pause:
                talk["backchannel_pause"] = False
        if self.classifier is not None:
            talk["classifier"] = self.classifier
        return {"stt": self.stt, "tts": self.tts, "stop": self.stop, "llm": self.llm,
                "vad_stop_secs": self.setup.vad_params.stop_secs,
                "speech_timeout": self.speech_timeout if self.setup.named.uses_speech_timeout else None,
                "inference": self.inference, "max_sessions": self.max_sessions, **talk}

    def turns(self, stop: StopStrategy[Any]) -> TurnsConfig:
        """The turn settings around ``stop``: classifier-gated if asked, backchannels, speculation."""
        if self.classifier is not None:
            stop = ClassifierStop(stop, _classifier(self.classifier))
        backchannel = BackchannelStart(pause=self.backchannel_pause)
        start = (backchannel, VADStart(), TranscriptionStart()) if self.backchannels else None
        return TurnsConfig(start=start, stop=[stop], speculate=self.speculate)


def _classifier(choice: str) -> TurnCompletionClassifier:
    if choice == "model":
        from ..services.openai import OpenAITurnClassifier

        return OpenAITurnClassifier(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return CompletionClassifier()

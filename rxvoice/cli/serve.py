"""``rxvoice serve``: talk to a bot in the browser and watch its turn decisions being made, live.

A local web app (aiohttp: one well-kept library that is the HTTP server, the
WebSocket server and, for the tests and benchmarks, the client too). The page
captures the microphone (getUserMedia and an AudioWorklet, 16 kHz PCM over a
WebSocket); the server runs, per connection::

    VAD (Silero) → STT → pair.user() → model → TTS → WebSocket output → pair.assistant()

with the stop strategy ``rxvoice turns --stop`` builds (Smart Turn or a speech
timeout), the scripted model (or an OpenAI-compatible one when
``OPENAI_BASE_URL`` is set), and sends the page what it draws: input level,
VAD confidence, each Smart Turn verdict, turn starts and ends with their
reason and latency, interim and final words, the bot's words as spoken and
the conversation. The bot's audio plays in the page; speaking over it
interrupts it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..aggregators import Pair
from ..aggregators.reports import AssistantTurnStopped, UserTurnStopped
from ..audio.vad import SileroVADAnalyzer, VADParams
from ..audio.vad_processor import VADProcessor
from ..context import ContextSnapshot, LLMContext
from ..errors import ConfigurationError
from ..frames import (
    DOWN,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Direction,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    MetricsFrame,
    TranscriptionFrame,
    TTSTextFrame,
    TurnMetricsData,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..inference import InferenceFallback
from ..pipeline import Port, Processor, Stage, pipeline
from ..services.stt import (
    OpenAITranscriptionSTT,
    PocketSphinxSTT,
    Recognizer,
    STTService,
    Utterance,
    pocketsphinx_available,
)
from ..services.tts import EspeakTTS, OpenAISpeechTTS, PacedTextTTS, TTSService
from ..services.whisper import WhisperSTT
from ..testing import Reply, ScriptedLLM
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
from ._common import MODEL_HELP, CLIError, need_module, port_number, positive_int
from .server import INFERENCE_CHOICES, Models, listen, loopback, self_signed_certificate, serve_forever, tls_context
from .setups import DEFAULT_SETUP, FALLBACK_SETUP, Setup, setup_names, stop_help, stop_strategy
from .transcribe import default_stt, offline_stt
from .turns import make_setup, seconds_between

__all__ = ["STT_CHOICES", "TTS_CHOICES", "ServeOptions", "add_parser", "make_app", "reply_to", "run"]

log = logging.getLogger("rxvoice.cli.serve")

STT_CHOICES = ("whisper", "pocketsphinx", "openai", "client", "none")
TTS_CHOICES = ("espeak", "openai", "paced")
SYSTEM_PROMPT = "You are a friendly voice assistant. Answer in one or two short sentences."
DESCRIPTION = (
    "Talk to a bot in the browser and watch its turn decisions live. A local page captures the microphone; "
    "per connection the server runs the Silero VAD, speech-to-text, the user aggregator with the stop strategy "
    "of --stop, the scripted model (or an OpenAI-compatible one when OPENAI_BASE_URL is set), text-to-speech "
    "and the assistant aggregator, and the page draws the input level, the VAD confidence, each Smart Turn "
    "verdict, every turn start and end with its reason and latency, the words and the conversation. Needs the "
    "serve extra (pip install 'rxvoice[serve]'); Whisper or PocketSphinx words need the stt extra."
)


def reply_to(snapshot: ContextSnapshot) -> Reply:
    """The scripted model of ``rxvoice serve``: says what it heard, and answers a few topics (offline)."""
    said = str(snapshot.messages[-1].get("content", "")).strip() if snapshot.messages else ""
    low = said.lower()
    heard = "I heard you speak." if not said or said.startswith("(speech") else f"I heard: {said}."
    for keys, answer in (
        (("flight", "book", "boston", "travel"), "I can book that flight for you."),
        (("saturday", "friday", "monday", "tomorrow", "leave"), "Sure, I changed the day."),
        (("thank", "that is all", "bye"), "You're welcome. Goodbye!"),
        (("table", "dinner", "restaurant"), "Done: a table for two tonight."),
    ):
        if any(k in low for k in keys):
            return Reply(f"{heard} {answer}")
    return Reply(f"{heard} Tell me more.")


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
        start = (BackchannelStart(), VADStart(), TranscriptionStart()) if self.backchannels else None
        return TurnsConfig(start=start, stop=[stop], speculate=self.speculate)


def _classifier(choice: str) -> TurnCompletionClassifier:
    if choice == "model":
        from ..services.openai import OpenAITurnClassifier

        return OpenAITurnClassifier(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return CompletionClassifier()


# -- what the page is told ---------------------------------------------------------------------


class _WatchedSilero(SileroVADAnalyzer):
    """Silero that remembers its highest confidence since it was last asked (for the page's VAD trace)."""

    def __init__(self, params: VADParams) -> None:
        super().__init__(16000, params=params)
        self.peak = 0.0

    def _after_inference(self, confidence: float) -> float:  # every window, batched or not
        self.peak = max(self.peak, confidence)
        return super()._after_inference(confidence)

    def take_peak(self) -> float:
        peak, self.peak = self.peak, 0.0
        return peak


class _Watch:
    """One connection's view of its conversation: what the inspectors saw, for explaining turn ends."""

    def __init__(self, transport: Any, options: ServeOptions) -> None:
        self.transport = transport
        self.options = options
        self.analyzer: _WatchedSilero | None = None
        self.speech_start = 0.0
        self.speech_end = 0.0
        self.speech_end_clock: float | None = None
        self.turns = 0
        self.reopens: int | None = None
        self.reopening: int | None = None
        self.level_sum = 0.0
        self.level_n = 0
        self.chunks = 0

    @property
    def t(self) -> float:
        return round(float(self.transport.audio_seconds), 3)

    def clock(self) -> float:
        loop = self.transport.loop
        return float(loop.time()) if loop is not None else 0.0

    def send(self, kind: str, **fields: Any) -> None:
        self.transport.send({"type": kind, "t": self.t, **fields})

    # -- frames ------------------------------------------------------------------------

    def audio(self, frame: InputAudioRawFrame) -> None:
        import numpy as np

        samples = np.frombuffer(frame.audio, dtype="<i2").astype(np.float32) / 32768.0
        if samples.size:
            self.level_sum += float(np.mean(samples * samples))
            self.level_n += 1
        self.chunks += 1
        if self.chunks % 5 == 0:  # ten a second
            rms = (self.level_sum / self.level_n) ** 0.5 if self.level_n else 0.0
            self.level_sum, self.level_n = 0.0, 0
            vad = self.analyzer.take_peak() if self.analyzer is not None else 0.0
            self.send("audio", level=round(rms, 4), vad=round(vad, 3))

    def frame(self, frame: Frame) -> None:
        t = type(frame)
        if t is VADUserStartedSpeakingFrame:
            self.speech_start = max(0.0, self.t - frame.start_secs)  # type: ignore[attr-defined]
            self.send("vad", speaking=True, at=round(self.speech_start, 3))
        elif t is VADUserStoppedSpeakingFrame:
            stop = frame.stop_secs  # type: ignore[attr-defined]
            self.speech_end = max(self.speech_start, self.t - stop)
            self.speech_end_clock = self.clock() - stop
            self.send("vad", speaking=False, at=round(self.speech_end, 3))
        elif t is InterimTranscriptionFrame:
            self.send("interim", text=frame.text)  # type: ignore[attr-defined]
        elif t is TranscriptionFrame:
            span = frame.result  # type: ignore[attr-defined]
            if isinstance(span, Utterance):
                self.send("final", text=frame.text, start=span.start, end=span.end)  # type: ignore[attr-defined]
        elif t is MetricsFrame:
            for d in frame.data:  # type: ignore[attr-defined]
                if isinstance(d, TurnMetricsData):
                    self.send("verdict", complete=d.is_complete, probability=round(float(d.probability), 4),
                              ms=round(d.e2e_processing_time_ms, 1))
        elif t is TTSTextFrame:
            self.send("bot_word", text=frame.text)  # type: ignore[attr-defined]
        elif t is BotStartedSpeakingFrame or t is BotStoppedSpeakingFrame:
            self.send("bot", speaking=t is BotStartedSpeakingFrame)
        elif t is InterruptionFrame:
            self.send("interrupted")

    # -- events ----------------------------------------------------------------------

    def turn_started(self, _agg: object, _payload: object = None) -> None:
        self.reopening, self.reopens = self.reopens, None
        self.send("turn_start", index=self.turns + 1)

    def recovered(self, _agg: object, _payload: object = None) -> None:
        self.reopens = self.turns  # the turn that just ended falsely: the one starting now continues it

    def turn_stopped(self, _agg: object, stopped: UserTurnStopped) -> None:
        self.turns += 1
        strategy = getattr(stopped.strategy, "name", None) if stopped.strategy is not None else None
        latency = None if self.speech_end_clock is None else round(self.clock() - self.speech_end_clock, 3)
        index, t = self.turns, self.t
        # The reason is the one the deciding strategy (or the watchdog) reported: shown as it is.
        reason = stopped.reason
        reopened, self.reopening = self.reopening, None
        message = {"type": "turn_end", "t": t, "index": index, "text": stopped.content, "strategy": strategy,
                   "reason": reason.text if reason is not None else (strategy or "(no reason given)"),
                   "cause": reason.kind if reason is not None else "other",
                   "probability": None if reason is None or reason.probability is None
                   else round(reason.probability, 4),
                   "latency": latency, "reopened": reopened is not None, "recovered_from": reopened}

        def report() -> None:  # after the step that ended the turn: its verdict has come out by then
            self.transport.send(message)

        loop = self.transport.loop
        if loop is None:
            report()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(report)

    def speculation(self, _agg: object, report: Any) -> None:
        self.send("speculation", id=report.speculation_id, outcome=report.outcome, words=report.words,
                  reason=report.reason)

    def backchannel(self, _agg: object, frame: Any) -> None:
        self.send("backchannel", text=getattr(frame, "text", ""))

    def classified(self, _agg: object, verdict: Any) -> None:
        self.send("classified", outcome=verdict.outcome, ended=verdict.ended, waited=verdict.waited)

    def fallback(self, fallback: InferenceFallback) -> None:
        """An inference backend was slow or failed: the page is told what was decided without it (any thread)."""
        self.send("fallback", question=fallback.kind, backend=fallback.backend, reason=fallback.reason,
                  waited=fallback.waited)

    def bot_turn(self, _agg: object, turn: AssistantTurnStopped) -> None:
        self.send("bot_turn", text=turn.content, interrupted=turn.interrupted)

    def context(self, snapshot: ContextSnapshot) -> None:
        messages = [{"role": str(m.get("role", "")), "content": m.get("content")} for m in snapshot.messages]
        self.send("context", messages=[m for m in messages if isinstance(m["content"], str)])


class _Inspector(Processor):
    """Passes everything; tells the page about the frames of some types going downstream."""

    name = "Inspector"

    def __init__(self, watch: _Watch, kinds: tuple[type[Frame], ...], audio: bool = False) -> None:
        self.watch = watch
        self.kinds = kinds
        self.audio = audio

    def open(self, port: Port) -> _InspectorSession:
        return _InspectorSession(self, port)


class _InspectorSession:
    def __init__(self, owner: _Inspector, port: Port) -> None:
        self.owner = owner
        self.port = port

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        self.port.push(frame, direction)
        if direction is DOWN:
            if self.owner.audio and type(frame) is InputAudioRawFrame:
                self.owner.watch.audio(frame)
            elif isinstance(frame, self.owner.kinds):
                self.owner.watch.frame(frame)

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        return None


# -- the stack ---------------------------------------------------------------------------------------


class _PlaceholderRecognizer:
    def __init__(self) -> None:
        self.n = 0

    def accept(self, audio: bytes) -> str | None:
        return None

    def finish(self) -> str:
        self.n += 1
        return f"(speech {self.n})"

    def close(self) -> None:
        return None


class PlaceholderSTT(STTService):
    """No recognition: each utterance becomes ``(speech N)`` (``--stt none``: turn decisions without words)."""

    name = "PlaceholderSTT"

    def __init__(self) -> None:
        super().__init__(ttfs_p99_latency=0.1)

    def new_recognizer(self) -> Recognizer:
        return _PlaceholderRecognizer()


def make_stt(choice: str) -> STTService | None:
    """The STT ``--stt`` names (``client``: none, the client sends its words)."""
    if choice == "client":
        return None
    if choice == "whisper":
        return WhisperSTT()
    if choice == "pocketsphinx":
        return PocketSphinxSTT()
    if choice == "openai":
        return OpenAITranscriptionSTT(os.environ.get("OPENAI_STT_MODEL", "whisper-1"))
    return PlaceholderSTT()


def make_tts(choice: str) -> TTSService:
    """The TTS ``--tts`` names."""
    if choice == "espeak":
        return EspeakTTS()
    if choice == "openai":
        return OpenAISpeechTTS(os.environ.get("OPENAI_TTS_MODEL", "gpt-4o-mini-tts"))
    return PacedTextTTS()


def make_llm(choice: str, first_token_delay: float = 0.2) -> Stage:
    if choice == "openai":
        from ..services.openai import OpenAILLM

        return OpenAILLM(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return ScriptedLLM(reply_to, token_delay=0.03, first_token_delay=first_token_delay)


def make_stage(options: ServeOptions, transport: Any, models: Models | None = None) -> Stage:
    """One connection's pipeline, wired to tell the page what happens.

    ``models`` are what the process's sessions share (made by :func:`make_app`); without them the
    session makes its own (a test, one pipeline).
    """
    watch = _Watch(transport, options)
    setup = options.setup
    params = setup.vad_params

    def analyzer() -> _WatchedSilero:
        watch.analyzer = _WatchedSilero(params)
        return watch.analyzer

    turn_analyzer = models.turn_analyzer(watch.fallback) if models is not None else None
    stop = _stop_with(setup, turn_analyzer) if turn_analyzer is not None else stop_strategy(setup)
    context = LLMContext(messages=[{"role": "system", "content": SYSTEM_PROMPT}])
    pair = Pair(context, turns=options.turns(stop))
    user, assistant = pair.user(), pair.assistant()
    user.events.on("on_user_turn_speculation", watch.speculation)
    user.events.on("on_user_backchannel", watch.backchannel)
    user.events.on("on_user_turn_classified", watch.classified)
    if turn_analyzer is not None:
        from ..inference import waiter_offload

        user.offload = waiter_offload  # a verdict job waits on its backend: not on the compute pool
    user.events.on("on_user_turn_started", watch.turn_started)
    user.events.on("on_user_turn_stopped", watch.turn_stopped)
    if "on_user_turn_recovered" in user.events.names:
        user.events.on("on_user_turn_recovered", watch.recovered)
    assistant.events.on("on_assistant_turn_stopped", watch.bot_turn)
    subscription = context.snapshots.subscribe(watch.context)
    transport.on_close(subscription.dispose)
    heard = (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame, InterimTranscriptionFrame, TranscriptionFrame)
    spoken = (TTSTextFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame, InterruptionFrame)
    transport.send({"type": "hello", "setup": options.describe()})
    vad = VADProcessor(analyzer, batcher=models.vad_batcher if models is not None else None)
    stt = models.stt(watch.fallback) if models is not None else None
    if stt is None:
        stt = make_stt(options.stt)
    stages: list[Stage] = [vad] if stt is None else [vad, stt]
    return pipeline(
        *stages, _Inspector(watch, heard, audio=True), user,
        _Inspector(watch, (MetricsFrame,)), make_llm(options.llm, options.first_token_delay), make_tts(options.tts),
        _Inspector(watch, spoken), transport.output(), assistant,
    )


def _stop_with(setup: Setup, analyzer: Any) -> Any:
    """The setup's stop strategy judging with ``analyzer`` (a session's backend analyzer).

    The built-in Smart Turn setups are rebuilt on it; a setup registered later builds its own (in process).
    """
    from ..audio.recommended import recommended_turn_setup
    from ..turns import TurnAnalyzerStop

    try:
        if setup.stop == "smart-turn":
            overrides: dict[str, Any] = dict(setup.overrides)
            return recommended_turn_setup(analyzer=analyzer, **overrides).stop
        if setup.stop == "smart-turn-only":
            return TurnAnalyzerStop(analyzer, **setup.stop_overrides())
    except ConfigurationError as exc:
        raise CLIError(str(exc)) from None
    return stop_strategy(setup)


def make_app(options: ServeOptions, *, admission: Any = None, deploy: bool = True) -> Any:
    """The aiohttp application of ``rxvoice serve`` (one process: its sessions share its :class:`Models`)."""
    from ..transports import voice_app

    if not options.setup.named.needs_model:
        stop_strategy(options.setup)  # check the setup now, not when the first caller speaks
    models = Models(options, deploy=deploy)
    SileroVADAnalyzer(16000).close()  # load Silero now

    def build(transport: Any) -> Stage:
        return make_stage(options, transport, models)

    app = voice_app(build, allowed_origins=options.allowed_origins, max_sessions=options.max_sessions or 64,
                    admission=admission, token=options.token, client_words=options.stt == "client")

    async def close_models(_app: Any) -> None:
        models.close()

    app.on_cleanup.append(close_models)
    return app


def partial_stage(options: ServeOptions) -> Callable[[Any], Stage]:
    def build(transport: Any) -> Stage:
        return make_stage(options, transport)

    return build


# -- the command -------------------------------------------------------------------------------------


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``serve``."""
    p = sub.add_parser("serve", help="talk to a bot in the browser and watch its turn decisions live",
                       description=DESCRIPTION)
    p.add_argument("--host", type=_host, default="127.0.0.1",
                   help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 or :: for all)")
    p.add_argument("--port", type=port_number, default=8765, help="the port (default 8765; 0: any free port)")
    p.add_argument("--stt", choices=STT_CHOICES,
                   help="speech-to-text (default whisper when it and its model are installed, else pocketsphinx "
                        "when installed, else none: placeholders)")
    p.add_argument("--tts", choices=TTS_CHOICES,
                   help="text-to-speech (default espeak when espeak-ng is installed, else paced words)")
    p.add_argument("--stop", choices=setup_names(),
                   help=stop_help(f"{DEFAULT_SETUP} when the Smart Turn model is found, else {FALLBACK_SETUP}"))
    p.add_argument("--speech-timeout", type=seconds_between(0.0, 10.0), default=0.6, metavar="S",
                   help="silence after the VAD stop that ends a turn with --stop speech-timeout (default 0.6)")
    p.add_argument("--model", metavar="PATH", help=MODEL_HELP)
    p.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="another page allowed to connect (http://host:port); repeatable")
    p.add_argument("--speculate", action="store_true",
                   help="speculative replies: ask the model when the end is likely and hold the answer (faster "
                        "answers, some requests paid for nothing)")
    p.add_argument("--backchannels", action="store_true",
                   help="a short 'mm-hmm' or 'yeah' while the bot speaks does not interrupt it")
    p.add_argument("--classifier", choices=("rules", "model"),
                   help="ask a turn-completion classifier (the completion rules, or the OPENAI_BASE_URL model) "
                        "before each turn end: complete, short pause or long pause")
    p.add_argument("--first-token-delay", type=seconds_between(0.0, 10.0), default=0.2, metavar="S",
                   help="the scripted model's seconds to its first token (default 0.2; 0.5 makes speculation "
                        "easy to hear)")
    _add_server_arguments(p)
    p.set_defaults(run=run)


def _add_server_arguments(p: argparse.ArgumentParser) -> None:
    """The server's own options: capacity, processes, inference, access, TLS."""
    p.add_argument("--max-sessions", type=positive_int, metavar="N",
                   help="sessions at once; more callers are told 'server full' (default: what this machine's "
                        "cores carry with the chosen --stt, measured by benchmarks/serve.py)")
    p.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="server processes sharing the port, e.g. one per core (default 1)")
    p.add_argument("--inference", choices=INFERENCE_CHOICES, default="in-process",
                   help="where Smart Turn (and, with --stt pocketsphinx, the recognizer) runs: in this process "
                        "(default), a local process pool, or a Ray Serve deployment")
    p.add_argument("--inference-processes", type=positive_int, default=1, metavar="N",
                   help="processes of --inference process-pool (default 1)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="the Ray cluster for --inference ray (default: start a local Ray instance)")
    p.add_argument("--inference-timeout", type=seconds_between(0.01, 60.0), default=1.0, metavar="S",
                   help="seconds a Smart Turn verdict is waited for before the turn is decided without it "
                        "(default 1.0)")
    p.add_argument("--token", metavar="TOKEN",
                   help="the access token the page needs (?token=...); off 127.0.0.1 one is made up and printed "
                        "when not given")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                   help="serve https with this certificate and key (PEM): browsers give a page the microphone "
                        "only over https, or on localhost")
    p.add_argument("--self-signed", action="store_true",
                   help="serve https with a self-signed certificate made for this host (the browser warns once)")


def options_from(args: argparse.Namespace, err: TextIO) -> ServeOptions:
    """The options the command line asks for, with defaults filled in from what is installed."""
    import shutil

    need_module("aiohttp", "serve", "rxvoice serve")
    setup = make_setup(argparse.Namespace(  # the builder `rxvoice turns` uses: the same default and errors
        model=args.model, stop=args.stop, vad="silero", stt_delay=0.3, model_latency=0.05,
        speech_timeout=args.speech_timeout, tail=4.0), err)
    stt = args.stt
    if stt is None:
        stt = default_stt()
        if stt == "none":
            print("note: no offline STT is installed (pip install 'rxvoice[stt]', then `rxvoice model install`): "
                  "utterances become placeholders", file=err)
    elif stt == "pocketsphinx" and not pocketsphinx_available():
        raise CLIError("--stt pocketsphinx needs the pocketsphinx package: pip install 'rxvoice[stt]'")
    if stt == "whisper":
        offline_stt("whisper")  # the package and the model checked now, in one line, not at the first connection
    tts = args.tts
    if tts is None:
        tts = "espeak" if shutil.which("espeak-ng") else "paced"
        if tts == "paced":
            print("note: espeak-ng is not installed (Debian package espeak-ng): the bot's words are shown, "
                  "not spoken", file=err)
    elif tts == "espeak" and not shutil.which("espeak-ng"):
        raise CLIError("--tts espeak needs the espeak-ng program: install the Debian package espeak-ng")
    llm = "openai" if os.environ.get("OPENAI_BASE_URL") else "scripted"
    if (stt == "openai" or tts == "openai" or llm == "openai") and not _has_httpx():
        why = "OPENAI_BASE_URL is set: the OpenAI-compatible model" if llm == "openai" else "--stt/--tts openai"
        raise CLIError(f"{why} needs the httpx package: pip install 'rxvoice[openai]' "
                       "(from a clone: .venv/bin/pip install -e '.[openai]')")
    classifier = getattr(args, "classifier", None)
    if classifier == "model" and llm != "openai":
        raise CLIError("--classifier model asks the OpenAI-compatible model: set OPENAI_BASE_URL (or use "
                       "--classifier rules)")
    talk: dict[str, Any] = {"speculate": bool(getattr(args, "speculate", False)),
            "backchannels": bool(getattr(args, "backchannels", False)), "classifier": classifier,
            "first_token_delay": float(getattr(args, "first_token_delay", 0.2))}
    return ServeOptions(stt=stt, tts=tts, stop=setup.stop, model=setup.model, speech_timeout=setup.speech_timeout,
                        llm=llm, allowed_origins=tuple(args.allow_origin), **_server_options(args, stt, err), **talk)


def _server_options(args: argparse.Namespace, stt: str, err: TextIO) -> dict[str, Any]:
    """The server's own options, checked; off loopback a token is made up when none is given."""
    from ..transports import new_token

    timeout = getattr(args, "inference_timeout", 1.0)
    token = getattr(args, "token", None)
    if token is not None and len(token) < 8:
        raise CLIError("--token: give at least 8 characters (or leave it out: one is made up)")
    if token is None and not loopback(args.host):
        token = new_token()
    tls: tuple[Path, Path] | None = None
    if getattr(args, "tls", None):
        cert, key = (Path(p).expanduser() for p in args.tls)
        for path in (cert, key):
            if not path.is_file():
                raise CLIError(f"--tls: {path} is not a file")
        tls_context(cert, key)  # fails now, with a one-line error, rather than in every worker
        tls = (cert, key)
    elif getattr(args, "self_signed", False):
        tls = self_signed_certificate(args.host)
        print(f"note: serving https with a self-signed certificate ({tls[0]}): the browser warns once",
              file=err)
    inference = getattr(args, "inference", "in-process")
    address = getattr(args, "ray_address", None)
    if address is not None and inference != "ray":
        raise CLIError("--ray-address goes with --inference ray")
    if inference == "ray":
        from ..inference import check_ray_address

        try:
            import ray  # noqa: F401
        except ImportError:
            raise CLIError("--inference ray needs Ray Serve: pip install 'rxvoice[ray]'") from None
        if address is not None:
            try:
                check_ray_address(address)
            except ConfigurationError as exc:
                raise CLIError(str(exc)) from None
    return {"max_sessions": getattr(args, "max_sessions", None), "token": token, "tls": tls,
            "workers": getattr(args, "workers", 1), "inference": inference,
            "inference_processes": getattr(args, "inference_processes", 1), "ray_address": address,
            "inference_timeout": timeout}


def _has_httpx() -> bool:
    import importlib.util

    return importlib.util.find_spec("httpx") is not None


def _host(text: str) -> str:
    """An argparse type: an address or host name to listen on (an empty one would mean every interface, unsaid)."""
    host = text.strip()
    if not host:
        raise argparse.ArgumentTypeError("give an address: 127.0.0.1 (this machine), 0.0.0.0 or :: (every interface)")
    return host


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until interrupted."""
    options = options_from(args, err)
    host = args.host
    if not loopback(host):
        spend = " and, with OPENAI_BASE_URL set, your API quota" if options.llm == "openai" else ""
        print(f"warning: listening on {host}: whoever can reach this address and has the token can use the "
              f"page, this machine's CPU{spend}; the default 127.0.0.1 keeps it to this machine", file=err)
        if options.tls is None:
            print("note: browsers give a page the microphone only over https or on localhost: for another "
                  "machine use --self-signed (or --tls CERT KEY), or an SSH tunnel to 127.0.0.1", file=err)
    try:
        sock = listen(host, args.port)
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{args.port}: {exc.strerror or exc}") from None

    def announce(port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if options.tls else "http"
        query = f"?token={options.token}" if options.token else ""
        workers = f", {options.workers} workers" if options.workers > 1 else ""
        print(f"rxvoice serve: open {scheme}://{shown}:{port}/{query} in a browser and speak "
              f"(stt {options.stt}, tts {options.tts}, stop {options.stop}, model {options.llm}, "
              f"up to {options.max_sessions} sessions{workers}, inference {options.inference}); Ctrl-C stops",
              file=out, flush=True)

    try:
        if options.workers > 1:
            from .server import run_workers

            return run_workers(make_app, options, sock, out, announce)
        app = make_app(options)
        tls = tls_context(*options.tls) if options.tls else None
        asyncio.run(serve_forever(app, sock, tls, announce))
    finally:
        sock.close()
    return 0

"""One connection's pipeline in ``rxvoice serve``: VAD, STT, the pair with the chosen stop, model, TTS."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..aggregators import Pair
from ..audio.vad import SileroVADAnalyzer
from ..audio.vad_processor import VADProcessor
from ..context import ContextSnapshot, LLMContext
from ..errors import ConfigurationError
from ..frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    MetricsFrame,
    TranscriptionFrame,
    TTSTextFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from ..pipeline import Stage, pipeline
from ..services.stt import (
    OpenAITranscriptionSTT,
    PocketSphinxSTT,
    Recognizer,
    STTService,
)
from ..services.tts import EspeakTTS, OpenAISpeechTTS, PacedTextTTS, TTSService
from ..services.whisper import WhisperSTT
from ..testing import Reply, ScriptedLLM
from ._common import CLIError
from .serve_options import ServeOptions
from .serve_page import Inspector, PageWatch, WatchedSilero
from .server import Models
from .setups import Setup, stop_strategy

__all__ = [
    "SYSTEM_PROMPT",
    "PlaceholderSTT",
    "make_app",
    "make_llm",
    "make_stage",
    "make_stt",
    "make_tts",
    "partial_stage",
    "reply_to",
]

SYSTEM_PROMPT = "You are a friendly voice assistant. Answer in one or two short sentences."


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


def make_stage(options: ServeOptions, transport: Any, models: Models | None = None, *, hello: bool = True) -> Stage:
    """One connection's pipeline, wired to tell the page what happens.

    ``models`` are what the process's sessions share (made by :func:`make_app`); without them the
    session makes its own (a test, one pipeline). ``hello``: send the page the hello first (``False``:
    it was sent as the connection opened, :func:`make_app`).
    """
    watch = PageWatch(transport, options)
    setup = models.setup if models is not None else options.setup
    params = models.vad_params if models is not None else setup.vad_params

    def analyzer() -> WatchedSilero:
        watch.analyzer = WatchedSilero(params)
        return watch.analyzer

    turn_analyzer = models.turn_analyzer(watch.fallback, watch.dropped) if models is not None else None
    words_end = models.words_end if models is not None else None
    stop = _stop_with(setup, turn_analyzer, words_end) if turn_analyzer is not None else stop_strategy(setup)
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
    if hello:
        transport.send(models.hello if models is not None else {"type": "hello", "setup": options.describe()})
    vad = VADProcessor(analyzer, batcher=models.vad_batcher if models is not None else None)
    stt = models.stt(watch.fallback) if models is not None else None
    if stt is None:
        stt = make_stt(options.stt)
    stages: list[Stage] = [vad] if stt is None else [vad, stt]
    return pipeline(
        *stages, Inspector(watch, heard, audio=True), user,
        Inspector(watch, (MetricsFrame,)), make_llm(options.llm, options.first_token_delay), make_tts(options.tts),
        Inspector(watch, spoken), transport.output(), assistant,
    )


def _stop_with(setup: Setup, analyzer: Any, words_end: Any = None) -> Any:
    """The setup's stop strategy judging with ``analyzer`` (a session's backend analyzer).

    The built-in Smart Turn setups are rebuilt on it; a setup registered later builds its own (in process).
    The recommended stop asks Smart Turn only when its verdict can move the answer (``ask_audio``): a
    server of many sessions asks it a fraction as often as at every pause. ``words_end``: the words'
    model the process shares (``None``: the default, loaded here).
    """
    from ..audio.recommended import recommended_turn_setup
    from ..turns import TurnAnalyzerStop

    try:
        if setup.stop == "smart-turn":
            overrides: dict[str, Any] = {"ask_audio": "when-needed", **dict(setup.overrides)}
            return recommended_turn_setup(analyzer=analyzer, words_end=words_end, **overrides).stop
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
    if options.setup.stop == "smart-turn":
        from ..turns.ending import default_words_end

        default_words_end()  # and the words' language model, not on the event loop when the first caller speaks

    def build(transport: Any) -> Stage:
        return make_stage(options, transport, models, hello=False)

    # The hello goes out as the connection opens; the pipeline is built when the caller first speaks (or sends
    # words): a connection left open and silent costs its socket, not a session's objects (about 4 ms of CPU to
    # build and start on a slow 2-core computer, and the collector's time over them while it lives).
    app = voice_app(build, allowed_origins=options.allowed_origins, max_sessions=options.max_sessions or 64,
                    admission=admission, token=options.token, client_words=options.stt == "client", lazy=True,
                    greeting=models.hello)

    async def close_models(_app: Any) -> None:
        models.close()

    app.on_cleanup.append(close_models)
    return app


def partial_stage(options: ServeOptions) -> Callable[[Any], Stage]:
    def build(transport: Any) -> Stage:
        return make_stage(options, transport)

    return build


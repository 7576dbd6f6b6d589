"""The named turn-taking setups the commands offer (``--stop NAME``), and how a recording is analyzed.

One registry holds every setup by name: what it is, whether it runs Smart
Turn, the VAD settings it goes with, the stop-strategy parameters ``--set``
may change and how to build its stop strategy. ``rxvoice turns``, ``eval``,
``serve`` and ``demo``, the text report and the plot all read it, so a new
setup is one :func:`register_setup` call (see the CLI reference for a
script that adds one), and no command compares names.

Why a turn ended is never worked out here: each stop strategy reports its
own reason (:class:`~rxvoice.turns.TurnEndReason`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..audio.recommended import STOP_PARAMETERS, VAD_PARAMETERS, recommended_turn_setup
from ..audio.turn import SmartTurnAnalyzer
from ..audio.vad import VADParams
from ..errors import ConfigurationError
from ..turns import SpeechTimeoutStop, TurnAnalyzerStop
from ..turns.strategy import StopStrategy
from ._common import CLIError, UsageError

__all__ = [
    "DEFAULT_SETUP",
    "FALLBACK_SETUP",
    "STOP_CHOICES",
    "VAD_CHOICES",
    "NamedSetup",
    "Setup",
    "default_vad",
    "named_setup",
    "register_setup",
    "setup_names",
    "smart_turn_vad",
    "stop_help",
    "stop_strategy",
]

VAD_CHOICES = ("silero", "webrtc")
DEFAULT_SETUP = "smart-turn"
"""The setup the commands use when the Smart Turn model is found."""
FALLBACK_SETUP = "speech-timeout"
"""The setup they fall back to without the model."""


def smart_turn_vad(overrides: Mapping[str, Any]) -> VADParams:
    """The VAD the recommended setup was measured with (``recommended_turn_setup``), with ``overrides``."""
    return recommended_turn_setup(smart_turn=False, **overrides).vad_params


def default_vad(overrides: Mapping[str, Any]) -> VADParams:
    """The VAD's defaults, with ``overrides``."""
    return VADParams(**overrides)


@dataclass(frozen=True)
class NamedSetup:
    """A turn-taking setup the commands offer by name.

    Attributes:
        name: what ``--stop`` calls it.
        title: what it is, for people (the demo, the report's setup line).
        summary: a few words for ``--help``.
        needs_model: it runs Smart Turn: the model must be found, the plot draws the verdicts.
        parameters: the stop-strategy parameters ``--set``/``--sweep`` may change.
        build: its stop strategy for a :class:`Setup` (raise ``ConfigurationError`` on bad settings).
        vad: the VAD settings it goes with, given the VAD overrides.
        uses_speech_timeout: ``--speech-timeout`` is its silence (the report says how much).
    """

    name: str
    title: str
    summary: str
    needs_model: bool
    parameters: frozenset[str]
    build: Callable[[Setup], StopStrategy[Any]] = field(repr=False)
    vad: Callable[[Mapping[str, Any]], VADParams] = field(default=default_vad, repr=False)
    uses_speech_timeout: bool = False

    def describe(self, setup: Setup) -> str:
        """The turn-end part of a run's one-line description."""
        if self.uses_speech_timeout:
            quiet = setup.vad_params.stop_secs + setup.speech_timeout
            return f"turn end: {self.title} ({quiet:.1f} s of silence)"
        if self.needs_model:
            model = setup.model.name if setup.model else "?"
            timing = "real model latency" if setup.realtime else f"verdicts take {setup.model_latency * 1000:.0f} ms"
            return f"turn end: {self.title} ({model}; {timing})"
        return f"turn end: {self.title}"


_SETUPS: dict[str, NamedSetup] = {}


def register_setup(named: NamedSetup, *, replace: bool = False) -> NamedSetup:
    """Offer ``named`` to every command (``--stop NAME``); returns it.

    Raises:
        ValueError: the name is taken (``replace=True`` replaces it on purpose).
    """
    if named.name in _SETUPS and not replace:
        raise ValueError(f"a setup named {named.name!r} is registered already")
    _SETUPS[named.name] = named
    return named


def named_setup(name: str) -> NamedSetup:
    """The setup registered as ``name``.

    Raises:
        CLIError: no such setup (the message lists them).
    """
    try:
        return _SETUPS[name]
    except KeyError:
        raise CLIError(f"--stop {name}: no such setup (there are {', '.join(_SETUPS)})") from None


def setup_names() -> tuple[str, ...]:
    """The registered names, in registration order (argparse's ``choices``)."""
    return tuple(_SETUPS)


def stop_help(default: str) -> str:
    """The ``--stop`` help text: every setup with its summary, and the default."""
    names = "; ".join(f"{s.name}: {s.summary}" for s in _SETUPS.values())
    return f"what ends a turn ({names}); default: {default}"


@dataclass(frozen=True)
class Setup:
    """How a recording is analyzed.

    Attributes:
        vad: ``"silero"`` or ``"webrtc"``.
        stop: the name of a registered setup (:func:`setup_names`): ``"smart-turn"``
            (the recommended one, a :class:`~rxvoice.turns.FusedTurnStop` over Smart Turn),
            ``"smart-turn-only"`` (:class:`~rxvoice.turns.TurnAnalyzerStop`: the model's
            verdicts alone, with the same VAD), ``"speech-timeout"``
            (:class:`~rxvoice.turns.SpeechTimeoutStop`), or one registered later.
        model: the Smart Turn model file (for a setup that needs it).
        stt_delay: the STT's latency after the end of speech.
        model_latency: virtual seconds each Smart Turn verdict takes.
        speech_timeout: ``SpeechTimeoutStop.user_speech_timeout``.
        tail: seconds of silence played after the recording, so its last turn can end.
        realtime: pace the run with the wall clock on asyncio (Smart Turn at its real speed;
            ``model_latency`` is then not used).
        overrides: ``(name, value)`` pairs: VAD parameters (``stop_secs``, ``min_volume``, ...)
            and stop-strategy parameters (``patience``, ...) to use instead of the defaults.
        first_token_delay: with a value, a scripted model answers each turn after this many
            seconds to its first token and a paced synthesizer speaks it, so the run measures the
            end of speech to the bot's first audio (``None``: turn ends only).
        speculate: speculative replies (``TurnsConfig(speculate=True)``).
        interim_lag: the replayed STT also sends interim words, each this long after it was spoken.
        backchannels: a ``BackchannelStart`` first in the start chain (continuers do not barge in).
        bot_audio_at: with no scripted model (``first_token_delay`` unset), the bot's first audio is
            taken to start this many seconds after each turn end: speech resumed later is a new turn,
            as it is live once the bot has started speaking (the recovery window closes there;
            ``None``: the window's own length, no bot heard).

    Raises:
        CLIError: an unknown setup name; ``UsageError``: a parameter the setup does not have.
    """

    vad: str = "silero"
    stop: str = DEFAULT_SETUP
    model: Path | None = None
    stt_delay: float = 0.3
    model_latency: float = 0.05
    speech_timeout: float = 0.6
    tail: float = 4.0
    realtime: bool = False
    overrides: tuple[tuple[str, float], ...] = ()
    first_token_delay: float | None = None
    speculate: bool = False
    interim_lag: float | None = None
    backchannels: bool = False
    bot_audio_at: float | None = None

    def __post_init__(self) -> None:
        parameters = self.named.parameters
        for name, _ in self.overrides:
            if name not in VAD_PARAMETERS and name not in parameters:
                known = ", ".join(sorted(VAD_PARAMETERS | parameters))
                raise UsageError(f"--stop {self.stop} has no parameter {name!r} (it has {known})")

    @property
    def named(self) -> NamedSetup:
        """The registered setup :attr:`stop` names."""
        return named_setup(self.stop)

    def strategy_parameters(self) -> frozenset[str]:
        """The stop-strategy parameters :attr:`overrides` may set."""
        return self.named.parameters

    def vad_overrides(self) -> dict[str, Any]:
        """The overrides that are VAD parameters."""
        return {k: v for k, v in self.overrides if k in VAD_PARAMETERS}

    def stop_overrides(self) -> dict[str, Any]:
        """The overrides that are stop-strategy parameters."""
        return {k: v for k, v in self.overrides if k not in VAD_PARAMETERS}

    @property
    def vad_params(self) -> VADParams:
        """The VAD settings of the named setup, with the VAD overrides."""
        try:
            return self.named.vad(self.vad_overrides())
        except ConfigurationError as exc:  # a --set value out of range
            raise UsageError(str(exc)) from None

    def describe(self) -> dict[str, Any]:
        """The settings, for JSON."""
        named = self.named
        return {
            "vad": self.vad,
            "vad_stop_secs": self.vad_params.stop_secs,
            "stop": self.stop,
            "smart_turn_model": str(self.model) if self.model else None,
            "model_latency": self.model_latency if named.needs_model and not self.realtime else None,
            "speech_timeout": self.speech_timeout if named.uses_speech_timeout else None,
            "stt_delay": self.stt_delay,
            "tail": self.tail,
            "realtime": self.realtime,
            **self._talk(),
        }

    def _talk(self) -> dict[str, Any]:
        """The reply, speculation and backchannel settings, when any is set (the default schema stays as it was)."""
        talk: dict[str, Any] = {}
        if self.first_token_delay is not None:
            talk["first_token_delay"] = self.first_token_delay
        if self.speculate:
            talk["speculate"] = True
        if self.interim_lag is not None:
            talk["interim_lag"] = self.interim_lag
        if self.backchannels:
            talk["backchannels"] = True
        return talk


def stop_strategy(setup: Setup) -> StopStrategy[Any]:
    """The setup's stop strategy, built by its registered setup.

    Raises:
        CLIError: the setup needs the Smart Turn model and has none; ``UsageError``: its settings are refused.
    """
    named = setup.named
    if named.needs_model and setup.model is None:
        raise CLIError(f"--stop {setup.stop} needs the Smart Turn model (see `rxvoice model where`)")
    try:
        return named.build(setup)
    except ConfigurationError as exc:  # a --set value out of range
        raise UsageError(str(exc)) from None


# -- the built-in setups -----------------------------------------------------------------------------


def _smart_turn(setup: Setup) -> StopStrategy[Any]:
    overrides: dict[str, Any] = dict(setup.overrides)
    return recommended_turn_setup(setup.model, **overrides).stop


def _smart_turn_only(setup: Setup) -> StopStrategy[Any]:
    return TurnAnalyzerStop(SmartTurnAnalyzer(setup.model), **setup.stop_overrides())


def _speech_timeout(setup: Setup) -> StopStrategy[Any]:
    return SpeechTimeoutStop(**{"user_speech_timeout": setup.speech_timeout, **setup.stop_overrides()})


register_setup(NamedSetup(
    "smart-turn", "Smart Turn with the words and the silence",
    "the recommended setup, Smart Turn, the words and the silence weighed together (FusedTurnStop)",
    needs_model=True, parameters=STOP_PARAMETERS, build=_smart_turn, vad=smart_turn_vad,
))
register_setup(NamedSetup(
    "speech-timeout", "a speech timeout", "a fixed silence after the speech (SpeechTimeoutStop)",
    needs_model=False, parameters=frozenset({"user_speech_timeout"}), build=_speech_timeout,
    uses_speech_timeout=True,
))
register_setup(NamedSetup(
    "smart-turn-only", "Smart Turn's verdicts alone", "the model's verdicts alone (TurnAnalyzerStop)",
    needs_model=True, parameters=frozenset({"transcript_timeout"}), build=_smart_turn_only, vad=smart_turn_vad,
))

STOP_CHOICES = setup_names()
"""The built-in setups' names (the commands read :func:`setup_names`, which includes later ones)."""

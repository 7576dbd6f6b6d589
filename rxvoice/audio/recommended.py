"""The recommended turn-taking setup with Smart Turn: VAD parameters and the stop strategy, in one place.

Everything that runs "the Smart Turn setup" builds it here, so the command
line (``rxvoice turns --stop smart-turn``, ``rxvoice eval``, ``rxvoice
demo``), the examples and an application get the same, measured choice::

    from rxvoice.audio import recommended_turn_setup
    from rxvoice.audio.vad import SileroVADAnalyzer
    from rxvoice.audio.vad_processor import VADProcessor

    setup = recommended_turn_setup()                 # finds the Smart Turn model
    vad = VADProcessor(lambda: SileroVADAnalyzer(params=setup.vad_params))
    pair = Pair(context, turns=setup.turns_config(idle_timeout=10))

What it holds and why is in ``docs/turn-taking.md`` ("The recommended
setup"): a :class:`~rxvoice.turns.FusedTurnStop` over Smart Turn v3.2, the
transcript-completion rules and the silence, and a VAD that marks a pause
after :data:`~rxvoice.audio.vad.SMART_TURN_STOP_SECS` of silence.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from ..turns import EndOfTurnAnalyzer, FusedTurnStop, TurnsConfig
from ..turns.ending import WordsEndModel
from .turn.smart_turn import SmartTurnAnalyzer
from .vad.params import SMART_TURN_MIN_VOLUME, SMART_TURN_STOP_SECS, VADParams

__all__ = ["STOP_PARAMETERS", "VAD_PARAMETERS", "RecommendedTurnSetup", "recommended_turn_setup"]

VAD_PARAMETERS = frozenset(f.name for f in dataclasses.fields(VADParams))
"""Names :func:`recommended_turn_setup` passes to :class:`~rxvoice.audio.vad.VADParams`."""

STOP_PARAMETERS = frozenset(
    f.name for f in dataclasses.fields(FusedTurnStop)
    if f.init and f.name not in ("analyzer", "words_end", "wait_model")
)
"""Names :func:`recommended_turn_setup` passes to :class:`~rxvoice.turns.FusedTurnStop`."""


@dataclass(frozen=True)
class RecommendedTurnSetup:
    """The VAD parameters and the stop strategy that go together.

    Attributes:
        vad_params: for the VAD analyzer (``SileroVADAnalyzer(params=...)``).
        stop: the stop strategy.
    """

    vad_params: VADParams
    stop: FusedTurnStop

    def turns_config(self, **kwargs: Any) -> TurnsConfig:
        """A :class:`~rxvoice.turns.TurnsConfig` stopping with :attr:`stop` (other settings as given)."""
        if "stop" in kwargs or "strategies" in kwargs:
            raise ConfigurationError("the recommended setup chooses the stop strategy; pass other settings only")
        return TurnsConfig(stop=[self.stop], **kwargs)


def recommended_turn_setup(
    model: str | os.PathLike[str] | None = None,
    *,
    analyzer: EndOfTurnAnalyzer | None = None,
    smart_turn: bool = True,
    words_end: WordsEndModel | None = None,
    **overrides: Any,
) -> RecommendedTurnSetup:
    """Smart Turn v3.2 with the words and the silence, and the VAD parameters it was measured with.

    Args:
        model: the Smart Turn ``.onnx`` file (default: ``RXVOICE_SMART_TURN_MODEL``,
            then the user cache; see :func:`~rxvoice.audio.turn.find_model`).
        analyzer: an end-of-turn analyzer to use instead (a
            :class:`~rxvoice.audio.turn.SmartTurnBatcher`, a test double).
        smart_turn: ``False`` decides on words and silence alone (no model).
        words_end: the words' end-of-turn signal (default: the trigram model in the
            ``pocketsphinx`` wheel, see :func:`~rxvoice.turns.ending.default_words_end`).
        overrides: any :class:`~rxvoice.audio.vad.VADParams` field
            (``stop_secs``, ``min_volume``, ...) or :class:`~rxvoice.turns.FusedTurnStop`
            parameter (``patience``, ...), to try other values.

    Raises:
        ConfigurationError: an unknown or out-of-range parameter, or both
            ``model`` and ``analyzer``.
        ModelNotFoundError: no Smart Turn model was found.
    """
    unknown = sorted(set(overrides) - VAD_PARAMETERS - STOP_PARAMETERS)
    if unknown:
        raise ConfigurationError(
            f"unknown parameter {', '.join(unknown)}; the recommended setup takes "
            f"{', '.join(sorted(VAD_PARAMETERS | STOP_PARAMETERS))}"
        )
    if model is not None and analyzer is not None:
        raise ConfigurationError("give the Smart Turn model file or an analyzer, not both")
    vad: Mapping[str, Any] = {
        "stop_secs": SMART_TURN_STOP_SECS, "min_volume": SMART_TURN_MIN_VOLUME,
        **{k: v for k, v in overrides.items() if k in VAD_PARAMETERS},
    }
    stop: dict[str, Any] = {k: v for k, v in overrides.items() if k in STOP_PARAMETERS}
    if words_end is not None:
        stop["words_end"] = words_end
    if smart_turn and analyzer is None:
        analyzer = SmartTurnAnalyzer(model)
    return RecommendedTurnSetup(VADParams(**vad), FusedTurnStop(analyzer if smart_turn else None, **stop))

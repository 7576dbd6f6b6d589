"""Strategies a service recommends (``STTMetadataFrame``/``LLMServiceMetadataFrame.user_turn_strategies``).

A speech-to-text service that detects turns itself (it sends proposals) can
recommend :func:`~rxvoice.turns.ExternalStrategies`; the stage running the
turn controller then swaps its controller for one built from the
recommendation, for that session only. The application's own choice always
wins: a recommendation is applied only when the :class:`TurnsConfig` pinned
no strategies.
"""

from __future__ import annotations

import logging

from ..errors import ConfigurationError
from ..frames import Frame
from .config import TurnsConfig, UserTurnStrategies
from .controller import TurnController

__all__ = ["recommended_controller"]

log = logging.getLogger("rxvoice.turns.recommend")


def recommended_controller(turns: TurnsConfig, current: TurnController, frame: Frame) -> TurnController | None:
    """The controller ``frame``'s recommendation asks for, or ``None`` to keep ``current``.

    ``None`` when the frame recommends nothing, recommends what ``current``
    already runs, recommends something unusable (logged), or the
    application pinned its strategies (logged when that keeps interruptions
    on against the service's advice).
    """
    rec = getattr(frame, "user_turn_strategies", None)
    if rec is None:
        return None
    if not isinstance(rec, UserTurnStrategies):
        log.warning("%s recommended %r, not a UserTurnStrategies; ignored", type(frame).__name__, rec)
        return None
    if turns.pinned:
        ours = turns.strategies.external_interruptions if turns.strategies is not None else None
        if rec.external_interruptions is False and ours:
            log.warning(
                "%s recommends turning interruptions off, but the pinned strategies keep them on",
                type(frame).__name__,
            )
        return None
    if current.recommendation == rec:
        return None
    try:
        start, stop = rec.resolved()
    except ConfigurationError as exc:
        log.warning("%s recommended unusable strategies (%s); ignored", type(frame).__name__, exc)
        return None
    controller = TurnController(start, stop, turns.stop_timeout)
    controller.recommendation = rec
    return controller

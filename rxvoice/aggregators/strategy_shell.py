"""The shell half shared by stages that run turn strategies: their resources and a swapped controller.

A strategy may hold a per-session resource (an end-of-turn model's
buffers); a service's recommendation may replace the whole controller
mid-session. Both the user aggregator and the turn processor have to open,
swap and release those the same way, so they do it here.
"""

from __future__ import annotations

import logging

from ..context import LLMContext
from ..events import EventRegistry
from ..frames import DOWN, Direction, Frame
from ..pipeline.processor import EventfulProcessor, Port, Processor
from ..turns.controller import TurnController
from .effects import ShellSession
from .turn_common import TurnCoreBase, UseController

__all__ = ["StrategyProcessor", "StrategyShell"]

log = logging.getLogger("rxvoice.aggregators")

_SAMPLE_RATE = 16000


class StrategyShell(ShellSession):
    """A session whose core runs turn strategies: opens their resources, swaps them on a recommendation."""

    def __init__(
        self, processor: Processor, port: Port, context: LLMContext, events: EventRegistry, core: TurnCoreBase
    ) -> None:
        super().__init__(processor, port, context, events)
        self.handlers[UseController] = self._use_controller
        self._handled = core.handled_types
        self._handled_with = core.handled_with
        self.strategies = core.controller.strategies
        self.resources = [s.open_resource(_SAMPLE_RATE) for s in self.strategies]

    def _use_controller(self, e: UseController) -> None:
        self._use(e.controller)

    def _use(self, controller: TurnController) -> None:
        """Run a recommended controller: the old strategies' timers and resources go, the new ones' come."""
        for owner, key in list(self._timers):
            if owner >= 0:
                self._timer(owner, key, None)
        self._release()
        self.strategies = controller.strategies
        self.resources = [s.open_resource(_SAMPLE_RATE) for s in self.strategies]
        self._handled = self._handled_with(controller)

    def _release(self) -> None:
        for strategy, resource in zip(self.strategies, self.resources, strict=False):
            if resource is not None:
                try:
                    strategy.close_resource(resource)
                except Exception:
                    log.exception("releasing %s's resource failed; contained", strategy.name)
        self.resources = []

    def close(self) -> None:
        super().close()
        self._release()


class StrategyProcessor(EventfulProcessor):
    """A processor with one current session that app callbacks can push frames through."""

    _session: StrategyShell | None = None

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def push(self, frame: Frame, direction: Direction = DOWN) -> None:
        """Send ``frame`` from this stage to its neighbour (e.g. from an ``on_idle`` callback)."""
        session = self._session
        if session is None or session.closed:
            log.warning("%s.push(%s): no running session; dropped", self.name, frame.name)
            return
        port = session.port
        port.session.run(lambda _: port.push(frame, direction), None)

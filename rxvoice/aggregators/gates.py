"""Gates: hold frames back until something lets them through.

``Gated`` is a window over the frame stream: a predicate opens it, another
closes it, and what arrives while it is closed is held and released, in order,
behind the frame that opens it. ``GatedContext`` holds the conversation back
from the model until a notifier says so, keeping only the latest.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reactivex import Observable, abc

from ..errors import ConfigurationError
from ..events import EventRegistry
from ..frames import DOWN, CancelFrame, Direction, EndFrame, Frame, FrameKind, LLMContextFrame
from ..notify import Notifier
from ..operators import Gate
from ..pipeline.processor import EventfulProcessor, Port

__all__ = ["GateFunc", "Gated", "GatedConfig", "GatedContext"]

log = logging.getLogger("rxvoice.aggregators.gates")

GateFunc = Callable[[Frame], bool]
"""Whether a frame opens (or closes) a gate."""

_SYSTEM = FrameKind.SYSTEM


@dataclass(frozen=True, slots=True)
class GatedConfig:
    """How a :class:`Gated` behaves.

    Attributes:
        open: Whether a frame opens the gate; consulted only while it is closed.
            ``None``: nothing opens it.
        close: Whether a frame closes the gate; consulted only while it is open.
            ``None``: nothing closes it.
        start_open: The gate is open before any frame arrives.
        direction: The way the frames it holds travel; frames going the other
            way pass untouched.
    """

    open: GateFunc | None = None
    close: GateFunc | None = None
    start_open: bool = False
    direction: Direction = DOWN

    def __post_init__(self) -> None:
        for name in ("open", "close"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise ConfigurationError(f"Gated {name} must be a predicate on frames, got {fn!r}")
        if not isinstance(self.direction, Direction):
            raise ConfigurationError(f"Gated direction must be DOWN or UP, got {self.direction!r}")


class Gated(EventfulProcessor):
    """Holds frames back until something opens the gate, then releases them behind it.

    * While closed, ``open(frame)`` is asked; while open, ``close(frame)`` is.
    * A frame that opens the gate goes first, then everything held, in the order
      it arrived: what was held is meant to arrive after whatever announced it.
    * A frame that closes the gate is held with the rest, so it is the first
      thing released next time.
    * System frames are never held, whatever the gate says: a pipeline that
      cannot hear about an interruption while a gate is closed has no way out.
      An interruption does not clear what is held.
    * Frames travelling the other way are not its business and pass untouched.
    * A predicate that raises is reported (``on_error``, an ``ErrorFrame``
      upstream) and counts as "no": the frame is held or passed as the gate
      stands, never lost.

    This is :func:`rxvoice.operators.gate` on a frame stream, with system frames
    as the items that always pass: both run the same
    :class:`~rxvoice.operators.Gate`.

    End-of-stream caveat (as in jargo, the Go port of Pipecat): ending the run is not a system frame,
    so a closed gate holds the ``EndFrame`` too, and the stages behind it never
    hear the run end. Open the gate before shutting down; a ``CancelFrame`` is a
    system frame and always gets through. When the input observable itself
    completes, frames still held are dropped (with a warning): the gate can no
    longer open.

    Args:
        open: Predicate that opens the gate (or a :class:`GatedConfig`).
        close: Predicate that closes it.
        start_open: Open before any frame arrives.
        direction: The direction of the frames it holds (downstream by default).

    Examples:
        >>> import reactivex
        >>> from rxvoice import frames as F
        >>> gate = Gated(open=lambda f: isinstance(f, F.TTSSpeakFrame))
        >>> out = []
        >>> src = reactivex.from_iterable([F.TextFrame("one"), F.TextFrame("two"), F.TTSSpeakFrame("open")])
        >>> _ = src.pipe(gate).subscribe(lambda f: out.append(f.text))
        >>> out
        ['open', 'one', 'two']
    """

    name = "Gated"

    def __init__(
        self,
        open: GateFunc | GatedConfig | None = None,
        close: GateFunc | None = None,
        start_open: bool = False,
        direction: Direction = DOWN,
    ) -> None:
        if isinstance(open, GatedConfig):
            if close is not None or start_open or direction is not DOWN:
                raise ConfigurationError("give Gated either a GatedConfig or the separate arguments, not both")
            self.config = open
        else:
            self.config = GatedConfig(open, close, start_open, direction)
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"Gated({self.config!r})"

    def open(self, port: Port) -> _GatedSession:
        return _GatedSession(self.config, port)



def _is_system(frame: Frame) -> bool:
    return frame.kind is _SYSTEM


class _GatedSession:
    """One subscription's gate: a :class:`~rxvoice.operators.Gate` and its way out."""

    __slots__ = ("_direction", "_gate", "_port", "_push", "_push_down", "_push_up")

    def __init__(self, config: GatedConfig, port: Port) -> None:
        self._port = port
        self._push_down = port.push_down
        self._push_up = port.push_up
        self._direction = config.direction
        self._push = self._push_down if config.direction is DOWN else self._push_up
        self._gate: Gate[Frame] = Gate(
            self._asking(config.open),
            self._asking(config.close),
            start_open=config.start_open,
            passes=_is_system,
            release_on_flush=False,
        )

    @property
    def is_open(self) -> bool:
        return self._gate.is_open

    def _asking(self, predicate: GateFunc | None) -> GateFunc | None:
        """``predicate``, reporting what it raises and counting that as "no": the frame is never lost."""
        if predicate is None:
            return None
        port = self._port

        def ask(frame: Frame) -> bool:
            try:
                return bool(predicate(frame))
            except Exception as exc:
                log.exception("a Gated predicate raised on %s; the gate stays as it is", frame.name)
                port.report_error(exc, frame)
                return False

        return ask

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if direction is not self._direction:
            if direction is DOWN:
                self._push_down(frame)
            else:
                self._push_up(frame)
            return
        gate = self._gate
        was_open = gate.is_open
        out = gate.push(frame)
        if gate.is_open is not was_open:
            log.debug("Gated %s by %s", "opened" if was_open is False else "closed", frame.name)
        push = self._push
        for f in out:
            push(f)

    def on_input_end(self, direction: Direction) -> None:
        if direction is self._direction:
            dropped = self._gate.clear()
            if dropped:
                log.warning("Gated: the input ended with %d frame(s) held; they are dropped", dropped)

    def close(self) -> None:
        self._gate.clear()


# ---------------------------------------------------------------------------------------------


Signals = Observable[Any] | Notifier


def _signals_of(notifier: object) -> Observable[Any]:
    if isinstance(notifier, Notifier):
        return notifier.signals
    if isinstance(notifier, Observable):
        return notifier
    signals = getattr(notifier, "signals", None)
    if isinstance(signals, Observable):
        return signals
    raise ConfigurationError(
        f"GatedContext needs an observable of signals or a Notifier, got {notifier!r}"
    )


class GatedContext(EventfulProcessor):
    """Holds the conversation back from the model until a notifier says to let it through.

    How a turn waits on something the pipeline cannot express as a frame order:
    a classifier deciding whether to answer at all, a lookup that has to finish
    first. Only the most recent ``LLMContextFrame`` is held, because an older one
    describes a conversation that has since moved on; what a signal releases is
    the conversation as it stands, not a backlog.

    * ``LLMContextFrame`` (and subclasses, either direction) is held, replacing
      any held one; with ``start_open`` the first one goes straight through.
    * Each signal releases the held frame, if any, in the direction it was
      travelling. A signal that finds nothing held is spent (as in jargo):
      a release needs a signal after the context is held. A
      :class:`~rxvoice.notify.Notifier` signalled before the session subscribes
      remembers one signal, not a count.
    * Signals may come from any thread; releases happen inside the session,
      serialized with the frames.
    * ``EndFrame`` and ``CancelFrame`` stop listening to the notifier, then go on;
      a context still held then is dropped.
    * Everything else passes untouched.

    Args:
        notifier: An observable (each item is a signal) or a
            :class:`~rxvoice.notify.Notifier`.
        start_open: Let the first context through without waiting, so the bot
            can open the call before anything has had to decide.

    Examples:
        >>> from reactivex.subject import Subject
        >>> from rxvoice import LLMContext, frames as F
        >>> from rxvoice.notify import Notifier
        >>> n = Notifier()
        >>> src: Subject[F.Frame] = Subject()
        >>> out = []
        >>> _ = src.pipe(GatedContext(n)).subscribe(out.append)
        >>> src.on_next(F.LLMContextFrame(LLMContext()))
        >>> len(out)
        0
        >>> n.notify()
        >>> [type(f).__name__ for f in out]
        ['LLMContextFrame']
    """

    name = "GatedContext"

    def __init__(self, notifier: Signals, start_open: bool = False) -> None:
        self._signals = _signals_of(notifier)
        self.notifier = notifier
        self.start_open = bool(start_open)
        self.events = EventRegistry(self, ("on_error",))

    def __repr__(self) -> str:
        return f"GatedContext({self.notifier!r}, start_open={self.start_open})"

    def open(self, port: Port) -> _GatedContextSession:
        return _GatedContextSession(self, port)



class _GatedContextSession:
    """One subscription: the held context and the notifier subscription."""

    __slots__ = ("_first_open", "_held", "_link", "_port", "_subscription")

    def __init__(self, gate: GatedContext, port: Port) -> None:
        self._port = port
        self._link = port.link
        self._first_open = gate.start_open
        self._held: tuple[Frame, Direction] | None = None
        self._subscription: abc.DisposableBase | None = None
        session = port.session

        def on_signal(_value: Any) -> None:
            session.run(self._signal, None)

        def on_error(error: Exception) -> None:
            session.run(self._failed, error)

        self._subscription = gate._signals.subscribe(on_signal, on_error, scheduler=session)

    def _signal(self, _arg: None) -> None:
        self._port.inject_call(self._release)

    def _failed(self, error: Exception) -> None:
        log.error("GatedContext: the notifier failed (%s); nothing more will be released", error)
        # Through a timer: the error may come while the session is still opening.
        self._port.call_later(0.0, lambda: self._port.report_error(error))

    def _release(self) -> None:
        held = self._held
        if held is None:
            return
        self._held = None
        frame, direction = held
        if direction is DOWN:
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def on_frame(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, LLMContextFrame):
            if self._first_open:
                self._first_open = False
            else:
                self._held = (frame, direction)
                return
        elif type(frame) is EndFrame or type(frame) is CancelFrame:
            self._stop()
        if direction is DOWN:
            self._link.emit_down(frame)
        else:
            self._link.emit_up(frame)

    def _stop(self) -> None:
        if self._subscription is not None:
            self._subscription.dispose()
            self._subscription = None
        if self._held is not None:
            log.info("GatedContext: the session ended with a context held; it is dropped")
            self._held = None

    def on_input_end(self, direction: Direction) -> None:
        return None

    def close(self) -> None:
        self._stop()

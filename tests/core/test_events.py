"""Events: declared names, sync and async handlers, contained failures, an observable."""

from __future__ import annotations

import asyncio
import logging

import pytest

from rxvoice.errors import ConfigurationError
from rxvoice.events import Event, EventRegistry, Lazy


class Source:
    """Something that raises events."""


def test_handlers_get_source_and_payload() -> None:
    """Two-argument handlers get (source, payload); one-argument handlers get (source)."""
    src = Source()
    reg = EventRegistry(src, ["on_a", "on_b"])
    got: list[object] = []
    reg.on("on_a", lambda s, p: got.append((s, p)))
    reg.on("on_b", lambda s: got.append(s))
    reg.emit("on_a", 1)
    reg.emit("on_b")
    assert got == [(src, 1), src]


def test_methods_functions_and_other_callables_are_each_asked_for_their_own_arity() -> None:
    """The arity is remembered per function (sessions register the same methods again and again): a bound
    method counts without its ``self``, the same function bound to two objects twice, and callables that are
    not functions (a partial, an object with ``__call__``, ``*args``) as they are."""
    import functools

    class Watch:
        def __init__(self) -> None:
            self.got: list[object] = []

        def one(self, s: object) -> None:
            self.got.append(("one", s))

        def two(self, s: object, p: object) -> None:
            self.got.append(("two", s, p))

        def many(self, *args: object) -> None:
            self.got.append(("many", *args))

        @classmethod
        def klass(cls, s: object, p: object) -> None:
            seen.append(("klass", s, p))

    class Caller:
        def __call__(self, s: object) -> None:
            seen.append(("call", s))

    def both(tag: str, s: object, p: object) -> None:
        seen.append((tag, s, p))

    seen: list[object] = []
    src = Source()
    for _ in range(2):  # the second time from what was remembered
        reg = EventRegistry(src, ["on_a"])
        a, b = Watch(), Watch()
        for h in (a.one, a.two, a.many, b.one, b.two, Watch.klass, Caller(), functools.partial(both, "p")):
            reg.on("on_a", h)
        reg.emit("on_a", 7)
        assert a.got == [("one", src), ("two", src, 7), ("many", src, 7)]
        assert b.got == [("one", src), ("two", src, 7)]
        assert seen == [("klass", src, 7), ("call", src), ("p", src, 7)]
        seen.clear()


def test_decorator_form_and_off() -> None:
    """``@events.on(name)`` registers; ``off`` removes."""
    reg = EventRegistry(Source(), ["on_a"])
    calls: list[int] = []

    @reg.on("on_a")
    def handler(_s: object, p: int) -> None:
        calls.append(p)

    reg.emit("on_a", 1)
    assert reg.off("on_a", handler) is True
    reg.emit("on_a", 2)
    assert calls == [1]
    assert reg.off("on_a", handler) is False


def test_unknown_names_fail_at_registration() -> None:
    """A misspelt event name is an error now, not a handler that never fires."""
    reg = EventRegistry(Source(), ["on_user_turn_started"])
    with pytest.raises(ConfigurationError, match="on_user_turn_started"):
        reg.on("on_user_turn_startd", lambda s: None)
    with pytest.raises(ConfigurationError):
        reg.on("on_user_turn_started", "not callable")  # type: ignore[arg-type]


def test_a_raising_handler_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    """A handler that raises is logged; later handlers still run; emit never raises."""
    reg = EventRegistry(Source(), ["on_a"])
    after: list[int] = []

    def bad(_s: object, _p: object) -> None:
        raise RuntimeError("handler bug")

    reg.on("on_a", bad)
    reg.on("on_a", lambda s, p: after.append(p))
    with caplog.at_level(logging.ERROR, "rxvoice.events"):
        reg.emit("on_a", 7)
    assert after == [7]
    assert "handler bug" in caplog.text


def test_events_as_an_observable() -> None:
    """observe() yields every event; observe(name) only that one."""
    reg = EventRegistry(Source(), ["on_a", "on_b"])
    reg.set_clock(lambda: 12.5)
    everything: list[Event] = []
    only_b: list[Event] = []
    reg.observe().subscribe(everything.append)
    reg.observe("on_b").subscribe(only_b.append)
    reg.emit("on_a", 1)
    reg.emit("on_b", 2)
    assert [(e.name, e.payload, e.time) for e in everything] == [("on_a", 1, 12.5), ("on_b", 2, 12.5)]
    assert [e.payload for e in only_b] == [2]


def test_lazy_payloads_are_built_only_for_listeners() -> None:
    """A report nobody listens to costs nothing to build."""
    reg = EventRegistry(Source(), ["on_a"])
    built: list[int] = []

    def make() -> int:
        built.append(1)
        return 42

    reg.emit("on_a", Lazy(make))
    assert built == []
    got: list[object] = []
    reg.on("on_a", lambda s, p: got.append(p))
    reg.emit("on_a", Lazy(make))
    assert got == [42] and built == [1]


def test_async_handlers_run_serially_on_the_loop() -> None:
    """Coroutine handlers run on the loop, one at a time, in the order the events were raised."""
    reg = EventRegistry(Source(), ["on_a"])
    order: list[str] = []

    async def slow(_s: object, p: int) -> None:
        order.append(f"start {p}")
        await asyncio.sleep(0)
        order.append(f"end {p}")

    reg.on("on_a", slow)

    async def main() -> None:
        reg.emit("on_a", 1)
        reg.emit("on_a", 2)
        assert order == []  # nothing ran inline
        await reg.drain()

    asyncio.run(main())
    assert order == ["start 1", "end 1", "start 2", "end 2"]


def test_async_handler_without_a_loop_still_runs() -> None:
    """Outside asyncio, a coroutine handler is run to completion rather than dropped."""
    reg = EventRegistry(Source(), ["on_a"])
    got: list[int] = []

    async def handler(_s: object, p: int) -> None:
        got.append(p)

    reg.on("on_a", handler)
    reg.emit("on_a", 3)
    assert got == [3]


def test_a_raising_observer_is_contained() -> None:
    """An observer of the events stream that raises does not break the emitter."""
    reg = EventRegistry(Source(), ["on_a"])
    got: list[int] = []

    def bad(_e: Event) -> None:
        raise RuntimeError("observer bug")

    reg.observe().subscribe(bad)
    reg.on("on_a", lambda s, p: got.append(p))
    reg.emit("on_a", 1)
    assert got == [1]

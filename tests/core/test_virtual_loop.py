"""VirtualTimeLoop: asyncio timers in virtual time, with sockets and other threads still heard."""

from __future__ import annotations

import asyncio
import doctest
import threading
import time

import rxvoice.testing.virtual_loop as virtual_loop
from rxvoice.pipeline import loop_scheduler
from rxvoice.testing import VirtualTimeLoop, run_virtual


def test_sleeps_take_their_loop_time_and_no_wall_time() -> None:
    """An hour of sleeping is 3600.0 loop seconds exactly, returned at once."""

    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        order: list[tuple[str, float]] = []

        async def wake(name: str, after: float) -> None:
            await asyncio.sleep(after)
            order.append((name, loop.time()))

        await asyncio.gather(wake("late", 3600.0), wake("early", 0.6), wake("middle", 2.5))
        return order

    started = time.perf_counter()
    assert run_virtual(main(), start=10.0) == [("early", 10.6), ("middle", 12.5), ("late", 3610.0)]
    assert time.perf_counter() - started < 1.0


def test_another_thread_wakes_the_loop_before_its_clock_moves_on() -> None:
    """Work handed in with call_soon_threadsafe runs when it arrives; the clock jumps only when nothing is ready."""

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[float] = loop.create_future()
        threading.Thread(target=lambda: loop.call_soon_threadsafe(lambda: arrived.set_result(loop.time()))).start()
        at = await arrived  # no timer pending: the loop blocks for real until the thread calls
        await asyncio.sleep(5.0)
        return at, loop.time()

    assert run_virtual(main()) == (0.0, 5.0)


def test_rxvoice_timers_on_the_loop_scheduler_follow_the_virtual_clock() -> None:
    """loop_scheduler's clock is the loop's: a 2 s reactivex timer fires after 2.0 loop seconds."""

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        scheduler = loop_scheduler(loop)
        fired: asyncio.Future[float] = loop.create_future()
        before = scheduler.seconds()
        scheduler.schedule_relative(2.0, lambda _s, _t: fired.set_result(scheduler.seconds()))
        after = await fired
        return before, after

    before, after = run_virtual(main())
    assert after - before == 2.0


def test_the_loop_is_an_ordinary_selector_loop() -> None:
    """Sockets work as on any loop (the model stage's loopback server runs on it)."""

    async def main() -> bytes:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"ping\n")
        line = await reader.readline()
        writer.close()
        server.close()
        await server.wait_closed()
        return line

    assert run_virtual(main()) == b"ping\n"
    assert issubclass(VirtualTimeLoop, asyncio.SelectorEventLoop)


def test_the_module_example_runs() -> None:
    """The docstring's example is true."""
    result = doctest.testmod(virtual_loop)
    assert result.attempted > 0 and result.failed == 0

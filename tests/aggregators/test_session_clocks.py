"""A stage shared by sessions stamps each session's events with that session's clock (nothing per session on it)."""

from __future__ import annotations

import reactivex
from reactivex.testing import TestScheduler

from rxvoice import frames as F
from rxvoice.aggregators import FullResponse
from rxvoice.events import Event


def test_two_sessions_of_one_stage_keep_their_own_clocks() -> None:
    full = FullResponse()
    seen: list[Event] = []
    full.events.observe().subscribe(seen.append)
    reply = [F.LLMFullResponseStartFrame(), F.LLMTextFrame("Hi."), F.LLMFullResponseEndFrame()]
    early, late = TestScheduler(), TestScheduler()
    late.advance_to(1000.0)  # the second session's clock is 1000 s ahead
    reactivex.from_iterable(reply).pipe(full).subscribe(scheduler=early)
    reactivex.from_iterable(reply).pipe(full).subscribe(scheduler=late)
    early.advance_to(1.0)
    late.advance_to(1001.0)
    assert sorted(round(e.time) for e in seen if e.name == "on_completion") == [0, 1000]

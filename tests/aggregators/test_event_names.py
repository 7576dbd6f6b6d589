"""The exported EVENT_* constants are the names the stages raise, and every name a stage declares has one."""

from __future__ import annotations

import rxvoice.aggregators as agg
from rxvoice import LLMContext
from rxvoice.aggregators import Pair, UserTurnProcessor


def constants(prefix: str) -> set[str]:
    return {v for k, v in vars(agg).items() if k.startswith(prefix)}


def test_every_user_event_has_its_constant() -> None:
    declared = set(Pair(LLMContext()).user().events.names) - {"on_error"}
    assert declared == constants("EVENT_USER_")
    assert set(UserTurnProcessor().events.names) - {"on_error"} <= constants("EVENT_USER_")


def test_every_assistant_event_has_its_constant() -> None:
    declared = set(Pair(LLMContext()).assistant().events.names) - {"on_error"}
    assert declared <= constants("EVENT_") and declared

"""Subscribing one aggregator twice warns, naming the fix; shared or piped, it runs once and says nothing."""

from __future__ import annotations

import warnings

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxvoice import LLMContext, pipeline
from rxvoice import frames as F
from rxvoice.aggregators import Pair
from rxvoice.errors import RxVoiceWarning


def words() -> reactivex.Observable[F.Frame]:
    return reactivex.from_iterable([F.TranscriptionFrame("hello there", "u"), F.EndFrame()])


def said(pair: Pair) -> list[str]:
    return [m["content"] for m in pair.context().messages if m["role"] == "user"]


def test_a_second_concurrent_subscription_warns_and_names_share_and_pipeline() -> None:
    """Two observers of the same operator chain, no share(): each runs the aggregator, so the warning says so."""
    pair = Pair(LLMContext())
    scheduler = TestScheduler()
    voice = reactivex.timer(1.0, scheduler=scheduler).pipe(ops.flat_map(lambda _: words()), pair.user())
    with pytest.warns(RxVoiceWarning, match=r"pipeline\(\).*share\(\)") as caught:
        voice.subscribe(lambda _f: None, scheduler=scheduler)
        voice.subscribe(lambda _f: None, scheduler=scheduler)
        scheduler.advance_to(10.0)
    assert "2 sessions" in str(caught[0].message)
    assert said(pair) == ["hello there", "hello there"]  # what the warning is about: every write twice


def test_shared_or_piped_it_runs_once_without_a_warning() -> None:
    pair = Pair(LLMContext())
    scheduler = TestScheduler()
    voice = reactivex.timer(1.0, scheduler=scheduler).pipe(ops.flat_map(lambda _: words()), pair.user(), ops.share())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RxVoiceWarning)
        voice.subscribe(lambda _f: None, scheduler=scheduler)
        voice.subscribe(lambda _f: None, scheduler=scheduler)
        scheduler.advance_to(10.0)
    assert said(pair) == ["hello there"]


def test_sessions_one_after_another_do_not_warn() -> None:
    """A session that ended is not running: the next subscription is the only one."""
    pair = Pair(LLMContext())
    stage = pipeline(pair.user())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RxVoiceWarning)
        for _ in range(2):
            scheduler = TestScheduler()
            words().pipe(stage).subscribe(lambda _f: None, scheduler=scheduler)
            scheduler.advance_to(10.0)
    assert said(pair) == ["hello there", "hello there"]

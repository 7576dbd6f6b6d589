"""Embedding rxvoice in an Rx application that already exists: operators plugged in with ``.pipe()``.

The "existing application" is a support desk whose events already flow
through a reactivex ``Subject`` and are handled with the usual operators
(``filter``, ``map``, ``flat_map``, ``buffer_with_time``). It has its own model
client, which answers with an observable of tokens. rxvoice is added with
``.pipe()``, no ``pipeline()`` and no asyncio:

* ``pair.user()`` turns the customer's messages into turns: it writes each
  turn to the shared conversation and emits an ``LLMContextFrame`` when the
  customer has finished (0.6 s of quiet; two quick messages make one turn);
* ``FullResponse()`` reports each whole reply (the app's audit log);
* ``LLMText()`` groups the model's tokens into sentences (the app's display);
* ``pair.assistant()`` writes each reply into the same conversation;
* ``pair.context().snapshots`` is an observable of the conversation, read
  with ordinary operators (here: saved after every change).

Everything runs on one reactivex ``TestScheduler``, so the run is virtual time
and deterministic; an app would pass its own scheduler (``AsyncIOScheduler``,
``EventLoopScheduler``) the same way, at subscribe time.

Two things to know when using rxvoice's stages as plain operators:

* each *subscription* opens a new session of an operator, so a stream that
  several consumers read (here the bot's frames) is ``share()``d first, or the
  aggregators would run (and write the conversation) once per consumer;
* used this way a stage has no upstream input, and what it would send
  upstream is dropped; use ``pipeline()`` when stages must talk back (the bot
  speaking reaching the user side, tool results re-running the model).

Run: ``python examples/embed_rx.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.disposable import CompositeDisposable
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxvoice import LLMContext
from rxvoice.aggregators import Completion, FullResponse, LLMText, Pair
from rxvoice.context import ContextSnapshot
from rxvoice.frames import (
    AggregatedTextFrame,
    EndFrame,
    Frame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TranscriptionFrame,
)
from rxvoice.testing import tokens

# -- the existing application's own types ------------------------------------------------------


@dataclass(frozen=True)
class CustomerMessage:
    """The customer typed something (or a speech-to-text service heard it)."""

    customer: str
    text: str


@dataclass(frozen=True)
class Heartbeat:
    """Noise the app's event bus also carries; the voice layer never sees it."""


@dataclass(frozen=True)
class SessionClosed:
    """The customer left."""


AppEvent = CustomerMessage | Heartbeat | SessionClosed
T = TypeVar("T")


def model_client(snapshot: ContextSnapshot, scheduler: TestScheduler, token_delay: float = 0.05) -> Observable[str]:
    """The app's model client: a reply streamed as tokens, ``token_delay`` apart (rules, so it runs offline)."""
    said = str(snapshot.messages[-1].get("content", "")).lower()
    if "refund" in said:
        reply = "I'm sorry to hear that. I have started a refund for order 1042. It takes three days."
    elif "thank" in said:
        reply = "You're welcome. Have a good day!"
    else:
        reply = "Hello! How can I help?"
    paced = reactivex.zip(reactivex.from_iterable(tokens(reply)), reactivex.interval(token_delay, scheduler=scheduler))
    return paced.pipe(ops.map(first))


def first(item: tuple[str, int]) -> str:
    """The token of a (token, tick) pair."""
    return item[0]


def of_type(kind: type[T]) -> Callable[[Observable[Any]], Observable[T]]:
    """The app's little helper: keep the items of one type (typed, unlike a bare ``filter``)."""

    def keep(source: Observable[Any]) -> Observable[T]:
        return source.pipe(ops.filter(lambda item: isinstance(item, kind)), ops.map(lambda item: cast(T, item)))

    return keep


# -- where rxvoice plugs in ------------------------------------------------------------------


def as_frame(event: AppEvent) -> Frame:
    """The app's events as rxvoice frames (what the voice layer understands)."""
    if isinstance(event, CustomerMessage):
        return TranscriptionFrame(event.text, user_id=event.customer, finalized=True)
    return EndFrame()


def answer(frame: LLMContextFrame, scheduler: TestScheduler) -> Observable[Frame]:
    """One model run as frames: start, a text frame per token, end."""
    streamed = model_client(frame.snapshot, scheduler).pipe(ops.map(LLMTextFrame))
    return reactivex.concat(
        reactivex.of(LLMFullResponseStartFrame()), streamed, reactivex.of(LLMFullResponseEndFrame())
    )


def text_of(frame: AggregatedTextFrame) -> str:
    """A sentence's text."""
    return frame.text


def message_count(snapshot: ContextSnapshot) -> int:
    """How long the conversation is."""
    return len(snapshot.messages)


@dataclass
class SupportDesk:
    """What the app sees of the conversation: what it displayed, logged and saved, with times in seconds."""

    displayed: list[tuple[float, str]] = field(default_factory=list)
    audit: list[tuple[float, Completion]] = field(default_factory=list)
    saved: list[tuple[float, int]] = field(default_factory=list)
    sentences_per_second: list[int] = field(default_factory=list)
    context: LLMContext | None = None


# --8<-- [start:wiring]
def wire(events: Observable[AppEvent], scheduler: TestScheduler) -> tuple[SupportDesk, CompositeDisposable]:
    """Plug rxvoice's operators into the app's event stream; returns what the app records and the subscriptions."""
    desk = SupportDesk()

    def now() -> float:
        """Virtual seconds, to the millisecond (what the app stamps its records with)."""
        return round(float(scheduler.clock), 3)

    pair = Pair(LLMContext([{"role": "system", "content": "You are a support agent. Be brief."}]))
    desk.context = pair.context()

    # The app's existing filtering, then the user aggregator as one more operator.
    model_requests = events.pipe(
        ops.filter(lambda e: isinstance(e, CustomerMessage | SessionClosed)),  # drop heartbeats
        ops.map(as_frame),
        pair.user(),                                     # turns: writes the conversation, asks for answers
        of_type(LLMContextFrame),
    )

    full = FullResponse()

    @full.events.on("on_completion")
    def audit(_source: object, done: Completion) -> None:
        desk.audit.append((now(), done))

    # The bot's side: the app's model client, then rxvoice's text operators and the assistant aggregator.
    def model(request: LLMContextFrame) -> Observable[Frame]:
        return answer(request, scheduler)

    replies: Observable[Frame] = model_requests.pipe(ops.flat_map(model))
    bot: Observable[Frame] = replies.pipe(
        full,                                            # whole replies, reported (frames untouched)
        LLMText(),                                       # tokens -> sentences (AggregatedTextFrame)
        pair.assistant(),                                # writes each reply into the conversation
        ops.share(),                                     # one session, however many readers below
    )
    sentences: Observable[str] = bot.pipe(of_type(AggregatedTextFrame), ops.map(text_of), ops.share())

    subscriptions = CompositeDisposable()
    subscriptions.add(sentences.subscribe(lambda s: desk.displayed.append((now(), s)), scheduler=scheduler))
    subscriptions.add(sentences.pipe(
        ops.buffer_with_time(1.0, scheduler=scheduler),   # the app's analytics: sentences per second
        ops.map(len),
    ).subscribe(desk.sentences_per_second.append, scheduler=scheduler))
    # The conversation as an observable: persist every change (here: count the messages).
    sizes: Observable[int] = pair.context().snapshots.pipe(ops.map(message_count), ops.distinct_until_changed())
    subscriptions.add(sizes.subscribe(lambda n: desk.saved.append((now(), n))))
    return desk, subscriptions
# --8<-- [end:wiring]


SCRIPT: Sequence[tuple[float, AppEvent]] = (
    (0.0, CustomerMessage("ana", "Hi!")),
    (0.5, Heartbeat()),
    (2.0, CustomerMessage("ana", "My parcel arrived broken.")),
    (2.3, CustomerMessage("ana", "I'd like a refund.")),    # 0.3 s later: the same turn
    (5.0, CustomerMessage("ana", "Thanks!")),
    (7.0, SessionClosed()),
)


def run(script: Sequence[tuple[float, AppEvent]] = SCRIPT, *, echo: bool = True) -> SupportDesk:
    """Play the app's events in virtual time and return what the app recorded."""
    scheduler = TestScheduler()
    bus: Subject[AppEvent] = Subject()                      # the app's event bus, as it already exists
    desk, subscriptions = wire(bus, scheduler)
    for at, event in script:
        scheduler.schedule_absolute(at, lambda _s, _st, e=event: bus.on_next(e))  # type: ignore[misc]
    scheduler.schedule_absolute(script[-1][0] + 1.0, lambda _s, _st: bus.on_completed())
    scheduler.advance_to(script[-1][0] + 10.0)
    subscriptions.dispose()
    if echo:
        show(desk)
    return desk


def show(desk: SupportDesk) -> None:
    """Print what the app recorded."""
    print("displayed (seconds, sentence):")
    for at, text in desk.displayed:
        print(f"  {at:5.2f}  {text}")
    print("audit log (whole replies):")
    for at, done in desk.audit:
        print(f"  {at:5.2f}  {'complete' if done.completed else 'cut off'}: {done.text.strip()}")
    print("saved conversation sizes:", [n for _, n in desk.saved])
    print("sentences per second:", desk.sentences_per_second)
    assert desk.context is not None
    print("conversation:")
    for m in desk.context.messages:
        print(f"  {m['role']}: {m['content']}")


if __name__ == "__main__":
    run()

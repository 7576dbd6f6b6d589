"""``aggregate_text``: streamed text cut into typed units by a text aggregator (sentences, patterns)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

from reactivex import Observable

from ..errors import ConfigurationError
from ..text._engine import TextAggregatorEngine
from ..text.aggregation import Aggregation, TextAggregator
from ..text.simple import SimpleTextAggregator
from ._chunk import chunked_
from ._curry import curry_flip

__all__ = ["AggregatorFactory", "AggregatorSource", "aggregate_text_", "is_aggregator"]

AggregatorFactory = Callable[[], TextAggregator]


def is_aggregator(obj: object) -> bool:
    """Whether ``obj`` is a text aggregator instance (has ``aggregate``, ``flush``, ``reset``)."""
    return not isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in ("aggregate", "flush", "reset")
    )


class AggregatorSource:
    """Hands each subscription a text aggregator of its own.

    An aggregator holds the state of one stream, so two live subscriptions must never
    share one. Given an instance, the first subscription uses it and any other running
    at the same time gets a copy (a shallow copy of the built-in aggregators, which keep
    their stream state in fields a copy replaces, sharing their patterns and handlers; a
    deep copy of any other). Given a factory, each subscription gets ``factory()``.

    Args:
        aggregator: An aggregator, a zero-argument factory of them, or ``None`` for
            sentences (:class:`~rxvoice.text.SimpleTextAggregator`).
        owner: Who asks, for the error messages.

    Raises:
        ConfigurationError: ``aggregator`` is neither an aggregator nor a factory.
    """

    __slots__ = ("_factory", "_in_use", "_lock", "_owner", "template")

    def __init__(self, aggregator: TextAggregator | AggregatorFactory | None, *, owner: str = "aggregate_text") -> None:
        self._owner = owner
        self.template: TextAggregator | None = None
        self._factory: AggregatorFactory | None = None
        if aggregator is None:
            self._factory = SimpleTextAggregator
        elif is_aggregator(aggregator):
            self.template = aggregator  # type: ignore[assignment]
        elif callable(aggregator):
            self._factory = aggregator
        else:
            raise ConfigurationError(
                f"{owner} needs a text aggregator (aggregate/flush/reset) or a factory of them, got {aggregator!r}"
            )
        self._in_use = False
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return repr(self.template or self._factory)

    def acquire(self) -> TextAggregator:
        """An aggregator for a new subscription; give it back with :meth:`release`."""
        if self._factory is not None:
            made = self._factory()
            if not is_aggregator(made):
                raise ConfigurationError(f"the {self._owner} aggregator factory returned {made!r}, not an aggregator")
            return made
        template = self.template
        assert template is not None
        with self._lock:
            if not self._in_use:
                self._in_use = True
                return template
        # The built-in aggregators keep their stream state in fields reset() replaces: a shallow copy
        # shares their (read-only) patterns and handlers and starts empty.
        twin: TextAggregator = (
            copy.copy(template) if isinstance(template, TextAggregatorEngine) else copy.deepcopy(template)
        )
        twin.reset()
        return twin

    def release(self, aggregator: TextAggregator) -> None:
        """The subscription using ``aggregator`` ended."""
        if aggregator is self.template:
            with self._lock:
                self._in_use = False


class _Units:
    """One ``aggregate_text`` subscription: its aggregator, driven as a chunker."""

    __slots__ = ("_aggregator", "_source")

    def __init__(self, source: AggregatorSource) -> None:
        self._source = source
        self._aggregator = source.acquire()

    def push(self, text: str) -> list[Aggregation]:
        return self._aggregator.aggregate(text)

    def flush(self) -> tuple[Aggregation, ...]:
        last = self._aggregator.flush()
        return () if last is None else (last,)

    def close(self) -> None:
        self._source.release(self._aggregator)


@curry_flip
def aggregate_text_(source: Observable[str], aggregator: AggregatorSource) -> Observable[Aggregation]:
    """Cut the text a source streams into the units an aggregator completes; flush at completion.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> tokens = reactivex.of("Hello", " world", ". Next", " one")
        >>> units = tokens.pipe(aggregate_text_(AggregatorSource(None)), ops.to_list()).run()
        >>> [u.text for u in units]
        ['Hello world.', 'Next one']
    """
    return source.pipe(chunked_(lambda: _Units(aggregator)))

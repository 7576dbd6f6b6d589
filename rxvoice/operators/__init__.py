"""Generic reactive operators, usable on any stream: the pieces rxvoice's text and gate stages are built on.

Each operator is a function returning ``Observable -> Observable``, for ``source.pipe(...)``,
in the style of ``reactivex.operators``. Behind each one is a small pure state machine
(``push(item)`` returns what an item completed, ``flush()`` what is left at the end),
created afresh for every subscription; the frame stages of :mod:`rxvoice.aggregators` run
the same machines, so a rule lives in one place whichever way it is used:

* :func:`buffer_until` (:class:`BufferUntil`): items gathered into lists closed by a boundary.
* :func:`split_text` (:class:`TextSplitter`): a growing text cut at the boundaries a function
  finds; :func:`sentence_end` is the boundary :class:`~rxvoice.aggregators.Sentence` uses.
* :func:`aggregate_text`: streamed text cut into typed units by a
  :class:`~rxvoice.text.TextAggregator`; what :class:`~rxvoice.aggregators.LLMText` runs.
* :func:`gate` (:class:`Gate`): a window opened and closed by predicates, holding what arrives
  while it is shut; what :class:`~rxvoice.aggregators.Gated` runs.
* :func:`turn_steps`: the turn machine over frames, what each input decided out as one step;
  what the user aggregator, :class:`~rxvoice.aggregators.UserTurnProcessor` and the turn-taking
  detector run (:meth:`rxvoice.turns.TurnMachine.step`, the one entry of all of them).

A callback that raises (a predicate, a boundary, an aggregator) sends its error to the
observer's ``on_error``, as ``reactivex.operators.map`` does. Every operator hands on what
it still holds when the source completes, and forwards the subscribe-time scheduler
upstream. Only :func:`turn_steps` keeps time (its timers run on the scheduler: the
argument, else the one given at subscribe time, else the default).

The implementations live in one private module each, as in ``reactivex.operators``; they are
imported at the top of this module rather than inside each function, since they are small and
cost nothing to load.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from reactivex import Observable, abc

from ..errors import ConfigurationError
from ..frames import Frame
from ..text.aggregation import Aggregation, TextAggregator
from ..text.tokenizer import SentenceTokenizer
from ..turns.config import TurnsConfig
from ..turns.machine import TurnMachine
from ..turns.mute import MuteStrategy
from ..turns.scan import TurnScan
from ._aggregate_text import AggregatorFactory, AggregatorSource, aggregate_text_
from ._buffer_until import BufferUntil, buffer_until_
from ._gate import Gate, check_predicate, gate_
from ._split_text import SentenceEnd, TextBoundary, TextSplitter, split_text_
from ._turn_steps import turn_steps_

__all__ = [
    "BufferUntil",
    "Gate",
    "SentenceEnd",
    "TextBoundary",
    "TextSplitter",
    "aggregate_text",
    "buffer_until",
    "gate",
    "sentence_end",
    "split_text",
    "turn_steps",
]

_T = TypeVar("_T")


def buffer_until(boundary: Callable[[_T], bool]) -> Callable[[Observable[_T]], Observable[list[_T]]]:
    """Gathers items into lists, each closed by an item the boundary accepts.

    The closing item ends its own list. When the source completes, what is gathered goes
    out as a last (shorter) list; an error from the source drops it. Each subscription
    gathers on its own.

    .. marble::
        :alt: buffer_until

        -a-b-.-c-.-d-|
        [ buffer_until(x == ".") ]
        -----x---y---(z,|)

    ``x = ["a", "b", "."]``, ``y = ["c", "."]``, ``z = ["d"]``.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> words = reactivex.of("Hello", "world", "!", "Bye")
        >>> words.pipe(buffer_until(lambda w: w == "!"), ops.to_list()).run()
        [['Hello', 'world', '!'], ['Bye']]

    Args:
        boundary: Whether an item closes the list it joins. If it raises, the error goes
            to ``on_error``.

    Returns:
        An operator from a stream of items to a stream of lists of them.

    Raises:
        ConfigurationError: ``boundary`` is not callable.
    """
    check_predicate("buffer_until's boundary", boundary)
    return buffer_until_(boundary)


def sentence_end(tokenizer: SentenceTokenizer | None = None, *, language: str | None = None) -> SentenceEnd:
    """The boundary of a sentence, for :func:`split_text`: found by a tokenizer, confirmed by what follows.

    A sentence end counts once a visible character that is not punctuation follows it, so
    ``"Hello Mr."`` waits for ``" Smith"``, ``"3."`` for ``"30"`` and ``"p.m."`` for the
    next word: the same rule as :class:`~rxvoice.text.SimpleTextAggregator`.

    Examples:
        >>> end = sentence_end()
        >>> end("Hello Mr. Smith. Your"), end("Hello Mr.")
        (16, 0)
        >>> sentence_end(language="de")("Am 3. Oktober. Dann")
        14

    Args:
        tokenizer: Any object with ``match_end_of_sentence(text) -> int``; the default one
            for ``language`` if ``None``.
        language: Language of the default tokenizer (``"en"`` if ``None``).

    Returns:
        A :class:`SentenceEnd`: ``end(text) -> int``, resumable.

    Raises:
        ConfigurationError: ``tokenizer`` has no ``match_end_of_sentence``.
    """
    return SentenceEnd(tokenizer, language=language)


def split_text(boundary: TextBoundary | None = None) -> Callable[[Observable[str]], Observable[str]]:
    """Cuts a stream of text chunks at boundaries, keeping the remainder for the next piece.

    The chunks are joined as they come; ``boundary(text)`` says where the first complete
    piece of the joined text ends (0: not yet). Each piece is exactly the text up to its
    boundary, whitespace included, and what follows stays for the next one, so the pieces
    joined are the input, character for character. When the source completes, what is
    left goes out as a last piece. Sentences by default.

    .. marble::
        :alt: split_text

        -a-----b-----c-|
        [    split_text()    ]
        -------x-----y-(z,|)

    ``a = "Hello Mr."``, ``b = " Smith. Your"``, ``c = " order ships at 3.30 p.m. today! Bye"``;
    ``x = "Hello Mr. Smith."``, ``y = " Your order ships at 3.30 p.m. today!"``, ``z = " Bye"``.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> chunks = reactivex.of("Hello Mr.", " Smith. Your", " order ships at 3.30 p.m. today! Bye")
        >>> chunks.pipe(split_text(), ops.to_list()).run()
        ['Hello Mr. Smith.', ' Your order ships at 3.30 p.m. today!', ' Bye']
        >>> lines = reactivex.of("one\\ntw", "o\\nthree")
        >>> lines.pipe(split_text(lambda text: text.find("\\n") + 1), ops.to_list()).run()
        ['one\\n', 'two\\n', 'three']

    Args:
        boundary: ``boundary(text) -> int``, the offset just past the first complete piece
            of ``text``, or 0; :func:`sentence_end` (English) if ``None``. A boundary that
            also has ``scan(text, start) -> (end, resume)``, as :class:`SentenceEnd` has, is
            resumed where it stopped, so a long text is read once. If it raises, the error
            goes to ``on_error``.

    Returns:
        An operator from a stream of text chunks to a stream of pieces.

    Raises:
        ConfigurationError: ``boundary`` is not callable.
    """
    found = sentence_end() if boundary is None else boundary
    if not callable(found):
        raise ConfigurationError(f"split_text needs a boundary function (text) -> int, got {found!r}")
    return split_text_(found)


def aggregate_text(
    aggregator: TextAggregator | AggregatorFactory | None = None,
) -> Callable[[Observable[str]], Observable[Aggregation]]:
    """Cuts streamed text (a model's tokens) into the units a text aggregator completes.

    Each chunk goes to the aggregator's ``aggregate``; each unit it completes goes on as an
    :class:`~rxvoice.text.Aggregation` (trimmed sentences, typed pattern units, tokens). When
    the source completes, ``flush()`` hands on the last unit. This is
    :class:`~rxvoice.aggregators.LLMText` without the frames.

    .. marble::
        :alt: aggregate_text

        -a-b-c---d-|
        [ aggregate_text() ]
        -----x-----(y,|)

    ``a = "Hello"``, ``b = " world"``, ``c = ". Next"``, ``d = " one"``;
    ``x = Aggregation("Hello world.")``, ``y = Aggregation("Next one")``.

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> from rxvoice.text import MatchAction, PatternPairAggregator
        >>> code = PatternPairAggregator().add_pattern("code", "<code>", "</code>", MatchAction.AGGREGATE)
        >>> tokens = reactivex.of("Try <co", "de>x = 1</code>", " now. Bye")
        >>> units = tokens.pipe(aggregate_text(code), ops.to_list()).run()
        >>> [(u.text, u.type) for u in units]
        [('Try', 'sentence'), ('x = 1', 'code'), ('now.', 'sentence'), ('Bye', 'sentence')]

    Args:
        aggregator: A :class:`~rxvoice.text.TextAggregator` (used by the first subscription;
            another one running at the same time gets a copy) or a zero-argument factory
            called once per subscription; sentences
            (:class:`~rxvoice.text.SimpleTextAggregator`) if ``None``.

    Returns:
        An operator from a stream of text chunks to a stream of units.

    Raises:
        ConfigurationError: ``aggregator`` is neither an aggregator nor a factory.
    """
    return aggregate_text_(AggregatorSource(aggregator))


def gate(
    opens: Callable[[_T], bool] | None = None,
    closes: Callable[[_T], bool] | None = None,
    *,
    start_open: bool = False,
    passes: Callable[[_T], bool] | None = None,
    release_on_complete: bool = True,
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Holds items while the gate is shut and releases them, in order, behind the item that opens it.

    While shut, ``opens`` is asked about each item: no, and it is held; yes, and that item
    goes first, then everything held, in arrival order. While open, ``closes`` is asked:
    yes, and the gate shuts with that item held (first out next time). Items ``passes``
    accepts are never held (for frames: system frames, such as an interruption). Released
    items are not asked again. Each subscription has its own gate.

    .. marble::
        :alt: gate

        -a-b-o-------d-c-f-o-------g-|
        [   gate(opens=o, closes=c)   ]
        -----(o,a,b)-d-----(o,c,f)-g-|

    Examples:
        >>> import reactivex
        >>> from reactivex import operators as ops
        >>> items = reactivex.of("a", "b", "open", "c", "close", "d")
        >>> shut = gate(opens=lambda x: x == "open", closes=lambda x: x == "close")
        >>> items.pipe(shut, ops.to_list()).run()
        ['open', 'a', 'b', 'c', 'close', 'd']

    Args:
        opens: Whether an item opens the gate; ``None``: nothing does.
        closes: Whether an item closes it; ``None``: nothing does.
        start_open: The gate is open before the first item.
        passes: Items that always go straight through; ``None``: none.
        release_on_complete: When the source completes, release what is held (default),
            or drop it.

    Returns:
        An operator from a stream to the same items, some of them later.

    Raises:
        ConfigurationError: a predicate is not callable.
    """
    for what, fn in (("opens", opens), ("closes", closes), ("passes", passes)):
        check_predicate(f"the gate's {what}", fn)
    return gate_(opens, closes, start_open, passes, release_on_complete)


def turn_steps(
    turns: TurnsConfig | TurnMachine | None = None,
    *,
    mute: Sequence[MuteStrategy[Any]] = (),
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[Frame]], Observable[TurnScan]]:
    """The turn machine over a stream of frames: each input's decisions out, as one step.

    Every frame (and every timer the strategies armed, when it fires) goes
    through :meth:`TurnMachine.step <rxvoice.turns.TurnMachine.step>`, the
    very entry the user aggregator, ``UserTurnProcessor`` and the turn-taking
    detector feed, and comes out as a :class:`~rxvoice.turns.TurnScan`: the
    calls that input made (``("emit", frame, direction)``, ``("arm", owner,
    key, seconds)``, ``("event", name, payload)``, ...) and whether a turn is
    open after it. A ``scan`` with the machine's timers: state is created
    per subscription, the timers run on ``scheduler`` (else the subscribe-time
    one, else the default) and are cancelled when the subscription is
    disposed; a strategy's model call runs at once. When the source
    completes the session ends (an open turn is reported stopped), as at an
    ``EndFrame``. Something that is not a frame is an
    :class:`~rxvoice.errors.InvalidFrameError` on ``on_error``.

    .. marble::
        :alt: turn_steps

        -v-h-s-----------|
        [ turn_steps(TurnsConfig()) ]
        -a-b-c-----d-----|

    ``v``/``s``: the VAD hears speech start and stop, ``h``: its words; ``a``:
    the turn started (``UserStartedSpeakingFrame`` and an interruption
    emitted); ``b``: the words noted; ``c``: the speech timeout armed; ``d``:
    it fired 0.6 s later, the turn stopped (``on_user_turn_stopped``).

    Args:
        turns: The strategies and timeouts (a ``TurnsConfig``), or a
            ``TurnMachine`` built from them; the defaults without it.
        mute: More mute strategies.
        scheduler: Where the timers run.

    Examples:
        >>> from reactivex.subject import Subject
        >>> from reactivex.testing import TestScheduler
        >>> from rxvoice import frames as F
        >>> said, scheduler, events = Subject(), TestScheduler(), []
        >>> steps = said.pipe(turn_steps())
        >>> def note(step):
        ...     events.extend((round(scheduler.clock, 3), c[1]) for c in step.calls if c[0] == "event")
        >>> _ = steps.subscribe(note, scheduler=scheduler)
        >>> for frame in (F.VADUserStartedSpeakingFrame(0.2), F.TranscriptionFrame("hi", finalized=True),
        ...               F.VADUserStoppedSpeakingFrame(0.2)):
        ...     said.on_next(frame)
        >>> scheduler.advance_by(1.0)
        >>> events
        [(0, 'on_user_turn_started'), (0.6, 'on_user_turn_inference_triggered'), (0.6, 'on_user_turn_stopped')]
    """
    machine = turns if isinstance(turns, TurnMachine) else TurnMachine(turns, mute)
    if isinstance(turns, TurnMachine) and mute:
        raise ConfigurationError("turn_steps: give the mute strategies to the TurnMachine, not beside it")
    return turn_steps_(machine, scheduler)

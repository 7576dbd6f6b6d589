"""The machinery behind every text aggregator: a lookahead sentence splitter plus patterns.

Why one engine: the sentence rules and the pattern rules interleave character by
character (a sentence may not end inside an open pattern, an aggregated pattern
releases the text before it), so they are easiest to get right in one loop.

Why it is fast: most tokens a model streams contain no terminator and no delimiter,
and those take a single regex test and an in-place string append. Everything else
is decided incrementally: the tokenizer resumes where it stopped, delimiter searches
only look at new text, so a long response is processed in time linear in its length.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from rxvoice.text._charsets import SENTENCE_ENDERS, is_punctuation
from rxvoice.text.aggregation import SENTENCE, TOKEN, Aggregation, MatchAction, PatternMatch
from rxvoice.text.tokenizer import (
    IncrementalSentenceTokenizer,
    SentenceTokenizer,
    default_tokenizer,
)

__all__ = ["Pattern", "PatternHandler", "TextAggregatorEngine"]

logger = logging.getLogger("rxvoice.text")

#: Called once for each completed pattern; exceptions are logged and contained.
PatternHandler = Callable[[PatternMatch], object]

# Lookahead states (see ``_split``).
_IDLE = 0  # no terminator pending
_AWAIT_CHAR = 1  # a terminator was seen; the next visible character confirms it or not
_AWAIT_WORD = 2  # a symbol confirmed nothing; waiting for a word to start
_IN_WORD = 3  # inside the confirming word; its end gets a second look

_ENDERS_CLASS = "[" + re.escape("".join(sorted(SENTENCE_ENDERS))) + "]"
_ENDER_RE = re.compile(_ENDERS_CLASS)
_BLANK_ENDERS = str.maketrans(dict.fromkeys(SENTENCE_ENDERS, " "))


@dataclass(frozen=True, slots=True)
class Pattern:
    """A start/end delimiter pair and what to do with its matches."""

    type: str
    start: str
    end: str
    action: MatchAction


class TextAggregatorEngine:
    """State and algorithms shared by the public aggregators; not public itself.

    Args:
        aggregation_type: "sentence" (split with lookahead) or "token" (pass through).
        tokenizer: Sentence end detection; the default English one if None.
        cut_unclosed_on_flush: Whether ``flush`` drops an unclosed REMOVE/AGGREGATE
            pattern and a trailing partial start delimiter (pattern pairs) or speaks
            everything held (skip tags).
        flush_strip: Characters ``flush`` strips in sentence mode: spaces only (" ", as
            the reference's sentence aggregator), or all whitespace (None, as its
            pattern aggregator, which also strips the text released before a pattern).
    """

    def __init__(
        self,
        aggregation_type: str,
        tokenizer: SentenceTokenizer | None,
        *,
        cut_unclosed_on_flush: bool,
        flush_strip: str | None = " ",
    ) -> None:
        if aggregation_type not in (SENTENCE, TOKEN):
            raise ValueError(
                f"aggregation_type must be 'sentence' or 'token', got {aggregation_type!r}"
            )
        self._type = aggregation_type
        self._sentences = aggregation_type == SENTENCE
        self._tokenizer: SentenceTokenizer = (
            tokenizer if tokenizer is not None else default_tokenizer()
        )
        self._incremental: IncrementalSentenceTokenizer | None = (
            self._tokenizer if isinstance(self._tokenizer, IncrementalSentenceTokenizer) else None
        )
        self._cut_on_flush = cut_unclosed_on_flush
        self._flush_strip = flush_strip
        self._patterns: dict[str, Pattern] = {}
        self._handlers: dict[str, PatternHandler] = {}
        self._rebuild_patterns()
        self._clear()

    # ------------------------------------------------------------------ state

    def _clear(self) -> None:
        self._buf = ""
        self._state = _IDLE
        self._resume = 0  # tokenizer scan restarts here (all candidates before are decided)
        self._protected = 0  # no sentence end before this (inside a closed KEEP pattern)
        self._floor = 0  # no start delimiter begins before this
        self._open: Pattern | None = None
        self._open_at = 0  # where the open pattern's start delimiter begins
        self._content_at = 0  # where its content begins
        self._tail_clean = True  # the buffer's tail holds no possible delimiter start

    def _rebuild_patterns(self) -> None:
        patterns = sorted(self._patterns.values(), key=lambda p: -len(p.start))
        self._starts = {p.start: p for p in patterns}
        self._max_start = max((len(p.start) for p in patterns), default=0)
        if patterns:
            self._start_re: re.Pattern[str] | None = re.compile(
                "|".join(re.escape(p.start) for p in patterns)
            )
            firsts = "".join(sorted({p.start[0] for p in patterns}))
            self._first_re: re.Pattern[str] | None = re.compile("[" + re.escape(firsts) + "]")
            enders = "".join(sorted(SENTENCE_ENDERS))
            self._fast_re = re.compile("[" + re.escape(enders + firsts) + "]")
        else:
            self._start_re = None
            self._first_re = None
            self._fast_re = _ENDER_RE
        self._tail_clean = False

    # ------------------------------------------------------------------ public core

    @property
    def aggregation_type(self) -> str:
        """The type of the units this aggregator cuts: "sentence" or "token"."""
        return self._type

    @property
    def tokenizer(self) -> SentenceTokenizer:
        """The sentence end detection in use."""
        return self._tokenizer

    @property
    def text(self) -> Aggregation:
        """What is held, spaces trimmed; typed with the open pattern's type, if any."""
        kind = self._type
        if self._open is not None and self._open_type_visible():
            kind = self._open.type
        return Aggregation(self._buf.strip(" "), kind)

    def _open_type_visible(self) -> bool:
        return True

    def aggregate(self, text: str) -> list[Aggregation]:
        """Add streamed ``text``; return the units it completed, in order."""
        if not text:
            return []
        if not self._sentences and self._start_re is None:
            return [Aggregation(text, TOKEN)]  # plain token mode: nothing to hold
        start = len(self._buf)
        # In-place append: CPython grows a string held by a single local reference
        # instead of copying it, which keeps long buffers linear ("self._buf += text"
        # copies the whole buffer on every token).
        buf = self._buf
        self._buf = ""
        buf += text
        self._buf = buf
        out: list[Aggregation] = []
        open_pattern = self._open
        if open_pattern is None:
            if self._tail_clean and self._fast_re.search(text) is None:
                if not self._sentences:
                    self._buf = ""
                    return [Aggregation(buf, TOKEN)]
                if self._state == _IDLE:
                    return out
        elif (
            buf.find(open_pattern.end, max(self._content_at, start - len(open_pattern.end) + 1)) < 0
        ):
            return out
        if self._start_re is None and self._sentences:
            self._split(start, len(buf), out)  # no patterns: straight to the splitter
        else:
            self._process(start, out)
        if not self._sentences:
            self._release_tokens(out)
        self._tail_clean = self._compute_tail_clean()
        return out

    def flush(self) -> Aggregation | None:
        """Return what is held as a last unit, or None if nothing is, and start over."""
        buf = self._buf
        if self._cut_on_flush:
            if self._open is not None:
                if self._open.action is not MatchAction.KEEP:
                    buf = buf[: self._open_at]
            else:
                buf = buf[: len(buf) - self._partial_start_length(buf, droppable_only=True)]
        self._clear()
        if self._sentences:
            buf = buf.strip(self._flush_strip)
            return Aggregation(buf, SENTENCE) if buf.strip() else None
        return Aggregation(buf, TOKEN) if buf else None

    def reset(self) -> None:
        """Forget what is held; registered patterns and handlers stay."""
        self._clear()

    def handle_interruption(self) -> None:
        """The bot was interrupted: drop what is held; no handler is called."""
        self._clear()

    # ------------------------------------------------------------------ the loop

    def _process(self, i: int, out: list[Aggregation]) -> None:
        """Run patterns and the sentence splitter over ``self._buf[i:]``."""
        start_re = self._start_re
        while True:
            pattern = self._open
            if pattern is not None:
                buf = self._buf
                j = buf.find(pattern.end, max(self._content_at, i - len(pattern.end) + 1))
                if j < 0:
                    return
                i = self._close(j + len(pattern.end), out)
                continue
            buf = self._buf
            n = len(buf)
            if i >= n:
                return
            found = None
            if start_re is not None:
                lo = max(self._floor, i - self._max_start + 1)
                found = start_re.search(buf, lo)
            if found is None:
                if self._sentences:
                    self._split(i, n, out)
                return
            s, e = found.start(), found.end()
            if self._sentences and i < e - 1:
                shift = self._split(i, e - 1, out)
                s -= shift
                e -= shift
                if s < 0:  # a sentence end swallowed the delimiter's start (pathological)
                    i = e
                    self._floor = max(self._floor, e)
                    continue
            i = self._open_pattern(self._starts[found.group()], s, e, out)

    def _open_pattern(self, pattern: Pattern, s: int, e: int, out: list[Aggregation]) -> int:
        if pattern.action is MatchAction.AGGREGATE and s > 0:
            before = self._buf[:s]
            self._cut(s)
            if self._sentences:
                if before.strip():
                    out.append(Aggregation(before.strip(self._flush_strip), SENTENCE))
            else:
                out.append(Aggregation(before, TOKEN))
            s, e = 0, e - len(before)
        self._open = pattern
        self._open_at = s
        self._content_at = e
        return e

    def _close(self, end: int, out: list[Aggregation]) -> int:
        """Complete the open pattern ending at ``end``; return where to continue."""
        pattern = self._open
        assert pattern is not None
        buf = self._buf
        s = self._open_at
        full = buf[s:end]
        match = PatternMatch(
            pattern.type, buf[self._content_at : end - len(pattern.end)].strip(), full
        )
        self._open = None
        self._call_handler(match)
        if pattern.action is MatchAction.REMOVE:
            self._buf = buf[:s] + buf[end:]
            self._floor = s
            self._state = _AWAIT_CHAR
            return s
        if pattern.action is MatchAction.KEEP:
            self._floor = end
            self._protected = end
            self._state = _AWAIT_CHAR
            return end
        self._cut(end)
        self._state = _IDLE
        if match.text:
            out.append(Aggregation(match.text, pattern.type, full))
        return 0

    def _call_handler(self, match: PatternMatch) -> None:
        handler = self._handlers.get(match.type)
        if handler is None:
            return
        try:
            result = handler(match)
        except Exception:
            logger.exception("pattern handler for %r failed; aggregation goes on", match.type)
            return
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if callable(close):
                close()
            logger.error(
                "pattern handler for %r returned an awaitable; handlers must be synchronous",
                match.type,
            )

    def _cut(self, n: int) -> None:
        """Drop the first ``n`` characters of the buffer, moving every offset along."""
        self._buf = self._buf[n:]
        self._resume = max(0, self._resume - n)
        self._protected = max(0, self._protected - n)
        self._floor = max(0, self._floor - n)
        self._open_at = max(0, self._open_at - n)
        self._content_at = max(0, self._content_at - n)

    # ------------------------------------------------------------------ sentences

    def _split(self, i: int, stop: int, out: list[Aggregation]) -> int:
        """Feed ``buf[i:stop]`` to the lookahead state machine; return how much was cut.

        A terminator arms the lookahead; the next visible non-punctuation character asks
        the tokenizer (with that character, so "Mr. S" is seen as "Mr. Smith" starting);
        the end of the word that character starts asks once more, for rules that need the
        whole word. Whitespace and punctuation never confirm anything on their own, so
        "Hello world." alone is held until the next word or ``flush``.
        """
        buf = self._buf
        state = self._state
        shift = 0
        while i < stop:
            if state == _IDLE:
                found = _ENDER_RE.search(buf, i, stop)
                if found is None:
                    break
                state = _AWAIT_CHAR
                i = found.end()
                continue
            c = buf[i]
            if state == _AWAIT_CHAR:
                if c.isspace() or is_punctuation(c):
                    i += 1
                    continue
                cut = self._check(i + 1, out)
                if self._incremental is not None and self._resume > i - cut:
                    state = _IDLE  # every candidate is decided: the word-end retry cannot help
                else:
                    state = _IN_WORD if c.isalnum() else _AWAIT_WORD
            elif state == _AWAIT_WORD:
                if c in SENTENCE_ENDERS:
                    state = _AWAIT_CHAR
                elif c.isalnum():
                    state = _IN_WORD
                i += 1
                continue
            else:  # _IN_WORD
                space = c.isspace()
                if not space and not is_punctuation(c):
                    i += 1
                    continue
                cut = self._check(i + 1 if space else i, out)
                state = _AWAIT_CHAR if c in SENTENCE_ENDERS else _IDLE
            if cut:
                buf = self._buf
                i -= cut
                stop -= cut
                shift += cut
            i += 1
        self._state = state
        return shift

    def _check(self, end: int, out: list[Aggregation]) -> int:
        """Emit every sentence complete in ``buf[:end]``; return how many characters went."""
        cut = 0
        while True:
            buf = self._buf
            incremental = self._incremental
            if incremental is not None:
                eos, self._resume = incremental.scan_end_of_sentence(
                    buf, max(self._resume, self._protected), end
                )
            else:
                text = buf[:end]
                if self._protected:
                    text = (
                        text[: self._protected].translate(_BLANK_ENDERS) + text[self._protected :]
                    )
                eos = self._tokenizer.match_end_of_sentence(text)
            if eos <= 0:
                return cut
            eos = min(eos, end)
            sentence = buf[:eos].strip(" ")
            self._cut(eos)
            end -= eos
            cut += eos
            if sentence.strip():
                out.append(Aggregation(sentence, SENTENCE))
            if incremental is not None and _ENDER_RE.search(self._buf, 0, end) is None:
                self._resume = max(self._resume, end)  # no candidate left before ``end``
                return cut

    # ------------------------------------------------------------------ tokens

    def _release_tokens(self, out: list[Aggregation]) -> None:
        """Token mode: pass on everything held except an open pattern or a partial delimiter."""
        buf = self._buf
        if self._open is not None:
            keep_from = self._open_at
        else:
            keep_from = len(buf) - self._partial_start_length(buf, droppable_only=False)
        if keep_from > 0:
            out.append(Aggregation(buf[:keep_from], TOKEN))
            self._cut(keep_from)

    def _partial_start_length(self, buf: str, *, droppable_only: bool) -> int:
        """Length of the longest suffix of ``buf`` that is a proper prefix of a start delimiter."""
        best = 0
        lo = self._floor
        for pattern in self._patterns.values():
            if droppable_only and pattern.action is MatchAction.KEEP:
                continue
            start = pattern.start
            for k in range(min(len(start) - 1, len(buf) - lo), best, -1):
                if buf.endswith(start[:k]):
                    best = k
                    break
        return best

    def _compute_tail_clean(self) -> bool:
        first_re = self._first_re
        if first_re is None or self._open is not None:
            return self._open is None
        buf = self._buf
        return first_re.search(buf, max(self._floor, len(buf) - self._max_start + 1)) is None

    # ------------------------------------------------------------------ patterns

    def _add_pattern(self, pattern: Pattern) -> None:
        self._patterns[pattern.type] = pattern
        self._rebuild_patterns()

    def _set_handler(self, pattern_type: str, handler: PatternHandler) -> None:
        self._handlers[pattern_type] = handler

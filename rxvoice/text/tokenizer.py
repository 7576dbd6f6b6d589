"""Sentence end detection: where does the first complete sentence of a text end?

The aggregators ask this after every sentence-ending character a model streams, so the
answer must be right on partial text and cheap. ``DefaultSentenceTokenizer`` is a small
rule-based segmenter (no models, no dependencies) that decides each candidate
terminator from its neighbourhood only: the word before it and the first character of
the word after it. Because every decision is local, a caller holding a growing buffer
can resume scanning where the last call stopped (``scan_end_of_sentence``) instead of
re-reading the whole buffer, which keeps aggregation linear in the text's length.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from rxvoice.text._charsets import (
    CLOSERS,
    END_OF_TEXT_ENDERS,
    SENTENCE_ENDERS,
    UNAMBIGUOUS_ENDERS,
    is_cjk,
)
from rxvoice.text.languages import LanguageProfile, language_profile, normalize_language

__all__ = [
    "DefaultSentenceTokenizer",
    "IncrementalSentenceTokenizer",
    "SentenceTokenizer",
    "default_tokenizer",
    "match_end_of_sentence",
]


class SentenceTokenizer(Protocol):
    """Finds the end of the first complete sentence; implement it for another language."""

    def match_end_of_sentence(self, text: str) -> int:
        """The offset just past the first complete sentence of ``text``, or 0 if none.

        Trailing whitespace is not part of the sentence: "Hi. " gives 3.
        """
        ...


@runtime_checkable
class IncrementalSentenceTokenizer(SentenceTokenizer, Protocol):
    """A tokenizer that can resume, so a growing buffer is scanned once, not once per check."""

    def scan_end_of_sentence(
        self, text: str, start: int = 0, end: int | None = None
    ) -> tuple[int, int]:
        """Look for the first sentence end of ``text[:end]`` at or after ``start``.

        Returns:
            ``(eos, resume)``: ``eos`` as for ``match_end_of_sentence`` (0 if none), and
            ``resume``, the offset before which no candidate can become a sentence end
            however the text continues; pass it as ``start`` next time.
        """
        ...


_CANDIDATE = re.compile("[" + re.escape("".join(sorted(SENTENCE_ENDERS))) + "]")
_ALNUM = re.compile(r"[^\W_]")
_INITIALISM = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_ROMAN = frozenset(["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"])
_UNAMBIGUOUS = frozenset(UNAMBIGUOUS_ENDERS)
_END_OF_TEXT_OR_CLOSERS = frozenset(END_OF_TEXT_ENDERS) | CLOSERS
_RUN = SENTENCE_ENDERS | CLOSERS
_QUESTION_LIKE = frozenset("!?‼⁇⁈⁉\u037e")  # U+037E is the Greek question mark
_CLOSER_CHARS = "".join(sorted(CLOSERS))
_FRENCH_CLOSERS = frozenset("»›")
_HORIZONTAL_SPACE = frozenset(" \u00a0\u202f\t")
_JAPANESE_QUOTATIVE = frozenset("とっ")
# Verdicts on one candidate terminator.
_NOT = 0  # not a sentence end, whatever follows
_BOUNDARY = 1  # a sentence end, whatever follows
_AT_END = 2  # ends the text, so a sentence end for now
_UNDECIDED = 3  # depends on a word that is not complete yet
_MAX_WORD = 40  # longer "words" are URLs or code, never abbreviations
_MAX_OPENERS = 8  # quotes/brackets/markdown skipped to reach the next word
_NO_ALNUM = 1 << 62


class DefaultSentenceTokenizer:
    """Rule-based sentence end detection for many languages and scripts.

    Rules, in the order they are tried for each candidate terminator:

    * Terminators of scripts that need no space (CJK ``。！？``, Indic ``।``, Arabic ``؟``,
      Ethiopic ``።``, ...) end a sentence wherever they are; closing quotes or brackets
      right after them stay with the sentence.
    * Latin ``. ! ? …`` need whitespace after them (or a CJK character on both sides),
      so decimals, times, URLs and e-mail addresses never split. ``;`` separates
      clauses: it ends a sentence only where the text ends (in Greek it is the
      question mark and acts like ``?``).
    * The text's own end is a sentence end when its last non-space character is a
      terminator (or a closing quote/bracket after one).
    * ``.`` and ``…`` followed by a lower-case word do not end a sentence ("U.S.A. and",
      "e.g. this", "wait... what"); neither do ``?``/``!`` closing a quotation followed by
      one ("\\"Why?\\" she asked").
    * A period after a known abbreviation ("Mr.", "e.g."), before a number after a number
      abbreviation ("No. 5", "Jan. 3"), after a single capital initial ("J. Smith"),
      after a list number at the start of a line ("1. First"), or after a German-style
      ordinal ("am 3. Oktober") does not end a sentence.
    * A sentence must contain a letter or digit: a leading "..." joins the next sentence.

    Args:
        language: Language code ("en", "de-DE", "fr_FR", ...); picks the abbreviations.
        profile: A full profile to use instead of the built-in one for ``language``.
        abbreviations: Extra words after which a period never ends a sentence.
        number_abbreviations: Extra words after which a period before a number does not.
    """

    __slots__ = ("_abbreviations", "_number_abbreviations", "_profile")

    def __init__(
        self,
        language: str | None = "en",
        *,
        profile: LanguageProfile | None = None,
        abbreviations: set[str] | frozenset[str] | None = None,
        number_abbreviations: set[str] | frozenset[str] | None = None,
    ) -> None:
        base = profile if profile is not None else language_profile(language)
        if abbreviations or number_abbreviations:
            base = base.extended(
                abbreviations=abbreviations, number_abbreviations=number_abbreviations
            )
        self._profile = base
        self._abbreviations = base.abbreviations
        self._number_abbreviations = base.number_abbreviations

    @property
    def language(self) -> str:
        """The base language code this tokenizer was built for."""
        return self._profile.code

    @property
    def profile(self) -> LanguageProfile:
        """The abbreviations and ordinal rules in use."""
        return self._profile

    def __repr__(self) -> str:
        return f"DefaultSentenceTokenizer(language={self._profile.code!r})"

    def match_end_of_sentence(self, text: str) -> int:
        """The offset just past the first complete sentence of ``text``, or 0 if none."""
        return self.scan_end_of_sentence(text)[0]

    def scan_end_of_sentence(
        self, text: str, start: int = 0, end: int | None = None
    ) -> tuple[int, int]:
        """Look for the first sentence end at or after ``start``; see the Protocol."""
        stop = len(text) if end is None else min(end, len(text))
        while stop > 0 and text[stop - 1].isspace():
            stop -= 1
        if start >= stop:
            return 0, max(start, 0)
        first_alnum: int | None = None
        search = _CANDIDATE.search
        pos = start
        while True:
            match = search(text, pos, stop)
            if match is None:
                break
            p = match.start()
            q = p + 1
            while q < stop and text[q] in _RUN:
                q += 1
            if first_alnum is None:
                found = _ALNUM.search(text, 0, stop)
                first_alnum = found.start() if found is not None else _NO_ALNUM
            if first_alnum >= p:
                pos = q
                continue  # no word yet: a leading "..." joins the next sentence
            verdict, pos = self._decide(text, p, q, stop)
            if verdict == _BOUNDARY:
                return pos, pos
            if verdict == _AT_END:
                return pos, p  # more text may still turn this into "Mr. Smith"
            if verdict == _UNDECIDED:
                return 0, p
        return 0, stop

    def _decide(self, text: str, p: int, q: int, stop: int) -> tuple[int, int]:
        """Decide the terminator run ``text[p:q]``; returns a verdict and the sentence end."""
        run = text[p:q]
        if not _UNAMBIGUOUS.isdisjoint(run):
            if q < stop:
                if run == "．" and text[p - 1].isdigit() and text[q].isdigit():
                    return _NOT, q  # full-width decimal point
                if run[-1] in CLOSERS and text[q] in _JAPANESE_QUOTATIVE:
                    return _NOT, q  # 「はい。」と言った: the quotation continues
            return _BOUNDARY, q
        if q >= stop:
            return _AT_END, q
        if _END_OF_TEXT_OR_CLOSERS.issuperset(run):
            return _NOT, q
        nxt = text[q]
        if not nxt.isspace():
            if is_cjk(nxt) and is_cjk(text[p - 1]):
                return _BOUNDARY, q  # "你好!我": no space between CJK sentences
            return _NOT, q
        r = q + 1
        while r < stop and text[r].isspace():
            r += 1
        if text[r] in _FRENCH_CLOSERS and all(c in _HORIZONTAL_SPACE for c in text[q:r]):
            q = r + 1  # « Oui. » : the French closing guillemet follows a space
            while q < stop and text[q] in _RUN:
                q += 1
            if q >= stop:
                return _AT_END, q
            if not text[q].isspace():
                return _NOT, q
            r = q + 1
            while r < stop and text[r].isspace():
                r += 1
        k = r
        limit = min(stop, r + _MAX_OPENERS)
        while k < limit and not text[k].isalnum() and not text[k].isspace():
            k += 1
        if k >= stop:
            return _UNDECIDED, q  # only quotes/symbols so far: "U.S. <i>army" may follow
        letter = text[k] if text[k].isalnum() else ""
        enders = run.rstrip(_CLOSER_CHARS)
        closed = len(enders) < len(run)
        question = not _QUESTION_LIKE.isdisjoint(enders)
        if not question and enders.strip(";") == "":
            if not self._profile.semicolon_is_question:
                return _NOT, q  # "a; b": a clause, not a sentence (it ends one only at the end)
            question = True  # Greek writes its question mark as ";"
        if question:
            if closed and letter.islower():
                return _NOT, q  # '"Why?" she asked'
            return _BOUNDARY, q
        if letter.islower():
            return _NOT, q  # "U.S.A. and", "e.g. this", "wait... what"
        if enders != "." or run[0] != ".":
            return _BOUNDARY, q  # an ellipsis, or a period after a closing quote
        return self._after_period(text, p, q, k, letter, stop), q

    def _after_period(self, text: str, p: int, q: int, k: int, letter: str, stop: int) -> int:
        """Decide a single period followed by whitespace and a word starting with ``letter``."""
        w = p
        floor = max(0, p - _MAX_WORD)
        while w > floor and not text[w - 1].isspace():
            w -= 1
        if w == floor and w > 0 and not text[w - 1].isspace():
            return _BOUNDARY  # a very long token (a URL, code): not an abbreviation
        while w < p and not text[w].isalnum():
            w += 1  # strip opening quotes and brackets: '"Dr.' is "Dr."
        word = text[w:p]
        if not word:
            return _BOUNDARY
        lower = word.lower()
        profile = self._profile
        if lower in self._abbreviations:
            return _NOT
        if letter.isdigit() and lower in self._number_abbreviations:
            return _NOT
        if len(word) == 1 and word.isupper() and lower not in profile.not_initials:
            return _NOT  # an initial: "J. Smith", "John F. Kennedy"
        if lower.isdigit() or lower in _ROMAN or (len(word) == 1 and word.isalpha()):
            if _at_line_start(text, w):
                return _NOT  # a numbered list item: "1. First", "a. Apples"
            if profile.dot_ordinals and lower.isdigit() and len(lower) <= 3:
                return self._ordinal(text, w, k, stop)
        return _BOUNDARY

    def _ordinal(self, text: str, w: int, k: int, stop: int) -> int:
        """Decide "<number>." in a language writing ordinals that way ("der 3. Platz")."""
        profile = self._profile
        v = w
        while v > 0 and text[v - 1] in _HORIZONTAL_SPACE:
            v -= 1
        u = v
        while u > 0 and text[u - 1].isalpha() and v - u < _MAX_WORD:
            u -= 1
        if text[u:v].lower() in profile.ordinal_context:
            return _NOT
        e = k
        while e < stop and text[e].isalpha():
            e += 1
        word = text[k:e].lower()
        if not word:
            return _BOUNDARY
        if e >= stop:
            if any(m.startswith(word) for m in profile.months):
                return _UNDECIDED  # "3. Ok" may yet become "3. Oktober"
            return _BOUNDARY
        return _NOT if word in profile.months else _BOUNDARY


def _at_line_start(text: str, w: int) -> bool:
    """Whether only spaces separate ``text[w]`` from the start of its line (or a colon)."""
    i = w
    while i > 0 and text[i - 1] in _HORIZONTAL_SPACE:
        i -= 1
    return i == 0 or text[i - 1] in "\n\r:"


_DEFAULTS: dict[str, DefaultSentenceTokenizer] = {}


def default_tokenizer(language: str | None = None) -> DefaultSentenceTokenizer:
    """The shared default tokenizer for ``language`` (tokenizers are stateless)."""
    code = normalize_language(language)
    tokenizer = _DEFAULTS.get(code)
    profile = language_profile(code)
    if tokenizer is None or tokenizer.profile is not profile:  # register_language() since
        tokenizer = _DEFAULTS[code] = DefaultSentenceTokenizer(profile=profile)
    return tokenizer


def match_end_of_sentence(text: str, language: str | None = None) -> int:
    """The offset just past the first complete sentence of ``text``, or 0 if none.

    Examples:
        >>> match_end_of_sentence("Hello world. How")
        12
        >>> match_end_of_sentence("Ok, Mr. Smith let's ")
        0
    """
    return default_tokenizer(language).match_end_of_sentence(text)

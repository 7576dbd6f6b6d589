"""Character classes shared by the tokenizer and the aggregators.

Kept in one place so the tokenizer's idea of "a sentence can end here" and the
aggregators' idea of "wait for the next character" can never drift apart.
"""

from __future__ import annotations

import unicodedata

__all__ = [
    "AMBIGUOUS_ENDERS",
    "CLOSERS",
    "END_OF_TEXT_ENDERS",
    "SENTENCE_ENDERS",
    "UNAMBIGUOUS_ENDERS",
    "is_cjk",
    "is_punctuation",
]

#: Latin terminators: a boundary only when whitespace (or a CJK character) follows,
#: so "3.14", "foo.bar@x.ai" and "U.S" never split.
AMBIGUOUS_ENDERS = ".!?;…‼⁇⁈⁉\u037e"

#: Terminators of scripts that do not need a following space; a boundary wherever they are.
UNAMBIGUOUS_ENDERS = (
    "。？！；．｡"  # CJK (full-width and half-width)
    "।॥"  # Devanagari and other Indic scripts
    "؟؛۔؏"  # Arabic, Urdu
    "၊။"  # Myanmar
    "។៕"  # Khmer
    "།༎"  # Tibetan
    "։"  # Armenian full stop
    "።፧፨"  # Ethiopic
)

#: Armenian emphasis and question marks sit on the stressed word, which need not be the
#: last one ("Ինչպե՞ս ես"), so they end a sentence only where the text ends.
END_OF_TEXT_ENDERS = "՜՞"

#: Every character that may end a sentence; the aggregators' lookahead trigger.
SENTENCE_ENDERS = frozenset(AMBIGUOUS_ENDERS + UNAMBIGUOUS_ENDERS + END_OF_TEXT_ENDERS)

#: Characters that stay with the sentence they close: quotes, brackets, markdown emphasis
#: (all of them punctuation, so none confirms a sentence end on its own).
CLOSERS = frozenset("\"'”’»›“‘«‹)]}」』】〕〉》）］｝〗〙〛｣*_")

_PUNCT_CACHE: dict[str, bool] = {}


def is_punctuation(char: str) -> bool:
    """Whether ``char`` is Unicode punctuation (category P*); cached, it is hot."""
    cached = _PUNCT_CACHE.get(char)
    if cached is None:
        cached = unicodedata.category(char).startswith("P")
        _PUNCT_CACHE[char] = cached
    return cached


def is_cjk(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces between sentences."""
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF66 <= code <= 0xFF9F  # half-width kana
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0x20000 <= code <= 0x2FA1F  # supplementary ideographs
    )

"""Words as they were said: a speech-to-text's written forms turned back into spoken words.

Whisper writes what it hears the way a person writes it: "7", "$42",
"4:30", "14th", "J-O-R-D-A-N", "jordan.kim@gmail.com". The turn decision
(:mod:`rxvoice.turns.completion`) and any word-level language model read the
words a caller says, and the development transcripts are written that way
too, so :func:`spoken_words` rewrites one written word as the words spoken:

* numbers as English number words: up to two digits, round hundreds and
  thousands, and numbers written with thousands separators as cardinals
  ("42" → "forty two", "1,200" → "one thousand two hundred"); other runs of
  three or more digits, and any with a leading zero, digit by digit, as a
  caller reads a code ("48261" → "four eight two six one"); decimals with
  "point"; ordinals ("14th" → "fourteenth"); times ("4:30" → "four thirty",
  "6pm" / "6 p.m." → "six p m"); currency and percent after the amount;
* spelled letters as single lower-case letters ("J-O-R-D-A-N", "J.", "A.M."
  → "j o r d a n", "j", "a m");
* addresses with the words said: "@" → "at", an inner "." → "dot";
* everything else lower-cased, without punctuation (``keep_punctuation``
  puts the trailing mark back on the last word).

A dozen number-word rules are written here rather than pulling in a
number-spelling package (the common one is LGPL and covers fifty languages
to give us one).
"""

from __future__ import annotations

import re

__all__ = ["cardinal", "ordinal", "spoken_words"]

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "  # noqa: SIM905
         "sixteen seventeen eighteen nineteen").split()
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
             "nine": "ninth", "twelve": "twelfth"}
_CURRENCY = {"$": "dollars", "£": "pounds", "€": "euros"}
_LEADING = "\"'“‘([{¿¡«-"
_TRAILING = "\"'”’)]}»"
_MARKS = ".,?!;:…"


def cardinal(n: int) -> list[str]:
    """``n`` (0 ≤ n < 10**12) in English number words, without "and": 342 → three hundred forty two."""
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            return cardinal(n // size) + [name] + (cardinal(n % size) if n % size else [])
    raise AssertionError("unreachable")  # pragma: no cover


def ordinal(n: int) -> list[str]:
    """``n`` as an ordinal: 14 → fourteenth, 21 → twenty first."""
    words = cardinal(n)
    last = words[-1]
    if last in _ORDINALS:
        words[-1] = _ORDINALS[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return words


def _digits(text: str) -> list[str]:
    return [_ONES[int(d)] for d in text]


def _integer(text: str) -> list[str]:
    """A run of digits as said: a count (short or round) or a code (digit by digit)."""
    if "," in text:
        return cardinal(int(text.replace(",", "")))
    if text[0] == "0" and len(text) > 1:
        return _digits(text)
    if len(text) <= 2 or _ROUND.fullmatch(text) is not None:
        return cardinal(int(text))
    return _digits(text)


_ROUND = re.compile(r"[1-9]\d?0{2,5}")  # 300, 2000, 1500, 45000


def _number(text: str) -> list[str]:
    """An amount: integer, separators, decimals."""
    if "." in text:
        whole, _, frac = text.partition(".")
        return (_integer(whole) if whole else ["zero"]) + ["point"] + _digits(frac)
    return _integer(text)


_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?"
_AMOUNT = re.compile(rf"([$£€])({_NUMBER})")
_PERCENT = re.compile(rf"({_NUMBER})%")
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?:([ap])\.?m\.?)?", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2})([ap])\.?m\.?", re.IGNORECASE)
_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)", re.IGNORECASE)
_PLAIN_NUMBER = re.compile(_NUMBER)
_LETTERS = re.compile(r"(?:[A-Za-z][.\-])+[A-Za-z]?\.?")
_AMPM = re.compile(r"([ap])\.m\.?", re.IGNORECASE)
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:[\w-]+\.)+(?:com|org|net|edu|gov|io|co|uk)", re.IGNORECASE)


def _piece(core: str) -> list[str]:
    """One written token without its outer punctuation, as spoken words."""
    if not core:
        return []
    if (m := _AMOUNT.fullmatch(core)) is not None:
        return [*_number(m.group(2)), _CURRENCY[m.group(1)]]
    if (m := _PERCENT.fullmatch(core)) is not None:
        return [*_number(m.group(1)), "percent"]
    if (m := _TIME.fullmatch(core)) is not None:
        minutes = int(m.group(2))
        said = cardinal(int(m.group(1))) + ([] if minutes == 0 else
                                            ["oh", _ONES[minutes]] if minutes < 10 else cardinal(minutes))
        return said + ([m.group(3).lower(), "m"] if m.group(3) else [])
    if (m := _CLOCK.fullmatch(core)) is not None:
        return [*cardinal(int(m.group(1))), m.group(2).lower(), "m"]
    if (m := _ORDINAL.fullmatch(core)) is not None:
        return ordinal(int(m.group(1)))
    if _PLAIN_NUMBER.fullmatch(core) is not None:
        return _number(core)
    if (m := _AMPM.fullmatch(core)) is not None:
        return [m.group(1).lower(), "m"]
    if _LETTERS.fullmatch(core) is not None and sum(c.isalpha() for c in core) >= 1:
        return [c.lower() for c in core if c.isalpha()]
    if _ADDRESS.fullmatch(core) is not None:
        spoken = core.replace("@", " at ").replace(".", " dot ")
        return [w for part in spoken.split() for w in _piece(part)]
    if "-" in core or "/" in core:
        parts = [p for p in re.split(r"[-/]", core) if p]
        if len(parts) > 1 and all(p.isdigit() or len(p) == 1 for p in parts):
            return [w for p in parts for w in _piece(p)]  # 773-118, J-O-H-N
        if len(parts) > 1 and all(p.lower() in _ONES or p.lower() in _TENS for p in parts):
            return [p.lower() for p in parts]  # forty-two
    if core == "&":
        return ["and"]
    word = core.lower().replace("’", "'")
    word = "".join(c for c in word if c.isalnum() or c in "'-")
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        pieces = re.findall(r"\d+|[^\W\d_]+", word)
        return [w for p in pieces for w in _piece(p)]
    return [word] if word.strip("'-") else []


def spoken_words(written: str, *, keep_punctuation: bool = False) -> list[str]:
    """The spoken words of one written word (or a few, separated by spaces); see the module docs.

    >>> spoken_words(" $42.")
    ['forty', 'two', 'dollars']
    >>> spoken_words("J-O-R-D-A-N")
    ['j', 'o', 'r', 'd', 'a', 'n']
    >>> spoken_words("Friday?", keep_punctuation=True)
    ['friday?']
    """
    out: list[str] = []
    for token in written.split():
        core = token.lstrip(_LEADING)
        mark = ""
        while core and core[-1] in _MARKS + _TRAILING:
            if core[-1] in _MARKS and not mark:
                mark = "..." if core.endswith("...") else core[-1]
            if _LETTERS.fullmatch(core) is not None or _AMPM.fullmatch(core) is not None or _CLOCK.fullmatch(core):
                break  # "A.M.", "J.", "6p.m." keep their dots for _piece
            core = core[:-1]
        words = _piece(core)
        if keep_punctuation and words and mark:
            words[-1] += mark
        out += words
    return out

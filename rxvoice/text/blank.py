"""Text that is not text: blank checks and the repair of lone surrogates.

A speech-to-text service can hand over a transcript that holds nothing a
person said: whitespace, or invisible characters only (a zero-width space, a
byte-order mark, a zero-width joiner, bidirectional marks, variation
selectors, control characters). Such a transcript must count as no words
at all, exactly as a whitespace-only one does: it opens no turn and runs no
model. :func:`is_blank` is the one predicate rxvoice uses for that, and
:func:`visible_words` splits text into the words a person could see.

"Invisible" means whitespace, control characters (Unicode category ``Cc``)
and the code points Unicode lists as *default ignorable* (format characters
such as U+200B..U+200F, U+2060..U+206F, U+FEFF, soft hyphen, variation
selectors, Hangul fillers, tag characters). A zero-width joiner inside a
word (an emoji sequence, an Indic conjunct) is kept: only text with nothing
visible at all is blank.

A Python string may also hold a *lone surrogate* (``"caf\\ud800"``, often from
JSON with a broken ``\\u`` escape), which UTF-8 cannot encode: sent to a model
over HTTP it fails the whole request. :func:`repair_surrogates` pairs what
can be paired (two halves of one character become that character) and
replaces each lone half with U+FFFD, the replacement character.
"""

from __future__ import annotations

import re

__all__ = ["is_blank", "repair_surrogates", "visible_words"]

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties), control characters, and whitespace.
_INVISIBLE = (
    r"\s\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_VISIBLE = re.compile(f"[^{_INVISIBLE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_blank(text: str) -> bool:
    """Whether ``text`` holds no visible character (empty, whitespace, invisible characters only).

    Examples:
        >>> is_blank("  "), is_blank("\\u200b\\ufeff"), is_blank("\\u200d \\n"), is_blank("ok\\u200b")
        (True, True, True, False)
    """
    return _VISIBLE.search(text) is None


def visible_words(text: str) -> list[str]:
    """The words of ``text``: split on whitespace, pieces with no visible character dropped.

    Examples:
        >>> visible_words("uh huh \\ufeff \\u200b"), visible_words("\\u200b")
        (['uh', 'huh'], [])
    """
    return [w for w in text.split() if not is_blank(w)]


def repair_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD (unchanged when it has none).

    The result always encodes to UTF-8.

    Examples:
        >>> repair_surrogates("caf\\ud800"), repair_surrogates("\\ud83d\\ude00") == "\\U0001f600"
        ('caf\ufffd', True)
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

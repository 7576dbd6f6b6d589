"""How likely the turn may end after these words: a completion signal learned from data, on plain words.

A speech-to-text service gives words without the punctuation an annotator
would have written (or with a full stop after every final), so the signal
reads only the words: lower-cased, punctuation and tags removed. It answers a
:class:`WordsEnd`: the probability that a listener could take the turn after
these words, and the weight that judgement deserves (0: the signal is unsure
and weighs nothing; the caller then decides on the audio and the silence).

:class:`TrigramWordsEnd`, the default, asks the English trigram language model
that PocketSphinx ships in its wheel (``model/en-us/en-us.lm.bin``, CMU,
BSD-style licence) how likely a sentence ends after the last two words, and
turns that into a probability with a small logistic model fitted on the
sentence prefixes of a dialogue corpus (``benchmarks/train_words_end.py``; the
weights are :data:`TRIGRAM_WEIGHTS`). A judgement costs a few
microseconds; nothing is downloaded. :class:`RulesWordsEnd` gives the same
answer shape from the hand rules of :mod:`rxvoice.turns.completion` (used when
PocketSphinx is not installed).

Words the model cannot read weigh nothing: no words, another script, a text
mostly outside the model's vocabulary (another language, a name), or
placeholders such as ``<noise>``. Misheard words weigh less: an STT
confidence below 1 scales the weight down.
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ..errors import ConfigurationError, ModelError, ModelNotFoundError
from .completion import Completion, judge_completion

__all__ = [
    "COMPLETE_DIGITS",
    "TRIGRAM_WEIGHTS",
    "WH_VERB_FLOOR",
    "RulesWordsEnd",
    "TrigramWordsEnd",
    "WordsEnd",
    "WordsEndModel",
    "contracted",
    "default_words_end",
    "plain_words",
    "pocketsphinx_lm_path",
    "read_out",
    "reading_end",
    "reading_in_progress",
    "reading_start",
    "stt_confidence",
    "wh_question_verb_came",
]


class WordsEnd(NamedTuple):
    """What the words say about the end of the turn.

    Attributes:
        probability: how likely a listener could take the turn after these words (0..1).
        weight: how much that counts (0: unsure, weighs nothing; 1: fully).
        reason: why, in words (for logs and reports).
    """

    probability: float
    weight: float
    reason: str


UNSURE = WordsEnd(0.5, 0.0, "no words to judge")


@runtime_checkable
class WordsEndModel(Protocol):
    """Judges the end of a turn from its words. Never raises on any string."""

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        """The judgement on ``text`` (the turn's words so far); ``confidence``: the STT's (0..1), if given."""
        ...


_TAG = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


def plain_words(text: str) -> list[str]:
    """The words of ``text`` as the signal reads them: NFKC, lower case, no punctuation, no tags."""
    clean = _TAG.sub(" ", unicodedata.normalize("NFKC", text))
    return [w.replace("’", "'").lower() for w in _WORD.findall(clean)]


_CONTRACTIONS: dict[tuple[str, str], str] = {
    **{(subject, "is"): f"{subject}'s" for subject in (
        "that", "it", "what", "there", "here", "he", "she", "who", "where", "how", "when", "why", "this")},
    **{(subject, "are"): f"{subject}'re" for subject in ("you", "we", "they", "what", "who")},
    **{(subject, "will"): f"{subject}'ll" for subject in ("i", "you", "we", "they", "it", "that", "he", "she")},
    **{(subject, "would"): f"{subject}'d" for subject in ("i", "you", "we", "they", "he", "she")},
    **{(subject, "have"): f"{subject}'ve" for subject in ("i", "you", "we", "they")},
    ("i", "am"): "i'm", ("let", "us"): "let's",
    ("do", "not"): "don't", ("does", "not"): "doesn't", ("did", "not"): "didn't", ("is", "not"): "isn't",
    ("are", "not"): "aren't", ("was", "not"): "wasn't", ("can", "not"): "can't", ("will", "not"): "won't",
    ("would", "not"): "wouldn't", ("could", "not"): "couldn't", ("should", "not"): "shouldn't",
    ("have", "not"): "haven't", ("has", "not"): "hasn't",
}


def contracted(words: Sequence[str]) -> list[str]:
    """``words`` with a subject and its verb (or a verb and "not") joined as speech is written ("that is" →
    "that's", "do not" → "don't", "cannot" → "can't").

    Speech-to-text services spell the same sounds either way; the language model reads conversation,
    where the contracted form is the common one ("thanks that is all" reads as going on, "thanks
    that's all" as an end), so both spellings are judged as the contracted one.
    """
    out: list[str] = []
    for word in words:
        if word == "cannot":
            out.append("can't")
            continue
        joined = _CONTRACTIONS.get((out[-1], word)) if out else None
        if joined is None:
            out.append(word)
        else:
            out[-1] = joined
    return out


def _latin(word: str) -> bool:
    for c in word:
        if c.isalpha():
            try:
                if not unicodedata.name(c).startswith("LATIN"):
                    return False
            except ValueError:
                return False
    return True


def _confidence(confidence: float | None) -> float:
    if confidence is None or isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return 1.0
    if not math.isfinite(confidence):
        return 1.0
    return min(1.0, max(0.0, float(confidence)))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


FILLERS = frozenset({"um", "uh", "uhm", "umm", "er", "erm", "eh", "hmm", "hm", "mm", "ah", "ahh"})
"""Hesitations: the speaker is still thinking (a closed class, read as a feature of its own)."""

TRIGRAM_WEIGHTS: tuple[float, ...] = (3.1722, 1.2076, 0.0, 0.0, 0.0)
"""The logistic model over the trigram features (bias, end log-probability after the last two words,
after the last word, the last word's log-frequency, a trailing filler), fitted by
``benchmarks/train_words_end.py`` on the sentence prefixes of ``chatterbot-corpus`` 1.3.3 (English).
The end log-probability alone ranked the pauses of the generated corpus's tune calls better (ROC AUC 0.87
against 0.84 for all five features and 0.67 for the hand rules), so only it is used."""

_WH_OBJECT = frozenset({"what", "which", "who", "whom"})
_INVERTED_AUX = frozenset({"do", "does", "did", "should", "can", "could", "will", "would", "shall", "may", "might",
                           "must"})
_SUBJECTS = frozenset({"i", "you", "we", "they", "he", "she", "it"})
_NEEDS_MORE = frozenset({
    "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that", "these", "those", "some",
    "any", "to", "and", "or", "but", "of", "about", "by", "for", "with", "on", "in", "at", "from", "into", "than",
})
WH_VERB_FLOOR = 0.5
"""The least end probability of a wh-question whose verb came (:func:`wh_question_verb_came`): the words no
longer say "more is coming"; the silence decides."""


def wh_question_verb_came(words: Sequence[str]) -> bool:
    """Whether plain (contracted) ``words`` end a wh-question on its verb: "which documents should i bring".

    The question word ("what", "which", "who", "whom", and up to two words of its phrase), an inverted
    auxiliary ("should", "do", "can", ...), a pronoun subject, then one or two words that do not ask for
    more (no article, possessive, preposition, conjunction or "to"). The fronted phrase is the verb's
    object, so the object the last two words seem to wait for has already been said: a trigram reads
    "i bring" as going on, in this question it is the end.
    """
    starts = [i for i, w in enumerate(words) if w in _WH_OBJECT]
    if not starts:
        return False
    i = starts[-1]
    for j in range(i + 1, min(i + 4, len(words))):
        if words[j] in _INVERTED_AUX:
            rest = words[j + 2:]
            return (j + 1 < len(words) and words[j + 1] in _SUBJECTS and 1 <= len(rest) <= 2
                    and rest[0] not in _INVERTED_AUX and rest[-1] not in _NEEDS_MORE)
    return False


_LOG_BASE = math.log(1.0001)  # PocketSphinx scores are in units of log base 1.0001
_FLOOR = -12.0


def pocketsphinx_lm_path() -> Path:
    """The English trigram model inside the installed ``pocketsphinx`` wheel.

    Raises:
        ModelNotFoundError: PocketSphinx is not installed (``pip install pocketsphinx``), or
            its wheel has no English model.
    """
    try:
        root = resources.files("pocketsphinx")
    except ModuleNotFoundError:
        raise ModelNotFoundError(
            "the words' end-of-turn signal needs PocketSphinx's English language model: "
            "pip install pocketsphinx (or pass words_end=RulesWordsEnd())"
        ) from None
    path = Path(str(root)) / "model" / "en-us" / "en-us.lm.bin"
    if not path.is_file():
        raise ModelNotFoundError(f"no English language model in the pocketsphinx package (looked at {path})")
    return path


_models: dict[tuple[str, int, int], Any] = {}
_models_lock = threading.Lock()


def _load(path: str, mtime: int, size: int) -> Any:
    """The language model at ``path``, read once per process (read-only: every session may share it)."""
    key = (path, mtime, size)
    with _models_lock:
        lm = _models.get(key)
        if lm is not None:
            return lm
        try:
            from pocketsphinx import NGramModel
        except ImportError:
            raise ModelNotFoundError("reading a language model needs PocketSphinx: pip install pocketsphinx") from None
        try:
            lm = NGramModel.readfile(path)
        except Exception as exc:  # PocketSphinx says ValueError; anything else is as bad
            raise ModelError(f"{path} is not a language model PocketSphinx can read ({exc})") from None
        if lm.prob(["</s>"]) <= -500000:  # no end-of-sentence token: no end probability to give
            raise ModelError(f"{path} has no end-of-sentence token </s>")
        _models[key] = lm
        return lm


@dataclass(frozen=True)
class TrigramWordsEnd:
    """The end of a turn judged by an n-gram language model's end-of-sentence probability.

    Args:
        path: an ARPA or binary (``.lm.bin``) n-gram model with ``</s>``; default: the
            English model in the ``pocketsphinx`` wheel (:func:`pocketsphinx_lm_path`).
        weights: the logistic model over the features (:data:`TRIGRAM_WEIGHTS`; the turn's
            length is left to the caller, :mod:`rxvoice.turns.wait`).
        foreign_below: when the median log-frequency of the last six words (an
            unknown word counts -30) is below this, the text is not the model's
            language (or only names): unsure, weight 0.

    Raises:
        ModelNotFoundError: no model file (or PocketSphinx missing).
        ModelError: the file is not a language model PocketSphinx can read.
        ConfigurationError: bad weights or ``foreign_below``.
    """

    path: str | Path | None = None
    weights: Sequence[float] = TRIGRAM_WEIGHTS
    foreign_below: float = -11.5
    _lm: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(tuple(self.weights)) != len(TRIGRAM_WEIGHTS) or not all(
            isinstance(w, int | float) and math.isfinite(w) for w in self.weights
        ):
            raise ConfigurationError(f"TrigramWordsEnd.weights needs {len(TRIGRAM_WEIGHTS)} finite numbers")
        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        f = self.foreign_below
        if isinstance(f, bool) or not isinstance(f, int | float) or not -30.0 <= f <= 0.0:
            raise ConfigurationError(f"TrigramWordsEnd.foreign_below must be in [-30, 0], got {f!r}")
        path = pocketsphinx_lm_path() if self.path is None else Path(self.path)
        if not path.is_file():
            raise ModelNotFoundError(f"no language model file at {path}")
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "_lm", _load(str(path.resolve()), path.stat().st_mtime_ns, path.stat().st_size))

    def _logp(self, words: list[str]) -> float:
        """ln P(words[0] | words[1:]) (PocketSphinx takes the history newest first)."""
        return float(self._lm.prob(words)) * _LOG_BASE

    def known(self, word: str) -> bool:
        """Whether the model has ``word`` in its vocabulary."""
        return self._logp([word]) > -100.0

    def features(self, words: Sequence[str]) -> tuple[float, ...]:
        """The logistic model's inputs for non-empty plain ``words`` (see :data:`TRIGRAM_WEIGHTS`)."""
        last = words[-1]
        history = [w for w in words[-2:][::-1] if self.known(w)]
        e3 = max(_FLOOR, self._logp(["</s>", *history])) if history else math.log(0.05)
        e2 = max(_FLOOR, self._logp(["</s>", last])) if self.known(last) else e3
        frequency = max(_FLOOR, self._logp([last])) if self.known(last) else _FLOOR
        return (1.0, e3, e2, frequency, 1.0 if last in FILLERS else 0.0)

    def probability(self, words: Sequence[str]) -> float:
        """P(the turn may end) for non-empty plain ``words``, by the fitted logistic model."""
        z = sum(w * x for w, x in zip(self.weights, self.features(words), strict=True))
        return _sigmoid(z)

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        value: object = text
        if not isinstance(value, str):
            return UNSURE
        words = plain_words(value)
        if not words:
            return UNSURE
        if not all(_latin(w) for w in words[-4:]):
            return WordsEnd(0.5, 0.0, "words in another script")
        frequencies = sorted(self._logp([w]) if self.known(w) else -30.0 for w in words[-6:] if not w.isdigit())
        if frequencies and frequencies[len(frequencies) // 2] < self.foreign_below:
            return WordsEnd(0.5, 0.0, "words the language model does not know")
        weight = _confidence(confidence)
        if words[-1] in FILLERS:  # a closed class the dialogue corpus lacks: the speaker is thinking
            return WordsEnd(0.05, weight, f"a filler at the end ({words[-1]!r})")
        plain = contracted(words)
        p = self.probability(plain)
        note = "" if weight == 1.0 else f" (confidence {weight:.2f})"
        if p < WH_VERB_FLOOR and wh_question_verb_came(plain):
            return WordsEnd(WH_VERB_FLOOR, weight, f"words end p={p:.2f}, a question whose verb came" + note)
        return WordsEnd(p, weight, f"words end p={p:.2f}" + note)


@dataclass(frozen=True)
class RulesWordsEnd:
    """The hand rules of :mod:`rxvoice.turns.completion` in the same answer shape (no model needed).

    A complete verdict gives ``complete`` (0.8), an incomplete one ``incomplete``
    (0.1), a tentative one (a number being read) 0.35; unsure weighs nothing.
    """

    language: str = "en"
    complete: float = 0.8
    incomplete: float = 0.1

    def judge(self, text: str, confidence: float | None = None) -> WordsEnd:
        verdict = judge_completion(text if isinstance(text, str) else "", self.language)
        if verdict.completion is Completion.UNSURE:
            return WordsEnd(0.5, 0.0, verdict.reason)
        if verdict.completion is Completion.COMPLETE:
            p = self.complete
        else:
            p = 0.35 if verdict.tentative else self.incomplete
        return WordsEnd(p, _confidence(confidence), verdict.reason)


def default_words_end(language: str = "en") -> WordsEndModel:
    """The learned signal for English when PocketSphinx is installed, else the hand rules."""
    if language.split("-", 1)[0].lower() == "en":
        try:
            return TrigramWordsEnd()
        except ModelNotFoundError:
            pass
    return RulesWordsEnd(language)


_DIGIT_WORDS = frozenset({"zero", "oh", "nought", "one", "two", "three", "four", "five", "six", "seven", "eight",
                          "nine"})
_TEENS = frozenset({"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                    "eighteen", "nineteen"})
_TENS = frozenset({"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"})
_DIGITS_OF: dict[str, int] = {"double": 1, "triple": 2, "hundred": 2, "thousand": 3}
"""Digits a word adds beyond the one after it: "double" and "triple" copy it, "hundred" adds its zeros."""
_NUMBER_WORDS = frozenset(_DIGIT_WORDS | _TEENS | _TENS | _DIGITS_OF.keys())
_NUMBER_CUES = frozenset({
    "is", "was", "number", "code", "pin", "zip", "postcode", "phone", "digits", "reference", "extension", "ext", "on",
})


def _number(word: str) -> bool:
    return word.isdigit() or word in _NUMBER_WORDS


def reading_in_progress(words: Sequence[str]) -> bool:
    """Whether plain ``words`` end inside a number or a spelled word being read ("four five", "k o w", "dot")."""
    if not words:
        return False
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if last == "dot" and before:
        return True  # an address being read out
    if last == "at" and before:
        return len(before) == 1 or _number(before)
    if _number(last):
        return _number(before) or before in _NUMBER_CUES
    return bool(len(last) == 1 and last.isalpha() and len(before) == 1 and before.isalpha())


def reading_start(words: Sequence[str]) -> int:
    """Where the number or spelling that plain ``words`` end in begins (the index of its first word;
    ``len(words)`` when they end in none): the words a reading's rhythm is counted over."""
    i = len(words)
    while i > 0:
        word = words[i - 1]
        if not (_number(word) or (len(word) == 1 and word.isalpha()) or word in ("dot", "at")):
            break
        i -= 1
    return i


def read_out(run: Sequence[str]) -> bool:
    """Whether ``run`` (a reading's words, :func:`reading_start`) is read out one symbol at a time: every
    word a digit ("four eight two", "double five", "482") or every word a letter ("k o w"), the way codes,
    numbers and names are read in groups; not a quantity or a time ("twenty five", "six thirty", "six p m")."""
    if not run:
        return False
    if all(len(w) == 1 and w.isalpha() for w in run):
        return True
    return all(w.isdigit() or w in _DIGIT_WORDS or w in ("double", "triple") for w in run)


COMPLETE_DIGITS = frozenset({7, 10, 11, 16})
"""Digit counts a number read out is commonly complete at, named or not: a local phone number (7), a
national one (10) or one with its country or trunk prefix (11), a payment card (16)."""
_CUED_DIGITS: tuple[tuple[frozenset[str], frozenset[int]], ...] = (
    (frozenset({"zip", "zipcode", "postcode"}), frozenset({5, 9})),  # a ZIP code, ZIP+4
    (frozenset({"pin"}), frozenset({4, 6})),
    (frozenset({"last"}), frozenset({4})),  # "the last four (digits) are ..."
)


def _digit_count(run: Sequence[str]) -> int:
    """How many digits the number words (or digit strings) of ``run`` read out ("double five" is two)."""
    count = 0
    for i, word in enumerate(run):
        if word.isdigit():
            count += len(word)
        elif word in _DIGIT_WORDS:
            # a unit after a tens word is that number's second digit ("twenty one": two digits)
            count += 0 if i and run[i - 1] in _TENS and word not in ("zero", "oh", "nought") else 1
        elif word in _TEENS or word in _TENS:
            count += 2
        else:
            count += _DIGITS_OF.get(word, 0)
    return count


def reading_end(words: Sequence[str], known: Callable[[str], bool] | None = None) -> float:
    """What a reading's own structure says about its end: +1 likely over, -1 likely going on, 0 no idea.

    For plain ``words`` that end inside a reading (:func:`reading_in_progress`): a number whose digit
    count is one it is commonly complete at (:data:`COMPLETE_DIGITS`; or, when the words just before
    it name a ZIP code, a PIN or "the last four", that one's length) reads as over; other counts say
    nothing (a speaker pauses between groups, and a number of another kind may have any length). A
    spelling reads as over when its letters spell a word ``known`` knows (a name or a word in the
    language model's vocabulary: "m a r s h"), as going on when they do not ("b r e n"); without
    ``known``, spellings say nothing. Never raises.
    """
    if not words:
        return 0.0
    i = len(words)
    while i > 0 and _number(words[i - 1]):
        i -= 1
    run = words[i:]
    if run:
        if i > 0 and len(words[i - 1]) == 1 and words[i - 1].isalpha() and words[i - 1] not in ("a", "i"):
            return 0.0  # letters and digits mixed (a code): no common length
        count = _digit_count(run)
        cue = set(words[max(0, i - 4):i])
        for names, lengths in _CUED_DIGITS:
            if cue & names:
                return 1.0 if count in lengths else 0.0
        return 1.0 if count in COMPLETE_DIGITS else 0.0
    j = len(words)
    while j > 0 and len(words[j - 1]) == 1 and words[j - 1].isalpha():
        j -= 1
    letters = words[j:]
    if len(letters) < 2 or known is None:
        return 0.0
    try:
        return 1.0 if known("".join(letters)) else -1.0
    except Exception:  # a caller's vocabulary must not break a turn
        return 0.0


def _field(obj: object, name: str) -> object:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _unit(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


def stt_confidence(result: object, last: int = 4) -> float | None:
    """The STT's confidence in a final's words, from ``TranscriptionFrame.result`` (``None``: not given).

    Understood: a number in [0, 1]; an object or mapping with ``confidence`` (or
    ``probability``); or with ``words``, a list of words each with ``probability``,
    ``confidence`` or ``prob`` (the mean of the last ``last`` words: the end is what is judged).
    """
    direct = _unit(result)
    if direct is not None:
        return direct
    if result is None or isinstance(result, str | bytes):
        return None
    words = _field(result, "words")
    if isinstance(words, list | tuple) and words:
        values = []
        for w in words[-last:]:
            for name in ("probability", "confidence", "prob"):
                v = _unit(_field(w, name))
                if v is not None:
                    values.append(v)
                    break
        if values:
            return sum(values) / len(values)
    for name in ("confidence", "probability"):
        v = _unit(_field(result, name))
        if v is not None:
            return v
    return None

"""Text for voice agents: sentence detection, joining parts, and streaming aggregators.

Everything here is pure and synchronous: the Rx operators (``Sentence``, ``LLMText``)
drive these objects, one call per frame.
"""

from rxvoice.text.aggregation import (
    SENTENCE,
    TOKEN,
    WORD,
    Aggregation,
    MatchAction,
    PatternMatch,
    TextAggregator,
)
from rxvoice.text.blank import is_blank, repair_surrogates, visible_words
from rxvoice.text.languages import (
    LanguageProfile,
    language_profile,
    normalize_language,
    register_language,
)
from rxvoice.text.parts import Part, concatenate
from rxvoice.text.pattern_pair import PatternPairAggregator
from rxvoice.text.simple import SimpleTextAggregator
from rxvoice.text.skip_tags import SkipTagsAggregator
from rxvoice.text.tokenizer import (
    DefaultSentenceTokenizer,
    IncrementalSentenceTokenizer,
    SentenceTokenizer,
    default_tokenizer,
    match_end_of_sentence,
)

__all__ = [
    "SENTENCE",
    "TOKEN",
    "WORD",
    "Aggregation",
    "DefaultSentenceTokenizer",
    "IncrementalSentenceTokenizer",
    "LanguageProfile",
    "MatchAction",
    "Part",
    "PatternMatch",
    "PatternPairAggregator",
    "SentenceTokenizer",
    "SimpleTextAggregator",
    "SkipTagsAggregator",
    "TextAggregator",
    "concatenate",
    "default_tokenizer",
    "is_blank",
    "language_profile",
    "match_end_of_sentence",
    "normalize_language",
    "register_language",
    "repair_surrogates",
    "visible_words",
]

"""Words into index terms: the analyzer every field, query and snippet shares, and the weighting of terms.

One pass in plain Python (a word regex, lower case, accents folded, a stop list of ~170 English
words, possessives folded, a cached Snowball stemmer; Chinese, Japanese and Korean text cut into
character pairs) instead of Whoosh's chain of generators, and Whoosh's BM25F with the ``message``
field's weighted terms. :mod:`memfs.index` builds its schema from these; :mod:`memfs.indexing`
turns files into terms with them, :mod:`memfs.searcher` queries and snippets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from whoosh import fields, formats, scoring
from whoosh.analysis import Analyzer, Token
from whoosh.lang.snowball.english import EnglishStemmer
from whoosh.system import pack_uint

WORD = re.compile(r"\w+(?:['’]\w+)*")
#: A longer word is not indexed: nobody searches for it, and Whoosh's Porter stemmer takes seconds
#: over a word of megabytes (a pasted blob in a message). Lucene's default token limit, too.
MAX_WORD_CHARS = 255
NON_SPACE = re.compile(r"\S+")
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further get got had hadn't has
    hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
    how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more
    most mustn't my myself no nor not now of off on once only or other ought our ours
    ourselves out over own really same shan't she she'd she'll she's should shouldn't so some
    such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't
    we we'd we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves""".split()
)
_SNOWBALL = EnglishStemmer()


def stem(word: str) -> str:
    """The index term of one lowercase word.

    A possessive is the name it belongs to ("audrey's" → "audrey"), and words are stemmed with
    Snowball's English (Porter2) stemmer, which unlike Porter's keeps "try", "tried" and
    "trying" together.
    """
    word = word.replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    return str(_SNOWBALL.stem(word))


# Chinese (Han), Japanese (kana), Korean (Hangul): scripts written without spaces between words,
# which the analyzer cuts into overlapping character pairs.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_CJK_RUNS = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")


class _Folding(dict[int, str]):
    """``str.translate`` table folding a character to its base letters in lower case, built as met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _CJK.match(char):
            folded = char  # NFKD would take Hangul syllables apart
        else:
            parts = unicodedata.normalize("NFKD", char)
            folded = "".join(c for c in parts if not unicodedata.combining(c)).casefold() or char
        self[code] = folded
        return folded


_FOLDING = _Folding()


def fold(text: str) -> str:
    """``text`` with accents and other marks taken off and case folded (``Café Crème`` -> ``cafe creme``)."""
    return text.translate(_FOLDING)


class _ContentAnalyzer(Analyzer):  # type: ignore[misc]
    """Lowercase words; stop words and words over MAX_WORD_CHARS dropped; possessives folded; Snowball stems."""

    def __init__(self) -> None:
        self._stems: dict[str, str] = {}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __getstate__(self) -> dict[str, Any]:
        return {}  # the schema is pickled into the index: keep the stem cache out of it

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._stems = {}

    def stems(self, text: str) -> Iterator[str]:
        """The index terms of ``text``, in order.

        Any language: accents and case are folded the same way for what is indexed and what is
        asked (``Tomás`` and ``TOMAS`` are ``tomas``; see :func:`fold`), and a run of Chinese,
        Japanese or Korean characters, written without spaces, gives its overlapping character
        pairs (``喜欢喝绿茶``: ``喜欢 欢喝 喝绿 绿茶``), so ``绿茶`` finds it. English text (ASCII)
        takes the path it always took.
        """
        cache = self._stems
        for word in WORD.findall(text.lower() if text.isascii() else fold(text)):
            if not word.isascii() and _CJK.search(word):
                yield from self._mixed(word)
                continue
            if word in STOP_WORDS or len(word) > MAX_WORD_CHARS:
                continue
            stemmed = cache.get(word)
            if stemmed is None:
                stemmed = cache[word] = stem(word)
            yield stemmed

    def _mixed(self, word: str) -> Iterator[str]:
        """The terms of a word holding CJK characters: their pairs, and the other runs' stems."""
        for run in _CJK_RUNS.findall(word):
            if _CJK.match(run):
                if len(run) == 1:
                    yield run
                else:
                    yield from (run[i : i + 2] for i in range(len(run) - 1))
            elif run not in STOP_WORDS and len(run) <= MAX_WORD_CHARS:
                yield stem(run)

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, text in enumerate(self.stems(value), start_pos):
            token.text, token.stopped, token.boost = text, False, 1.0
            if positions:
                token.pos = pos
            yield token


ANALYZER = _ContentAnalyzer()
# Whoosh keeps a field's length as a whole number of occurrences: weights are indexed x4 (so a
# length rounds finely) and K1 of the ``message`` field is scaled by as much, which ranks exactly
# as the weights above do.
WEIGHT_SCALE = 4
K1 = 1.2


class _Weighting(scoring.BM25F):  # type: ignore[misc]
    """Whoosh's BM25F, with K1 of the ``message`` field scaled to its repeated terms."""

    def scorer(self, searcher: Any, fieldname: str, text: Any, qf: int = 1) -> Any:
        if fieldname != "message":
            return super().scorer(searcher, fieldname, text, qf=qf)
        return scoring.BM25FScorer(
            searcher, fieldname, text, self._field_B.get(fieldname, self.B), self.K1 * WEIGHT_SCALE, qf=qf
        )


WEIGHTING = _Weighting(K1=K1)


class _WeightedFrequencies(formats.Frequency):  # type: ignore[misc]
    """Whoosh's term frequencies, given as ``(term, weight)`` pairs already counted.

    A message's terms come weighted (its own, its neighbours', its date's; see
    :func:`memfs.indexing._message_terms`), so they are handed to Whoosh once per distinct term with their
    weight, rather than as a token stream repeated by weight, which Whoosh would walk token by
    token. A term's frequency (what Whoosh adds up as the field's length) is its weight rounded.
    """

    def word_values(self, value: Any, analyzer: Any, **kwargs: Any) -> Iterator[tuple[str, int, float, bytes]]:
        boost = self.field_boost
        for term, weight in value:
            frequency = max(1, round(weight))
            yield term, frequency, weight * boost, pack_uint(frequency)


class WeightedText(fields.TEXT):  # type: ignore[misc]
    """The ``message`` field: analysed like any text when queried, indexed from weighted terms."""

    def __init__(self) -> None:
        super().__init__(analyzer=ANALYZER, phrase=False)
        self.format = _WeightedFrequencies()


#: The text fields of a memory a query's words are looked for in (its tags are matched whole).
NOTE_FIELDS = ("title", "aliases", "body")
MESSAGE_FIELDS = ("message", "speaker")

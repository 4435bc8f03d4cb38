"""Near-duplicate memories: whether two texts state the same thing, measured on their words.

A memory is compared by its *terms*: the stems the search index gives its words, stop words left
out (so "I prefer window seats." and "I really prefer window seats on flights." are
``{prefer, window, seat}`` and ``{prefer, window, seat, flight}``). Two numbers say how alike two
term sets are:

- **containment**, the share of the smaller set found in the larger (1.0 when one text says
  everything the other does, as a refinement does), and
- **jaccard**, the share of all terms the two have in common (low when a short fact is merely
  mentioned inside a long memory about something else).

Two texts are near-duplicates when both reach their threshold (:data:`CONTAINMENT` and
:data:`JACCARD`). The thresholds are chosen on the labelled pairs of
``bench/data/lifecycle.json`` (``bench/lifecycle.py`` prints the sweep): a changed value ("window"
then "aisle") leaves a term of the smaller set unmatched, and so does a second fact of the same
shape ("I like tea", "I like coffee"), so a short fact needs all of its terms in the other to
count; merging two different facts loses one, while missing a paraphrase only leaves a duplicate a
person can delete, so the thresholds favour precision.

Candidates come from the index (a few BM25 hits on the text's own words in the same namespace), so
the check costs one search and a few reads, whatever the size of the vault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .analysis import ANALYZER, STOP_WORDS
from .searcher import MAX_QUERY_CHARS

#: The least containment of a near-duplicate: every term of a fact of up to nine terms.
CONTAINMENT = 0.9
#: The least Jaccard similarity of a near-duplicate: the shared terms are at least 40% of all
#: their terms (a refinement may add words; a short fact mentioned in a long text about more is not it).
JACCARD = 0.4
#: How much of a text is compared (a memory's start says what it is about; a huge body costs no more).
COMPARED_CHARS = 4000
#: How many of a text's words the candidate search looks for: a near-duplicate has nearly all of a
#: short fact's words, and a long text's first words find it; BM25 time grows with every term.
QUERY_WORDS = 12

_WORD = re.compile(r"\w+(?:['’]\w+)*")


def terms(text: str, *, chars: int = COMPARED_CHARS) -> frozenset[str]:
    """The distinct index terms of ``text``'s first ``chars`` characters: lower-case stems, without stop words."""
    return frozenset(ANALYZER.stems(text[:chars]))


def query_words(text: str) -> str:
    """``text``'s significant words as a plain query: lower case (no Whoosh operator), no punctuation.

    At most :data:`QUERY_WORDS` distinct words, and never longer than a query may be.
    """
    words = [w for w in _WORD.findall(text[:COMPARED_CHARS].lower()) if w not in STOP_WORDS]
    return " ".join(list(dict.fromkeys(words))[:QUERY_WORDS])[:MAX_QUERY_CHARS]


@dataclass(frozen=True)
class Likeness:
    """How alike two term sets are.

    Attributes:
        containment: The share of the smaller set's terms that the larger one has (0 to 1).
        jaccard: Shared terms over all terms of both (0 to 1).
        covered: True when every term of the new text is in the existing one: it adds nothing.
    """

    containment: float
    jaccard: float
    covered: bool

    def near(self, containment: float = CONTAINMENT, jaccard: float = JACCARD) -> bool:
        """True when both measures reach their threshold: the texts state the same thing."""
        return self.containment >= containment and self.jaccard >= jaccard


def likeness(new: frozenset[str], existing: frozenset[str]) -> Likeness:
    """How alike the terms of a new text are to those of an existing one (two empty sets: not alike)."""
    if not new or not existing:
        return Likeness(0.0, 0.0, False)
    shared = len(new & existing)
    return Likeness(shared / min(len(new), len(existing)), shared / len(new | existing), shared == len(new))


def compare(new: str, existing: str) -> Likeness:
    """:func:`likeness` of two texts."""
    return likeness(terms(new), terms(existing))

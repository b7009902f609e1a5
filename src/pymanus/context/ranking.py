"""Ranking texts against a query: terms, BM25, and reciprocal-rank fusion of several rankings.

Shared by tool selection (:mod:`pymanus.context.tool_selection`) and long-term memory
(:mod:`pymanus.context.memory`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_WORD = re.compile(r"[A-Za-z]+|\d+|[^\x00-\x7F]")
_STOP_WORDS = (
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "you your i me my we our can do does should would could please then than so if not no"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""English words too common to tell texts apart (left out of keyword matching)."""


def words(text: str) -> list[str]:
    """Lower-case terms of ``text``: snake_case and camelCase split, stop words left out, plural 's' cut."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    out = []
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS or (len(word) < 2 and word.isascii()):
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


class BM25:
    """Okapi BM25 over a small fixed set of documents (a few hundred at most)."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(doc) for doc in documents]
        self.lengths = [len(doc) for doc in documents]
        self.average = sum(self.lengths) / len(self.lengths) if documents else 0.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(documents)
        self.idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """The score of every document for ``query`` (each distinct term counted once)."""
        terms = [term for term in set(query) if term in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1))
            out.append(sum(self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc))
        return out


def fuse(rankings: Sequence[Sequence[K]], k: int = 60) -> list[K]:
    """Reciprocal-rank fusion: the keys of ``rankings`` (each best first) by ``sum(1 / (k + rank))``.

    A key several rankings hold comes before one that only one holds at the same rank; ties
    keep the order of the first ranking that holds a key. ``k`` = 60 is the usual constant:
    it keeps the first few ranks from outweighing everything else.
    """
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda key: -scores[key])

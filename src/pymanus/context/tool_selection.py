"""Tool selection for large toolsets: each request offers only the tools relevant to the step.

Forty tool definitions can take thousands of tokens of every request, and a model chooses
worse among many. Above a threshold, :class:`ToolSelector` ranks the tools by BM25 between
the current step's text (the task, the latest messages) and each tool's name, description
and parameters, and offers the best few, plus ``terminate``, the tools called in the last
steps and any the request's settings require. When no tool matches well enough, all are
offered: a wrong guess would cost more than the tokens saved.

Off for local models by default (``[context] tool_selection_local``): their prompt cache
holds only while the tool list, at the head of the prompt, stays the same.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pymanus.messages import Message
from pymanus.models.base import ModelSettings, ToolDefinition

_WORD = re.compile(r"[A-Za-z]+|\d+|[^\x00-\x7F]")
_STOP_WORDS = (
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "you your i me my we our can do does should would could please then than so if not no"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""English words too common to tell texts apart (left out of tool and memory keyword matching)."""


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


def tool_text(tool: ToolDefinition) -> str:
    """What a tool is matched on: its name (twice: names are the strongest signal), description, parameters."""
    parts = [tool.name, tool.name, tool.description]
    for name, schema in (tool.parameters.get("properties") or {}).items():
        parts.append(name)
        if isinstance(schema, dict):
            parts.append(str(schema.get("description", "")))
    return " ".join(parts)


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


@dataclass
class ToolSelector:
    """Chooses the tools a request offers (a ``select_tools`` for :class:`~pymanus.context.window.WindowedModel`).

    Args:
        threshold: with this many tools or fewer, all are offered.
        top_k: the most tools chosen by relevance (the always-offered ones come on top).
        min_score: a tool is relevant when its BM25 score is above this; when none is,
            every tool is offered.
        recent_steps: the tools called in this many latest assistant messages stay offered.
        always: tools always offered when present.
    """

    threshold: int = 12
    top_k: int = 6
    min_score: float = 1.0
    recent_steps: int = 3
    always: frozenset[str] = frozenset({"terminate"})
    _index: dict[tuple[str, ...], BM25] = field(default_factory=dict, repr=False)

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> list[ToolDefinition]:
        """The tools to offer for a request of ``messages``, in their original order."""
        if len(tools) <= self.threshold:
            return list(tools)
        scores = self._bm25(tools).scores(words(step_text(messages)))
        ranked = sorted(range(len(tools)), key=lambda i: -scores[i])
        relevant = {tools[i].name for i in ranked[: self.top_k] if scores[i] > self.min_score}
        if not relevant:
            return list(tools)
        keep = relevant | self.always | recent_calls(messages, self.recent_steps) | set(settings.allowed_tools or ())
        return [tool for tool in tools if tool.name in keep]

    def _bm25(self, tools: Sequence[ToolDefinition]) -> BM25:
        key = tuple(f"{t.name}\x00{t.description}" for t in tools)
        index = self._index.get(key)
        if index is None:
            if len(self._index) > 16:
                self._index.clear()
            index = self._index[key] = BM25([words(tool_text(t)) for t in tools])
        return index


def step_text(messages: Sequence[Message], chars: int = 1500) -> str:
    """What the current step is about: the task and the latest messages (each cut to ``chars``)."""
    task = next((m.text for m in messages if m.role == "user"), "")
    latest = [m for m in messages[-4:] if m.role != "system"]
    texts = [task[:chars]]
    for message in latest:
        texts.append(message.text[:chars])
        texts += [f"{c.name} {c.arguments[:200]}" for c in message.tool_calls]
    return "\n".join(texts)


def recent_calls(messages: Sequence[Message], steps: int) -> set[str]:
    """Names of the tools called in the last ``steps`` assistant messages with calls."""
    names: set[str] = set()
    seen = 0
    for message in reversed(messages):
        if message.role == "assistant" and message.tool_calls:
            names.update(call.name for call in message.tool_calls)
            seen += 1
            if seen >= steps:
                break
    return names

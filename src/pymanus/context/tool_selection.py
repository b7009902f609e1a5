"""Tool selection for large toolsets: each request offers only the tools relevant to the step.

Forty tool definitions can take thousands of tokens of every request, and a model chooses
worse among many. Above a threshold, :class:`ToolSelector` ranks the tools by BM25 between
the current step's text (the task, the latest messages) and each tool's name, description
and parameters, and, with a sentence encoder (:mod:`pymanus.context.embeddings`, the
``[memory]`` extra), by the cosine of their vectors too, the two rankings fused by
reciprocal rank; it offers the best few, plus ``terminate``, the tools called in the last
steps and any the request's settings require. When no tool matches well enough, all are
offered: a wrong guess would cost more than the tokens saved. The encoder finds the tool a
step asks for in other words ("make the photo smaller": ``resize_image``), which BM25 misses.

Off for local models by default (``[context] tool_selection_local``): their prompt cache
holds only while the tool list, at the head of the prompt, stays the same.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pymanus.context.ranking import BM25, fuse, words
from pymanus.messages import Message
from pymanus.models.base import ModelSettings, ToolDefinition

if TYPE_CHECKING:
    import numpy as np

    from pymanus.config import Settings
    from pymanus.context.embeddings import Encoder

logger = logging.getLogger("pymanus.context")


def tool_text(tool: ToolDefinition) -> str:
    """What a tool is matched on: its name (twice: names are the strongest signal), description, parameters."""
    parts = [tool.name, tool.name, tool.description]
    for name, schema in (tool.parameters.get("properties") or {}).items():
        parts.append(name)
        if isinstance(schema, dict):
            parts.append(str(schema.get("description", "")))
    return " ".join(parts)


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
        encoder: ranks the tools by meaning too (``None``: by BM25 only).
        min_similarity: with an encoder, a tool is relevant too when the cosine of its vector
            with the step's is at least this.
    """

    threshold: int = 12
    top_k: int = 6
    min_score: float = 1.0
    recent_steps: int = 3
    always: frozenset[str] = frozenset({"terminate"})
    encoder: Encoder | None = None
    min_similarity: float = 0.25
    _index: dict[tuple[str, ...], BM25] = field(default_factory=dict, repr=False)
    _vectors: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, repr=False)

    def __call__(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> list[ToolDefinition]:
        """The tools to offer for a request of ``messages``, in their original order."""
        if len(tools) <= self.threshold:
            return list(tools)
        text = step_text(messages)
        scores = self._bm25(tools).scores(words(text))
        by_words = [i for i in sorted(range(len(tools)), key=lambda i: -scores[i]) if scores[i] > self.min_score]
        # By meaning first, so that ties go to it (as in memory search).
        relevant = {tools[i].name for i in fuse([self._by_meaning(text, tools), by_words])[: self.top_k]}
        if not relevant:
            return list(tools)
        keep = relevant | self.always | recent_calls(messages, self.recent_steps) | set(settings.allowed_tools or ())
        return [tool for tool in tools if tool.name in keep]

    def _bm25(self, tools: Sequence[ToolDefinition]) -> BM25:
        key = _toolset_key(tools)
        index = self._index.get(key)
        if index is None:
            if len(self._index) > 16:
                self._index.clear()
            index = self._index[key] = BM25([words(tool_text(t)) for t in tools])
        return index

    def _by_meaning(self, text: str, tools: Sequence[ToolDefinition]) -> list[int]:
        """The tools similar enough to ``text`` by the encoder, best first (none without one)."""
        if self.encoder is None:
            return []
        key = _toolset_key(tools)
        try:
            vectors = self._vectors.get(key)
            if vectors is None:
                if len(self._vectors) > 16:
                    self._vectors.clear()
                vectors = self._vectors[key] = self.encoder.encode([tool_text(t) for t in tools])
            similarity = vectors @ self.encoder.encode([text])[0]
        except Exception as exc:  # a broken model must not fail the request: BM25 goes on alone
            logger.warning("tool selection: the encoder failed (%s); ranking by keyword only from now on", exc)
            self.encoder = None
            return []
        ranked = sorted(range(len(tools)), key=lambda i: -similarity[i])
        return [i for i in ranked if similarity[i] >= self.min_similarity]


def tool_selector(settings: Settings, threshold: int) -> ToolSelector:
    """The selector ``[context]`` asks for: with a sentence encoder when ``tool_selection_vectors``
    is on and one is installed (else BM25 alone, logged once)."""
    context = settings.context
    encoder = None
    if context.tool_selection_vectors:
        from pymanus.context.embeddings import EncoderUnavailable, SentenceEncoder

        try:
            encoder = SentenceEncoder(context.embedding_model or None)
        except EncoderUnavailable as exc:
            logger.info("tool selection: ranking by BM25 only (no sentence encoder: %s)", exc)
    return ToolSelector(threshold=threshold, encoder=encoder)


def _toolset_key(tools: Sequence[ToolDefinition]) -> tuple[str, ...]:
    return tuple(f"{t.name}\x00{t.description}" for t in tools)


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

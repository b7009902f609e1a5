"""Streamed chat-completion chunks, accumulated into one completion in the non-streamed shape.

Endpoints differ in how they stream tool calls: with an ``index`` per call, without one
(each delta continues the last call), or with a new ``id`` at the same index. Keeping this
apart from the HTTP code lets :class:`~pymanus.models.openai.OpenAIModel` parse one shape.
"""

from __future__ import annotations

import json
from typing import Any


class StreamState:
    """Accumulates streamed chunks into one completion body (the non-streamed shape)."""

    def __init__(self) -> None:
        self.chunks = 0
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "args": [...]}
        self.slots: dict[int, int] = {}  # a delta's index -> position in self.calls
        self.finish: object = None
        self.usage: object = None
        self.model: object = None
        self.error: object = None

    def feed(self, chunk: object) -> str:
        """Take one chunk; return the new assistant text in it."""
        self.chunks += 1
        if not isinstance(chunk, dict):
            return ""
        if chunk.get("error"):  # the SDK raises for these itself; kept for other stream readers
            self.error = chunk["error"]
            return ""
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        if chunk.get("model"):
            self.model = chunk["model"]
        text = ""
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                text += piece
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought:
                self.reasoning.append(thought)
            for call in delta.get("tool_calls") or ():
                if isinstance(call, dict):
                    self._feed_call(call)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return text

    def _feed_call(self, delta: dict[str, Any]) -> None:
        call_id = delta.get("id")
        index = delta.get("index")
        position = self.slots.get(index) if isinstance(index, int) else None
        if position is None and index is None and self.calls and (not call_id or call_id == self.calls[-1]["id"]):
            position = len(self.calls) - 1  # no index: a continuation of the last call
        if position is not None and call_id and self.calls[position]["id"] not in (None, call_id):
            position = None  # same index, different id: some servers index every call 0
        if position is None:
            position = len(self.calls)
            self.calls.append({"id": None, "name": "", "args": []})
            if isinstance(index, int):
                self.slots[index] = position
        slot = self.calls[position]
        if call_id and not slot["id"]:
            slot["id"] = call_id
        function = delta.get("function") or {}
        if function.get("name") and not slot["name"]:
            slot["name"] = function["name"]
        arguments = function.get("arguments")
        if arguments is not None:
            slot["args"].append(arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False))

    def result(self) -> dict[str, Any]:
        """The accumulated completion, in the non-streamed response shape."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text)}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {"id": c["id"], "function": {"name": c["name"], "arguments": "".join(c["args"])}} for c in self.calls
            ]
        return {
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
            "usage": self.usage,
        }

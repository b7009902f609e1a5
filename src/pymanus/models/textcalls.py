"""Tool calls a model wrote as text, turned into real :class:`~pymanus.messages.ToolCall` s.

Small and local models (and servers without a tool-call parser) often write their calls
into the text instead of the ``tool_calls`` field. Three shapes are recognised, tried in
this order, the first that yields calls wins:

1. Qwen/Hermes tags: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one or
   several; the closing tag may be missing at the end of the text.
2. Fenced code blocks (```` ```json ````) holding a call object or a list of them.
3. Bare JSON call objects (or a list of them) anywhere in the text.

A call object is ``{"name": ..., "arguments": ...}``, ``{"name": ..., "parameters": ...}``
or the OpenAI shape ``{"function": {"name": ..., "arguments": ...}}``; arguments may be an
object or a JSON string. A call is taken only when its name is one of the offered tools,
and, outside tags, only when the object has nothing but call keys, so an ordinary JSON
answer is not misread. Anything that does not qualify stays in the text untouched.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection
from typing import Any

from pymanus.messages import ToolCall

_TAG_OPEN = re.compile(r"<tool_call>\s*")
_TAG_CLOSE = re.compile(r"\s*</tool_call>")
_FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool_code)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_BARE = re.compile(r'(?:\[\s*)?\{\s*"')
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type", "function"})
_DECODER = json.JSONDecoder()


def new_call_id() -> str:
    """A fresh tool-call id (``call_`` and 12 hex digits)."""
    return f"call_{uuid.uuid4().hex[:12]}"


def extract_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Find the tool calls written in ``text``.

    Returns the text left once the calls are taken out (stripped) and the calls, in order.
    When there are none, the text comes back unchanged with an empty list.
    """
    if not text or not tool_names or "{" not in text:
        return text, []
    names = tool_names if isinstance(tool_names, set | frozenset) else frozenset(tool_names)
    finders: tuple[Callable[[str, Collection[str]], tuple[str, list[ToolCall]]], ...] = (_tagged, _fenced, _bare)
    for find in finders:
        remaining, calls = find(text, names)
        if calls:
            return remaining.strip(), calls
    return text, []


def recover_json_object(arguments: str) -> str:
    """Tool-call ``arguments`` as the JSON object they hold, when it is wrapped in other text.

    Models sometimes wrap the arguments in a code fence, add prose around them, or append an
    end-of-turn token. Text that already looks like one object (``{...}``) is returned as it
    is, unparsed: the tool layer parses and validates it, and reports bad JSON to the model.
    Otherwise the first JSON object inside (a fenced one first) is returned re-encoded;
    with none, the stripped text comes back unchanged for the tool layer to report.
    """
    text = arguments.strip()
    if not text or (text[0] == "{" and text[-1] == "}") or "{" not in text:
        return text
    fence = _FENCE.search(text)
    for source in (fence.group(1), text) if fence else (text,):
        start = source.find("{")
        while start != -1:
            decoded = _decode_at(source, start)
            if decoded is not None and isinstance(decoded[0], dict):
                return json.dumps(decoded[0], ensure_ascii=False)
            start = source.find("{", start + 1)
    return text


def _tagged(text: str, names: Collection[str]) -> tuple[str, list[ToolCall]]:
    if "<tool_call>" not in text:
        return text, []
    pieces: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    for match in _TAG_OPEN.finditer(text):
        if match.start() < pos:
            continue
        decoded = _decode_at(text, match.end())
        if decoded is None:
            continue
        value, end = decoded
        found = _as_calls(value, names, strict=False)
        if found is None:
            continue
        close = _TAG_CLOSE.match(text, end)
        pieces.append(text[pos : match.start()])
        calls.extend(found)
        pos = close.end() if close else end
    pieces.append(text[pos:])
    return "".join(pieces), calls


def _fenced(text: str, names: Collection[str]) -> tuple[str, list[ToolCall]]:
    if "```" not in text:
        return text, []
    pieces: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    for match in _FENCE.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        found = _as_calls(value, names, strict=True)
        if found is None:
            continue
        pieces.append(text[pos : match.start()])
        calls.extend(found)
        pos = match.end()
    pieces.append(text[pos:])
    return "".join(pieces), calls


def _bare(text: str, names: Collection[str]) -> tuple[str, list[ToolCall]]:
    pieces: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    skip = 0  # end of the last JSON value read; nothing inside it is looked at again
    for match in _BARE.finditer(text):
        if match.start() < skip:
            continue
        decoded = _decode_at(text, match.start())
        if decoded is None:
            continue
        value, end = decoded
        skip = end
        found = _as_calls(value, names, strict=True)
        if found is None:
            continue
        pieces.append(text[pos : match.start()])
        calls.extend(found)
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), calls


def _decode_at(text: str, index: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, index)
    except ValueError:
        return None


def _as_calls(value: Any, names: Collection[str], *, strict: bool) -> list[ToolCall] | None:
    """``value`` as a list of calls, or ``None`` unless every element is a call of a known tool."""
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, names, strict=strict) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _as_call(value: Any, names: Collection[str], *, strict: bool) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    source = function if isinstance(function, dict) else value
    name = source.get("name")
    if not isinstance(name, str) or name not in names:
        return None
    has_arguments = "arguments" in source or "parameters" in source
    if strict and not (has_arguments and value.keys() <= _CALL_KEYS):
        return None
    arguments = source.get("arguments", source.get("parameters"))
    if isinstance(arguments, str):
        text = recover_json_object(arguments) or "{}"
    elif arguments is None:
        text = "{}"
    else:
        text = json.dumps(arguments, ensure_ascii=False)
    call_id = value.get("id")
    return ToolCall(id=call_id if isinstance(call_id, str) and call_id else new_call_id(), name=name, arguments=text)

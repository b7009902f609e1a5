"""Token counts: a calibrated estimate, a tokenizer file, or a model's own tokenizer.

tiktoken fetches its encodings on first use and so fails offline; a calibrated
estimate is enough to keep requests inside a window with a safety margin:
Latin text is about 4 characters per token, CJK about 1.5. A Hugging Face
``tokenizer.json`` (``[model] tokenizer``, the ``[tokenizer]`` extra) replaces it for a
remote model; a local model counts with its own tokenizer (``Model.count_text``).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from pymanus.errors import ConfigError
from pymanus.messages import Message

if TYPE_CHECKING:
    from pymanus.models.base import ToolDefinition

# Per-message framing overhead (role markers, separators) in chat templates.
MESSAGE_OVERHEAD_TOKENS = 4
IMAGE_TOKENS = 768


def _is_wide(char: str) -> bool:
    code = ord(char)
    return (
        0x3000 <= code <= 0x9FFF  # CJK punctuation, kana, unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # Hangul
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
    )


def estimate_text_tokens(text: str) -> int:
    """Estimate the tokens of ``text``: ~4 chars per token, ~1.5 for CJK characters."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    wide = sum(1 for ch in text if _is_wide(ch))
    narrow = len(text) - wide
    return int(narrow / 4 + wide / 1.5) + 1


def estimate_message_tokens(message: Message) -> int:
    """Estimate the tokens one message takes in a prompt."""
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_text_tokens(message.text)
    tokens += IMAGE_TOKENS * len(message.images)
    for call in message.tool_calls:
        tokens += estimate_text_tokens(call.name) + estimate_text_tokens(call.arguments) + 4
    if message.reasoning:
        tokens += estimate_text_tokens(message.reasoning)
    return tokens


def estimate_messages_tokens(messages: Iterable[Message]) -> int:
    """Estimate the prompt tokens of a whole conversation."""
    return sum(estimate_message_tokens(m) for m in messages)


def estimate_tool_tokens(tools: Iterable[ToolDefinition]) -> int:
    """Estimate the prompt tokens of tool definitions (their JSON, as sent)."""
    return sum(estimate_text_tokens(json.dumps(tool.to_wire(), separators=(",", ":"))) + 8 for tool in tools)


def tokenizer_file_counter(path: str | os.PathLike[str]) -> Callable[[str], int]:
    """A text counter from a Hugging Face ``tokenizer.json`` (needs the ``tokenizers`` package).

    Raises :class:`~pymanus.errors.ConfigError` when the package is missing or the file
    cannot be read: a configured tokenizer that silently fell back to the estimate would
    hide a mistake.
    """
    try:
        from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise ConfigError(
            f"[model] tokenizer = {os.fspath(path)!r} needs the 'tokenizers' package: pip install 'pymanus[tokenizer]'"
        ) from None
    try:
        tokenizer = Tokenizer.from_file(os.fspath(path))
    except Exception as exc:  # the Rust side raises plain Exceptions
        raise ConfigError(f"[model] tokenizer: cannot load {os.fspath(path)!r}: {exc}") from None

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    return count


class TokenCounter:
    """Counts the tokens of messages, each message once.

    ``count_text`` counts a text (default: the calibrated estimate; a tokenizer file's
    counter replaces it). A message's count is cached for as long as the message lives
    (keyed by identity, dropped by a weak reference's callback), so a history of n
    messages costs n dictionary look-ups per request, not n tokenizations. Messages are
    treated as immutable once counted, as the loop treats them.
    """

    def __init__(self, count_text: Callable[[str], int] | None = None) -> None:
        self.count_text = count_text or estimate_text_tokens
        self._cache: dict[int, tuple[weakref.ref[Message], int]] = {}

    def message(self, message: Message) -> int:
        """The tokens ``message`` takes in a prompt."""
        key = id(message)
        hit = self._cache.get(key)
        if hit is not None and hit[0]() is message:
            return hit[1]
        tokens = self._count(message)
        self._cache[key] = (weakref.ref(message, partial(_forget, self._cache, key)), tokens)
        return tokens

    def messages(self, messages: Iterable[Message]) -> int:
        """The tokens of a conversation."""
        return sum(self.message(m) for m in messages)

    def _count(self, message: Message) -> int:
        if self.count_text is estimate_text_tokens:
            return estimate_message_tokens(message)
        count = self.count_text
        tokens = MESSAGE_OVERHEAD_TOKENS + count(message.text) + IMAGE_TOKENS * len(message.images)
        for call in message.tool_calls:
            tokens += count(call.name) + count(call.arguments) + 4
        if message.reasoning:
            tokens += count(message.reasoning)
        return tokens


def _forget(cache: dict[int, Any], key: int, ref: weakref.ref[Any]) -> None:
    # Only drop the entry if it still belongs to the dead message (the id may be reused).
    entry = cache.get(key)
    if entry is not None and entry[0] is ref:
        del cache[key]

"""Token estimates that need no tokenizer download.

tiktoken fetches its encodings on first use and so fails offline; a calibrated
estimate is enough to keep requests inside a window with a safety margin:
Latin text is about 4 characters per token, CJK about 1.5.
"""

from __future__ import annotations

from collections.abc import Iterable

from pymanus.messages import Message

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

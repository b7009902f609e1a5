"""Turns of a conversation, and the ways a turn is made shorter without breaking it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pymanus.messages import ImagePart, Message, TextPart

CUT_MARKER = "\n[... {cut} more characters cut to fit the context window ...]"
IMAGE_NOTE = "[image removed to fit the context window]"

Turn = list[Message]


def split_turns(messages: Sequence[Message]) -> tuple[list[Message], list[Turn]]:
    """The head (leading system messages and the first user message) and the turns after it.

    An assistant message with tool calls and the tool messages following it form one turn;
    a tool message with no call before it (an invalid history) joins the turn before it.
    """
    index = 0
    while index < len(messages) and messages[index].role == "system":
        index += 1
    if index < len(messages) and messages[index].role == "user":
        index += 1
    head = list(messages[:index])
    turns: list[Turn] = []
    for message in messages[index:]:
        if message.role == "tool" and turns:
            turns[-1].append(message)
        else:
            turns.append([message])
    return head, turns


def cut_text(text: str, keep_tokens: int) -> str:
    """``text`` cut to its first ``keep_tokens`` tokens (at 4 characters each), with a marker."""
    keep = max(keep_tokens * 4, 40)
    if len(text) <= keep + len(CUT_MARKER) + 8:
        return text
    head = text[:keep]
    newline = head.rfind("\n")
    if newline > keep // 2:  # end on a line when one ends near the cut
        head = head[:newline]
    return head + CUT_MARKER.format(cut=len(text) - len(head))


def cut_tool_result(message: Message, keep_tokens: int) -> Message:
    """A tool message whose text is cut to about ``keep_tokens`` tokens (images stay)."""
    if isinstance(message.content, str):
        return message.model_copy(update={"content": cut_text(message.content, keep_tokens)})
    parts: list[TextPart | ImagePart] = []
    for part in message.content or []:
        parts.append(TextPart(text=cut_text(part.text, keep_tokens)) if isinstance(part, TextPart) else part)
    return message.model_copy(update={"content": parts})


def without_images(message: Message) -> Message:
    """``message`` with each image replaced by a short note."""
    if not message.images or not isinstance(message.content, list):
        return message
    parts = [TextPart(text=IMAGE_NOTE) if isinstance(p, ImagePart) else p for p in message.content]
    return message.model_copy(update={"content": parts})


def fingerprint(messages: Sequence[Message]) -> str:
    """A digest of ``messages`` (their JSON): equal for equal messages."""
    digest = hashlib.blake2b(digest_size=16)
    for message in messages:
        digest.update(message.model_dump_json().encode())
    return digest.hexdigest()

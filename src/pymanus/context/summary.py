"""Summaries of the oldest turns, written by the model itself.

The turns are rendered as a plain transcript (each message cut to a few hundred tokens, so
one huge tool result cannot crowd out the rest) and sent with the previous summary; the
model answers with the updated summary. A transcript too long for one request is folded
in batches, each batch extending the summary of the ones before.
"""

from __future__ import annotations

from collections.abc import Sequence

from pymanus.context.tokens import estimate_text_tokens
from pymanus.context.turns import cut_text
from pymanus.messages import Message, Usage
from pymanus.models.base import Model, ModelSettings

SUMMARY_SYSTEM = (
    "You condense the work log of an autonomous agent so that it can go on with its task without the log. "
    "Keep every fact it learned that may still matter (numbers, names, paths, findings), the files it created "
    "or changed, what failed and why, and what it decided to do next. Drop chatter and repeated attempts. "
    "Write plain sentences or short bullet points, no preamble."
)
MESSAGE_TOKENS = 300
"""Each message of the transcript keeps about this many tokens."""


def transcript(messages: Sequence[Message], message_tokens: int = MESSAGE_TOKENS) -> list[str]:
    """One entry per message: who said or did what, cut to ``message_tokens``."""
    lines = []
    for message in messages:
        if message.role == "assistant":
            text = message.text
            calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
            body = "\n".join(filter(None, [text, f"calls {calls}" if calls else ""]))
            lines.append("agent: " + cut_text(body, message_tokens))
        elif message.role == "tool":
            lines.append(f"result of {message.name or 'tool'}: " + cut_text(message.text, message_tokens))
        else:
            note = " [+ images]" if message.images else ""
            lines.append(f"{message.role}: " + cut_text(message.text, message_tokens) + note)
    return lines


def _request(previous: str | None, lines: list[str], max_words: int) -> list[Message]:
    sections = []
    if previous:
        sections.append("Summary of the log so far:\n" + previous)
    sections.append("Next part of the log:\n" + "\n".join(lines))
    sections.append(
        f"Write the updated summary of the whole log{' (the summary so far and this part)' if previous else ''}, "
        f"in at most {max_words} words."
    )
    return [Message.system(SUMMARY_SYSTEM), Message.user("\n\n".join(sections))]


async def summarise(
    model: Model,
    previous: str | None,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    request_tokens: int,
) -> tuple[str, Usage]:
    """The summary of ``previous`` followed by ``messages``, and the usage of the calls it took.

    Args:
        model: writes the summary (no tools offered).
        previous: the summary of what came before ``messages``, if any.
        max_tokens: the most tokens the summary may take (asked for, and cut to).
        request_tokens: the most tokens one summary request may take (a batch of the
            transcript is sized to fit).
    """
    usage = Usage()
    lines = transcript(messages)
    room = max(request_tokens - max_tokens - 400, 200)  # the prompt's own text and the summary so far
    summary = previous
    batch: list[str] = []
    size = 0
    batches: list[list[str]] = []
    for line in lines:
        tokens = estimate_text_tokens(line) + 2
        if batch and size + tokens > room:
            batches.append(batch)
            batch, size = [], 0
        batch.append(line)
        size += tokens
    if batch:
        batches.append(batch)
    settings = ModelSettings(max_tokens=max_tokens, temperature=0.0)
    for part in batches:
        response = await model.request(_request(summary, part, max_tokens * 3 // 4), [], settings)
        usage = usage + response.usage
        text = response.message.text.strip()
        if text:
            summary = cut_text(text, max_tokens)
    return summary or "(nothing to keep)", usage

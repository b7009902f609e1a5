"""Tool middleware: code that sees every tool call before it runs and every result after.

A :class:`ToolMiddleware` may rewrite a call (repair its arguments) or refuse it with a
result the model reads instead, and may annotate a result with a note. The toolset runs
the middleware in order before a call and in reverse order after it, like nested
wrappers, so the first middleware sees the call first and the result last.

Middleware never breaks the chat-completions protocol: a refused call still gets exactly
one result, with the call's id, in the call's place.
"""

from __future__ import annotations

from pymanus.messages import TextPart, ToolCall
from pymanus.tools.tool import ToolContext, ToolResult


class ToolMiddleware:
    """Override :meth:`before_call`, :meth:`after_call`, or both; the defaults change nothing."""

    name: str = "middleware"
    """Shown in logs when the middleware refuses or rewrites a call."""

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        """The call to run (``call`` itself, or a rewritten copy), or a result that refuses it."""
        return call

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        """The result the model reads (``result`` itself, or an annotated copy)."""
        return result


def with_note(result: ToolResult, note: str, *, before: bool = False) -> ToolResult:
    """``result`` with ``note`` added as a paragraph of its text (after it, or ``before`` it)."""
    if not note:
        return result
    if isinstance(result.content, str):
        text = f"{note}\n\n{result.content}" if before else f"{result.content}\n\n{note}"
        return result.model_copy(update={"content": text})
    parts = [TextPart(text=note), *result.content] if before else [*result.content, TextPart(text=note)]
    return result.model_copy(update={"content": parts})

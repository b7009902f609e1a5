"""One nudge for a text-only reply that is clearly not the end of the task.

A reply without tool calls is the run's final answer. Models sometimes stop early: they
announce the next step instead of taking it, or write the code they should have run. The
:class:`UnfinishedReplyNudge` extension sends such a reply back once, and accepts the next
one whatever it is.

"Clearly unfinished" is judged from the reply and the run, never from the task's wording.
A text-only reply is clearly unfinished when it

* is empty;
* was cut off: the model stopped at its length limit, or a code block is left open;
* announces an action it did not take: its last line ends with a colon ("Here is the
  script:"), or its last sentence says the model will now act ("Now I will run the
  tests.", "Let me check the file.": first person, followed by a verb of action; English);
* holds a fenced code block while no tool has been called in the run: code meant to be run
  or saved that never was.

Everything else is accepted at once, a reply with code after tools ran included. The check
never judges an answer given with a tool call (``terminate``'s message) and sends back at
most one reply per run, so a genuine final answer costs at most one more request, and the
nudge asks the model to give it again in full if it was one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pymanus.agent.extensions import Extension
from pymanus.messages import ToolCall
from pymanus.tools.middleware import ToolMiddleware
from pymanus.tools.tool import ToolContext, ToolResult

EMPTY_NUDGE = "Your reply was empty. Continue the task with a tool call, or give your complete final answer."
CUT_OFF_NUDGE = (
    "Your reply was cut off before its end. Continue the task with a tool call, "
    "or give your complete final answer in a shorter reply."
)
ANNOUNCED_NUDGE = (
    "Your reply says what you will do next, but no tool was called, so nothing was done. "
    "Do it now with a tool call; if the task is already done, give your complete final answer instead."
)
CODE_NUDGE = (
    "Your reply holds code, but no tool has been called in this task, so nothing was run or saved. "
    "If the task needs the code run or saved, do it now with a tool call; "
    "if the code itself is the answer, give your complete final answer again."
)

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_BLOCK = re.compile(r"^\s*(```|~~~)[^\n]*\n(?P<body>.*?)^\s*\1", re.DOTALL | re.MULTILINE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_VERBS = (
    "add|analy[sz]e|apply|begin|build|calculate|call|check|compute|continue|convert|count|create|do|download|"
    "edit|examine|execute|extract|fetch|finish|fix|generate|implement|inspect|install|list|load|look|make|modify|"
    "open|parse|perform|plot|prepare|print|proceed|read|review|run|save|search|start|test|try|update|use|verify|"
    "write"
)
_ANNOUNCEMENT = re.compile(
    r"^(?:(?:now|next|first|then|so|ok|okay|sure|great|alright)\b[,!.]?\s+)*"
    r"(?:let me|let's|let us|i will|i'll|i shall|i am going to|i'm going to|we will|we'll)"
    r"(?:\s+(?:now|next|first|then|go ahead and|proceed to|start by|begin by))*"
    rf"\s+(?:{_VERBS})\b",
    re.IGNORECASE,
)


def unfinished_reason(reply: str, *, cut_off: bool = False, tools_called: bool = True) -> str | None:
    """The nudge for a text-only ``reply`` that is clearly unfinished, or ``None``.

    Args:
        reply: the reply's text.
        cut_off: the model stopped at its length limit.
        tools_called: a tool has been called earlier in the run.
    """
    text = reply.strip()
    if not text:
        return EMPTY_NUDGE
    if cut_off or sum(1 for line in text.splitlines() if _FENCE.match(line)) % 2:
        return CUT_OFF_NUDGE
    if _announces(text):
        return ANNOUNCED_NUDGE
    if not tools_called and any(m.group("body").strip() for m in _CODE_BLOCK.finditer(text)):
        return CODE_NUDGE
    return None


def _announces(text: str) -> bool:
    """Whether ``text`` ends by announcing what the model will do."""
    last_line = text.splitlines()[-1].strip()
    if last_line.endswith((":", "：")):
        return True
    sentences = [s for s in _SENTENCE_END.split(last_line.replace("\u2019", "'")) if s.strip()]
    return bool(sentences) and _ANNOUNCEMENT.match(sentences[-1].strip()) is not None


@dataclass
class _RunCalls:
    """The tool calls of one run, as far as the nudge needs them."""

    count: int = 0
    last_step: int = 0
    nudged: bool = False


class _CallsSeen(ToolMiddleware):
    """Counts the run's tool calls (refused ones included: the model did call a tool)."""

    name = "unfinished_nudge"

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        calls = context.store(_RunCalls)
        calls.count += 1
        calls.last_step = context.step
        return call


class UnfinishedReplyNudge(Extension):
    """Sends a clearly unfinished text-only reply back once per run (see the module's docstring).

    On in the Manus preset for every model (``[agent] nudge_unfinished``); add it to any
    agent with ``Agent(extensions=[UnfinishedReplyNudge()])``.
    """

    name = "unfinished_nudge"

    def __init__(self) -> None:
        self.middleware = _CallsSeen()

    def check_answer(self, task: str, answer: str, context: ToolContext) -> str | None:
        calls = context.store(_RunCalls)
        if calls.nudged or calls.last_step == context.step:  # nudged already, or answered with a tool call
            return None
        nudge = unfinished_reason(answer, cut_off=context.finish_reason == "length", tools_called=calls.count > 0)
        calls.nudged = nudge is not None
        return nudge

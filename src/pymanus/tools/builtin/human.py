"""``ask_human``: let the agent put a question to a person and wait for the answer.

Who answers is pluggable (:class:`AskHuman`): :class:`ConsoleAsker` for the command line,
:class:`QueueAsker` for a service that shows open questions and posts the answers. When
nobody is there, or nobody answers in time, the agent is told to go on by itself.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from typing import Protocol, TextIO

from pydantic import BaseModel, Field

from pymanus.errors import PyManusError, ToolError
from pymanus.tools.tool import Tool, ToolContext, tool


class HumanUnavailable(PyManusError):
    """No person can answer (no terminal, input closed); the message says why."""


class AskHuman(Protocol):
    """Puts a question to a person and returns their answer."""

    async def __call__(self, question: str, run_id: str) -> str:
        """Ask ``question`` on behalf of run ``run_id``; raise :class:`HumanUnavailable` if nobody can answer."""
        ...


def ask_human_tool(ask: AskHuman, timeout: float = 300) -> Tool:
    """Build the ``ask_human`` tool.

    Args:
        ask: who answers (e.g. :class:`ConsoleAsker` or :class:`QueueAsker`).
        timeout: seconds to wait for an answer before telling the agent to go on.
    """

    @tool(name="ask_human", parallel_safe=False, timeout=timeout + 10)
    async def ask_human(question: str, context: ToolContext) -> str:
        """Ask the user a question and wait for the answer.

        Use it only when you cannot go on without information or a decision that only
        the user has; otherwise proceed with your best judgement.

        Args:
            question: one clear question for the user.
        """
        question = question.strip()
        if not question:
            raise ToolError("The question is empty; write the question to ask the user.")
        try:
            answer = await asyncio.wait_for(ask(question, context.run_id), timeout)
        except TimeoutError:
            return f"The user gave no answer within {timeout:g} s; proceed with your best judgement."
        except HumanUnavailable as exc:
            return f"No human is available to answer ({exc}); proceed with your best judgement."
        answer = answer.strip()
        if not answer:
            return "The user answered with nothing; proceed with your best judgement."
        return f"The user answered: {answer}"

    return ask_human


class ConsoleAsker:
    """Asks on the terminal: the question goes to stderr, the answer is a line from stdin.

    Questions are asked one at a time. A question that timed out leaves its read
    pending, and the next question reuses it rather than racing it for the same line.
    """

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self._stdin = stdin
        self._stderr = stderr
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._pending_read: asyncio.Future[str] | None = None

    async def __call__(self, question: str, run_id: str) -> str:
        """Print ``question`` and wait for one line of input."""
        stdin = self._stdin if self._stdin is not None else sys.stdin
        stderr = self._stderr if self._stderr is not None else sys.stderr
        if stdin is None or stdin.closed or not stdin.isatty():
            raise HumanUnavailable("standard input is not a terminal")
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new asyncio.run(): nothing of the last loop can be awaited
            self._loop, self._lock, self._pending_read = loop, asyncio.Lock(), None
        async with self._lock:
            stderr.write(f"\n[agent {run_id}] asks: {question}\n> ")
            stderr.flush()
            if self._pending_read is None or self._pending_read.done():
                self._pending_read = asyncio.ensure_future(asyncio.to_thread(stdin.readline))
            try:
                line = await asyncio.shield(self._pending_read)
            except OSError as exc:
                raise HumanUnavailable(f"standard input cannot be read: {exc}") from None
        if not line:
            raise HumanUnavailable("standard input was closed")
        return line.rstrip("\n")


class PendingQuestion(BaseModel):
    """A question waiting for its answer."""

    id: str
    run_id: str
    question: str
    asked_at: float = Field(default_factory=time.time)
    """When it was asked (seconds since the epoch)."""


class QueueAsker:
    """Questions a service answers: list them with :meth:`pending`, reply with :meth:`answer`.

    ``on_question`` is called with each new question (e.g. to push it to a web page).
    :meth:`answer` may be called from another thread.
    """

    def __init__(self, on_question: Callable[[PendingQuestion], None] | None = None) -> None:
        self._on_question = on_question
        self._open: dict[str, tuple[PendingQuestion, asyncio.Future[str]]] = {}

    async def __call__(self, question: str, run_id: str) -> str:
        """Post ``question`` and wait until it is answered (or the caller gives up)."""
        entry = PendingQuestion(id=uuid.uuid4().hex, run_id=run_id, question=question)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._open[entry.id] = (entry, future)
        try:
            if self._on_question is not None:
                self._on_question(entry)
            return await future
        finally:
            self._open.pop(entry.id, None)

    def pending(self, run_id: str | None = None) -> list[PendingQuestion]:
        """The open questions, oldest first (only those of ``run_id`` if given)."""
        entries = [entry for entry, _ in list(self._open.values())]
        return [e for e in entries if run_id is None or e.run_id == run_id]

    def answer(self, question_id: str, text: str) -> None:
        """Answer an open question; raise ``KeyError`` if there is no such open question."""
        item = self._open.pop(question_id, None)
        if item is None:
            raise KeyError(f"no open question with id {question_id!r}")
        future = item[1]
        future.get_loop().call_soon_threadsafe(_settle, future, text)


def _settle(future: asyncio.Future[str], text: str) -> None:
    if not future.done():
        future.set_result(text)

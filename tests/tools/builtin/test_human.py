"""ask_human: a queue a service answers, the console, and nobody answering."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading
from collections.abc import Iterator

import pytest

from pymanus.tools.builtin.human import ConsoleAsker, PendingQuestion, QueueAsker, ask_human_tool
from pymanus.tools.tool import ToolContext, ToolResult

CONTEXT = ToolContext(run_id="run-1")


async def wait_for_question(asker: QueueAsker) -> PendingQuestion:
    for _ in range(200):
        if pending := asker.pending():
            return pending[0]
        await asyncio.sleep(0.005)
    raise AssertionError("no question was posted")


def test_tool_shape() -> None:
    tool = ask_human_tool(QueueAsker())
    assert tool.name == "ask_human"
    assert not tool.parallel_safe
    assert set(tool.parameters["properties"]) == {"question"}


async def test_queue_question_is_answered() -> None:
    posted: list[PendingQuestion] = []
    asker = QueueAsker(on_question=posted.append)
    call = asyncio.create_task(ask_human_tool(asker).run({"question": "  Which colour?  "}, CONTEXT))
    question = await wait_for_question(asker)
    assert question.question == "Which colour?" and question.run_id == "run-1"
    assert posted == [question]
    assert asker.pending(run_id="other-run") == []
    asker.answer(question.id, " blue \n")
    result = await call
    assert result == ToolResult(content="The user answered: blue")
    assert asker.pending() == []


async def test_queue_answer_from_another_thread() -> None:
    asker = QueueAsker()
    call = asyncio.create_task(ask_human_tool(asker).run({"question": "Go on?"}, CONTEXT))
    question = await wait_for_question(asker)
    worker = threading.Thread(target=asker.answer, args=(question.id, "yes"))
    worker.start()
    worker.join()
    assert (await call).text == "The user answered: yes"


async def test_queue_timeout_tells_the_agent_to_proceed() -> None:
    asker = QueueAsker()
    result = await ask_human_tool(asker, timeout=0.1).run({"question": "Anyone?"}, CONTEXT)
    assert not result.is_error
    assert result.text == "The user gave no answer within 0.1 s; proceed with your best judgement."
    assert asker.pending() == []


async def test_queue_unknown_or_late_answer_is_a_key_error() -> None:
    asker = QueueAsker()
    with pytest.raises(KeyError, match="no open question with id 'nope'"):
        asker.answer("nope", "x")
    await ask_human_tool(asker, timeout=0.05).run({"question": "Anyone?"}, CONTEXT)
    assert asker.pending() == []


async def test_empty_question_and_empty_answer() -> None:
    asker = QueueAsker()
    tool = ask_human_tool(asker)
    empty = await tool.run({"question": "  "}, CONTEXT)
    assert empty.is_error and "question is empty" in empty.text
    call = asyncio.create_task(tool.run({"question": "Name?"}, CONTEXT))
    asker.answer((await wait_for_question(asker)).id, "   ")
    assert (await call).text == "The user answered with nothing; proceed with your best judgement."


# -- the console -------------------------------------------------------------------------
@pytest.mark.parametrize("stdin", [io.StringIO("an answer\n"), None])
async def test_console_without_tty_says_no_human(monkeypatch: pytest.MonkeyPatch, stdin: io.StringIO | None) -> None:
    monkeypatch.setattr(sys, "stdin", stdin)
    result = await ask_human_tool(ConsoleAsker()).run({"question": "Hello?"}, CONTEXT)
    assert not result.is_error
    assert result.text == (
        "No human is available to answer (standard input is not a terminal); proceed with your best judgement."
    )


async def test_console_with_closed_stdin_says_no_human() -> None:
    stdin = io.StringIO()
    stdin.close()
    result = await ask_human_tool(ConsoleAsker(stdin=stdin)).run({"question": "Hello?"}, CONTEXT)
    assert "No human is available" in result.text


@pytest.fixture
def terminal() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A pseudo-terminal: write the user's keystrokes to the first, read the second."""
    master, slave = os.openpty()
    stdin = os.fdopen(slave, "r")
    yield master, stdin
    stdin.close()
    os.close(master)


async def test_console_reads_an_answer_from_a_terminal(terminal: tuple[int, io.TextIOWrapper]) -> None:
    master, stdin = terminal
    stderr = io.StringIO()
    call = asyncio.create_task(ask_human_tool(ConsoleAsker(stdin, stderr)).run({"question": "Colour?"}, CONTEXT))
    await asyncio.sleep(0.05)
    os.write(master, b"green\n")
    assert (await call).text == "The user answered: green"
    assert "[agent run-1] asks: Colour?" in stderr.getvalue()


async def test_console_end_of_input_says_no_human(terminal: tuple[int, io.TextIOWrapper]) -> None:
    master, stdin = terminal
    call = asyncio.create_task(ask_human_tool(ConsoleAsker(stdin, io.StringIO())).run({"question": "?"}, CONTEXT))
    await asyncio.sleep(0.05)
    os.write(master, b"\x04")  # Ctrl-D
    result = await call
    assert (
        result.text == "No human is available to answer (standard input was closed); proceed with your best judgement."
    )


async def test_console_timeout_then_late_line_answers_next_question(terminal: tuple[int, io.TextIOWrapper]) -> None:
    master, stdin = terminal
    tool = ask_human_tool(ConsoleAsker(stdin, io.StringIO()), timeout=0.1)
    first = await tool.run({"question": "First?"}, CONTEXT)
    assert "no answer within 0.1 s" in first.text
    second = asyncio.create_task(tool.run({"question": "Second?"}, CONTEXT))
    await asyncio.sleep(0.02)
    os.write(master, b"typed late\n")
    assert (await second).text == "The user answered: typed late"

"""One nudge for a clearly unfinished text-only reply; a genuine final answer is never refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.agent_cases import add
from helpers.chat_server import ChatServer, completion
from helpers.preset_cases import run_preset, settings_for
from pymanus import Agent, Message, RunState
from pymanus.agent.manus import build_manus_agent
from pymanus.agent.unfinished import (
    ANNOUNCED_NUDGE,
    CODE_NUDGE,
    CUT_OFF_NUDGE,
    EMPTY_NUDGE,
    UnfinishedReplyNudge,
    unfinished_reason,
)
from pymanus.models import ScriptedModel, call
from pymanus.models.base import ModelResponse
from pymanus.models.openai import OpenAIModel

CODE = "Save this as squares.py:\n\n```python\nfor n in range(1, 11):\n    print(n * n)\n```"


@pytest.mark.parametrize(
    ("reply", "nudge"),
    [
        ("", EMPTY_NUDGE),
        ("  \n ", EMPTY_NUDGE),
        ("Here is the script:", ANNOUNCED_NUDGE),
        ("I read the data.\n\nThe totals are as follows：", ANNOUNCED_NUDGE),
        ("Now I will run the tests.", ANNOUNCED_NUDGE),
        ("The file is there. Next, I'll create report.md.", ANNOUNCED_NUDGE),
        ("Let me check the file first.", ANNOUNCED_NUDGE),
        ("I\u2019m going to write the file now.", ANNOUNCED_NUDGE),
        ("OK, I will now go ahead and write it", ANNOUNCED_NUDGE),
        ("Here it is:\n```python\nfor n in range(3):\n    print(n", CUT_OFF_NUDGE),
    ],
)
def test_what_is_clearly_unfinished(reply: str, nudge: str) -> None:
    assert unfinished_reason(reply) == nudge


def test_code_is_unfinished_only_while_no_tool_was_called() -> None:
    assert unfinished_reason(CODE, tools_called=False) == CODE_NUDGE
    assert unfinished_reason(CODE, tools_called=True) is None
    assert unfinished_reason("Done.\n```\n```", tools_called=False) is None  # an empty block holds no code


def test_a_reply_cut_at_the_length_limit_is_unfinished() -> None:
    assert unfinished_reason("The totals are north 12.5 and south", cut_off=True) == CUT_OFF_NUDGE


@pytest.mark.parametrize(
    "reply",
    [
        "The answer is 42.",
        "42",
        "Done. Let me know if you need anything else.",
        "I'll be happy to help with anything else.",
        "Result: 42",
        "Summary: the totals are north 12.5 and south 5.",
        "Let's recap: the script prints the squares of 1 to 10.",
        "Steps I took:\n1. read sales.csv\n2. wrote report.md",
        "report.md now holds the totals per region; I will not change sales.csv.",
        "The function:\n```python\ndef double(x):\n    return 2 * x\n```",
    ],
)
def test_genuine_final_answers_are_accepted(reply: str) -> None:
    assert unfinished_reason(reply, tools_called=True) is None


# -- in runs of the preset --------------------------------------------------------------------------


def nudges(messages: list[Message]) -> list[str]:
    sent = {EMPTY_NUDGE, CUT_OFF_NUDGE, ANNOUNCED_NUDGE, CODE_NUDGE}
    return [m.text for m in messages if m.role == "user" and m.text in sent]


async def test_an_announced_action_is_nudged_and_the_run_goes_on(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            "I will now write squares.py:",
            call("write_file", path="squares.py", content="print([n * n for n in range(1, 11)])\n"),
            call("terminate", status="success", message="Wrote squares.py."),
        ]
    )
    result = await run_preset(tmp_path / "ws", model, "Write squares.py.")
    assert result.state is RunState.FINISHED and result.output == "Wrote squares.py."
    assert nudges(result.messages) == [ANNOUNCED_NUDGE]
    assert (tmp_path / "ws" / "squares.py").exists()


async def test_a_genuine_final_answer_ends_the_run_at_once(tmp_path: Path) -> None:
    model = ScriptedModel(["The answer is 42."])
    result = await run_preset(tmp_path / "ws", model, "What is 2 + 40?")
    assert (result.state, result.output, result.reason, result.steps) == (
        RunState.FINISHED,
        "The answer is 42.",
        "final_answer",
        1,
    )
    assert len(model.requests) == 1


async def test_the_second_unfinished_reply_is_accepted(tmp_path: Path) -> None:
    model = ScriptedModel([CODE, CODE])
    result = await run_preset(tmp_path / "ws", model, "How do I print squares in Python?")
    assert (result.state, result.output) == (RunState.FINISHED, CODE)  # a nudge never makes a failure
    assert nudges(result.messages) == [CODE_NUDGE]
    assert len(model.requests) == 2


async def test_one_nudge_per_run(tmp_path: Path) -> None:
    model = ScriptedModel(["", call("list_dir", path="."), "Let me check the file."])
    result = await run_preset(tmp_path / "ws", model, "Look around.")
    assert (result.state, result.output) == (RunState.FINISHED, "Let me check the file.")
    assert nudges(result.messages) == [EMPTY_NUDGE]


async def test_code_after_tools_ran_is_a_final_answer(tmp_path: Path) -> None:
    model = ScriptedModel([call("list_dir", path="."), CODE])
    result = await run_preset(tmp_path / "ws", model, "Show me code for squares.")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, CODE, 2)
    assert nudges(result.messages) == []


async def test_an_answer_given_with_terminate_is_never_judged(tmp_path: Path) -> None:
    model = ScriptedModel([call("terminate", status="success", message="Here is what I found:")])
    result = await run_preset(tmp_path / "ws", model, "x")
    assert (result.state, result.output) == (RunState.FINISHED, "Here is what I found:")
    assert len(model.requests) == 1


async def test_the_nudge_can_be_switched_off(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    settings = settings_for(tmp_path / "ws")
    settings.agent.nudge_unfinished = False
    model = ScriptedModel(["Let me check the file."])
    agent = build_manus_agent(settings, model=model)
    try:
        result = await agent.run("x")
    finally:
        await agent.aclose()
    assert (result.state, result.output, len(model.requests)) == (RunState.FINISHED, "Let me check the file.", 1)


async def test_any_agent_can_take_it() -> None:
    cut = ModelResponse(message=Message.assistant("The answer is"), finish_reason="length")
    model = ScriptedModel([cut, call("add", a=2, b=40), "The answer is 42."])
    result = await Agent(model, tools=[add], extensions=[UnfinishedReplyNudge()]).run("What is 2 + 40?")
    assert (result.state, result.output) == (RunState.FINISHED, "The answer is 42.")
    assert nudges(result.messages) == [CUT_OFF_NUDGE]


async def test_a_reply_cut_at_the_length_limit_by_a_real_endpoint(chat_server: ChatServer, tmp_path: Path) -> None:
    chat_server.push(
        completion("The totals per region are north 12.5 and", finish_reason="length"),
        completion("The totals per region are north 12.5 and south 5."),
    )
    model = OpenAIModel("test-model", base_url=chat_server.url, api_key="sk-test")
    result = await run_preset(tmp_path / "ws", model, "Sum the amounts per region.")
    assert (result.state, result.output) == (RunState.FINISHED, "The totals per region are north 12.5 and south 5.")
    assert chat_server.messages[1][-1] == {"role": "user", "content": CUT_OFF_NUDGE}

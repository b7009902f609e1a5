"""The task suite's runner scores agents, survives crashes and timeouts, and reports.

No model runs: the runner is driven with ``ScriptedModel`` / ``FunctionModel`` and, end to end,
against a local chat server.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for ``benchmarks``

from benchmarks.tasks import run
from benchmarks.tasks.suite import TASKS, Task, select

from helpers.chat_server import ChatServer, completion, tool_call
from pymanus import Agent, Message, Model
from pymanus.models import FunctionModel, ModelSettings, ScriptedModel, ToolDefinition, call
from pymanus.models.base import StreamItem
from pymanus.sandbox import PathJail
from pymanus.tools.builtin.files import file_tools


def file_agent(model: Model, *, max_steps: int = 10) -> run.AgentFactory:
    """Agents with the file tools in the workspace, driven by ``model``."""

    def build(workspace: Path) -> Agent:
        return Agent(model, tools=file_tools(PathJail(workspace)), workspace=workspace, max_steps=max_steps)

    return build


def correct_report() -> str:
    rows = "\n".join(f"| {region} | {total} |" for region, total in run_totals().items())
    return f"| Region | Total |\n|---|---|\n{rows}\n"


def run_totals() -> dict[str, float]:
    from benchmarks.tasks.data_tasks import region_totals

    return region_totals()


async def test_run_task_scores_a_scripted_agent_that_does_the_work() -> None:
    model = ScriptedModel(
        [
            call("read_file", path="sales.csv"),
            call("write_file", path="report.md", content=correct_report()),
            call("terminate", status="success", message="The report is in report.md."),
        ]
    )
    task = select(["sales_report"])[0]
    outcome = await run.run_task(file_agent(model), task, model="scripted")
    assert (outcome.ok, outcome.reason, outcome.end) == (True, "ok", "finished:terminate")
    assert outcome.steps == 3
    assert outcome.prompt_tokens > 0 and outcome.completion_tokens > 0
    assert outcome.output == "The report is in report.md."
    assert outcome.workspace is None
    assert model.requests[1][-1].text and "region" in model.requests[1][-1].text  # it read the real input
    # The conversation is kept, to see why a run went as it did.
    assert [m["role"] for m in outcome.messages] == ["system", "user", *["assistant", "tool"] * 3]
    assert outcome.messages[-2]["tool_calls"][0]["name"] == "terminate"


async def test_run_task_fails_wrong_work_and_keeps_the_workspace_when_asked() -> None:
    model = ScriptedModel(
        [call("write_file", path="report.md", content="| Region | Total |\n|---|---|\n| East | 1 |\n")]
    )
    model.script.append(call("terminate", status="success", message="done"))
    outcome = await run.run_task(file_agent(model), select(["sales_report"])[0], keep=True)
    assert not outcome.ok and outcome.end == "finished:terminate"
    assert "no table row for" in outcome.reason or "expected total" in outcome.reason
    assert outcome.workspace is not None and (Path(outcome.workspace) / "sales.csv").is_file()
    shutil.rmtree(outcome.workspace)


async def test_answer_only_task_is_checked_on_the_final_output() -> None:
    model = FunctionModel(lambda messages, tools: "There are 7 such items.")
    outcome = await run.run_task(file_agent(model), select(["low_stock_answer"])[0])
    assert outcome.ok and outcome.end == "finished:final_answer" and outcome.steps == 1


async def test_a_crashing_factory_is_a_failure_with_its_reason() -> None:
    def broken(workspace: Path) -> Agent:
        raise RuntimeError("model pack not installed")

    outcome = await run.run_task(broken, TASKS[0], model="local:missing")
    assert (outcome.ok, outcome.end) == (False, "crash")
    assert outcome.reason == "RuntimeError: model pack not installed"


async def test_a_run_past_the_time_limit_is_cut_off_with_partial_stats() -> None:
    async def slow(messages: object, tools: object) -> str:
        await asyncio.sleep(30)
        return "never"

    outcome = await run.run_task(file_agent(FunctionModel(slow)), TASKS[0], time_limit=0.3)
    assert (outcome.ok, outcome.end) == (False, "timeout")
    assert "0.3" in outcome.reason and outcome.seconds < 10


async def test_a_crashing_checker_is_a_failure() -> None:
    def boom(workspace: Path, output: str) -> tuple[bool, str]:
        raise ValueError("bad checker")

    task = Task(name="boom", prompt="Say hi.", setup=lambda workspace: None, check=boom)
    outcome = await run.run_task(file_agent(ScriptedModel(["hi"])), task)
    assert not outcome.ok and outcome.reason == "checker crashed: ValueError: bad checker"


async def test_strict_mode_also_requires_a_normal_finish() -> None:
    def script() -> ScriptedModel:  # does the work, then never terminates
        return ScriptedModel([call("write_file", path="report.md", content=correct_report())] * 2)

    task = select(["sales_report"])[0]
    lenient = await run.run_task(file_agent(script(), max_steps=1), task)
    strict = await run.run_task(file_agent(script(), max_steps=1), task, strict=True)
    assert lenient.ok and lenient.end == "error:max_steps"
    assert not strict.ok and strict.end == "error:max_steps"


async def test_run_suite_goes_on_after_failures_and_summarizes_per_model() -> None:
    def answers_seven(workspace: Path) -> Agent:
        return Agent(FunctionModel(lambda messages, tools: "7"), workspace=workspace)

    def broken(workspace: Path) -> Agent:
        raise RuntimeError("no such model")

    tasks = select(["low_stock_answer", "staging_port_answer"])
    seen: list[run.TaskOutcome] = []
    outcomes = await run.run_suite({"seven": answers_seven, "broken": broken}, tasks, repeat=2, report=seen.append)
    assert outcomes == seen and len(outcomes) == 8
    assert [o.ok for o in outcomes[:4]] == [True, True, False, False]
    assert all(o.end == "crash" and "no such model" in o.reason for o in outcomes[4:])
    summary = run.summarize(outcomes)
    assert summary["seven"]["success"] == 2 and summary["seven"]["runs"] == 4 and summary["seven"]["rate"] == 0.5
    assert summary["broken"]["success"] == 0
    text = run.format_summary(summary)
    assert "seven: success 2/4 (50%)" in text and "broken: success 0/4 (0%)" in text
    row = run.format_row(outcomes[1])
    assert row.startswith("low_stock_answer #2") and "yes" in row
    assert run.header().split()[:3] == ["task", "ok", "steps"]


async def test_the_warm_up_request_carries_the_agents_prompt_and_tools() -> None:
    """The shared prompt head is evaluated before the first task, not counted in its seconds."""
    requests: list[tuple[str, list[str], list[str] | None]] = []

    class Recording(FunctionModel):
        async def stream(
            self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
        ) -> AsyncIterator[StreamItem]:
            requests.append((messages[0].text, [tool.name for tool in tools], settings.allowed_tools))
            async for item in super().stream(messages, tools, settings):
                yield item

    def build(workspace: Path) -> Agent:
        model = Recording(lambda messages, tools: "7")
        return Agent(model, tools=file_tools(PathJail(workspace)), system_prompt="Be brief.")

    await run.run_suite({"seven": build}, select(["low_stock_answer"]))
    (warm_up_prompt, warm_up_tools, allowed), (first_prompt, first_tools, _) = requests[:2]
    assert warm_up_prompt == first_prompt == "Be brief." and warm_up_tools == first_tools
    assert {"read_file", "terminate"} <= set(warm_up_tools)
    assert allowed == []  # a text reply: the warm-up ends at once


def test_main_lists_tasks_and_rejects_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert run.main(["--list"], out=out) == 0
    assert all(task.name in out.getvalue() for task in TASKS)
    assert run.main(["--tasks", "sales_report,nope"]) == 2
    assert "unknown task(s) nope" in capsys.readouterr().err
    assert run.main(["--model", "gpt-4", "--tasks", "sales_report"]) == 2
    assert "not a model string" in capsys.readouterr().err


@pytest.mark.usefixtures("no_openai_env")
def test_main_runs_an_openai_model_against_an_endpoint(
    chat_server_thread: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user config file leaks in
    monkeypatch.delenv("PYMANUS_MODEL", raising=False)
    answer = {"status": "success", "message": "The staging server uses port 9090."}
    chat_server_thread.respond_with(lambda body: completion(tool_calls=[tool_call("terminate", answer)]))
    out, report = io.StringIO(), tmp_path / "out.json"
    argv = ["--model", "openai:bench", "--base-url", chat_server_thread.url, "--tasks", "staging_port_answer"]
    assert run.main([*argv, "--json", str(report)], out=out) == 0
    assert "openai:bench: success 1/1 (100%)" in out.getvalue()
    data = json.loads(report.read_text())
    assert data["summary"]["openai:bench"]["success"] == 1
    assert {"model", "task", "ok", "reason", "end", "steps", "seconds", "prompt_tokens"} <= set(data["results"][0])
    assert data["results"][0]["end"] == "finished:terminate" and data["results"][0]["prompt_tokens"] == 10


def test_the_json_report_is_written_after_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat_server_thread: ChatServer
) -> None:
    json_path = tmp_path / "out.json"
    seen_mid_suite: list[list[str]] = []

    async def two_runs(*args: object, report: Callable[[run.TaskOutcome], None], **kwargs: object) -> None:
        for task in ("staging_port_answer", "low_stock_answer"):
            report(run.TaskOutcome(model="openai:bench", task=task, ok=True, reason="ok", end="finished"))
            seen_mid_suite.append([r["task"] for r in json.loads(json_path.read_text())["results"]])

    monkeypatch.setattr(run, "run_suite", two_runs)
    argv = ["--model", "openai:bench", "--base-url", chat_server_thread.url, "--json", str(json_path)]
    assert run.main(argv, out=io.StringIO()) == 0
    # a suite killed after its first run still leaves that run's transcript behind
    assert seen_mid_suite == [["staging_port_answer"], ["staging_port_answer", "low_stock_answer"]]
    assert json.loads(json_path.read_text())["summary"]["openai:bench"]["success"] == 2


def test_aids_are_parsed_from_the_command_line() -> None:
    from pymanus.local_aids import AIDS

    assert run.parse_aids(None) is None
    assert run.parse_aids("none") == []
    assert run.parse_aids("all") == list(AIDS)
    assert run.parse_aids("all,-code_repair,-test_check") == [a for a in AIDS if a not in ("code_repair", "test_check")]
    assert run.parse_aids("test_check,code_repair") == ["code_repair", "test_check"]  # in the registry's order
    with pytest.raises(ValueError, match="unknown aid 'nope'"):
        run.parse_aids("all,-nope")

"""The Manus preset end to end with scripted models: real tools, real sandbox, real files."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
from pathlib import Path

import pytest

from helpers.preset_cases import run_preset, settings_for
from pymanus import RunState
from pymanus.agent.manus import EXAMPLE_RUN, build_manus_agent, missing_outputs
from pymanus.config import Settings
from pymanus.messages import ToolCall
from pymanus.models import ScriptedModel, call
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.tool import ToolContext
from pymanus.tools.toolset import RESPONSE_CALLS, Toolset

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def test_a_csv_report_task_with_real_tools(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "sales.csv").write_text("region,amount\nnorth,10\nsouth,5\nnorth,2.5\n")
    code = (
        "import csv\n"
        "totals = {}\n"
        "for row in csv.DictReader(open('sales.csv')):\n"
        "    totals[row['region']] = totals.get(row['region'], 0) + float(row['amount'])\n"
        "lines = ['| region | total |', '|---|---|'] + [f'| {r} | {t} |' for r, t in sorted(totals.items())]\n"
        "open('report.md', 'w').write('\\n'.join(lines) + '\\n')\n"
        "print(totals)\n"
    )
    model = ScriptedModel(
        [
            call("read_file", path="sales.csv", preview=True),
            call("python", code=code),
            call("terminate", status="success", message="Wrote report.md"),
        ]
    )
    result = await run_preset(workspace, model, "Read sales.csv, compute the total amount per region, write report.md.")
    assert result.state is RunState.FINISHED, result.output
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert observations[0].startswith("sales.csv is shown whole in the first message")  # not shown twice
    assert "{'north': 12.5, 'south': 5.0}" in observations[1]
    assert (workspace / "report.md").read_text().splitlines()[2] == "| north | 12.5 |"


async def test_completion_check_catches_a_missing_report(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    model = ScriptedModel(
        [
            call("terminate", status="success", message="done"),
            call("write_file", path="out/report.md", content="# Report\n"),
            call("terminate", status="success", message="done now"),
        ]
    )
    result = await run_preset(workspace, model, "Write the summary to out/report.md")
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "done now", 3)
    first = next(m for m in result.messages if m.role == "tool")
    assert "out/report.md" in first.text and "not finished" in first.text


def test_missing_outputs_names_only_absent_files(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("x")
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Read sales.csv and write report.md and data/summary.json (see https://example.com/a.html)."
    problem = missing_outputs(task, "done", context)
    assert problem is not None
    assert "the task names report.md, but" in problem
    assert "the task names data/summary.json, but" in problem
    assert "sales.csv" not in problem and "a.html" not in problem
    assert missing_outputs("Say hello.", "Hello!", context) is None


@pytest.mark.parametrize(
    ("content", "answer", "expected"),
    [
        ("| north | 12.5 |\n", "Done.", None),
        ("", "Done.", "report.md is empty"),
        ("| region | {{region_totals}} |\n", "Done.", "report.md still contains a placeholder"),
        ("[INSERT TABLE HERE]", "Done.", "report.md still contains a placeholder"),
        ("| mean | ${mean} |\n", "Done.", "report.md still contains a placeholder"),
        ("| north | 12.5 |\n", "<result>", "your answer '<result>' is a placeholder"),
        ("<tool_response>", "Done.", "report.md still contains a placeholder"),
        ("<b>North</b> 12.5", "Done.", None),
        ("| north | 12.5 |\n", "", "your answer '' is a placeholder"),
        ('{"a": {"b": 1}}', "There are 7 items.", None),
    ],
)
def test_completion_check_rejects_empty_templated_and_placeholder_results(
    tmp_path: Path, content: str, answer: str, expected: str | None
) -> None:
    (tmp_path / "report.md").write_text(content)
    problem = missing_outputs("Write report.md.", answer, ToolContext(run_id="r", workspace=tmp_path))
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and expected in problem


def test_an_empty_package_init_is_a_complete_file(tmp_path: Path) -> None:
    (tmp_path / "weather").mkdir()
    (tmp_path / "weather" / "__init__.py").write_text("")
    (tmp_path / "weather" / "cli.py").write_text("")
    task = "Create a package weather with __init__.py and cli.py."
    problem = missing_outputs(task, "Done.", ToolContext(run_id="r", workspace=tmp_path))
    assert problem is not None
    assert "cli.py is empty" in problem and "__init__.py" not in problem


@needs_bwrap
async def test_escapes_are_observations_and_the_run_goes_on(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept() -> None:
        listener.settimeout(5)
        try:
            connection, _ = listener.accept()
            received.append(connection.recv(100))
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    model = ScriptedModel(
        [
            call("read_file", path="../secret.txt"),
            call("python", code=f"print(open({str(secret)!r}).read())"),
            call("python", code="open('/etc/pymanus-x', 'w').write('x')"),
            call("python", code=f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"),
            call("web_fetch", url=f"http://127.0.0.1:{port}/"),
            call("terminate", status="success", message="survived"),
        ]
    )
    agent = build_manus_agent(settings_for(workspace), model=model)
    try:
        result = await agent.run("Try to escape.")
    finally:
        await agent.aclose()
        listener.close()
    assert (result.state, result.output) == (RunState.FINISHED, "survived")
    observations = [m.text for m in result.messages if m.role == "tool"][:-1]
    assert all("TOP-SECRET" not in text for text in observations)
    assert "outside the workspace" in observations[0]
    assert "FileNotFoundError" in observations[1] or "No such file" in observations[1]
    assert "Read-only file system" in observations[2] or "Permission" in observations[2]
    assert "ConnectionRefusedError" in observations[3] or "Network is unreachable" in observations[3]
    assert "not allowed" in observations[4].lower() or "allow_domains" in observations[4]
    assert received == []
    assert not Path("/etc/pymanus-x").exists()


async def test_ask_human_is_offered_only_with_someone_to_answer(tmp_path: Path) -> None:
    from pymanus.tools.builtin.human import QueueAsker

    without = build_manus_agent(settings_for(tmp_path / "a"), model=ScriptedModel([]))
    with_asker = build_manus_agent(settings_for(tmp_path / "b"), model=ScriptedModel([]), asker=QueueAsker())
    assert "ask_human" not in without.toolset and "ask_human" in with_asker.toolset
    assert "- ask_human:" in with_asker.system_prompt and "- ask_human:" not in without.system_prompt


def test_embedded_models_get_the_compact_toolset(tmp_path: Path) -> None:
    local = build_manus_agent(settings_for(tmp_path / "a"), model=ScriptedModel([], name="local:qwen2.5-coder-1.5b"))
    assert local.toolset.names == ["read_file", "write_file", "edit_file", "list_dir", "python", "terminate"]
    edit = local.toolset.get("edit_file").parameters
    assert edit["required"] == ["path", "old_text", "new_text"] and "undo" not in edit["properties"]
    assert "- web_search:" not in local.system_prompt and "- python:" in local.system_prompt
    settings = Settings.load(
        path=None,
        env={},
        overrides={"agent": {"workspace": str(tmp_path / "b")}, "web": {"allow_domains": ["docs.python.org"]}},
        cwd=tmp_path,
    )
    opened = build_manus_agent(settings, model=ScriptedModel([], name="local:qwen2.5-coder-1.5b"))
    assert "web_fetch" in opened.toolset  # the user let it on the web
    remote = build_manus_agent(settings_for(tmp_path / "c"), model=ScriptedModel([], name="openai:gpt-4o-mini"))
    assert {"find_files", "grep", "web_fetch", "web_search", "planning"} <= set(remote.toolset.names)
    other = build_manus_agent(settings_for(tmp_path / "d"), model=ScriptedModel([]))
    assert remote.system_prompt == other.system_prompt  # the same for every workspace


async def test_the_run_is_briefed_on_the_workspace_and_reminded_of_progress(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "scores.csv").write_text("player,score\nava,3\nbo,9\n")
    code = "import csv\nrows = list(csv.DictReader(open('scores.csv')))\nwrite_file('top.csv', 'player\\nbo\\n')"
    model = ScriptedModel([call("python", code=code), call("terminate", status="success", message="done")])
    task = "From scores.csv, write top.csv with the best player."
    result = await run_preset(workspace, model, task)
    assert result.state is RunState.FINISHED
    first = model.requests[0][1].text
    assert "- scores.csv (3 lines; columns: player, score; first row: ava, 3)" in first
    assert "Files written: top.csv (2 lines)." in model.requests[1][-2].text  # the python observation
    assert model.requests[1][-1].text.startswith("Files written so far: top.csv. If they complete the task")


async def test_a_final_answer_waits_for_the_tasks_check_to_pass(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def double(x):\n    return x + 2\n")
    (workspace / "check.py").write_text("from calc import double\nassert double(4) == 8, double(4)\nprint('ok')\n")
    model = ScriptedModel(
        [
            call("terminate", status="success", message="Fixed."),
            call("edit_file", path="calc.py", old_text="x + 2", new_text="x * 2"),
            call("terminate", status="success", message="Fixed."),
        ]
    )
    result = await run_preset(workspace, model, "Fix calc.py so that `python check.py` prints ok.")
    assert (result.state, result.steps) == (RunState.FINISHED, 3), result.output
    assert "`python check.py` FAILS (exit code 1)" in model.requests[0][1].text  # the briefing
    sent_back = next(m.text for m in result.messages if m.role == "tool")
    assert "The task is not finished yet: the task's check still fails" in sent_back
    assert "AssertionError: 6" in sent_back
    assert "`python check.py` passes" in model.requests[2][-1].text  # the reminder after the fix
    # The same terminate call, first sent back and then accepted, is not a repeat.
    assert "[Note: you already made this exact call" not in result.messages[-1].text


async def test_the_example_run_for_small_models_is_a_real_run(tmp_path: Path) -> None:
    """The worked example in a small model's system prompt: its code gives the result it shows."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "cart.py").write_text("class Cart:\n    pass\n")
    (tmp_path / "shop" / "models.py").write_text("import os\n\n\nclass Item:\n    name = ''\n")
    calls = [
        line.removeprefix("Call: ").split(" ", 1) for line in EXAMPLE_RUN.splitlines() if line.startswith("Call: ")
    ]
    assert [name for name, _ in calls] == ["python", "terminate"]
    runner = PythonRunner(Sandbox(tmp_path, backend="none"), session=False)
    result = await runner.tool.run(runner.tool.validate(json.loads(calls[0][1])), ToolContext(run_id="r"))
    shown = EXAMPLE_RUN.split("Result: ", 1)[1].split("\nCall: ", 1)[0]
    assert not result.is_error and result.text.startswith(shown), result.text
    assert json.loads(calls[1][1])["status"] == "success"
    local = build_manus_agent(settings_for(tmp_path), model=ScriptedModel([], name="local:test"))
    remote = build_manus_agent(settings_for(tmp_path), model=ScriptedModel([]))
    assert local.system_prompt.endswith(EXAMPLE_RUN) and EXAMPLE_RUN not in remote.system_prompt


async def test_a_second_attempt_starts_with_the_original_files_and_a_fresh_interpreter(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("keep me\n")
    model = ScriptedModel(
        [
            call("python", code="x = 41\nopen('notes.txt', 'w').write('overwritten')\nprint(x)"),
            call("terminate", status="failure", message="I cannot."),  # sent back once
            call("terminate", status="failure", message="I broke notes.txt."),
            call("python", code="print(open('notes.txt').read().strip())\nprint(x)"),
            call("terminate", status="success", message="keep me"),
        ]
    )
    result = await run_preset(workspace, model, "What does notes.txt say?")
    assert (result.state, result.output) == (RunState.FINISHED, "keep me"), result.output
    assert "I broke notes.txt." in result.messages[1].text  # the new attempt is told how the last one ended
    second_attempt_code = next(m.text for m in result.messages if m.role == "tool")
    assert "keep me" in second_attempt_code
    assert "NameError: name 'x' is not defined" in second_attempt_code
    assert (workspace / "notes.txt").read_text() == "keep me\n"


async def test_the_run_cannot_read_what_the_first_message_shows_until_a_file_changes(tmp_path: Path) -> None:
    """top_scores listed its one-file workspace three times after its code failed; data tasks read
    the CSV whose first rows they were shown, a step lost before the code that does the work."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    (workspace / "sales.csv").write_text("region,amount\n" + "North,1\n" * 30)  # its first rows are shown
    model = ScriptedModel(
        [
            call("python", code="print(1)"),
            call("write_file", path="notes.md", content="- We met.\n"),
            call("terminate", status="success", message="done"),
        ],
        name="local:test",
    )
    await run_preset(workspace, model, "Total sales.csv with stats.py.")
    opening, unchanged, changed = ({tool.name for tool in tools} for tools in model.request_tools[:3])
    assert not {"read_file", "list_dir"} & (opening | unchanged) and {"python", "write_file"} <= opening
    assert {"read_file", "list_dir"} <= changed
    remote = ScriptedModel([call("terminate", status="success", message="done")], name="openai:test")
    await run_preset(workspace, remote, "Total sales.csv with stats.py.")
    assert {"read_file", "list_dir"} <= {tool.name for tool in remote.request_tools[0]}  # one tool list
    (workspace / "notes.md").unlink()
    (workspace / "meeting.txt").write_text("We met. Maria finishes the page by March 14.\n")
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(workspace, model, "Rewrite meeting.txt as bullets.")
    opening = {tool.name for tool in model.request_tools[0]}
    assert "read_file" in opening and "list_dir" not in opening  # prose is rewritten better after a read
    (workspace / "big.txt").write_text("word " * 20_000)  # too big to show: reading it is a step worth taking
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(workspace, model, "Summarize big.txt.")
    assert {"read_file", "list_dir"} <= {tool.name for tool in model.request_tools[0]}
    empty = tmp_path / "empty"
    empty.mkdir()
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(empty, model, "Write hello.txt.")
    assert not {"read_file", "list_dir"} & {tool.name for tool in model.request_tools[0]}


async def test_code_cannot_run_before_a_change_when_the_first_message_shows_a_check_failing(tmp_path: Path) -> None:
    """add_function began with ``from textutils import slugify`` in 5 of 8 runs: an ImportError the
    first message's check output already showed, a step lost."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "textutils.py").write_text("def shout(text):\n    return text.upper()\n")
    task = 'Add slugify(title) to textutils.py. For example, slugify("A b") returns "a-b".'
    fix = "def slugify(title):\n    return '-'.join(title.lower().split())\n"
    model = ScriptedModel(
        [
            call("edit_file", path="textutils.py", old_text="", new_text="def slugify(title):\n    return title\n"),
            call("python", code="from textutils import slugify\nprint(slugify('A b'))"),
            call("edit_file", path="textutils.py", old_text="def slugify(title):\n    return title\n", new_text=fix),
        ],
        name="local:test",
    )
    result = await run_preset(workspace, model, task)
    assert (result.state, model.remaining) == (RunState.FINISHED, 0), result.output  # the check passes: done
    opening, changed = ({tool.name for tool in tools} for tools in model.request_tools[:2])
    assert "python" not in opening and "edit_file" in opening
    assert "python" in changed
    passing = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(workspace, passing, task)  # the check passes now: nothing to repeat, code may run
    assert "python" in {tool.name for tool in passing.request_tools[0]}


async def test_files_made_from_nothing_may_come_in_one_response(tmp_path: Path) -> None:
    """project_layout, one call per reply: the 1.5B began with weather/__init__.py importing cli.py, was
    refused, and spent its steps on that import. Allowed several calls, it wrote the files in one reply."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    task = "Make a package folder weather with __init__.py and cli.py, where main() prints hi, and a README.md."
    model = ScriptedModel(
        [
            [
                call("write_file", path="weather/__init__.py", content="from .cli import main\n"),
                call("write_file", path="weather/cli.py", content="def main():\n    print('hi')\n"),
            ],
            call("write_file", path="README.md", content="# weather\n\nSays hi.\n"),
            call("terminate", status="success", message="done"),
        ],
        name="local:test",
    )
    result = await run_preset(workspace, model, task)
    assert result.state is RunState.FINISHED, result.output
    assert [s.parallel_tool_calls for s in model.request_settings][:2] == [None, False]  # one a reply once written
    # Modules and a README to write from nothing: no code until a file exists (runs 222 and 231 wrote every
    # file from string literals in one python call, which broke on their quotes and line breaks).
    opening, written = ({tool.name for tool in tools} for tools in model.request_tools[:2])
    assert "python" not in opening and "write_file" in opening and "python" in written
    package, module = [m.text for m in result.messages if m.role == "tool"][:2]
    assert package.startswith("Created weather/__init__.py") and "does not exist yet" not in package
    assert module.startswith("Created weather/cli.py")
    assert (workspace / "weather" / "__init__.py").read_text() == "from .cli import main\n"
    (workspace / "data.csv").write_text("a\n1\n")  # something to read first: one call per reply
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(workspace, model, "Write a.txt and b.txt from data.csv.")
    assert model.request_settings[0].parallel_tool_calls is False
    empty = tmp_path / "empty"
    empty.mkdir()  # a script and what it prints: the output waits on the script's run
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    task = "Write squares.py that prints 1 and 4, run it, and save what it prints to squares.txt"
    await run_preset(empty, model, task)
    assert model.request_settings[0].parallel_tool_calls is False
    assert "python" in {tool.name for tool in model.request_tools[0]}
    model = ScriptedModel([call("terminate", status="success", message="done")], name="local:test")
    await run_preset(empty, model, "Write make_data.py and data.csv with 100 random rows.")  # data to compute
    assert "python" in {tool.name for tool in model.request_tools[0]}


def test_a_package_importing_a_module_another_call_of_the_reply_writes_is_not_refused(tmp_path: Path) -> None:
    jail = PathJail(tmp_path)
    tools = {t.name: t for t in file_tools(jail)}
    context = ToolContext(run_id="r", workspace=tmp_path)
    package = call("write_file", path="weather/__init__.py", content="from .cli import main\n")
    alone = asyncio.run(Toolset(tools.values()).run_calls([package], context))[0]
    assert alone.result.is_error and "does not exist yet" in alone.result.text  # cli.py is nowhere
    context = ToolContext(run_id="r", workspace=tmp_path)
    module = call("write_file", path="./weather/cli.py", content="def main():\n    print('hi')\n")
    bad = ToolCall(id="x", name="write_file", arguments="{not json")
    outcomes = asyncio.run(Toolset(tools.values()).run_calls([package, bad, module], context))
    assert [o.result.is_error for o in outcomes] == [False, True, False]
    assert "does not exist yet" not in outcomes[0].result.text
    assert RESPONSE_CALLS not in context.state  # only while the reply's calls run

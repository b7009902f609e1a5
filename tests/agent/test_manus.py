"""The Manus preset end to end with scripted models: real tools, real sandbox, real files."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from helpers.preset_cases import run_preset, settings_for
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.manus import EXAMPLE_RUN, build_manus_agent, missing_outputs
from pymanus.agent.task_checks import CheckResult
from pymanus.config import Settings
from pymanus.messages import ToolCall
from pymanus.models import ScriptedModel, call
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools.builtin.file_views import numbered_line
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.python_state import CODE_OUTPUT, CODE_RAN
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


SALES = "region,amount\nNorth,10.50\nSouth,5.25\nNorth,2.00\n"
TYPED_REPORT = "| Region | Total |\n|---|---|\n| North | 13.75 |\n| South | 5.25 |\n"  # 13.75: made up
FIXED_REPORT_CODE = (
    "import pandas as pd\n"
    "totals = pd.read_csv('sales.csv').groupby('region')['amount'].sum()\n"
    "rows = [f'| {region} | {total:.2f} |' for region, total in totals.items()]\n"
    "write_file('report.md', '\\n'.join(['| Region | Total |', '|---|---|', *rows]) + '\\n')"
)


async def test_a_report_of_typed_numbers_is_sent_back_for_a_small_model(tmp_path: Path) -> None:
    """A small model reads the CSV and writes totals it never computed: the answer goes back."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "sales.csv").write_text(SALES)
    model = ScriptedModel(
        [
            call("write_file", path="report.md", content=TYPED_REPORT),
            call("terminate", status="success", message="Done."),
            call("python", code=FIXED_REPORT_CODE),
        ],
        name="local:test",
    )
    result = await run_preset(workspace, model, "Total the amount per region of sales.csv into report.md.")
    assert "| North | 12.50 |" in (workspace / "report.md").read_text()
    # the computed report ends the run (the typed one did not)
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "done_check", 3), result.output
    sent_back = [m.text for m in result.messages if m.role == "tool"][1]
    assert "report.md was written without running any code, but its values come from sales.csv" in sent_back


async def test_a_table_typed_from_the_values_a_failed_block_showed_counts_as_computed(tmp_path: Path) -> None:
    # word_counts: the block computed every count and failed on its last line; the values shown
    # with the error were the real counts, and the 1.5B wrote them to the table by hand.
    workspace = tmp_path / "ws"
    (workspace / "texts").mkdir(parents=True)
    (workspace / "texts" / "alpha.txt").write_text("one two three\nfour five\n")
    (workspace / "texts" / "beta.txt").write_text("six seven eight nine ten eleven twelve\n")
    code = (
        "rows = []\n"
        "for name in ['texts/alpha.txt', 'texts/beta.txt']:\n"
        "    text = read_file(name)\n"
        "    rows.append((name, len(text.splitlines()), len(text.split())))\n"
        "rows.append(('total', sum(r[1] for r in rows), sum(r[2] for r in rows)))\n"
        "table = [f'| {name} | {counts[0]} |' for name, counts in rows]\n"
    )
    table = (
        "| file | lines | words |\n|---|---|---|\n| texts/alpha.txt | 2 | 5 |\n| texts/beta.txt | 1 | 7 |\n"
        "| total | 3 | 12 |\n"
    )
    model = ScriptedModel(
        [
            call("python", code=code),
            call("write_file", path="counts.md", content=table),
        ],
        name="local:test",
    )
    task = "For each .txt file in the texts folder, count its lines and words into counts.md, with a total row."
    result = await run_preset(workspace, model, task)
    failed = next(m.text for m in result.messages if m.role == "tool")
    assert "Values on line 6: rows = [('texts/alpha.txt', 2, 5), ('texts/beta.txt', 1, 7), ('total', 3, 12)]" in failed
    # the table ends the run: its numbers are what the code computed
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "done_check", 2), result.output


def test_typed_output_of_a_script_the_run_wrote_is_sent_back_with_the_command_that_saves_it(tmp_path: Path) -> None:
    # squares_script: the 1.5B typed squares.txt, then typed it again when told no code computed it.
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Write squares.py that prints the squares of 1 to 10, run it, and save what it prints to squares.txt"
    progress.task_message(task, context)
    (tmp_path / "squares.txt").write_text("\n".join(str(n * n) for n in range(1, 11)))
    alone = missing_outputs(task, "Done.", context, uncomputed=True)
    assert alone is not None and "squares.txt holds numbers that are in no input and no code computed" in alone
    assert "python squares.py" not in alone  # no script to run yet
    (tmp_path / "squares.py").write_text("for n in range(1, 11):\n    print(n * n)\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert (
        problem is not None
        and (
            "squares.txt holds numbers that are in no input and no code computed (16, 25, 36); if it is what "
            "squares.py prints, save that instead: call python with the code `python squares.py > squares.txt`"
        )
        in problem
    )


def test_uncomputed_outputs_are_checked_only_when_asked_and_no_code_ran(tmp_path: Path) -> None:
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "notes.txt").write_text("North sold 10.50 and South 5.25.\n")
    task = "Total the sales in notes.txt into report.md (in 1,000.5 units)."
    progress.task_message(task, context)
    (tmp_path / "report.md").write_text(TYPED_REPORT + "| scale | 1,000.50 |\n| copied | 10.5 |\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert (
        problem is not None and "report.md holds numbers that are in no input and no code computed (13.75)" in problem
    )
    (tmp_path / "report.md").write_text("| Region | Total |\n|---|---|\n| North | 10.50 |\n")
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None  # numbers from the input pass
    (tmp_path / "report.md").write_text("| File | Words |\n|---|---|\n| 1 | notes.txt | 101 |\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "no code computed (101)" in problem  # a count typed by hand
    (tmp_path / "report.md").write_text("The server listens on 8000.\n")
    assert missing_outputs(task, "Done.", context, uncomputed=True) is not None
    (tmp_path / "report.md").unlink()
    (tmp_path / "settings.py").write_text("PORT = 8000\n")
    progress.task_message(task, context)
    (tmp_path / "report.md").write_text("The server listens on 8000.\n")
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None  # given in an input of any kind
    (tmp_path / "settings.py").unlink()
    (tmp_path / "report.md").unlink()  # the next run starts without it: written by that run
    (tmp_path / "sales.csv").write_text(SALES)  # with data to compute from, code must run
    progress.task_message(task, context)
    (tmp_path / "report.md").write_text("| Region | Total |\n|---|---|\n| North | 7 |\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "its values come from sales.csv" in problem
    assert missing_outputs(task, "Done.", context) is None  # a larger model is not second-guessed
    context.state[CODE_RAN] = time.time()  # code ran after the report was written (within the clock slack)
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None


def test_a_file_written_by_hand_must_show_what_the_code_printed(tmp_path: Path) -> None:
    """The model typed totals, computed the real ones, and kept the typed file."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "sales.csv").write_text(SALES)
    task = "Total the amount per region of sales.csv into report.md."
    progress.task_message(task, context)
    (tmp_path / "report.md").write_text(TYPED_REPORT)
    typed_at = time.time() - 30
    os.utime(tmp_path / "report.md", (typed_at, typed_at))
    context.state[CODE_RAN] = typed_at + 10
    context.state[CODE_OUTPUT] = "region\nNorth    12.5\nSouth    5.25\n"
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None
    assert "report.md was written before any code ran, and the code's output since does not show its 13.75" in problem
    assert "write report.md again from what the code computes, in that code (write_file('report.md', text)" in problem
    context.state[CODE_OUTPUT] += "North 13.75\n"  # the typed values are what the code printed
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    context.state[CODE_OUTPUT] = ""
    (tmp_path / "report.md").write_text(TYPED_REPORT)  # typed again after the code ran, and printed by none
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "report.md was written by hand, and no code's output shows its 13.75" in problem
    context.state[CODE_OUTPUT] = "North 13.75\nSouth 5.25\n"  # values the code printed, typed into the file
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None


def test_an_input_the_run_edited_by_hand_keeps_its_own_numbers(tmp_path: Path) -> None:
    """A rename in docs/install.md leaves its "200 MB": no code computed it, and none had to."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "install.md").write_text("Skylark needs 200 MB of disk space.\n")
    task = "Rename the product Skylark to Nimbus in every file of the docs folder."
    progress.task_message(task, context)
    (tmp_path / "docs" / "install.md").write_text("Nimbus needs 200 MB of disk space.\n")
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    context.state[CODE_RAN] = time.time() + 10  # code ran after the edit: still no values to show
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None


def test_a_list_of_workspace_files_written_by_hand_is_sent_back(tmp_path: Path) -> None:
    """Files picked by their content are found by code: a small model lists every file it saw."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("# TODO: fix\n")
    (tmp_path / "src" / "b.py").write_text("x = 1\n")
    task = "Write the files under src/ that contain TODO to todo.txt."
    progress.task_message(task, context)
    (tmp_path / "todo.txt").write_text("src/a.py\n")  # one path may be an answer, not a listing
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    (tmp_path / "todo.txt").write_text("src/a.py\nsrc/b.py\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "todo.txt lists workspace files, but no code looked at them" in problem
    listed_at = time.time() - 30
    os.utime(tmp_path / "todo.txt", (listed_at, listed_at))
    context.state[CODE_RAN] = listed_at + 10  # then code looked: the list must be what it found
    context.state[CODE_OUTPUT] = "['src/a.py']\n"
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "the code's output since does not show a path it lists: write todo.txt" in problem
    context.state[CODE_OUTPUT] = "['src/a.py', 'src/b.py']\n"
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    # find_todos: code that found nothing ran, then the same typed list was written again.
    context.state[CODE_OUTPUT] = "(the code ran without error and printed nothing)\n"
    (tmp_path / "todo.txt").write_text("src/a.py\nsrc/b.py\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert (
        problem is not None
        and "todo.txt was written by hand, and no code's output shows 2 of the paths it lists: write" in problem
    )


def test_a_report_naming_every_input_is_not_a_list_of_found_files(tmp_path: Path) -> None:
    """status_summary: a summary with a section per file, written by hand, linked to each input."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "status").mkdir()
    for team in ("atlas", "beacon"):
        (tmp_path / "status" / f"{team}.txt").write_text(f"Team {team}\nBlocked: laptops.\n")
    task = "Write summary.md with a short section per team in the status folder, and a list of all blockers."
    progress.task_message(task, context)
    summary = (
        "## Atlas\nBlocked: laptops.\n## Beacon\nBlocked: laptops.\n\n[a](status/atlas.txt) [b](status/beacon.txt)\n"
    )
    (tmp_path / "summary.md").write_text(summary)
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    context.state[CODE_RAN] = time.time() - 60  # code that printed nothing ran before it was written
    context.state[CODE_OUTPUT] = "(the code ran without error and printed nothing)\n"
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    (tmp_path / "summary.md").write_text("Blocked teams: status/atlas.txt\n")  # one path is an answer
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    picking = "Which files in the status folder mention laptops? Write them to blocked.txt."
    progress.task_message(picking, context)
    (tmp_path / "blocked.txt").write_text("status/atlas.txt\nstatus/beacon.txt\n")
    problem = missing_outputs(picking, "Done.", context, uncomputed=True)
    assert problem is not None and "blocked.txt was written by hand, and no code's output shows 2 of the" in problem


def test_written_files_that_do_not_parse_send_the_answer_back(tmp_path: Path) -> None:
    """A .json, .toml or .py file the run wrote must parse and a .md table must have rows, for any task."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "old.json").write_text("{not json")  # there before the run: not the run's to fix
    task = "Set up the project."
    progress.task_message(task, context)
    (tmp_path / "products.json").write_text("{'name': 'bolt'}")
    (tmp_path / "pyproject.toml").write_text("[project]\nname weather\n")
    (tmp_path / "cli.py").write_text("def main(:\n    pass\n")
    (tmp_path / "notes.md").write_text("{not json either}")
    (tmp_path / "counts.md").write_text("# Counts\n\n| file | lines |\n|------|-------|\n\n# Again\n")
    # A header written by hand above the one DataFrame.to_markdown() writes.
    stacked = "## Totals\n| Region | Total |\n|---|---|\n|  | region | total |\n|---:|:---|---:|\n| 0 | East | 4.5 |\n"
    (tmp_path / "report.md").write_text(stacked)
    (tmp_path / "todo.txt").write_text("'\\n'.join(p for p in os.listdir('src'))")  # the code, not its result
    (tmp_path / "squares.py").write_text("for i in range(1, 11):\n    print(math.pow(i, 2))\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "cli.py").write_text("def test_main():\n    assert True\n")  # no runner collects it
    problem = missing_outputs(task, "Done.", context)
    assert problem is not None
    assert "report.md is not valid Markdown (the table at line 2 has a second header at line 4" in problem
    assert "its header and |---| line included, so write no header of your own before it" in problem
    assert "todo.txt holds Python code, not what the code computes" in problem
    assert "squares.py: line 2 calls math.pow, which always returns a float" in problem
    assert "so they will not run tests/cli.py; name it tests/test_cli.py" in problem
    assert "counts.md is not valid Markdown (the table at line 3 has a header and no rows: write the whole" in problem
    assert "cli.py is not valid Python (invalid syntax at line 1)" in problem
    assert "products.json is not valid JSON (Expecting property name enclosed in double quotes" in problem
    assert "pyproject.toml is not valid TOML (Expected '=' after a key" in problem
    assert "old.json" not in problem and "notes.md" not in problem
    (tmp_path / "products.json").write_text('[{"name": "bolt"}]')
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "weather"\n')
    (tmp_path / "cli.py").write_text("def main():\n    pass\n")
    (tmp_path / "counts.md").write_text("| file | lines |\n| :--- | ---: |\n| a.txt | 3 |\n\n---\nThe end.\n")
    two_tables = "| region | total |\n|---|---|\n| East | 4.5 |\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    (tmp_path / "report.md").write_text(two_tables)
    (tmp_path / "todo.txt").write_text("src/app/main.py\n")
    (tmp_path / "squares.py").write_text("for i in range(1, 11):\n    print(i ** 2)\n")
    (tmp_path / "tests" / "cli.py").rename(tmp_path / "tests" / "test_cli.py")
    assert missing_outputs(task, "Done.", context) is None


def test_a_file_holding_a_tools_numbered_lines_sends_the_answer_back(tmp_path: Path) -> None:
    """What read_file showed, copied into a file line numbers and all, is no file content."""
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Write the files that contain TODO to todo_files.txt."
    progress.task_message(task, context)
    shown = "\n".join(numbered_line(n, text) for n, text in enumerate(["def main():", "    # TODO", "    return 1"], 1))
    (tmp_path / "todo_files.txt").write_text(f"src/app/main.py (lines 1-3 of 3):\n{shown}\n")
    problem = missing_outputs(task, "Done.", context)
    assert problem is not None
    assert "todo_files.txt holds lines copied from a tool's output, with the line numbers the tool shows" in problem
    (tmp_path / "todo_files.txt").write_text("src/app/main.py\n")
    (tmp_path / "ids.tsv").write_text("1\tAna\n2\tBen\n")  # a TSV whose first column is a number is data
    assert missing_outputs(task, "Done.", context) is None


def test_an_answer_with_a_number_no_file_or_code_output_holds_is_sent_back(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "servers.ini").write_text("[staging]\nport = 9090\n")
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Which port does the staging server use?"
    progress.task_message(task, context)
    problem = missing_outputs(task, "The staging server uses port 9091.", context, uncomputed=True)
    assert problem is not None and "your answer gives 9091, which is in no file, in no output of your code" in problem
    assert missing_outputs(task, "The staging server uses port 9090.", context, uncomputed=True) is None
    assert missing_outputs(task, "It uses port 9091.", context) is None  # a larger model is not second-guessed
    context.state[CODE_OUTPUT] = "\nports: 9091, 9092\n"  # a number the run's code printed is founded
    assert missing_outputs(task, "It uses port 9091.", context, uncomputed=True) is None
    failing = CheckResult("python -m unittest test_ports", False, "exit code 1", "AssertionError: 9093 != 9090")
    answer = "The test still fails: 9093 != 9090."  # numbers a check printed are founded too
    problem = missing_outputs(task, answer, context, [failing], uncomputed=True)
    assert problem is not None and "your answer gives" not in problem and "the task's check still fails" in problem


async def test_a_file_the_code_wrote_before_it_failed_counts_as_computed(tmp_path: Path) -> None:
    """Run 38's customer totals: json written, then ``print(dict + str)`` failed, so no code had run "without
    error", and the computed totals were sent back as typed by hand."""
    (tmp_path / "orders.json").write_text('[{"customer": "Ana", "total": 12.5}, {"customer": "Ana", "total": 1.3}]')
    context = ToolContext(run_id="r", workspace=tmp_path)
    task = "Save what each customer spent to totals.json."
    progress.task_message(task, context)
    runner = PythonRunner(Sandbox(tmp_path, backend="none"), session=False)
    code = (
        "orders = json.loads(read_file('orders.json'))\n"
        "totals = {'Ana': round(sum(o['total'] for o in orders) * 3, 2)}\n"
        "write_file('totals.json', json.dumps(totals))\n"
        "print(totals + '\\n')"
    )
    result = await runner.tool.run(runner.tool.validate({"code": code}), context)
    assert result.is_error and "TypeError" in result.text and CODE_RAN not in context.state
    assert missing_outputs(task, "Done.", context, uncomputed=True) is None
    (tmp_path / "totals.json").write_text('{"Ana": 99.99}')  # then typed over by hand
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "totals.json" in problem


async def test_what_the_code_printed_is_kept_for_the_answer_check(tmp_path: Path) -> None:
    runner = PythonRunner(Sandbox(tmp_path, backend="none"), session=False)
    context = ToolContext(run_id="r", workspace=tmp_path)
    for code in ("print(6 * 7)", "print(1 / 0)"):
        await runner.tool.run(runner.tool.validate({"code": code}), context)
    assert "42" in context.state[CODE_OUTPUT] and "ZeroDivisionError" in context.state[CODE_OUTPUT]


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

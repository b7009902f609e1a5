"""Results the run must compute, not type: answers and files are checked against what code computed and printed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from helpers.preset_cases import run_preset
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.manus import missing_outputs
from pymanus.agent.task_checks import CheckResult
from pymanus.models import ScriptedModel, call
from pymanus.sandbox import Sandbox
from pymanus.tools.builtin.file_views import numbered_line
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.python_state import CODE_OUTPUT, CODE_RAN
from pymanus.tools.tool import ToolContext

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
    # word_counts run 230: the failed code in a fence, its r'\\n' a raw line break from the JSON.
    fenced = "```json\nrows = []\nfor name in os.listdir('texts'):\n    rows.append(re.findall(r'\n', name))```"
    (tmp_path / "words.md").write_text(fenced)
    (tmp_path / "squares.py").write_text("import math\nfor i in range(1, 11):\n    print(math.pow(i, 2))\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "cli.py").write_text("def test_main():\n    assert True\n")  # no runner collects it
    problem = missing_outputs(task, "Done.", context)
    assert problem is not None
    assert "report.md is not valid Markdown (the table at line 2 has a second header at line 4" in problem
    assert "its header and |---| line included, so write no header of your own before it" in problem
    assert "todo.txt holds Python code, not what the code computes" in problem
    assert "words.md holds Python code, not what the code computes" in problem
    assert "squares.py: line 3 calls math.pow, which always returns a float" in problem
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
    (tmp_path / "words.md").write_text("| file | words |\n|---|---|\n| a.txt | 3 |\n")
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

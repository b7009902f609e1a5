"""The evidence that ends a run of the preset without a ``terminate`` step, and the answer it gives."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.preset_cases import run_preset
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.done_check import SHOWN_CHARS, done_answer, done_evidence
from pymanus.agent.task_checks import CheckResult
from pymanus.models import ScriptedModel, call
from pymanus.tools.tool import ToolContext

UNITTEST = "python -m unittest test_stats"


def started(workspace: Path, task: str, checks: list[CheckResult] | None = None) -> ToolContext:
    """A context briefed on ``task`` as a run's first message would be."""
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(task, context, checks or [])
    return context


def check(passed: bool) -> CheckResult:
    return CheckResult(UNITTEST, passed, "exit code 0" if passed else "exit code 1", "")


def test_a_named_file_the_run_created_is_evidence(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("region,amount\nNorth,3\n")
    task = "Read sales.csv and write the total to total.txt."
    context = started(tmp_path, task)
    assert not done_evidence(task, context, [])  # nothing written yet
    (tmp_path / "total.txt").write_text("3\n")
    assert done_evidence(task, context, [])


def test_a_named_file_that_was_there_already_is_not_evidence(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("old\n")
    task = "Update report.md with this week's numbers."
    context = started(tmp_path, task)
    (tmp_path / "report.md").write_text("new\n")
    assert not done_evidence(task, context, [])


def test_a_check_that_failed_at_the_start_and_passes_now_is_evidence(tmp_path: Path) -> None:
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return 0\n")
    task = f"Fix stats.py so that `{UNITTEST}` passes."
    context = started(tmp_path, task, [check(False)])
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    assert not done_evidence(task, context, [check(False)])
    assert done_evidence(task, context, [check(True)])


def test_a_check_that_passed_from_the_start_proves_nothing(tmp_path: Path) -> None:
    # "Add docstrings; the tests must still pass": passing tests do not say the docstrings are written.
    (tmp_path / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    task = f"Add a docstring to every function in stats.py; `{UNITTEST}` must still pass."
    context = started(tmp_path, task, [check(True)])
    (tmp_path / "stats.py").write_text('def mean(xs):\n    """The mean."""\n    return sum(xs) / len(xs)\n')
    assert not done_evidence(task, context, [check(True)])


def test_a_rename_done_everywhere_is_evidence(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Skylark is fast.\n")
    (tmp_path / "docs" / "b.md").write_text("Use Skylark.\n")
    task = "Our product was renamed from Skylark to Nimbus. Update the docs folder."
    context = started(tmp_path, task)
    (tmp_path / "docs" / "a.md").write_text("Nimbus is fast.\n")
    assert not done_evidence(task, context, [])  # b.md still says Skylark
    (tmp_path / "docs" / "b.md").write_text("Use Nimbus.\n")
    assert done_evidence(task, context, [])


def test_tasks_that_want_a_reply_in_words_go_on_to_the_models_answer(tmp_path: Path) -> None:
    (tmp_path / "inventory.csv").write_text("item,stock\na,3\n")
    for task in (
        "Write low.txt with the items low in stock, and tell me how many there are.",
        "Save the items low in stock to low.txt. How many are there?",
        "How many items are low in stock?",
    ):
        context = started(tmp_path, task)
        (tmp_path / "low.txt").write_text("a\n")
        assert not done_evidence(task, context, []), task
        (tmp_path / "low.txt").unlink()
    # a question the saved file answers, followed by where to save it, is not a reply in words
    task = "What is the mean of the stock column in inventory.csv? Save it to mean.json as {'mean': ...}."
    context = started(tmp_path, task)
    (tmp_path / "mean.json").write_text('{"mean": 3}')
    assert done_evidence(task, context, [])


def test_the_answer_lists_what_was_written_and_quotes_short_files(tmp_path: Path) -> None:
    context = started(tmp_path, "task")
    (tmp_path / "stats.json").write_text(json.dumps({"mean": 21.43, "median": 21.5}))
    (tmp_path / "big.txt").write_text("x" * (SHOWN_CHARS + 1))
    answer = done_answer(context)
    assert answer.startswith("Done. Files written: big.txt, stats.json.")
    assert 'stats.json:\n{"mean": 21.43, "median": 21.5}' in answer
    assert "xxx" not in answer


STATS_CODE = (
    "import csv, json, statistics\n"
    "values = [float(row['t']) for row in csv.DictReader(open('readings.csv'))]\n"
    "json.dump({'mean': round(statistics.mean(values), 2)}, open('stats.json', 'w'))\n"
)
TASK = "Compute the mean of the t column in readings.csv and save it to stats.json as {'mean': ...}."


async def test_an_embedded_model_run_ends_when_its_output_is_written(tmp_path: Path) -> None:
    (tmp_path / "readings.csv").write_text("t\n1\n2\n4\n")
    model = ScriptedModel([call("python", code=STATS_CODE)], name="local:test")
    result = await run_preset(tmp_path, model, TASK)
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "done_check", 1), result.output
    assert 'stats.json:\n{"mean": 2.33}' in result.output


async def test_an_output_the_completion_check_rejects_does_not_end_the_run(tmp_path: Path) -> None:
    (tmp_path / "readings.csv").write_text("t\n1\n2\n4\n")
    model = ScriptedModel(
        [
            call("write_file", path="stats.json", content='[{"mean": 2.33}]'),  # a list, not the object asked for
            call("python", code=STATS_CODE),
        ],
        name="local:test",
    )
    result = await run_preset(tmp_path, model, TASK)
    assert (result.state, result.reason, result.steps) == (RunState.FINISHED, "done_check", 2), result.output


async def test_a_hosted_model_gives_its_own_final_answer(tmp_path: Path) -> None:
    (tmp_path / "readings.csv").write_text("t\n1\n2\n4\n")
    model = ScriptedModel(
        [call("python", code=STATS_CODE), call("terminate", status="success", message="The mean is 2.33.")],
        name="openai:gpt-4o-mini",
    )
    result = await run_preset(tmp_path, model, TASK)
    assert (result.reason, result.output, result.steps) == ("terminate", "The mean is 2.33.", 2)

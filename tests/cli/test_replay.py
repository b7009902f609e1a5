"""``pymanus run --record`` then ``pymanus replay``: real subprocesses, a real local chat-completions server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers.chat_server import ChatServer, completion, tool_call
from helpers.cli_cases import run_cli

TASK = "Sum the amounts of sales.csv into total.txt."
CODE = (
    "import csv\n"
    "rows = list(csv.DictReader(open('sales.csv')))\n"
    "open('total.txt', 'w').write(str(sum(float(r['amount']) for r in rows)))\n"
    "print(len(rows), 'rows')\n"
)


def record(tmp_path: Path, server: ChatServer, *extra: str) -> Path:
    """Record a three-step run of :data:`TASK` to ``tape.json``; the workspace starts with sales.csv."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,5\n")
    server.push(
        completion(tool_calls=[tool_call("read_file", {"path": "sales.csv"})]),
        completion(tool_calls=[tool_call("python", {"code": CODE})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "total.txt holds 15.0"})]),
    )
    proc = run_cli(["run", "--record", "tape.json", "--model", "openai:any", *extra, TASK], tmp_path, server)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "tape.json"


def edit(tape: Path, change: Any) -> None:
    data = json.loads(tape.read_text())
    change(data)
    tape.write_text(json.dumps(data))


def replay(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """``pymanus replay tape.json --json ARGS`` with no endpoint configured: exit code, verdict, stderr."""
    proc = run_cli(["replay", "tape.json", "--json", *args], tmp_path)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_a_recorded_run_replays_without_the_model(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    cassette = json.loads(tape.read_text())
    run = cassette["run"]
    assert (run["task"], list(run["files"]), run["outcome"]["state"]) == (TASK, ["sales.csv"], "finished")
    assert run["settings"]["model"]["api_key"] == "" and run["settings"]["model"]["base_url"] == ""
    assert len(cassette["exchanges"]) == 3 and "python" in cassette["tools"]
    requests = len(chat_server_thread.requests)

    for mode in ([], ["--strict"]):
        code, verdict, stderr = replay(tmp_path, *mode)
        assert code == 0, stderr
        assert verdict["reproduced"] is True and verdict["difference"] is None
        assert verdict["answers"] == {"recorded": 3, "replayed": 3}
        assert (verdict["state"], verdict["output"], verdict["steps"]) == ("finished", "total.txt holds 15.0", 3)
        assert verdict["changes"] == [{"path": "total.txt", "change": "created", "size_before": None, "size_after": 4}]
        assert verdict["workspace"] is None  # a temporary folder, gone
    assert len(chat_server_thread.requests) == requests  # no model was asked

    proc = run_cli(["replay", "tape.json", "--workspace", "again"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "reproduced: 3 recorded answers replayed, ended finished (terminate) as recorded" in proc.stdout
    assert (tmp_path / "again" / "total.txt").read_text() == "15.0"  # the replay's tools really ran
    assert (tmp_path / "workspace" / "sales.csv").exists()


def test_a_strict_replay_names_a_changed_prompt(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    # As if the system prompt had said something else when the run was recorded.
    edit(tape, lambda data: [e["messages"][0].update(content="You are OldManus.") for e in data["exchanges"]])
    code, verdict, _ = replay(tmp_path, "--strict")
    assert code == 1 and verdict["reproduced"] is False
    assert verdict["difference"].startswith(
        "request 1 differs from the cassette: message 0 (system): now 'You are PyManus"
    )
    assert "recorded 'You are OldManus.'" in verdict["difference"]
    assert verdict["answers"]["replayed"] == 0 and verdict["state"] == "error"
    code, verdict, _ = replay(tmp_path)  # without --strict the same answers still reproduce the run
    assert code == 0 and verdict["reproduced"] is True


def test_a_strict_replay_names_a_changed_toolset(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    edit(tape, lambda data: data["tools"]["python"].update(description="Run Python code (old wording)."))
    code, verdict, _ = replay(tmp_path, "--strict")
    assert code == 1
    assert verdict["difference"].startswith("request 1 differs from the cassette: the description of tool `python`")

    edit(tape, lambda data: [e["tools"].remove("grep") for e in data["exchanges"]])
    proc = run_cli(["replay", "tape.json", "--strict"], tmp_path)
    assert proc.returncode == 1
    assert "not reproduced: request 1 differs from the cassette: tools ['read_file'" in proc.stdout


def test_a_strict_replay_names_a_different_workspace(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    record(tmp_path, chat_server_thread)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,5\neast,1\n")
    code, verdict, _ = replay(tmp_path, "--strict", "--workspace", "other")  # a folder with files is used as it is
    assert code == 1 and "message 1 (user)" in verdict["difference"]
    assert verdict["workspace"] == str(tmp_path / "other")


def test_a_run_that_needs_more_answers_than_recorded(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    edit(tape, lambda data: data["exchanges"].pop())
    code, verdict, _ = replay(tmp_path)
    assert code == 1
    assert verdict["difference"] == "request 3: the cassette has no answer left (2 recorded)"
    assert (verdict["state"], verdict["recorded"]["state"]) == ("error", "finished")


def test_a_different_ending_is_not_a_reproduction(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    edit(tape, lambda data: data["run"]["outcome"].update(output="total.txt holds 16.0"))
    code, verdict, _ = replay(tmp_path)
    assert code == 1
    assert verdict["difference"] == "the run's output differs: 'total.txt holds 15.0'; recorded: 'total.txt holds 16.0'"


def test_a_workspace_too_large_to_store_needs_one_given(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "big.bin").write_bytes(b"\0" * (6 * 1024 * 1024))
    chat_server_thread.push(completion("Nothing to do."))
    proc = run_cli(["run", "--record", "tape.json", "--model", "openai:any", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    assert "warning: the cassette holds no starting files (the workspace holds 6.0 MB (at most 5 MB))" in proc.stderr
    code, _, stderr = replay(tmp_path)
    assert code == 2 and "replay it with --workspace DIR" in stderr
    code, verdict, stderr = replay(tmp_path, "--workspace", "workspace")
    assert code == 0 and verdict["reproduced"] is True, stderr


# -- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read cassette tape.json: No such file or directory"),
        ("{not json", "tape.json is not a cassette: invalid JSON"),
        ('{"region": "north"}', "tape.json is not a cassette: it has no exchanges"),
        ('{"exchanges": 3}', "tape.json is not a cassette: exchanges: Input should be a valid array"),
        ('{"version": 9, "exchanges": []}', "tape.json is a cassette of version 9; this PyManus reads version 1"),
        (
            '{"version": 1, "exchanges": []}',
            "holds model exchanges but no task: record a run with `pymanus run --record`",
        ),
        ('{"exchanges": [], "run": {"task": 3}}', "tape.json: the recorded run is unreadable: task"),
    ],
)
def test_a_bad_cassette_exits_2_with_one_line(tmp_path: Path, content: str | None, message: str) -> None:
    if content is not None:
        (tmp_path / "tape.json").write_text(content)
    proc = run_cli(["replay", "tape.json"], tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_a_cassette_that_is_a_folder_exits_2(tmp_path: Path) -> None:
    (tmp_path / "tape.json").mkdir()
    proc = run_cli(["replay", "tape.json"], tmp_path)
    assert proc.returncode == 2 and "cannot read cassette tape.json: Is a directory" in proc.stderr


def test_a_cassette_file_outside_the_workspace_is_refused(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    tape = record(tmp_path, chat_server_thread)
    edit(tape, lambda data: data["run"]["files"].update({"../escaped.txt": "aGk="}))
    code, _, stderr = replay(tmp_path, "--workspace", "fresh")
    assert code == 2 and "the cassette's file '../escaped.txt' is outside the workspace" in stderr
    assert not (tmp_path / "escaped.txt").exists()


def test_a_workspace_that_is_a_file_exits_2(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    record(tmp_path, chat_server_thread)
    (tmp_path / "notes.txt").write_text("x")
    code, _, stderr = replay(tmp_path, "--workspace", "notes.txt")
    assert code == 2 and "the workspace notes.txt is not a folder" in stderr


def test_a_cassette_that_cannot_be_written_exits_2_before_the_run(
    chat_server_thread: ChatServer, tmp_path: Path
) -> None:
    args = ["run", "--record", "no/such/folder/tape.json", "--model", "openai:any", "x"]
    proc = run_cli(args, tmp_path, chat_server_thread)
    assert proc.returncode == 2
    assert "cannot write cassette no/such/folder/tape.json: No such file or directory" in proc.stderr
    assert chat_server_thread.requests == []

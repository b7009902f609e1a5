"""``pymanus run`` says what it changed; ``pymanus diff | undo | gc`` read and use the journal (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from cli.test_run import run_cli
from helpers.chat_server import ChatServer, completion, tool_call

DATA = "name,city\r\nJosé,São Paulo\r\n".encode()
DELETE_AND_CREATE = "import os\nos.remove('old.txt')\nopen('report.csv', 'w').write('total\\n3\\n')\n"


def workspace_with_inputs(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "data.csv").write_bytes(DATA)
    (workspace / "old.txt").write_text("old\n")
    return workspace


def scripted_run(server: ChatServer, tmp_path: Path, *flags: str) -> tuple[int, str, str]:
    server.push(
        completion(tool_calls=[tool_call("write_file", {"path": "data.csv", "content": "name,city\n"})]),
        completion(tool_calls=[tool_call("python", {"code": DELETE_AND_CREATE})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "Done."})]),
    )
    proc = run_cli(["run", "--model", "openai:any", *flags, "Update the files."], tmp_path, server)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_run_reports_its_changes_and_undo_puts_them_back(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    code, out, err = scripted_run(chat_server_thread, tmp_path, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["changes"] == [
        {"path": "data.csv", "change": "modified", "size_before": len(DATA), "size_after": 10},
        {"path": "old.txt", "change": "deleted", "size_before": 4, "size_after": None},
        {"path": "report.csv", "change": "created", "size_before": None, "size_after": 8},
    ]
    assert "3 files changed: ~data.csv -old.txt +report.csv" in err  # progress goes to stderr with --json
    run_id = summary["run_id"]

    diff = run_cli(["diff", run_id, "--workspace", str(workspace)], tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert "--- a/data.csv\n+++ b/data.csv\n" in diff.stdout
    assert "-José,São Paulo" in diff.stdout
    assert "--- /dev/null\n+++ b/report.csv\n" in diff.stdout

    undo = run_cli(["undo", run_id, "--workspace", str(workspace)], tmp_path)
    assert undo.returncode == 0, undo.stderr
    assert "restored data.csv, old.txt; removed report.csv" in undo.stdout
    assert (workspace / "data.csv").read_bytes() == DATA
    assert (workspace / "old.txt").read_text() == "old\n"
    assert not (workspace / "report.csv").exists()

    again = run_cli(["undo", run_id, "--workspace", str(workspace)], tmp_path)
    assert again.returncode == 1
    assert "Nothing to undo" in again.stderr


def test_the_end_of_the_progress_names_the_files_changed(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace_with_inputs(tmp_path)
    code, out, err = scripted_run(chat_server_thread, tmp_path)
    assert code == 0, err
    assert out.rstrip().splitlines()[-1] == "3 files changed: ~data.csv -old.txt +report.csv"


def test_undo_leaves_a_file_the_user_changed_unless_forced(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    code, out, err = scripted_run(chat_server_thread, tmp_path, "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    (workspace / "data.csv").write_text("mine\n")
    undo = run_cli(["undo", run_id, "-w", str(workspace)], tmp_path)
    assert undo.returncode == 1
    assert "Left alone, changed since the run (--force restores them): data.csv" in undo.stderr
    assert (workspace / "data.csv").read_text() == "mine\n"
    assert (workspace / "old.txt").exists()
    forced = run_cli(["undo", run_id, "-w", str(workspace), "--force"], tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (workspace / "data.csv").read_bytes() == DATA


def test_undo_from_a_step(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    code, out, err = scripted_run(chat_server_thread, tmp_path, "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    undo = run_cli(["undo", run_id, "-w", str(workspace), "--step", "2"], tmp_path)
    assert undo.returncode == 0, undo.stderr
    assert (workspace / "data.csv").read_text() == "name,city\n"  # step 1 stays
    assert (workspace / "old.txt").exists() and not (workspace / "report.csv").exists()


def test_unknown_run_ids_and_bad_flags_exit_2_with_one_line(tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    for command in (["undo", "abc123"], ["diff", "abc123"]):
        proc = run_cli([*command, "--workspace", str(workspace)], tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.startswith("pymanus: error: no run 'abc123' in the journal of")
        assert len(proc.stderr.strip().splitlines()) == 1
    step = run_cli(["undo", "abc123", "--workspace", str(workspace), "--step", "0"], tmp_path)
    assert step.returncode == 2
    missing = run_cli(["undo", "abc123", "--workspace", str(tmp_path / "nowhere")], tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_a_run_that_changed_nothing(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    chat_server_thread.push(
        completion(tool_calls=[tool_call("read_file", {"path": "data.csv"})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "Read it."})]),
    )
    proc = run_cli(["run", "--model", "openai:any", "--json", "Read data.csv."], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["changes"] == []
    assert "changed:" not in proc.stderr
    undo = run_cli(["undo", summary["run_id"], "-w", str(workspace)], tmp_path)
    assert undo.returncode == 1 and "Nothing to undo" in undo.stderr
    diff = run_cli(["diff", summary["run_id"], "-w", str(workspace)], tmp_path)
    assert diff.returncode == 0 and diff.stdout.strip() == f"Run {summary['run_id']} changed no files."


def test_gc_prunes_old_journals(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    workspace = workspace_with_inputs(tmp_path)
    ids = []
    for n in range(2):
        chat_server_thread.push(
            completion(tool_calls=[tool_call("write_file", {"path": "data.csv", "content": f"v{n}\n"})]),
            completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "ok"})]),
        )
        proc = run_cli(["run", "--model", "openai:any", "--json", "Write."], tmp_path, chat_server_thread)
        ids.append(json.loads(proc.stdout)["run_id"])
    gc = run_cli(["gc", "-w", str(workspace), "--keep", "1"], tmp_path)
    assert gc.returncode == 0, gc.stderr
    assert gc.stdout.startswith("Removed 1 journal and 1 saved copy")
    assert run_cli(["undo", ids[0], "-w", str(workspace)], tmp_path).returncode == 2
    assert run_cli(["undo", ids[1], "-w", str(workspace)], tmp_path).returncode == 0
    assert (workspace / "data.csv").read_text() == "v0\n"


def test_undo_of_a_run_whose_saved_copy_is_damaged_names_the_file(
    chat_server_thread: ChatServer, tmp_path: Path
) -> None:
    workspace = workspace_with_inputs(tmp_path)
    code, out, err = scripted_run(chat_server_thread, tmp_path, "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    for pack in (workspace / ".pymanus" / "packs").iterdir():  # the saved copy of old.txt
        pack.write_bytes(pack.read_bytes().replace(b"old\n", b"OLD\n"))
    undo = run_cli(["undo", run_id, "-w", str(workspace)], tmp_path)
    assert undo.returncode == 1
    assert undo.stderr.startswith("pymanus: error: cannot restore old.txt: its saved copy")
    assert "corrupted" in undo.stderr and len(undo.stderr.strip().splitlines()) == 1
    assert (workspace / "data.csv").read_text() == "name,city\n"  # nothing touched
    assert (workspace / "report.csv").exists()

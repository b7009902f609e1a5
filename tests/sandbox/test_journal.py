"""The change journal end to end: the Manus preset with a scripted model, real tools, a real sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.journal_cases import DATA, OLD, make_workspace, run_script, three_changes
from helpers.preset_cases import settings_for
from helpers.sandbox_backends import CONFINED, landlock_hide_problem
from pymanus import FilesChanged, RunState
from pymanus.config import Settings
from pymanus.models import FunctionModel, call
from pymanus.sandbox.blobs import BlobStore
from pymanus.sandbox.history import collect_garbage, diff_run, undo_run
from pymanus.sandbox.journal import STATE_DIR, JournalError
from pymanus.sandbox.watch import WorkspaceWatch


def blobs(workspace: Path) -> list[str]:
    return sorted(BlobStore(workspace / STATE_DIR).all())


@pytest.fixture(params=["inotify", "walk"])
def watching(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Code calls are compared by what inotify names, or (without it) by walking the workspace."""
    if request.param == "walk":
        monkeypatch.setattr(WorkspaceWatch, "start", classmethod(lambda cls, root: None))
    elif WorkspaceWatch.start(Path(".")) is None:
        pytest.skip("inotify is not available here")
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


async def test_a_run_lists_its_changes_and_undo_restores_exact_bytes(workspace: Path, watching: str) -> None:
    result, events = await three_changes(workspace)
    assert result.state is RunState.FINISHED, result.output
    changes = {c.path: (c.change, c.size_before, c.size_after) for c in result.changes}
    assert changes == {
        "data.csv": ("modified", len(DATA), 10),
        "old.txt": ("deleted", len(OLD), None),
        "report.csv": ("created", None, 8),
    }
    steps = [(e.step, [c.path for c in e.changes]) for e in events if isinstance(e, FilesChanged)]
    assert steps == [(1, ["data.csv"]), (2, ["old.txt", "report.csv"])]
    assert result.summary()["changes"][0] == {
        "path": "data.csv",
        "change": "modified",
        "size_before": len(DATA),
        "size_after": 10,
    }

    report = undo_run(workspace, result.run_id)
    assert sorted(report.restored) == ["data.csv", "old.txt"]
    assert report.removed == ["report.csv"]
    assert (workspace / "data.csv").read_bytes() == DATA  # CRLF and non-ASCII text, byte for byte
    assert (workspace / "old.txt").read_bytes() == OLD
    assert not (workspace / "report.csv").exists()

    again = undo_run(workspace, result.run_id)
    assert not again.done and not again.refused

    # The undo was recorded: undoing it puts the run's changes back.
    redo = undo_run(workspace, report.undo_id or "")
    assert redo.done
    assert (workspace / "data.csv").read_text() == "name,city\n"
    assert not (workspace / "old.txt").exists()


async def test_a_file_the_user_changed_after_the_run_is_refused_unless_forced(workspace: Path) -> None:
    result, _ = await three_changes(workspace)
    (workspace / "data.csv").write_text("the user's own edit\n")
    report = undo_run(workspace, result.run_id)
    assert report.refused == ["data.csv"]
    assert (workspace / "data.csv").read_text() == "the user's own edit\n"
    assert (workspace / "old.txt").read_bytes() == OLD  # the rest was undone
    forced = undo_run(workspace, result.run_id, force=True)
    assert forced.restored == ["data.csv"]
    assert (workspace / "data.csv").read_bytes() == DATA
    # Even the user's edit is kept: undoing the forced undo brings it back.
    undo_run(workspace, forced.undo_id or "")
    assert (workspace / "data.csv").read_text() == "the user's own edit\n"


async def test_undo_from_a_step_keeps_the_earlier_steps(workspace: Path) -> None:
    result, _ = await three_changes(workspace)
    report = undo_run(workspace, result.run_id, from_step=2)
    assert (report.restored, report.removed) == (["old.txt"], ["report.csv"])
    assert (workspace / "data.csv").read_text() == "name,city\n"


async def test_a_run_that_changed_nothing_has_nothing_to_undo(workspace: Path) -> None:
    result, events = await run_script(
        workspace, [call("read_file", path="data.csv"), call("terminate", status="success", message="ok")]
    )
    assert result.changes == []
    assert not any(isinstance(e, FilesChanged) for e in events)
    report = undo_run(workspace, result.run_id)
    assert not report.done and not report.refused
    assert diff_run(workspace, result.run_id) == ""


def test_an_unknown_run_id_is_a_clear_error(workspace: Path) -> None:
    with pytest.raises(JournalError, match="no run 'nope' in the journal"):
        undo_run(workspace, "nope")
    with pytest.raises(JournalError, match="not a run id"):
        undo_run(workspace, "../../etc/passwd")


@pytest.mark.parametrize("damage", ["missing", "corrupted"])
async def test_a_damaged_blob_stops_the_undo_before_anything_is_touched(workspace: Path, damage: str) -> None:
    result, _ = await three_changes(workspace)
    journal = workspace / STATE_DIR / "runs" / f"{result.run_id}.jsonl"
    entry = next(json.loads(line) for line in journal.read_text().splitlines()[1:] if '"old.txt"' in line)
    [pack] = [p for p in (workspace / STATE_DIR / "packs").iterdir() if entry["before"].encode() in p.read_bytes()]
    record = f"{entry['before']} {len(OLD)}\n".encode() + OLD
    damaged = b"" if damage == "missing" else record.replace(OLD, b"tampered".ljust(len(OLD)))
    pack.write_bytes(pack.read_bytes().replace(record, damaged))
    with pytest.raises(JournalError, match=f"cannot restore old.txt: .*{damage}"):
        undo_run(workspace, result.run_id)
    assert (workspace / "data.csv").read_text() == "name,city\n"  # nothing else touched
    assert (workspace / "report.csv").exists()


async def test_a_moved_workspace_still_undoes(workspace: Path) -> None:
    result, _ = await three_changes(workspace)
    moved = workspace.parent / "elsewhere"
    shutil.move(workspace, moved)
    report = undo_run(moved, result.run_id)
    assert report.done
    assert (moved / "data.csv").read_bytes() == DATA
    assert (moved / "old.txt").read_bytes() == OLD


async def test_a_large_file_changed_twice_adds_two_blobs(workspace: Path, watching: str) -> None:
    (workspace / "big.bin").write_bytes(b"\x00" * (50 << 20))
    before = len(blobs(workspace))
    grow = "with open('big.bin', 'r+b') as f:\n    f.seek({at})\n    f.write(b'x')\n"
    result, _ = await run_script(
        workspace,
        [
            call("python", code="print(1)"),  # the first sandbox call saves every file once
            call("python", code=grow.format(at=1)),
            call("python", code=grow.format(at=2)),
            call("terminate", status="success", message="ok"),
        ],
    )
    assert [c.path for c in result.changes] == ["big.bin"]
    files = [BlobStore(workspace / STATE_DIR).path(sha) for sha in blobs(workspace)]
    big = [file for file in files if file.is_file() and file.stat().st_size == 50 << 20]
    assert len(big) == 2  # the original and the intermediate content; the last is in the file itself
    assert len(blobs(workspace)) - before == 4  # and the two small files, once each
    undo_run(workspace, result.run_id)
    assert (workspace / "big.bin").read_bytes() == b"\x00" * (50 << 20)


@pytest.mark.parametrize("backend", [*CONFINED, "none"])
async def test_read_only_paths_cannot_be_changed(workspace: Path, backend: str) -> None:
    (workspace / "README.md").write_text("keep me\n")
    (workspace / "data").mkdir()
    (workspace / "data" / "raw.csv").write_text("a\n1\n")
    settings = Settings.load(
        path=None,
        env={},
        overrides={
            "agent": {"workspace": str(workspace)},
            "workspace": {"read_only": ["*.md", "data/**"]},
            "sandbox": {"backend": backend},
        },
        cwd=workspace.parent,
    )
    result, _ = await run_script(
        workspace,
        [
            call("write_file", path="README.md", content="changed"),
            call("edit_file", path="data/raw.csv", old_text="1", new_text="2"),
            call("python", code="open('README.md', 'w').write('changed')"),
            call("python", code="open('data/new.csv', 'w').write('x')"),
            call("write_file", path="notes.txt", content="allowed"),
            call("terminate", status="success", message="ok"),
        ],
        settings,
    )
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert "README.md is read-only" in observations[0]
    assert "data/raw.csv is read-only" in observations[1]
    if backend == "bwrap":  # mounted read-only; the other backends put the change back after the call
        assert "Read-only file system" in observations[2]
    else:
        assert "undone: README.md" in observations[2] and "undone: data/new.csv" in observations[3]
    assert (workspace / "README.md").read_text() == "keep me\n"
    assert (workspace / "data" / "raw.csv").read_text() == "a\n1\n"
    assert not (workspace / "data" / "new.csv").exists()
    assert [c.path for c in result.changes] == ["notes.txt"]


@pytest.mark.parametrize("backend", CONFINED)
async def test_the_journal_folder_is_hidden_and_refused(workspace: Path, backend: str) -> None:
    if backend == "landlock" and (problem := landlock_hide_problem()) is not None:
        # test_journal_tampering covers this case: what code changes there is detected
        pytest.skip(f"Landlock cannot hide the journal's folder here: {problem}")
    result, _ = await run_script(
        workspace,
        [
            call("write_file", path="data.csv", content="x"),  # creates the journal
            call("list_dir", path="."),
            call("find_files", pattern="*"),
            call("grep", pattern="name"),
            call("read_file", path=f"{STATE_DIR}/runs"),
            call("write_file", path=f"{STATE_DIR}/index.jsonl", content="[]"),
            call("python", code=f"import os\nprint(os.listdir({STATE_DIR!r}))\nopen({STATE_DIR!r} + '/x', 'w')"),
            call("terminate", status="success", message="ok"),
        ],
        settings_for(workspace, backend=backend),
    )
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert all(STATE_DIR not in text for text in observations[1:4])
    assert "journal" in observations[4] and "journal" in observations[5]
    assert "[]" in observations[6]  # an empty folder inside the sandbox (Landlock: in a mount namespace)
    assert "Read-only file system" in observations[6]
    assert not (workspace / STATE_DIR / "x").exists()
    assert "pymanus-hidden" not in Path("/proc/self/mounts").read_text()  # the sandbox's mount stayed its own
    assert json.loads((workspace / STATE_DIR / "runs" / f"{result.run_id}.jsonl").read_text().splitlines()[0])


async def test_diff_shows_text_diffs_and_binary_sizes(workspace: Path) -> None:
    (workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    result, _ = await run_script(
        workspace,
        [
            call("write_file", path="data.csv", content="name,city\n"),
            call("python", code="open('pic.png', 'ab').write(b'\\x00\\x01')"),
            call("terminate", status="success", message="ok"),
        ],
    )
    diff = diff_run(workspace, result.run_id)
    assert "--- a/data.csv\n+++ b/data.csv\n" in diff
    assert "-José,São Paulo\r\n" in diff
    assert "Binary file pic.png modified: 264 bytes -> 266 bytes" in diff


async def test_gc_keeps_recent_journals_and_referenced_blobs(workspace: Path) -> None:
    ids = []
    for n in range(3):
        result, _ = await run_script(
            workspace,
            [call("write_file", path="data.csv", content=f"v{n}\n"), call("terminate", status="success", message="ok")],
        )
        ids.append(result.run_id)
    report = collect_garbage(workspace, keep=1)
    assert sorted(report.journals) == sorted(ids[:2])
    assert report.blobs == 2  # the bytes of DATA and "v0" are no longer needed; "v1" is
    with pytest.raises(JournalError):
        undo_run(workspace, ids[0])
    assert undo_run(workspace, ids[2]).restored == ["data.csv"]
    assert (workspace / "data.csv").read_text() == "v1\n"


async def test_a_users_edit_between_code_calls_is_kept(workspace: Path, watching: str) -> None:
    """The user edits a file while the model thinks; code then overwrites it: the edit can be brought back."""
    script = iter(
        [
            call("python", code="print(open('data.csv').read())"),
            call("python", code="open('data.csv', 'w').write('by the agent')\nopen('new/deep.txt', 'w')"),
            call("terminate", status="success", message="ok"),
        ]
    )

    def model(messages: list, tools: list) -> object:
        if sum(m.role == "tool" for m in messages) == 1:
            (workspace / "data.csv").write_text("the user's edit\n")  # between the two calls
            (workspace / "new").mkdir()  # a new folder, watched from now on
        return next(script)

    result, _ = await run_script(workspace, [], model=FunctionModel(model))
    assert {c.path: c.change for c in result.changes} == {"data.csv": "modified", "new/deep.txt": "created"}
    assert undo_run(workspace, result.run_id).restored == ["data.csv"]
    assert (workspace / "data.csv").read_text() == "the user's edit\n"
    assert not (workspace / "new" / "deep.txt").exists()

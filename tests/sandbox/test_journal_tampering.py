"""A journal or saved copy that was damaged or tampered with: a clear error naming the file, nothing touched."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from helpers.journal_cases import DATA, OLD, make_workspace, run_script, three_changes
from helpers.preset_cases import settings_for
from helpers.sandbox_backends import unusable_reason
from pymanus.models import call
from pymanus.sandbox import confine
from pymanus.sandbox.blobs import BlobStore
from pymanus.sandbox.history import undo_run
from pymanus.sandbox.journal import STATE_DIR, JournalError


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


def journal_of(workspace: Path, run_id: str) -> Path:
    return workspace / STATE_DIR / "runs" / f"{run_id}.jsonl"


@pytest.mark.parametrize("path", ["../outside.txt", "/tmp/outside.txt", "a/../../outside.txt", f"{STATE_DIR}/x"])
async def test_a_journal_naming_a_path_outside_the_workspace_is_refused(workspace: Path, path: str) -> None:
    result, _ = await three_changes(workspace)
    journal = journal_of(workspace, result.run_id)
    journal.write_text(journal.read_text().replace('"path": "old.txt"', f'"path": {json.dumps(path)}'))
    with pytest.raises(JournalError, match=r"is damaged: .* (not a path in the workspace|journal's own folder)"):
        undo_run(workspace, result.run_id)
    assert (workspace / "data.csv").read_text() == "name,city\n"  # nothing touched
    assert (workspace / "report.csv").exists()


async def test_undo_does_not_follow_a_folder_replaced_by_a_link_out(workspace: Path, tmp_path: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "notes.txt").write_text("v0\n")
    result, _ = await run_script(
        workspace,
        [call("write_file", path="sub/notes.txt", content="v1\n"), call("terminate", status="success", message="ok")],
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("v1\n")  # what the run left, so undo would not refuse it as changed
    shutil.rmtree(workspace / "sub")
    (workspace / "sub").symlink_to(outside)
    for force in (False, True):
        with pytest.raises(JournalError, match=r"cannot restore sub/notes.txt: its folder now leads out"):
            undo_run(workspace, result.run_id, force=force)
    assert (outside / "notes.txt").read_text() == "v1\n"


async def test_a_journal_line_cut_short_by_a_crash_is_ignored(workspace: Path) -> None:
    result, _ = await three_changes(workspace)
    with open(journal_of(workspace, result.run_id), "a", encoding="utf-8") as journal:
        journal.write('{"step": 3, "tool": "pyth')
    report = undo_run(workspace, result.run_id)
    assert sorted(report.restored) == ["data.csv", "old.txt"]
    assert (workspace / "data.csv").read_bytes() == DATA


async def test_a_journal_damaged_in_its_middle_is_a_clear_error(workspace: Path) -> None:
    result, _ = await three_changes(workspace)
    journal = journal_of(workspace, result.run_id)
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    with pytest.raises(JournalError, match=f"the journal of run '{result.run_id}' .* is damaged"):
        undo_run(workspace, result.run_id)
    assert (workspace / "data.csv").read_text() == "name,city\n"


async def test_a_damaged_copy_of_a_large_file_is_named(workspace: Path) -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: saved as a file of its own
    (workspace / "big.bin").write_bytes(big)
    result, _ = await run_script(
        workspace,
        [
            call("python", code="open('big.bin', 'wb').write(b'small now')"),
            call("write_file", path="data.csv", content="x\n"),
            call("terminate", status="success", message="ok"),
        ],
    )
    store = BlobStore(workspace / STATE_DIR)
    [copy] = [store.path(sha) for sha in store.all() if store.path(sha).is_file()]
    copy.write_bytes(big[:-1] + b"!")
    with pytest.raises(JournalError, match=r"cannot restore big.bin: .*corrupted"):
        undo_run(workspace, result.run_id)
    assert (workspace / "big.bin").read_bytes() == b"small now"
    assert (workspace / "data.csv").read_text() == "x\n"


LANDLOCK_REASON = unusable_reason("landlock")


@pytest.mark.skipif(LANDLOCK_REASON is not None, reason=f"landlock: {LANDLOCK_REASON}")
async def test_under_landlock_without_a_mount_namespace_tampering_is_detected(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where user namespaces are forbidden, code can reach .pymanus/: what it changes there is caught."""
    probe = confine.probe
    monkeypatch.setattr(confine, "probe", lambda *a, **k: dataclasses.replace(probe(*a, **k), hides=False))
    tamper = (
        "import glob\n"
        f"for pack in glob.glob('{STATE_DIR}/packs/*.pack'):\n"
        f"    data = open(pack, 'rb').read()\n"
        f"    open(pack, 'wb').write(data.replace({OLD!r}, b'X' * {len(OLD)}))\n"
    )
    result, _ = await run_script(
        workspace,
        [
            call("write_file", path="old.txt", content="new\n"),  # saves OLD in a pack
            call("python", code=tamper),
            call("terminate", status="success", message="ok"),
        ],
        settings_for(workspace, backend="landlock"),
    )
    with pytest.raises(JournalError, match=r"cannot restore old.txt: .*corrupted"):
        undo_run(workspace, result.run_id)
    assert (workspace / "old.txt").read_text() == "new\n"


async def test_a_file_tool_path_is_journaled_under_its_real_name(workspace: Path) -> None:
    """Links and ".." inside the workspace are resolved; a path that leads into .pymanus/ is refused."""
    (workspace / "sub").mkdir()
    (workspace / "alias").symlink_to(workspace / "sub")
    (workspace / "state").symlink_to(workspace / STATE_DIR)
    result, _ = await run_script(
        workspace,
        [
            call("write_file", path="alias/a.txt", content="a\n"),
            call("write_file", path="sub/../data.csv", content="b\n"),
            call("write_file", path=str(workspace / "old.txt"), content="c\n"),
            call("write_file", path="state/index.jsonl", content="[]"),
            call("terminate", status="success", message="ok"),
        ],
    )
    assert sorted(c.path for c in result.changes) == ["data.csv", "old.txt", "sub/a.txt"]
    assert "journal" in [m.text for m in result.messages if m.role == "tool"][3]
    undo_run(workspace, result.run_id)
    assert (workspace / "data.csv").read_bytes() == DATA and (workspace / "old.txt").read_bytes() == OLD
    assert not (workspace / "sub" / "a.txt").exists()

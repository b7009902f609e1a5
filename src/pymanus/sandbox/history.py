"""Reading the journal back: what a run changed (:func:`run_changes`, :func:`diff_run`),
putting it back (:func:`undo_run`) and pruning old journals and blobs (:func:`collect_garbage`).

Undo restores each file a run changed to its exact previous bytes and removes the files
it created, but leaves alone (and names) a file changed since the run: its current hash
is not the one the run left. ``force`` restores those too. Every saved copy is checked
against its hash before anything is touched, so a missing or corrupted blob stops the
undo with the file named and nothing changed. The undo is recorded as a run of its own
(``undo-…``), so it can be undone in turn.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from pymanus.sandbox.blobs import BlobStore, sha256_of
from pymanus.sandbox.journal import (
    DEFAULT_KEEP_RUNS,
    STATE_DIR,
    Change,
    Journal,
    JournalError,
    WorkspaceIndex,
    is_state_path,
    journals,
    prune_journals,
    read_journal,
    stamp_of,
)

_DIFF_BYTES = 2_000_000
"""Text files larger than this are summarised by size, not diffed."""


def state_dir(workspace: Path | str) -> Path:
    """The journal folder of ``workspace``."""
    return Path(os.path.realpath(Path(workspace).expanduser())) / STATE_DIR


def net_changes(changes: list[Change]) -> list[Change]:
    """One change per path, from its state before the first change to its state after the last.

    A file created and then deleted, or changed back to its first bytes, is left out.
    """
    first: dict[str, Change] = {}
    last: dict[str, Change] = {}
    for change in changes:
        first.setdefault(change.path, change)
        last[change.path] = change
    net = []
    for path in sorted(first):
        start, end = first[path], last[path]
        if start.before != end.after:
            net.append(Change(start.step, end.tool, path, start.before, end.after, start.size_before, end.size_after))
    return net


def run_changes(workspace: Path | str, run_id: str) -> list[Change]:
    """The net changes of a run (:class:`JournalError` when the workspace has no journal of it)."""
    _, changes = read_journal(state_dir(workspace), run_id)
    return net_changes(changes)


@dataclass
class UndoReport:
    """What an undo did."""

    run_id: str
    undo_id: str | None = None
    """The journal of the undo itself (undo it to redo), when it changed anything."""
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Files changed after the run, left alone (``force`` restores them)."""

    @property
    def done(self) -> bool:
        """Whether any file was put back or removed."""
        return bool(self.restored or self.removed)


def undo_run(workspace: Path | str, run_id: str, *, from_step: int | None = None, force: bool = False) -> UndoReport:
    """Put back every file ``run_id`` (or its steps from ``from_step`` on) changed.

    Raises :class:`JournalError` for an unknown run, or a saved copy that is missing or
    corrupted (then no file is touched).
    """
    root = Path(os.path.realpath(Path(workspace).expanduser()))
    state = root / STATE_DIR
    _, changes = read_journal(state, run_id)
    wanted = [c for c in changes if from_step is None or c.step >= from_step]
    report = UndoReport(run_id)
    store = BlobStore(state)
    plan: list[tuple[Change, str | None]] = []  # (net change, current sha)
    for change in net_changes(wanted):
        if (escape := _leads_out(root, change.path)) is not None:
            raise JournalError(f"cannot restore {change.path}: {escape}; no file was changed")
        current = sha256_of(root / change.path)
        if current == change.before:
            continue  # already as it was
        if current != change.after and not force:
            report.refused.append(change.path)
            continue
        plan.append((change, current))
    for change, _ in plan:
        if change.before is not None:
            try:
                store.verify(change.before)
            except JournalError as exc:
                raise JournalError(f"cannot restore {change.path}: {exc}; no file was changed") from None
    if not plan:
        return report
    report.undo_id = f"undo-{secrets.token_hex(6)}"
    journal = Journal(state, report.undo_id, kind="undo", undoes=run_id)
    done: list[Change] = []
    try:
        for change, current in plan:
            file = root / change.path
            saved = store.put_file(file) if current is not None else None  # so the undo can be undone
            if change.before is None:
                file.unlink(missing_ok=True)
                report.removed.append(change.path)
            else:
                write_exactly(file, store.read(change.before))
                report.restored.append(change.path)
            size = saved[1] if saved is not None else None
            done.append(Change(0, "undo", change.path, current, change.before, size, change.size_before))
    finally:
        journal.record(done)
        journal.close()
        store.close()
    return report


def _leads_out(root: Path, relative: str) -> str | None:
    """Why writing ``relative`` would reach outside the workspace (a folder on its way is a link out), or ``None``.

    The file itself may be a link: it is replaced or removed, never written through.
    """
    folder = os.path.realpath((root / relative).parent)
    if folder != str(root) and not folder.startswith(str(root) + os.sep):
        return f"its folder now leads out of the workspace (to {folder}, through a symbolic link)"
    if is_state_path(os.path.relpath(folder, root).replace(os.sep, "/")):
        return "its folder now leads into the journal's own folder (through a symbolic link)"
    return None


def write_exactly(file: Path, data: bytes) -> None:
    """Replace ``file`` with ``data`` atomically (a temporary file beside it, then a rename), keeping its mode."""
    file.parent.mkdir(parents=True, exist_ok=True)
    temp = file.with_name(f".{file.name}.{secrets.token_hex(4)}.pymanus-tmp")
    try:
        with open(temp, "wb") as handle:
            handle.write(data)
        with contextlib.suppress(OSError):
            os.chmod(temp, os.stat(file).st_mode & 0o7777)
        os.replace(temp, file)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def diff_run(workspace: Path | str, run_id: str) -> str:
    """Unified diffs of the text files ``run_id`` changed, and the sizes of binary ones ("" if none)."""
    root = Path(os.path.realpath(Path(workspace).expanduser()))
    store = BlobStore(root / STATE_DIR)
    parts = []
    for change in run_changes(root, run_id):
        before = _blob_or_none(store, change.before)
        after = _after_bytes(root, store, change)
        parts.append(_diff_one(change, before, after))
    return "\n".join(parts)


def _blob_or_none(store: BlobStore, sha: str | None) -> bytes | None:
    if sha is None:
        return b""
    try:
        return store.read(sha)
    except JournalError:
        return None


def _after_bytes(root: Path, store: BlobStore, change: Change) -> bytes | None:
    """The bytes the run left: their blob, else the file itself while it still holds them."""
    if change.after is None:
        return b""
    if store.has(change.after):
        return _blob_or_none(store, change.after)
    file = root / change.path
    if _leads_out(root, change.path) is None and sha256_of(file) == change.after:
        return file.read_bytes()
    return None


def _diff_one(change: Change, before: bytes | None, after: bytes | None) -> str:
    old = "/dev/null" if change.before is None else f"a/{change.path}"
    new = "/dev/null" if change.after is None else f"b/{change.path}"
    if before is None or after is None:
        lost = "before" if before is None else "after"
        return (
            f"{change.kind} {change.path}: {_size(change.size_before)} -> {_size(change.size_after)} "
            f"(its content {lost} the run is no longer available)\n"
        )
    old_text, new_text = _text(before), _text(after)
    if old_text is None or new_text is None:
        return f"Binary file {change.path} {change.kind}: {_size(change.size_before)} -> {_size(change.size_after)}\n"
    lines = difflib.unified_diff(old_text.splitlines(True), new_text.splitlines(True), old, new)
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return text or f"{change.kind} {change.path} (empty)\n"


def _text(data: bytes) -> str | None:
    if len(data) > _DIFF_BYTES or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _size(size: int | None) -> str:
    return "none" if size is None else f"{size:,} bytes"


@dataclass
class GcReport:
    """What :func:`collect_garbage` deleted."""

    journals: list[str] = field(default_factory=list)
    blobs: int = 0
    freed: int = 0
    """Bytes of the blobs deleted."""


def collect_garbage(workspace: Path | str, keep: int = DEFAULT_KEEP_RUNS) -> GcReport:
    """Keep the ``keep`` newest journals; delete the others and every blob nothing references.

    A blob is referenced by a kept journal or by the index entry of a file that still
    holds those bytes (the copy that lets code tools change the file safely). Packs are
    rewritten without what they no longer need (and without second copies), except a
    pack a running store still appends to.
    """
    root = Path(os.path.realpath(Path(workspace).expanduser()))
    state = root / STATE_DIR
    report = GcReport(journals=prune_journals(state, keep))
    referenced: set[str] = set()
    for file in journals(state):
        try:
            _, changes = read_journal(state, file.stem)
        except JournalError:
            continue
        for change in changes:
            referenced.update(sha for sha in (change.before, change.after) if sha is not None)
    store = BlobStore(state)
    index = WorkspaceIndex.load(state, store)
    for path, known in list(index.entries.items()):
        if stamp_of(root / path) == known.stamp:
            referenced.add(known.sha)
        else:
            index.forget(path)
    if index.file.exists():
        index.rewrite()
    report.blobs, report.freed = store.delete(store.all() - referenced)
    return report

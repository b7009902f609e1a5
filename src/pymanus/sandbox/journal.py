"""The change journal: every change a run makes to the workspace, with the bytes it replaced.

Everything lives in the workspace's state folder ``.pymanus/`` (:data:`STATE_DIR`),
which the file tools refuse and hide and the sandbox cannot write (see
:mod:`pymanus.sandbox.bwrap`):

* ``packs/`` and ``blobs/``: the content-addressed
  :class:`~pymanus.sandbox.blobs.BlobStore`, one copy per distinct content;
* ``runs/<run_id>.jsonl``: one :class:`Journal` per run, a header line and one
  :class:`Change` per line, appended as they happen, with paths relative to the
  workspace (a moved workspace still undoes);
* ``index.jsonl``: the :class:`WorkspaceIndex`, path -> (size, mtime, sha256) of the
  files whose bytes the store holds, appended to, so a later run trusts an unchanged
  file (same size and mtime) without reading it again.

How previous bytes are kept. A file tool names the file it changes, so its bytes are
stored just before the call. Code in the sandbox may change any file, so before a
sandbox call every file's bytes must already be in the store: the first time a file
is seen (in any run) it is copied in, and a file whose size or mtime changed since is
hashed and copied again (content-addressed: unchanged bytes cost nothing more). After
the call, size and mtime find what changed and only those files are hashed. The bytes
a file is left with are stored when the next change needs them, so a 50 MB file
changed twice adds two blobs (its original and intermediate contents), not four.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pymanus.sandbox.blobs import BlobStore

STATE_DIR = ".pymanus"
"""The workspace's own folder for journals and saved bytes; no tool or sandboxed code may change it."""
DEFAULT_KEEP_RUNS = 20

Stamp = tuple[int, int]
"""(size in bytes, modification time in ns): what says a file may have changed."""


class JournalError(Exception):
    """A journal or a saved copy cannot be used; the message names the run or the file."""


class UnknownRunError(JournalError):
    """No journal of that run id in the workspace (or the id cannot name one)."""


def is_state_path(relative: str) -> bool:
    """Whether a workspace-relative POSIX path is the state folder or inside it."""
    return relative == STATE_DIR or relative.startswith(STATE_DIR + "/")


def stamp_of(path: Path) -> Stamp | None:
    """The stamp of a regular file, ``None`` when there is none (missing, a folder, a link)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not _is_regular(info.st_mode):
        return None
    return info.st_size, info.st_mtime_ns


def _is_regular(mode: int) -> bool:
    return (mode & 0o170000) == 0o100000


def walk(root: Path) -> dict[str, Stamp]:
    """Every regular file under ``root`` (except the state folder) with its stamp; symlinks are not followed."""
    found: dict[str, Stamp] = {}
    prefix = len(str(root)) + 1
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not (folder == str(root) and entry.name == STATE_DIR):
                            pending.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        found[entry.path[prefix:]] = (info.st_size, info.st_mtime_ns)
                except OSError:  # vanished while we looked
                    continue
    return found


@dataclass(frozen=True)
class Change:
    """One change of one file by one tool call: the content before and after (``None``: no file)."""

    step: int
    tool: str
    path: str
    """Relative to the workspace, POSIX."""
    before: str | None
    after: str | None
    size_before: int | None = None
    size_after: int | None = None

    @property
    def kind(self) -> str:
        """``created``, ``modified`` or ``deleted``."""
        if self.before is None:
            return "created"
        return "deleted" if self.after is None else "modified"

    def payload(self) -> dict[str, Any]:
        """The change as the ``files`` notice a run turns into a ``FilesChanged`` event."""
        return {"path": self.path, "change": self.kind, "size_before": self.size_before, "size_after": self.size_after}


class Journal:
    """The changes of one run, appended to ``runs/<run_id>.jsonl`` as they happen."""

    def __init__(self, state: Path, run_id: str, *, kind: str = "run", undoes: str | None = None) -> None:
        self.run_id = run_id
        self.file = state / "runs" / f"{run_id}.jsonl"
        self._header: dict[str, Any] = {"run_id": run_id, "kind": kind, "started": time.time()}
        if undoes is not None:
            self._header["undoes"] = undoes
        self._handle: TextIO | None = None
        self._started = False

    def start(self) -> None:
        """Write the header (once): from then on the run is known, even if it changes nothing."""
        if self._started:
            return
        if not self.file.exists():
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.file, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(self._header) + "\n")
        self._started = True

    def record(self, changes: list[Change]) -> None:
        """Append ``changes`` (after the header, written first if need be), in the file when this returns."""
        if not changes:
            return
        self.start()
        # vars(): the fields as they are (asdict copies them deeply, slowly: this runs on every change)
        lines = [json.dumps(vars(change), ensure_ascii=False) for change in changes]
        if self._handle is None or self._handle.closed:
            self._handle = open(self.file, "a", encoding="utf-8")  # noqa: SIM115 - kept for the run
        self._handle.write("\n".join(lines) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


def run_file(state: Path, run_id: str) -> Path:
    """The journal file of ``run_id``; :class:`JournalError` when the id cannot name one."""
    if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith(".") or "\x00" in run_id:
        raise UnknownRunError(f"{run_id!r} is not a run id")
    return state / "runs" / f"{run_id}.jsonl"


def read_journal(state: Path, run_id: str) -> tuple[dict[str, Any], list[Change]]:
    """The header and changes of ``run_id``; :class:`JournalError` when there is no such journal."""
    file = run_file(state, run_id)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnknownRunError(
            f"no run {run_id!r} in the journal of {state.parent} (a run that called no tool has none, "
            "and only the newest runs are kept)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise JournalError(f"the journal of run {run_id!r} ({file}) cannot be read: {exc}") from None
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()  # cut short by a crash while it was written: that change was never recorded whole
    try:
        header = json.loads(lines[0]) if lines else {}
        changes = [Change(**json.loads(line)) for line in lines[1:] if line.strip()]
        for change in changes:
            _check_path(change.path)
    except (ValueError, TypeError) as exc:
        raise JournalError(f"the journal of run {run_id!r} ({file}) is damaged: {exc}") from None
    return header, changes


def _check_path(path: object) -> None:
    """:class:`ValueError` unless ``path`` is a plain relative path in the workspace, outside the state folder.

    A journal is only ever written with such paths; any other was put there by someone else,
    and following it could change a file outside the workspace.
    """
    if not isinstance(path, str) or "\x00" in path or any(p in ("", ".", "..") for p in path.split("/")):
        raise ValueError(f"{path!r} is not a path in the workspace")  # "" parts: absolute, or "a//b"
    if is_state_path(path):
        raise ValueError(f"{path!r} is in the journal's own folder")


def journals(state: Path) -> list[Path]:
    """Every run's journal file, oldest first."""
    folder = state / "runs"
    if not folder.is_dir():
        return []
    files = [f for f in folder.iterdir() if f.suffix == ".jsonl"]
    return sorted(files, key=lambda f: (f.stat().st_mtime_ns, f.name))


def prune_journals(state: Path, keep: int, *, spare: str | None = None) -> list[str]:
    """Delete all but the ``keep`` newest journals (never ``spare``'s); the run ids deleted."""
    files = [f for f in journals(state) if f.stem != spare]
    excess = max(0, len(files) - max(keep - (spare is not None), 0))
    for file in files[:excess]:
        file.unlink(missing_ok=True)
    return [f.stem for f in files[:excess]]


@dataclass
class Known:
    """A file whose bytes the index knows: its stamp, its sha256 and whether the store holds them."""

    stamp: Stamp
    sha: str
    stored: bool


class WorkspaceIndex:
    """Path -> :class:`Known`, kept in memory for a run and appended to ``index.jsonl``."""

    def __init__(self, state: Path, entries: dict[str, Known] | None = None) -> None:
        self.file = state / "index.jsonl"
        self.entries: dict[str, Known] = entries or {}
        self._pending: list[str] = []

    @classmethod
    def load(cls, state: Path, store: BlobStore) -> WorkspaceIndex:
        """The saved index; entries whose blob is gone are dropped (their bytes must be stored again)."""
        entries: dict[str, Known] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in (state / "index.jsonl").read_text(encoding="utf-8").splitlines():
                try:
                    path, size, mtime, sha = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line cut by a crash: that file is simply hashed again
                entries[path] = Known((size, mtime), sha, True)
        stored = store.all()
        return cls(state, {path: known for path, known in entries.items() if known.sha in stored})

    def set(self, path: str, stamp: Stamp, sha: str, *, stored: bool) -> None:
        self.entries[path] = Known(stamp, sha, stored)
        if stored:
            self._pending.append(path)

    def mark_stored(self, path: str) -> None:
        known = self.entries[path]
        known.stored = True
        self._pending.append(path)

    def forget(self, path: str) -> None:
        self.entries.pop(path, None)

    def save(self) -> None:
        """Append the entries stored since the last save."""
        lines = []
        for path in dict.fromkeys(self._pending):
            known = self.entries.get(path)
            if known is not None and known.stored:
                lines.append(json.dumps([path, *known.stamp, known.sha], ensure_ascii=False))
        self._pending.clear()
        if lines:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.file, "a", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")

    def rewrite(self) -> None:
        """Write the index anew with only its current entries (compaction, by ``gc``)."""
        lines = [json.dumps([p, *k.stamp, k.sha], ensure_ascii=False) for p, k in self.entries.items() if k.stored]
        self.file.parent.mkdir(parents=True, exist_ok=True)
        temp = self.file.with_suffix(".tmp")
        temp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(temp, self.file)

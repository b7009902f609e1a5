"""``FileJournal``: the tool middleware that records every change a run makes to the workspace.

Before a file tool (``write_file``, ``edit_file``) changes a file, the file's bytes go to
the content-addressed store; after it, the change goes to the run's journal. Code tools
(``python``, ``shell``) may change any file, so before one runs every file's bytes are in
the store (each distinct content once; see :mod:`pymanus.sandbox.journal`), and after it
the workspace is compared with how it was (size and mtime first, hashing only what may
have changed). A rename is a deletion plus a creation. Other tools are not watched.

Every change is reported to the run as a ``files`` notice (the loop turns it into a
``FilesChanged`` event and into ``RunResult.changes``). ``pymanus undo`` and
:func:`pymanus.sandbox.history.undo_run` put the bytes back.

Read-only paths (``[workspace] read_only``): a file tool's change there is refused with a
message for the model, and a change sandboxed code made there (possible when the backend
cannot mount them read-only) is put back at once, and the model is told.

Use it innermost (the last middleware), so it sees the call that really runs: the Manus
preset adds it after every extension. Calls of code tools are expected one at a time
(the preset's ``python`` and ``shell`` are not ``parallel_safe``): two running at once
would each be credited with the other's changes, though no bytes are ever lost.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pymanus.messages import ToolCall
from pymanus.sandbox.blobs import BlobStore, open_regular, sha256_of
from pymanus.sandbox.journal import (
    DEFAULT_KEEP_RUNS,
    STATE_DIR,
    Change,
    Journal,
    Stamp,
    WorkspaceIndex,
    is_state_path,
    prune_journals,
    stamp_of,
    walk,
)
from pymanus.sandbox.protected import ProtectedPaths
from pymanus.sandbox.watch import WorkspaceWatch
from pymanus.tools.middleware import ToolMiddleware, with_note
from pymanus.tools.tool import ToolContext, ToolResult

PATH_TOOLS = frozenset({"write_file", "edit_file"})
CODE_TOOLS = frozenset({"python", "shell"})
_INLINE_BYTES = 256 * 1024
"""A file tool's file up to this size is saved and hashed on the event loop, larger ones in a thread."""


@dataclass
class _Before:
    """What a call's target looked like before it ran."""

    path: str | None = None
    """The one file a path tool changes; ``None`` for a code tool (the whole workspace)."""
    saved: tuple[str, int] | None = None
    """The file's sha256 and size (``None``: it did not exist)."""


@dataclass
class _RunJournal:
    """One run's journal state (``ToolContext.store``)."""

    journal: Journal | None = None
    store: BlobStore | None = None
    index: WorkspaceIndex | None = None
    calls: dict[str, _Before] = field(default_factory=dict)
    stamps: dict[str, Stamp] | None = None
    """Every file's stamp as the last code call left it (kept current from inotify, or by walking)."""
    watch: WorkspaceWatch | None = None
    unsaved: set[str] = field(default_factory=set)
    """Files whose bytes are not in the store yet (what the last code call wrote)."""

    def close(self) -> None:
        """The run ended: close its journal file, its pack and its watch (a later call opens them again)."""
        if self.journal is not None:
            self.journal.close()
        if self.store is not None:
            self.store.close()
        if self.watch is not None:
            self.watch.close()
            self.watch, self.stamps = None, None


class FileJournal(ToolMiddleware):
    """Records every workspace change of file and code tools, with the bytes it replaced.

    Args:
        workspace: the workspace (default: each run's ``ToolContext.workspace``).
        read_only: globs of paths no tool may change (see :class:`ProtectedPaths`).
        keep_runs: journals kept; older ones are deleted when a run writes its first change.
        path_tools: tools whose ``path`` argument names the one file they change.
        code_tools: tools that may change any file (the workspace is compared before and after).
    """

    name = "journal"

    def __init__(
        self,
        workspace: Path | str | None = None,
        *,
        read_only: Sequence[str] = (),
        keep_runs: int = DEFAULT_KEEP_RUNS,
        path_tools: Collection[str] = PATH_TOOLS,
        code_tools: Collection[str] = CODE_TOOLS,
    ) -> None:
        self.workspace = Path(os.path.realpath(Path(workspace).expanduser())) if workspace is not None else None
        self.protected = ProtectedPaths(read_only)
        self.keep_runs = keep_runs
        self.path_tools = frozenset(path_tools)
        self.code_tools = frozenset(code_tools)

    # -- the middleware ----------------------------------------------------------------
    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        root = self._root(context)
        run = context.store(_RunJournal)
        if run.journal is None:
            await asyncio.to_thread(self._start, root, run, context.run_id)
        if call.name not in self.path_tools and call.name not in self.code_tools:
            return call
        if call.name in self.code_tools:
            await asyncio.to_thread(self._save_workspace, root, run)
            run.calls[call.id] = _Before()
            return call
        relative = _relative(root, _path_argument(call))
        if relative is None:
            return call  # not a path in the workspace: the tool itself says what is wrong
        if is_state_path(relative):
            return ToolResult.error(
                f"{relative} is in {STATE_DIR}/, where PyManus keeps the journal of changes to the workspace; "
                "tools cannot change it. Use another folder."
            )
        if self.protected.matches(relative):
            return ToolResult.error(
                f"{relative} is read-only: the workspace settings ([workspace] read_only = "
                f"{list(self.protected.globs)}) protect it from changes. Read it, and write what you make "
                "to a new file instead."
            )
        store = self._store_of(root, run)
        saved = None
        if (opened := open_regular(root / relative)) is not None:
            with opened:  # a thread costs more than saving a small file
                saved = (
                    store.put(opened) if opened.size <= _INLINE_BYTES else await asyncio.to_thread(store.put, opened)
                )
        run.calls[call.id] = _Before(path=relative, saved=saved)
        return call

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        run = context.store(_RunJournal)
        before = run.calls.pop(call.id, None)
        if before is None:
            return result
        root = self._root(context)
        if before.path is not None:
            stamp = sha = None
            if (opened := open_regular(root / before.path)) is not None:
                with opened:
                    stamp = opened.stamp
                    sha = opened.sha256() if opened.size <= _INLINE_BYTES else await asyncio.to_thread(opened.sha256)
            changes = self._path_changes(root, run, before, stamp, sha, context.step, call.name)
            reverted: list[str] = []
        else:
            changes, reverted = await asyncio.to_thread(self._code_changes, root, run, context, call.name)
        if changes:
            self._record(root, run, context, changes)
        if reverted:
            note = (
                f"Changes to read-only paths were undone: {', '.join(reverted)}. The workspace settings "
                f"([workspace] read_only = {list(self.protected.globs)}) protect them; write to new files instead."
            )
            result = with_note(result, note)
        return result

    # -- path tools ----------------------------------------------------------------------
    def _path_changes(
        self, root: Path, run: _RunJournal, before: _Before, stamp: Stamp | None, sha: str | None, step: int, tool: str
    ) -> list[Change]:
        """The change a path tool made (its file's stamp and hash now given), kept in the index if there is one."""
        assert before.path is not None
        old_sha, old_size = before.saved if before.saved is not None else (None, None)
        if run.index is not None:
            if sha is not None and stamp is not None:
                stored = self._store_of(root, run).has(sha)
                run.index.set(before.path, stamp, sha, stored=stored)
                if not stored:
                    run.unsaved.add(before.path)
            else:
                run.index.forget(before.path)
            run.index.save()
        if sha == old_sha:
            return []
        size = stamp[0] if stamp is not None else None
        return [Change(step, tool, before.path, old_sha, sha, old_size, size)]

    # -- code tools ----------------------------------------------------------------------
    def _save_workspace(self, root: Path, run: _RunJournal) -> None:
        """Before a code call: every file's bytes in the store (each the first time it is seen, or seen changed)."""
        store = self._store_of(root, run)
        if run.index is None:
            run.index = WorkspaceIndex.load(root / STATE_DIR, store)
        index = run.index
        if run.stamps is None:
            run.watch = WorkspaceWatch.start(root)  # before the walk, so no change slips in between
            run.stamps = walk(root)
            seen: dict[str, Stamp | None] = dict(run.stamps)
        else:  # what changed between calls (the user, or a file tool) and what the last call left unsaved
            seen = {path: new for path, (_, new) in self._moved(root, run).items()}
        for path in run.unsaved - seen.keys():
            seen[path] = run.stamps.get(path)
        run.unsaved.clear()
        for path, stamp in seen.items():
            known = index.entries.get(path)
            if stamp is None:
                index.forget(path)
            elif known is None or known.stamp != stamp or not known.stored:
                saved = store.put_file(root / path)
                if saved is not None:
                    index.set(path, stamp, saved[0], stored=True)
        index.save()

    @staticmethod
    def _moved(root: Path, run: _RunJournal) -> dict[str, tuple[Stamp | None, Stamp | None]]:
        """Paths whose stamp changed since the last look, ``(before, after)``; ``run.stamps`` brought up to date.

        Only the paths inotify names are checked while it watches; otherwise the workspace is walked.
        """
        assert run.stamps is not None
        old = run.stamps
        dirty = run.watch.dirty() if run.watch is not None else None
        if dirty is None:
            new = walk(root)
            run.stamps = new
            return {p: (old.get(p), new.get(p)) for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
        moved: dict[str, tuple[Stamp | None, Stamp | None]] = {}
        for path in dirty:
            stamp = stamp_of(root / path)
            if old.get(path) != stamp:
                moved[path] = (old.get(path), stamp)
            if stamp is None:
                old.pop(path, None)
            else:
                old[path] = stamp
        return moved

    def _code_changes(
        self, root: Path, run: _RunJournal, context: ToolContext, tool: str
    ) -> tuple[list[Change], list[str]]:
        """What the call changed (size and mtime, then a hash of what may differ), less what was reverted."""
        assert run.index is not None
        index = run.index
        store = self._store_of(root, run)
        changes: list[Change] = []
        for path, (old, new) in sorted(self._moved(root, run).items()):
            known = index.entries.get(path) if old is not None else None
            if new is None:
                index.forget(path)
                if known is not None and old is not None:
                    changes.append(Change(context.step, tool, path, known.sha, None, old[0], None))
                continue
            sha = sha256_of(root / path)
            if sha is None:
                continue
            if known is not None and known.sha == sha:  # touched, same bytes
                index.set(path, new, sha, stored=known.stored)
                continue
            if old is not None and known is None:  # it vanished while it was being saved: nothing to compare
                continue
            stored = store.has(sha)
            index.set(path, new, sha, stored=stored)
            if not stored:
                run.unsaved.add(path)  # saved before the next code call, which may change it
            old_sha, old_size = (known.sha, old[0]) if known is not None and old is not None else (None, None)
            changes.append(Change(context.step, tool, path, old_sha, sha, old_size, new[0]))
        reverted = self._revert_protected(root, store, index, changes)
        index.save()
        return [change for change in changes if change.path not in reverted], reverted

    def _revert_protected(
        self, root: Path, store: BlobStore, index: WorkspaceIndex, changes: list[Change]
    ) -> list[str]:
        """Put back read-only paths that code changed; the paths put back."""
        if not self.protected:
            return []
        from pymanus.sandbox.history import write_exactly

        reverted = []
        for change in changes:
            if not self.protected.matches(change.path):
                continue
            file = root / change.path
            if change.before is None:
                file.unlink(missing_ok=True)
                index.forget(change.path)
            else:
                write_exactly(file, store.read(change.before))
                stamp = stamp_of(file)
                if stamp is not None:
                    index.set(change.path, stamp, change.before, stored=True)
            reverted.append(change.path)
        return reverted

    # -- recording -----------------------------------------------------------------------
    @staticmethod
    def _store_of(root: Path, run: _RunJournal) -> BlobStore:
        if run.store is None:
            run.store = BlobStore(root / STATE_DIR)
        return run.store

    def _start(self, root: Path, run: _RunJournal, run_id: str) -> None:
        """The run's journal, begun at its first tool call; the oldest journals beyond ``keep_runs`` go."""
        state = root / STATE_DIR
        run.journal = Journal(state, run_id)
        run.journal.start()
        prune_journals(state, self.keep_runs, spare=run_id)

    def _record(self, root: Path, run: _RunJournal, context: ToolContext, changes: list[Change]) -> None:
        assert run.journal is not None
        run.journal.record(changes)
        context.notify("files", {"changes": [change.payload() for change in changes]})

    def _root(self, context: ToolContext) -> Path:
        return self.workspace or Path(os.path.realpath(context.workspace))


def _path_argument(call: ToolCall) -> str | None:
    try:
        arguments: Any = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return None
    path = arguments.get("path") if isinstance(arguments, dict) else None
    return path if isinstance(path, str) and path.strip() and "\x00" not in path else None


def _relative(root: Path, path: str | None) -> str | None:
    """``path`` relative to ``root`` (symlinks resolved), or ``None`` when it is not inside it."""
    if path is None:
        return None
    prefix = str(root).rstrip(os.sep) + os.sep
    joined = os.path.join(prefix, path)
    real = os.path.normpath(joined)
    # The lexical path is the real one unless a ".." may climb out of a link, or a part is a link.
    if ".." in joined.split(os.sep) or not real.startswith(prefix) or _has_link(prefix, real):
        real = os.path.realpath(joined)
    if not real.startswith(prefix):
        return None
    return real[len(prefix) :].replace(os.sep, "/")


def _has_link(prefix: str, inside: str) -> bool:
    """Whether a part of ``inside`` after ``prefix`` is a symbolic link (an lstat a part: cheaper than realpath)."""
    current = prefix.rstrip(os.sep)
    for part in inside[len(prefix) :].split(os.sep):
        current = f"{current}{os.sep}{part}"
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except OSError:
            return False  # it does not exist, nor anything under it
    return False

"""Which workspace files may have changed since the last look, told by the kernel (inotify).

Comparing a workspace before and after a code call costs a walk of every file, twice a
call; on 10,000 files that is more than the call itself. A :class:`WorkspaceWatch` makes
it cost what changed: it watches every folder of the workspace (not the journal's
``.pymanus/``), and :meth:`WorkspaceWatch.dirty` returns the paths named by the events
since the last call, which are then checked by size and mtime like a walk would.

The kernel queues an event when the write happens, so once a sandboxed command has
ended every event it caused is readable. Watches follow inodes, so writes through the
sandbox's bind mount are seen. What the watch cannot vouch for makes :meth:`dirty`
return ``None``, and the caller walks the whole workspace instead: a queue overflow, a
folder moved or deleted, a folder it could not watch. Without inotify (not Linux, the
package missing, the per-user limits reached) :meth:`WorkspaceWatch.start` returns
``None`` and every call walks.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from pathlib import Path
from typing import Any

from pymanus.sandbox.journal import STATE_DIR

_inotify: Any = None
with contextlib.suppress(ImportError):  # not Linux, or the package is missing: walks instead
    _inotify = importlib.import_module("inotify_simple")

_MASK = 0
if _inotify is not None:
    _flags = _inotify.flags
    _MASK = (
        _flags.MODIFY
        | _flags.CLOSE_WRITE
        | _flags.ATTRIB
        | _flags.CREATE
        | _flags.DELETE
        | _flags.MOVED_FROM
        | _flags.MOVED_TO
        | _flags.DELETE_SELF
        | _flags.MOVE_SELF
        | _flags.DONT_FOLLOW
        | _flags.EXCL_UNLINK
    )


class WorkspaceWatch:
    """The folders of one workspace under inotify; :meth:`dirty` says which paths changed."""

    def __init__(self, root: Path, inotify: Any) -> None:
        self.root = root
        self._inotify = inotify
        self._folders: dict[int, str] = {}
        """Watch descriptor -> folder relative to the root ("" for the root)."""
        self._lost = False

    @classmethod
    def start(cls, root: Path) -> WorkspaceWatch | None:
        """Watch every folder under ``root``; ``None`` when inotify cannot (then walk instead)."""
        if _inotify is None:
            return None
        try:
            watch = cls(root, _inotify.INotify())
        except OSError:  # the per-user limit of inotify instances
            return None
        if not watch._watch_tree(""):
            watch.close()
            return None
        return watch

    def dirty(self) -> set[str] | None:
        """Paths (relative, POSIX) that may have changed since the last call; ``None``: walk everything."""
        found: set[str] = set()
        while events := self._inotify.read(timeout=0):
            for event in events:
                if event.mask & _flags.Q_OVERFLOW:
                    self._lost = True
                    continue
                folder = self._folders.get(event.wd)
                if folder is None:
                    continue
                if event.mask & _flags.IGNORED:  # the watch is gone (its folder was deleted)
                    self._folders.pop(event.wd, None)
                    continue
                if event.mask & (_flags.DELETE_SELF | _flags.MOVE_SELF):
                    self._lost = True
                    continue
                path = f"{folder}/{event.name}" if folder else event.name
                if not event.name or (folder == "" and event.name == STATE_DIR):
                    continue
                if event.mask & _flags.ISDIR:
                    if event.mask & (_flags.CREATE | _flags.MOVED_TO):
                        if not self._watch_tree(path):
                            self._lost = True
                        found.update(self._files_under(path))
                    else:  # a folder deleted or moved away: what was in it is not in the events
                        self._lost = True
                    continue
                found.add(path)
        if self._lost:
            self._lost = False
            self._folders.clear()
            self._watch_tree("")  # watching again costs one walk of the folders, like the walk itself
            return None
        return found

    def close(self) -> None:
        self._inotify.close()

    def _watch_tree(self, relative: str) -> bool:
        """Watch ``relative`` and every folder under it; ``False`` if one could not be watched."""
        pending = [relative]
        while pending:
            folder = pending.pop()
            path = self.root / folder if folder else self.root
            try:
                self._folders[self._inotify.add_watch(path, _MASK)] = folder
                entries = list(os.scandir(path))
            except FileNotFoundError:
                continue  # gone already: its deletion is an event of its parent
            except OSError:
                return False  # the per-user limit of watches, or no permission
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and not (folder == "" and entry.name == STATE_DIR):
                    pending.append(f"{folder}/{entry.name}" if folder else entry.name)
        return True

    def _files_under(self, relative: str) -> set[str]:
        found: set[str] = set()
        for top, _, files in os.walk(self.root / relative):
            rel = Path(top).relative_to(self.root).as_posix()
            found.update(f"{rel}/{name}" for name in files)
        return found

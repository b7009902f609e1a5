"""A copy of the workspace as a run found it, so a failed attempt can be undone.

A run that may start over (``Agent(attempts=2)``) copies its workspace when it begins; a new
attempt starts from that copy, not from the files the failed one left (a small model that
overwrote a module with one function, or wrote a half table, would otherwise build on them).
Symbolic links are copied as links, never followed, so nothing outside the workspace is read
or written. A workspace over the size limits is not copied and its runs do not start over.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("pymanus.agent")

MAX_BYTES = 64 * 2**20
"""Largest workspace copied: a copy costs disk and a moment at the start of every run."""
MAX_FILES = 5000


@dataclass(frozen=True)
class WorkspaceSnapshot:
    """The files of ``root`` at one moment, kept in a private temporary folder."""

    root: Path
    copy: Path

    @classmethod
    def take(cls, root: Path) -> WorkspaceSnapshot | None:
        """Copy ``root``; ``None`` (with a logged reason) when it is too large or cannot be read."""
        try:
            if _larger_than(root, MAX_BYTES, MAX_FILES):
                logger.info("workspace %s is too large to copy (over %d files or %d bytes)", root, MAX_FILES, MAX_BYTES)
                return None
        except OSError as exc:
            logger.warning("could not read workspace %s: %s", root, exc)
            return None
        holder = Path(tempfile.mkdtemp(prefix="pymanus-snapshot-"))
        copy = holder / "workspace"
        try:
            if root.is_dir():
                shutil.copytree(root, copy, symlinks=True)
            else:
                copy.mkdir()
        except OSError as exc:
            shutil.rmtree(holder, ignore_errors=True)
            logger.warning("could not copy workspace %s: %s", root, exc)
            return None
        return cls(root=root, copy=copy)

    def restore(self) -> None:
        """Make ``root`` hold exactly the copied files again (the folder itself stays: processes may be in it)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for entry in self.root.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        shutil.copytree(self.copy, self.root, symlinks=True, dirs_exist_ok=True)

    def discard(self) -> None:
        """Delete the copy."""
        shutil.rmtree(self.copy.parent, ignore_errors=True)


def _larger_than(root: Path, max_bytes: int, max_files: int) -> bool:
    size = count = 0
    for folder, dirs, names in os.walk(root):  # symbolic links to folders are not followed
        count += len(names) + len(dirs)
        size += sum(os.lstat(os.path.join(folder, name)).st_size for name in names)
        if count > max_files or size > max_bytes:
            return True
    return False

"""The path jail: every path a tool touches is resolved here, and only here.

A :class:`PathJail` binds tools to one workspace directory. Relative paths are
resolved against it; ``..`` escapes, absolute paths elsewhere, symbolic links that
lead out (the final name or any parent directory), device files, FIFOs, sockets and
names with NUL bytes are refused with a :class:`~pymanus.errors.PathEscapeError`
whose message tells the model what to do instead. So is the journal's folder
``.pymanus/`` (:mod:`pymanus.sandbox.journal`), for reads and writes alike.

Reads may also reach the configured read-only roots; writes only the workspace.

Checking a path and then opening it leaves a window in which a process inside the
sandbox could swap a directory for a symlink. :meth:`PathJail.open_read` and
:meth:`PathJail.open_write` close that window: they open without following a final
symlink and check the opened file's real path (through ``/proc/self/fd``) before
reading, truncating or writing it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from pymanus.errors import PathEscapeError
from pymanus.sandbox.journal import STATE_DIR

_HINT = "Use paths relative to the workspace (for example 'data/report.csv')."


class PathJail:
    """Resolves tool paths inside one workspace (and, for reads, some read-only roots)."""

    def __init__(self, workspace: Path | str, read_only_roots: Sequence[Path | str] = ()) -> None:
        path = Path(workspace).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.realpath(path))
        """The workspace, fully resolved (no symlinks)."""
        self.read_only_roots = tuple(Path(os.path.realpath(Path(p).expanduser())) for p in read_only_roots)
        """Directories that may be read (never written) through absolute paths."""

    def __repr__(self) -> str:
        return f"PathJail({str(self.root)!r})"

    # -- resolving ---------------------------------------------------------------------
    def resolve(self, path: str, *, write: bool) -> Path:
        """The real path of ``path``, or :class:`PathEscapeError` if it is not allowed.

        Args:
            path: a path relative to the workspace (absolute paths are accepted when
                they lie inside it, or inside a read-only root for reads).
            write: whether the caller will create or change the file.
        """
        if "\x00" in path:
            raise PathEscapeError(f"The path {path!r} contains a NUL character, which no file name can hold. {_HINT}")
        if not path.strip():
            raise PathEscapeError(f"The path is empty. {_HINT}")
        if path.startswith("~"):
            raise PathEscapeError(
                f"The path {path!r} refers to a home directory, which tools cannot reach; "
                f"the workspace is {self.root}. {_HINT}"
            )
        candidate = Path(path) if os.path.isabs(path) else self.root / path
        real = Path(os.path.realpath(candidate))
        if _within(real, self.root / STATE_DIR):
            raise PathEscapeError(
                f"{path!r} is in {STATE_DIR}/, where PyManus keeps the journal of changes to the workspace; "
                "tools cannot read or change it. Use another folder."
            )
        if not self._allowed(real, write=write):
            raise PathEscapeError(self._escape_message(path, candidate, real, write=write))
        self._check_kind(path, real)
        return real

    def contains(self, real: Path, *, write: bool = False) -> bool:
        """Whether an already-resolved path lies where reads (or writes) are allowed."""
        return self._allowed(real, write=write)

    def relative(self, path: Path | str) -> str:
        """``path`` for display: relative to the workspace when inside it, else absolute."""
        real = Path(os.path.realpath(path))
        if _within(real, self.root):
            rel = real.relative_to(self.root).as_posix()
            return rel or "."
        return str(real)

    # -- opening (race-free) -------------------------------------------------------------
    def open_read(self, path: str) -> tuple[BinaryIO, Path]:
        """Open a regular file for reading; returns the file and its real path."""
        real = self.resolve(path, write=False)
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        return self._checked(fd, path, write=False), real

    def open_write(self, path: str, *, create_parents: bool = True) -> tuple[BinaryIO, Path, bool]:
        """Open a file for writing (truncated); returns the file, its real path, and whether it existed."""
        real = self.resolve(path, write=True)
        if real == self.root:
            raise PathEscapeError(f"{path!r} is the workspace directory itself; give a file name inside it.")
        if path.endswith(("/", "/.", "/..")):  # "tests/." would create a file named tests
            raise PathEscapeError(
                f"{path!r} names a folder, not a file; give a file name inside it (for example "
                f"'{path.rstrip('/.') or '.'}/notes.txt')."
            )
        if create_parents:
            real.parent.mkdir(parents=True, exist_ok=True)
            # The parents may have been created through a just-swapped symlink: check again.
            real = self.resolve(path, write=True)
        existed = real.exists()
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        handle = self._checked(fd, path, write=True)
        handle.truncate(0)
        return handle, real, existed

    def _checked(self, fd: int, path: str, *, write: bool) -> BinaryIO:
        """Verify what ``fd`` really opened before any byte is read or changed."""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise PathEscapeError(
                    f"{path!r} is {_kind(info.st_mode)}, not a regular file; tools only read and write regular files."
                )
            opened = Path(os.readlink(f"/proc/self/fd/{fd}")) if os.path.exists("/proc/self/fd") else None
            if opened is not None and not self._allowed(opened, write=write):
                raise PathEscapeError(
                    f"{path!r} changed while it was being opened and now leads outside the workspace "
                    f"{self.root}. {_HINT}"
                )
            os.set_blocking(fd, True)
            return os.fdopen(fd, "wb" if write else "rb")
        except BaseException:
            os.close(fd)
            raise

    # -- helpers -----------------------------------------------------------------------
    def _allowed(self, real: Path, *, write: bool) -> bool:
        if _within(real, self.root):
            return not _within(real, self.root / STATE_DIR)
        return not write and any(_within(real, root) for root in self.read_only_roots)

    def _escape_message(self, path: str, candidate: Path, real: Path, *, write: bool) -> str:
        if write and any(_within(real, root) for root in self.read_only_roots):
            where = f"in a read-only location; files can only be written inside the workspace {self.root}"
        else:
            where = f"outside the workspace {self.root}"
        lexical = Path(os.path.normpath(candidate))
        if _within(lexical, self.root) and lexical != real:
            return (
                f"The path {path!r} goes through a symbolic link that points {where} (to {real}), "
                f"so it cannot be used. {_HINT}"
            )
        return f"The path {path!r} resolves to {real}, which is {where}. {_HINT}"

    def _check_kind(self, path: str, real: Path) -> None:
        try:
            info = os.stat(real)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise PathEscapeError(f"{path!r} cannot be inspected: {exc.strerror}.") from None
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            raise PathEscapeError(
                f"{path!r} is {_kind(info.st_mode)}, not a regular file or directory; tools cannot use it."
            )


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a special file"

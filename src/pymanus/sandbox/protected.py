"""Read-only paths of the workspace: ``[workspace] read_only = ["*.md", "data/**"]``.

A glob without ``/`` matches a name at any depth (``*.md``); one with ``/`` matches a
path relative to the workspace (``data/**`` is everything under ``data``). A path is
protected when it, or a folder above it, matches. The file tools refuse to change a
protected path (:class:`~pymanus.tools.journaling.FileJournal`); the bubblewrap sandbox
mounts every existing protected path read-only (:meth:`ProtectedPaths.existing`), and
for the other backends the journal puts back whatever sandboxed code changed there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path


def glob_regex(pattern: str) -> str:
    """The regular expression of a glob: ``**`` spans folders, ``*`` and ``?`` stay in one name."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (close := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : close].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _matcher(pattern: str) -> Callable[[str], bool]:
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    regex = re.compile(glob_regex(pattern) + r"\Z")
    if "/" in pattern:
        return lambda rel: regex.match(rel) is not None
    return lambda rel: regex.match(rel.rsplit("/", 1)[-1]) is not None


class ProtectedPaths:
    """The workspace paths no tool and no sandboxed code may change."""

    def __init__(self, globs: Sequence[str] = ()) -> None:
        self.globs = tuple(g for g in globs if g.strip())
        self._matchers = [_matcher(g) for g in self.globs]

    def __bool__(self) -> bool:
        return bool(self.globs)

    def matches(self, relative: str) -> bool:
        """Whether a workspace-relative POSIX path (or a folder above it) is protected."""
        if not self._matchers:
            return False
        parts = relative.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(match(prefix) for match in self._matchers for prefix in prefixes)

    def existing(self, root: Path) -> list[Path]:
        """The outermost existing paths under ``root`` that are protected (what to mount read-only)."""
        if not self._matchers:
            return []
        found: list[Path] = []
        pending = [root]
        while pending:
            folder = pending.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.is_symlink():  # mounting a link would mount what it points to, maybe outside
                    continue
                relative = Path(entry.path).relative_to(root).as_posix()
                if any(match(relative) for match in self._matchers):
                    found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
        return sorted(found)

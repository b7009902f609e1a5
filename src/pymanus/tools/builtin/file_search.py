"""Listing and searching the workspace for the file tools: list_dir, find_files, grep.

Also the small helpers the file tools share: which path exists, what a binary file
is, and how big a file is in words. Every walk stays inside the jail: symlinked
folders are never followed and symlinked files are used only when they point inside.
"""

from __future__ import annotations

import difflib
import mimetypes
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pymanus.errors import PathEscapeError, ToolError
from pymanus.sandbox import PathJail
from pymanus.sandbox.journal import STATE_DIR
from pymanus.sandbox.protected import glob_regex

MAX_LIST_ENTRIES = 300
MAX_FOUND = 200
MAX_MATCHES = 100
MAX_GREP_FILE_BYTES = 20_000_000
NOT_EXPANDED = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache"})
"""Folders listed with their entry count but not expanded, and skipped by searches."""
_MAGIC = (
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also xlsx/docx/pptx)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ", "xz archive"),
    (b"\x7fELF", "executable (ELF)"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"PAR1", "Parquet file"),
    (b"\x93NUMPY", "NumPy array file"),
)


# -- shared helpers ----------------------------------------------------------------------
def existing(jail: PathJail, path: str, *, want: str) -> Path:
    """The real path of an existing file (``want="file"``) or folder (``want="dir"``)."""
    real = jail.resolve(path, write=False)
    if not real.exists():
        raise ToolError(f"{path} does not exist in the workspace.{_suggest(jail, real)}")
    if want == "file" and real.is_dir():
        raise ToolError(f"{path} is a directory; give a file path (list_dir shows what is inside).")
    if want == "dir" and not real.is_dir():
        raise ToolError(f"{path} is a file, not a folder; use read_file to read it.")
    return real


def _suggest(jail: PathJail, real: Path) -> str:
    parent = real.parent
    if not parent.is_dir() or not jail.contains(parent):
        return " Use list_dir or find_files to see what exists."
    names = [entry.name for entry in os.scandir(parent)]
    close = difflib.get_close_matches(real.name, names, n=3, cutoff=0.5)
    if close:
        return " Did you mean: " + ", ".join(jail.relative(parent / name) for name in close) + "?"
    return " Use list_dir or find_files to see what exists."


def binary_kind(head: bytes, path: Path) -> str | None:
    """What a binary file is, or ``None`` if its first bytes ``head`` look like text."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return None
        except UnicodeDecodeError as exc:
            if exc.start >= len(head) - 3:  # only a character cut by the end of the window
                return None
            return "text in an encoding other than UTF-8; read it with python: open(path, encoding='latin-1')"
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "unknown binary data"


def human_size(size: int) -> str:
    """``1234567`` → ``"1.2 MB"``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


# -- list_dir ----------------------------------------------------------------------------
def list_tree(jail: PathJail, path: str, depth: int) -> str:
    """A folder as an indented tree with sizes, ``depth`` levels deep, capped in entries."""
    if not 1 <= depth <= 10:
        raise ToolError("depth must be between 1 and 10.")
    real = existing(jail, path, want="dir")
    lines = [f"{jail.relative(real)}/"]
    remaining = [MAX_LIST_ENTRIES]
    _tree(jail, real, depth, 1, lines, remaining)
    if remaining[0] <= 0:
        lines.append(f"[... stopped after {MAX_LIST_ENTRIES} entries; list a subfolder or use a lower depth]")
    if len(lines) == 1:
        lines.append("  (empty)")
    return "\n".join(lines)


def _tree(jail: PathJail, folder: Path, depth: int, level: int, lines: list[str], remaining: list[int]) -> None:
    entries = sorted(os.scandir(folder), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower()))
    indent = "  " * level
    for entry in entries:
        if remaining[0] <= 0:
            return
        if folder == jail.root and entry.name == STATE_DIR:  # the journal: never shown, never changed by tools
            continue
        remaining[0] -= 1
        if entry.is_symlink():
            target = Path(os.path.realpath(entry.path))
            where = jail.relative(target) if jail.contains(target) else "outside the workspace, not followed"
            lines.append(f"{indent}{entry.name} -> {where}")
        elif entry.is_dir(follow_symlinks=False):
            if entry.name in NOT_EXPANDED or level >= depth:
                count = sum(1 for _ in os.scandir(entry.path))
                lines.append(f"{indent}{entry.name}/  ({count} entries)")
            else:
                lines.append(f"{indent}{entry.name}/")
                _tree(jail, Path(entry.path), depth, level + 1, lines, remaining)
        elif entry.is_file(follow_symlinks=False):
            lines.append(f"{indent}{entry.name}  {human_size(entry.stat(follow_symlinks=False).st_size)}")
        else:
            lines.append(f"{indent}{entry.name}  (special file, not readable by tools)")


# -- find_files --------------------------------------------------------------------------
def find_matching(jail: PathJail, pattern: str, path: str) -> str:
    """Files under ``path`` matching a glob, one per line with its size."""
    matcher = glob_matcher(pattern)
    base = existing(jail, path, want="dir")
    found: list[str] = []
    for file in walk_files(jail, base):
        if matcher(file.relative_to(base).as_posix()):
            found.append(f"{jail.relative(file)}  ({human_size(file.stat().st_size)})")
            if len(found) > MAX_FOUND:
                break
    if not found:
        return (
            f"No files match {pattern!r} in {jail.relative(base)}/. "
            "('*.csv' matches names at any depth; 'data/**/*.csv' matches paths.)"
        )
    more = f"\n[... more than {MAX_FOUND} files match; use a narrower pattern]" if len(found) > MAX_FOUND else ""
    return "\n".join(sorted(found[:MAX_FOUND])) + more


def walk_files(jail: PathJail, base: Path) -> Iterator[Path]:
    """Regular files under ``base``, never following a symlink out of the workspace."""
    for root, dirs, files in os.walk(base):
        hidden = NOT_EXPANDED | {STATE_DIR} if Path(root) == jail.root else NOT_EXPANDED
        dirs[:] = sorted(d for d in dirs if d not in hidden)
        for name in sorted(files):
            file = Path(root) / name
            real = Path(os.path.realpath(file))
            if jail.contains(real) and real.is_file():
                yield file


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """A matcher of relative paths; a pattern without '/' matches file names at any depth."""
    pattern = pattern.strip()
    if not pattern:
        raise ToolError("The pattern is empty; give a glob such as '*.py' or 'data/**/*.csv'.")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(f"The pattern {pattern!r} must be relative to the folder searched, without '..'.")
    pattern = pattern.removeprefix("./")
    regex = re.compile(glob_regex(pattern) + r"\Z")
    if "/" in pattern:
        return lambda rel: regex.match(rel) is not None
    return lambda rel: regex.match(rel.rsplit("/", 1)[-1]) is not None


# -- grep --------------------------------------------------------------------------------
def grep_files(jail: PathJail, pattern: str, path: str, glob: str | None, ignore_case: bool) -> str:
    """Lines matching a regular expression, as ``file:line: text``, capped in number."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc.msg} at position {exc.pos}. "
            "Escape special characters such as ( [ . * + ? with a backslash to match them literally."
        ) from None
    real = jail.resolve(path, write=False)
    if not real.exists():
        raise ToolError(f"{path} does not exist in the workspace.{_suggest(jail, real)}")
    matcher = glob_matcher(glob) if glob else None
    single = real.is_file()
    files: Iterable[Path] = [real] if single else walk_files(jail, real)
    matches: list[str] = []
    searched = 0
    for file in files:
        if matcher is not None and not matcher(file.name if single else file.relative_to(real).as_posix()):
            continue
        searched += 1
        if _grep_file(jail, file, regex, matches):
            break
    if not matches:
        return f"No matches for {pattern!r} in {searched} file(s) under {jail.relative(real)}."
    more = ""
    if len(matches) > MAX_MATCHES:
        more = f"\n[... stopped at {MAX_MATCHES} matches; narrow the pattern or the path]"
    return "\n".join(matches[:MAX_MATCHES]) + more


WORD = re.compile(r"\w+")
"""A name, such as one being renamed: what :func:`word_uses` looks for."""


def _files_matching(
    jail: PathJail,
    regex: re.Pattern[str],
    *,
    skip: Path | None,
    under: Path | None = None,
    limit: int = 8,
    max_files: int = 2_000,
) -> list[tuple[str, int]]:
    """Text files (under ``under``, else anywhere) other than ``skip`` where ``regex`` matches, with counts.

    Looks at no more than ``max_files`` files, so a huge workspace costs a bounded time per edit.
    """
    found: list[tuple[str, int]] = []
    for looked, file in enumerate(walk_files(jail, under or jail.root)):
        if len(found) >= limit or looked >= max_files:
            break
        if file == skip:
            continue
        try:
            if file.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            handle, _ = jail.open_read(str(file))
        except (OSError, PathEscapeError):
            continue
        with handle:
            data = handle.read()
        if binary_kind(data[:8192], file) is None and (count := len(regex.findall(data.decode("utf-8", "replace")))):
            found.append((jail.relative(file), count))
    return found


def word_uses(jail: PathJail, word: str, *, skip: Path | None, under: Path | None = None) -> str:
    """``"main.py (1), shop/cart.py (2)"``: the files where ``word`` is a whole word, or ``""``."""
    return ", ".join(f"{path} ({count})" for path, count in word_files(jail, word, skip=skip, under=under))


def word_files(jail: PathJail, word: str, *, skip: Path | None, under: Path | None = None) -> list[tuple[str, int]]:
    """The files where ``word`` is a whole word, with how many lines use it."""
    return _files_matching(jail, re.compile(rf"(?<!\w){re.escape(word)}(?!\w)"), skip=skip, under=under)


def text_uses(jail: PathJail, text: str, *, skip: Path | None) -> str:
    """``"test_stats.py (1)"``: the files that hold ``text`` exactly (stripped), or ``""``."""
    regex = re.compile(re.escape(text.strip()))
    return ", ".join(f"{path} ({count})" for path, count in _files_matching(jail, regex, skip=skip))


def _grep_file(jail: PathJail, file: Path, regex: re.Pattern[str], matches: list[str]) -> bool:
    """Add ``file``'s matching lines; ``True`` once the match cap is passed."""
    try:
        if file.stat().st_size > MAX_GREP_FILE_BYTES:
            return False
        handle, _ = jail.open_read(str(file))
    except (OSError, PathEscapeError):
        return False
    rel = jail.relative(file)
    with handle:
        if binary_kind(handle.read(8192), file) is not None:
            return False
        handle.seek(0)
        for number, raw in enumerate(handle, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if regex.search(line[:10_000]):  # very long lines are searched in part, to bound the time
                text = line.strip()
                matches.append(f"{rel}:{number}: {text[:300]}{'…' if len(text) > 300 else ''}")
                if len(matches) > MAX_MATCHES:
                    return True
    return False

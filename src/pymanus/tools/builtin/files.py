"""File tools: read_file, write_file, edit_file, list_dir, find_files, grep.

:func:`file_tools` builds them around one :class:`~pymanus.sandbox.PathJail`: every
path goes through it, and the tools are bound to that jail's workspace. The run's
``ToolContext.workspace`` is *not* consulted -- the jail given to the factory wins, so
a tool can never be pointed at another directory by the context it is called with.

The edit history behind ``edit_file(undo=True)`` lives in the factory's closure: each
set of tools has its own, shared by ``write_file`` and ``edit_file``.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pymanus.errors import PathEscapeError, ToolError
from pymanus.sandbox import PathJail
from pymanus.tools.builtin.file_formats import format_warning
from pymanus.tools.builtin.file_search import (
    WORD,
    binary_kind,
    existing,
    find_matching,
    grep_files,
    human_size,
    list_tree,
    text_uses,
    word_uses,
)
from pymanus.tools.builtin.file_views import numbered_lines, preview_lines, snippet
from pymanus.tools.builtin.text_edits import (
    insert_lines,
    not_found,
    replace_every,
    replace_once,
    same_line_endings,
    shifted_match,
)
from pymanus.tools.tool import Tool

F = TypeVar("F", bound=Callable[..., Any])

UNDO_DEPTH = 20


def _observed(function: F) -> F:
    """Turn jail refusals and OS errors into messages for the model."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except PathEscapeError as exc:
            raise ToolError(str(exc)) from None
        except IsADirectoryError as exc:
            raise ToolError(
                f"{exc.filename} is a directory; give a file path (list_dir shows what is inside)."
            ) from None
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise ToolError(f"The file operation failed{where}: {exc.strerror or exc}.") from None

    return wrapper  # type: ignore[return-value]


def file_tools(
    jail: PathJail, *, max_read_bytes: int = 2_000_000, max_chars: int = 18_000, simple_edit: bool = False
) -> list[Tool]:
    """The six file tools, bound to ``jail``'s workspace.

    Args:
        jail: the path jail every path goes through.
        max_read_bytes: files larger than this are read only by line range or preview.
        max_chars: output budget of one call (longer results stop and say how to go on).
        simple_edit: offer an ``edit_file`` whose schema requires ``old_text`` and ``new_text`` and has no
            ``undo``. Under constrained decoding every required key is written, so a model cannot
            end a call before the text to write.
    """
    history: dict[Path, deque[bytes | None]] = {}
    lock = threading.Lock()

    def remember(real: Path, before: bytes | None) -> None:
        with lock:
            history.setdefault(real, deque(maxlen=UNDO_DEPTH)).append(before)

    def load_text(path: str) -> tuple[str, Path]:
        """A whole text file, for editing."""
        real = existing(jail, path, want="file")
        size = real.stat().st_size
        if size > max_read_bytes:
            raise ToolError(
                f"{path} is {human_size(size)}, too large to edit here (limit {human_size(max_read_bytes)}); "
                "use python."
            )
        handle, real = jail.open_read(path)
        with handle:
            data = handle.read()
        if binary_kind(data[:8192], real) is not None:
            raise ToolError(f"{path} is a binary file; edit_file only edits text. Use python for binary data.")
        try:
            return data.decode("utf-8"), real
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not UTF-8 text; edit it with python.") from None

    def undo_last(path: str) -> str:
        real = jail.resolve(path, write=True)
        with lock:
            stack = history.get(real)
            if not stack:
                raise ToolError(f"There is no change to {path} to undo (only changes made in this run can be undone).")
            before = stack.pop()
        if before is None:
            real.unlink(missing_ok=True)
            return f"Undid the creation of {path}: the file is deleted."
        save(path, before)
        return f"Restored {path} to its state before the last change."

    def save(path: str, data: bytes) -> Path:
        handle, real, _ = jail.open_write(path)
        with handle:
            handle.write(data)
        return real

    @_observed
    def read_file(
        path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        preview: bool = False,
    ) -> str:
        """Read a text file from the workspace, with line numbers.

        Args:
            path: the file, relative to the workspace.
            start_line: first line to show (1-based); use with end_line for large files.
            end_line: last line to show (inclusive).
            preview: show only the first 20 rows (and, for CSV/TSV, the header's column names).
        """
        real = existing(jail, path, want="file")
        unranged = start_line is None and end_line is None
        preview = preview and unranged  # a range asked for is what is shown
        if start_line is not None and start_line < 1:
            raise ToolError("start_line counts from 1; give a number of 1 or more.")
        if end_line is not None and end_line < (start_line or 1):
            raise ToolError(f"end_line ({end_line}) is before start_line ({start_line or 1}).")
        handle, real = jail.open_read(path)
        with handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(8192)
            kind = binary_kind(head, real)
            if kind is not None and kind.startswith("text"):
                return f"{path} ({human_size(size)}) is {kind}."
            if kind is not None:
                return (
                    f"{path} is a binary file ({kind}, {human_size(size)}); read_file shows only text. "
                    "Use python to work with it."
                )
            if size == 0:
                return f"{path} is empty (0 bytes)."
            if preview:
                handle.seek(0)
                return preview_lines(path, real, handle, size)
            if size > max_read_bytes and start_line is None and end_line is None:
                raise ToolError(
                    f"{path} is {human_size(size)}, more than read_file shows at once ({human_size(max_read_bytes)}). "
                    "Read a part with start_line and end_line, look at it with preview=true, or process it with python."
                )
            handle.seek(0)
            return numbered_lines(path, handle, start_line or 1, end_line, max_chars, count_all=size <= 50_000_000)

    @_observed
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace (parent folders are created).

        Args:
            path: the file, relative to the workspace.
            content: the complete new content of the file.
        """
        real = jail.resolve(path, write=True)
        before: bytes | None = None
        if real.is_file() and real.stat().st_size <= max_read_bytes:
            reader, _ = jail.open_read(path)
            with reader:
                before = reader.read()
        existed = real.exists()
        data = content.encode("utf-8")
        real = save(path, data)
        if not existed or before is not None:
            remember(real, before)
        lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Overwrote" if existed else "Created"
        report = f"{verb} {jail.relative(real)}: {len(data):,} bytes written, {lines:,} lines."
        return report + _format_note(jail.relative(real), content)

    def change(path: str, old_text: str, new_text: str, insert_line: int | None, replace_all: bool) -> str:
        """Replace ``old_text`` (once or everywhere), or with an empty one add lines (after ``insert_line``)."""
        if replace_all and not old_text:
            raise ToolError("replace_all replaces every occurrence of old_text: give the old_text to replace.")
        if old_text and insert_line is not None:
            raise ToolError(
                "insert_line goes with an empty old_text (to add lines). To replace text, give old_text and "
                "new_text without insert_line."
            )
        before: str | None = None
        if jail.resolve(path, write=True).exists():
            before, _ = load_text(path)
        elif old_text:
            raise ToolError(
                f"{path} does not exist yet, so it has no old_text to replace. To create it, call write_file "
                f"with path {path!r} and its whole content."
            )
        text = before or ""  # adding lines to a file that does not exist yet creates it
        shifted_note = ""
        missing = bool(old_text) and same_line_endings(text, old_text, new_text)[0] not in text
        if missing and not replace_all and (shifted := shifted_match(text, old_text, new_text)):
            old_text, new_text, found_at, indent = shifted
            shifted_note = (
                f"\nNote: old_text is at line {found_at} of {path} with each line indented by {indent!r}, "
                "so new_text was indented the same way."
            )
        if old_text and same_line_endings(text, old_text, new_text)[0] not in text:
            raise ToolError(not_found(path, text, old_text) + _holders(old_text, path))
        if old_text and old_text == new_text:
            raise ToolError(
                "old_text and new_text are the same, so this edit would change nothing. old_text is the text "
                "the file has now; new_text is what replaces it."
            )
        if replace_all:
            updated, count = replace_every(path, text, old_text, new_text)
            report = f"Edited {path}: replaced {count} occurrence{'s' * (count != 1)} of the old_text."
        else:
            if old_text:
                updated, first_line = replace_once(path, text, old_text, new_text)
            else:
                after = len(text.splitlines()) if insert_line is None else insert_line
                updated, first_line = insert_lines(path, text, after, new_text)
            changed = max(len(new_text.splitlines()), 1)
            verb = "Edited" if before is not None else "Created"
            report = f"{verb} {path}. Lines {first_line}-{first_line + changed - 1} now read:\n" + snippet(
                updated, first_line, changed
            )
        real = save(path, updated.encode("utf-8"))
        remember(real, None if before is None else before.encode("utf-8"))
        elsewhere = _elsewhere(old_text, real) if old_text else ""
        return report + shifted_note + elsewhere + _format_note(jail.relative(real), updated)

    def _elsewhere(old_text: str, edited: Path) -> str:
        """For a renamed word, the other files that still use it: renames usually span several files."""
        word = old_text.strip()
        if not WORD.fullmatch(word):
            return ""
        listed = word_uses(jail, word, skip=edited)
        return f"\n{word} also appears in other files: {listed}." if listed else ""

    def _holders(old_text: str, path: str) -> str:
        """Other files that hold ``old_text``: the edit may be meant for one of them."""
        listed = text_uses(jail, old_text, skip=jail.resolve(path, write=False))
        return f" It is in: {listed}." if listed else ""

    @_observed
    def edit_file(
        path: str,
        old_text: str | None = None,
        new_text: str = "",
        insert_line: int | None = None,
        replace_all: bool = False,
        undo: bool = False,
    ) -> str:
        """Edit a text file: replace text that occurs exactly once (or everywhere), add lines, or undo the last change.

        Args:
            path: the file, relative to the workspace.
            old_text: the exact text to replace (it must occur exactly once; include surrounding lines to be
                unique), or "" to add new_text without replacing anything (at the end of the file, or after
                insert_line).
            new_text: the replacement text, or the lines to add.
            insert_line: add new_text after this line number (0 adds at the top) instead of replacing.
            replace_all: replace every occurrence of old_text, not just one (for renaming).
            undo: restore the file as it was before the last write_file or edit_file change.
        """
        if undo:
            if old_text is not None or insert_line is not None or new_text or replace_all:
                raise ToolError("undo=true takes only the path: it restores the file as it was before the last change.")
            return undo_last(path)
        if old_text is None and insert_line is None:
            raise ToolError(
                "Give old_text (with new_text) to replace, insert_line (with new_text) or an empty old_text to add "
                "lines, or undo=true to revert the last change."
            )
        return change(path, old_text or "", new_text, insert_line, replace_all)

    @_observed
    def edit_file_simple(
        path: str,
        old_text: str,
        new_text: str,
        insert_line: int | None = None,
        replace_all: bool = False,
    ) -> str:
        """Edit a text file: replace text that occurs exactly once (or everywhere), or add lines.

        Args:
            path: the file, relative to the workspace.
            old_text: the exact text to replace (it must occur exactly once; include surrounding lines to be
                unique), or "" to add new_text without replacing anything.
            new_text: the replacement text, or the lines to add.
            insert_line: with an empty old_text, add new_text after this line number (0 adds at the top);
                without it, new_text goes at the end of the file.
            replace_all: replace every occurrence of old_text, not just one (for renaming).
        """
        return change(path, old_text, new_text, insert_line, replace_all)

    @_observed
    def list_dir(path: str = ".", depth: int = 2) -> str:
        """List a folder of the workspace as a tree, with file sizes.

        Args:
            path: the folder, relative to the workspace.
            depth: how many levels to show (1 = only the folder's own entries).
        """
        return list_tree(jail, path, depth)

    @_observed
    def find_files(pattern: str, path: str = ".") -> str:
        """Find files by glob pattern in the workspace.

        Args:
            pattern: a glob such as '*.csv' (a name at any depth) or 'src/**/*.py' (a path).
            path: the folder to search, relative to the workspace.
        """
        return find_matching(jail, pattern, path)

    @_observed
    def grep(pattern: str, path: str = ".", glob: str | None = None, ignore_case: bool = False) -> str:
        """Search file contents with a regular expression; shows file:line: text for each match.

        Args:
            pattern: a Python regular expression, such as 'def \\w+' or 'TODO'.
            path: a file or folder to search, relative to the workspace.
            glob: only search files matching this glob, such as '*.py'.
            ignore_case: match letters regardless of case.
        """
        return grep_files(jail, pattern, path, glob, ignore_case)

    return [
        Tool(read_file),
        Tool(write_file, parallel_safe=False),
        Tool(edit_file_simple, name="edit_file", parallel_safe=False)
        if simple_edit
        else Tool(edit_file, parallel_safe=False),
        Tool(list_dir),
        Tool(find_files),
        Tool(grep),
    ]


def _format_note(path: str, text: str) -> str:
    """A warning when the text written does not parse as the file's extension says; "" if it does."""
    warning = format_warning(path, text)
    return f"\n{warning}" if warning else ""

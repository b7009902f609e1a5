"""What a run tells the file tools: the ``ToolContext.state`` keys the agent sets from the task
and its briefing, and ``write_file``, ``edit_file`` and ``read_file`` act on."""

from __future__ import annotations

import hashlib
import json

from pymanus.errors import PathEscapeError
from pymanus.messages import ToolCall
from pymanus.sandbox import PathJail
from pymanus.tools.tool import ToolContext
from pymanus.tools.toolset import RESPONSE_CALLS

KEPT_FILES = "files.kept"
"""``ToolContext.state`` key: ``{path: reason}``, workspace files (relative, ``/``-separated) that
``write_file`` and ``edit_file`` refuse to change this run, and why (the Manus preset keeps the
inputs of a task that only asks a question, and the tests of one that says not to change them)."""
SHOWN_FILES = "files.shown"
"""``ToolContext.state`` key: workspace files the run's first message showed whole, with their
(modification time in ns, size) then; ``read_file`` of one still so says so instead of showing
it again (reading what the first message shows was the 1.5B's first step in three tasks of ten,
400 prompt tokens and 15 s for a 20-row CSV)."""
SHOWN_HEADS = "files.shown_heads"
"""``ToolContext.state`` key: data files whose first records the run's first message showed, with their
stamps then; a ``preview`` or whole read of one still so says so, and points to python (the 1.5B previewed
sales.csv after the briefing showed its head: 450 prompt tokens of rows its code then read anyway; it read
scores.csv whole and typed a wrong top5.csv from the rows). A range of lines is read as usual."""
TASK_FOLDERS = "files.task_folders"
"""``ToolContext.state`` key: folders the task asks for (relative, ``/``-separated) that ``write_file``
refuses to create as files (the 1.5B wrote a file named ``tests`` for "a tests folder")."""
PRINTED_FILES = "files.printed"
"""``ToolContext.state`` key: ``{file: script}``, files the task says keep what a script prints, which
``write_file`` and ``edit_file`` refuse to write (the 1.5B typed squares.txt before it wrote squares.py,
and its squares.py then printed something else)."""
FOUND_FILES = "files.found"
"""``ToolContext.state`` key: the folder (``""``: the whole workspace) of a task that picks files by what
is in them; ``write_file`` and ``edit_file`` refuse a list of them the run's code did not print
(:func:`~pymanus.tools.builtin.found_files.guessed_listing`)."""
TASK_WORDS = "files.task_words"
"""``ToolContext.state`` key: the words of the task; ``write_file`` merges an overwrite of a Python
module that loses a function or class the task does not name into the module (the 1.5B rewrote
textutils.py as its new slugify alone, though the task said to keep the existing functions)."""
EDITED_VERSIONS = "files.edited_versions"
"""``ToolContext.state`` key: ``{path: [digest, ...]}``, each file's content before the run's first
``edit_file`` of it, then after each one (see :func:`repeated_version`)."""
REFUSED_PACKAGES = "files.refused_packages"
"""``ToolContext.state`` key: package ``__init__.py`` files whose import of a module not written yet was
refused once this run; the next such write goes through with a note (the 1.5B wrote the same import
again and again until the run ended)."""


def response_writes(jail: PathJail, context: ToolContext) -> set[str]:
    """The workspace paths the ``write_file`` and ``edit_file`` calls of the response being run write to
    (a package written before the module it imports, in the same response, is not refused)."""
    return {path for call in context.state.get(RESPONSE_CALLS, ()) if (path := written_path(jail, call)) is not None}


def written_path(jail: PathJail, call: ToolCall) -> str | None:
    """The workspace path a ``write_file`` or ``edit_file`` call writes to (None: another call, or bad arguments)."""
    if call.name not in ("write_file", "edit_file"):
        return None
    try:
        return jail.relative(jail.resolve(json.loads(call.arguments)["path"], write=True))
    except (ValueError, KeyError, TypeError, PathEscapeError):
        return None  # a call with bad arguments writes nothing


def repeated_version(file: str, before: str, updated: str, context: ToolContext) -> str | None:
    """Why an edit that makes ``file`` again as an earlier edit made it, after another edit changed that
    version, is refused (None: it is not such an edit, and it is recorded).

    Going back to the file as the task gave it is allowed once; going round again is not. In
    fix_failing_test the 1.5B swapped ``sorted(values)`` and ``sorted(values, reverse=True)``
    six times, and ``ordered[middle]`` and ``ordered[middle + 1]`` in its next attempt, until
    the run's time was up.
    """
    versions: list[str] = context.state.setdefault(EDITED_VERSIONS, {}).setdefault(file, [_digest(before)])
    digest = _digest(updated)
    if digest in versions[1:] and digest != versions[-1]:
        return (
            f"{file} is unchanged: this edit makes it exactly as one of your earlier edits made it, a version "
            "you then changed again. Going back and forth between the same versions changes nothing: read "
            "what the checks report, and make a different change."
        )
    versions.append(digest)
    return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

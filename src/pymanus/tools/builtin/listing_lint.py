"""Lints of code that lists or walks workspace folders: a listing that misses the files the
task is about, and does so without an error (see :mod:`pymanus.tools.builtin.code_lint`)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

_NESTED_LOOKED_AT = 200
"""Entries below a listed folder looked at for a file in a subfolder (a bound in a huge workspace)."""


def shallow_listing(source: str, workspace: Path) -> str | None:
    """What is wrong when the code lists a workspace folder with ``os.listdir`` and its files are in subfolders.

    "Find every file under src/ that contains TODO": the 1.5B looped over ``os.listdir('.')``,
    found nothing, and typed a list of paths instead.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "listdir"):
            continue
        argument = node.args[0] if node.args else ast.Constant(".")
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            folder = argument.value or "."
            if nested := _file_in_subfolder(workspace, folder):
                return (
                    f"line {node.lineno} lists {folder!r} with os.listdir, which gives the names in that one folder "
                    f"only, not the files in its subfolders (such as {nested}); os.walk({folder!r}) visits them all"
                )
    return None


def _file_in_subfolder(workspace: Path, folder: str) -> str | None:
    """A file (workspace-relative) inside a subfolder of ``folder``, if the workspace has one."""
    root = workspace.resolve()
    listed = (root / folder).resolve()
    if not listed.is_relative_to(root) or not listed.is_dir():
        return None
    for sub in sorted(listed.iterdir()):
        if sub.is_dir() and not sub.name.startswith("."):
            found = (p for p in itertools.islice(sub.rglob("*"), _NESTED_LOOKED_AT) if p.is_file())
            if (path := next(found, None)) is not None:
                return path.relative_to(root).as_posix()
    return None


def missing_walk_folder(source: str, workspace: Path) -> str | None:
    """What is wrong when the code walks a folder the workspace does not have: ``os.walk`` gives nothing then.

    word_counts: the 1.5B walked ``'.\\texts'`` (a Windows path), found no file, wrote a table
    with no rows and ran the same code again. ``os.walk`` raises no error for a missing folder.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    root = workspace.resolve()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "walk"):
            continue
        if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "os"):
            continue
        argument = node.args[0] if node.args else None
        if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
            continue
        walked = (root / argument.value).resolve()
        if walked.is_relative_to(root) and not walked.is_dir():
            folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
            has = f"its folders are {', '.join(folders[:8])}" if folders else "it has no folders"
            slash = " (paths take /, not \\)" if "\\" in argument.value else ""
            return (
                f"line {node.lineno} walks {argument.value!r}, which is not a folder of the workspace{slash}, so "
                f"os.walk gives nothing, without an error; {has}"
            )
    return None

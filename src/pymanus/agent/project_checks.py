"""The project metadata and the tests a task asks for, held against what the run wrote.

"Set up a new Python project called weather ... a pyproject.toml with the project name and
version 0.1.0": the 1.5B named it ``weather-cli`` under ``[tool.poetry]`` and called the task
done. The name and version the task gives are facts to check, like the files it names;
:func:`pyproject_problems` names a mismatch when a final answer is given
(:func:`pymanus.agent.manus.missing_outputs`). "A tests folder with a test for main()" asks
for a test file as surely: the 1.5B wrote ``tests/__init__.py`` alone and called the project
done (:func:`missing_tests`).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pymanus.agent.progress import named_folders, read_head, written_files
from pymanus.tools.builtin.file_formats import loose_project_keys
from pymanus.tools.builtin.workspace_scan import is_test_file
from pymanus.tools.tool import ToolContext

_NAME = re.compile(r"\bproject\s+(?:called|named)\s+[`'\"]?([A-Za-z_][\w.-]*?)[`'\"]?(?=[\s,.;:]|$)", re.IGNORECASE)
_VERSION = re.compile(r"(?<!python )\bversion\s+[`'\"]?(\d+(?:\.\d+){1,3})\b", re.IGNORECASE)

# "a test for main()", "one unit test of parse", "write tests for the parser"
_ASKS_TESTS = re.compile(
    r"\b(?:an?|one|some)\s+(?:unit\s+)?tests?\s+(?:(?:for|of)\s+`?(?P<subject>\w+)(?P<call>\()?|that\b|which\b)"
    r"|\b(?:write|add|create)\s+(?:unit\s+)?tests\b",
    re.IGNORECASE,
)


def missing_tests(task: str, context: ToolContext) -> list[str]:
    """That the run wrote no test file (``test_*.py``, ``*_test.py``) when ``task`` asks for a test."""
    asked = _ASKS_TESTS.search(task)
    if asked is None or any(is_test_file(name) for name in written_files(context)):
        return []
    subject = asked["subject"] if asked["subject"] and asked["subject"].lower() not in _NOT_SUBJECTS else None
    folder = "tests/" if "tests" in named_folders(task) else ""
    calls = f" that calls {subject}()" if subject and asked["call"] else ""
    return [
        f"the task asks for a test, but this run wrote no test file: write one such as "
        f"{folder}test_{subject or 'main'}.py, with a function def test_...(){calls}"
    ]


_NOT_SUBJECTS = frozenset({"the", "a", "an", "each", "every", "it", "this", "that", "all"})


def pyproject_problems(task: str, context: ToolContext) -> list[str]:
    """How the pyproject.toml files the run wrote differ from the project name and version the task gives."""
    name = _NAME.search(task)
    version = _VERSION.search(task)
    if name is None and version is None:
        return []
    workspace = Path(context.workspace)
    problems = []
    for written in written_files(context):
        if Path(written).name != "pyproject.toml":
            continue
        text = read_head(workspace / written)
        try:
            meta = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue  # the format check says so
        table, project = _project_table(meta)
        if not project and loose_project_keys(written, text):
            continue  # the format check says where its keys belong
        if not project:  # no table at all: the whole table to write, not key by key
            keys = [f'{key} = "{match.group(1)}"' for key, match in (("name", name), ("version", version)) if match]
            problems.append(
                f"{written} has no [project] table with the project's name and version (keys outside a table "
                "belong to no table): write_file it with this content (other tables it needs go after it): "
                + json.dumps("\n".join(["[project]", *keys]) + "\n")
            )
            continue
        if name is not None and _normalized(str(project.get("name", ""))) != _normalized(name.group(1)):
            problems.append(
                f"{written} gives {_given(project, 'name', 'the project name')}, but the task calls the project "
                f'{name.group(1)}: set name = "{name.group(1)}" under [{table}]'
            )
        if version is not None and str(project.get("version", "")) != version.group(1):
            problems.append(
                f"{written} gives {_given(project, 'version', 'the version')}, but the task asks for version "
                f'{version.group(1)}: set version = "{version.group(1)}" under [{table}]'
            )
    return problems


def _project_table(meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The table that holds the project's name and version: ``[project]`` (PEP 621) or ``[tool.poetry]``."""
    tool = meta.get("tool")  # `tool = 'poetry'`, written for [tool.poetry], is valid TOML too
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    if "project" not in meta and isinstance(poetry, dict):
        return "tool.poetry", poetry
    project = meta.get("project")
    return "project", project if isinstance(project, dict) else {}


def _given(project: dict[str, Any], key: str, what: str) -> str:
    """``"the version '1.0'"``, or ``"no version"`` when the table lacks the key."""
    return f"{what} {project[key]!r}" if key in project else f"no {what.removeprefix('the ')}"


def _normalized(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503): case and runs of ``-_.`` aside."""
    return re.sub(r"[-_.]+", "-", name).lower()

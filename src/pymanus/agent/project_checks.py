"""The project metadata a task asks for, held against the pyproject.toml the run wrote.

"Set up a new Python project called weather ... a pyproject.toml with the project name and
version 0.1.0": the 1.5B named it ``weather-cli`` under ``[tool.poetry]`` and called the task
done. The name and version the task gives are facts to check, like the files it names;
:func:`pyproject_problems` names a mismatch when a final answer is given
(:func:`pymanus.agent.manus.missing_outputs`).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pymanus.agent.progress import read_head, written_files
from pymanus.tools.tool import ToolContext

_NAME = re.compile(r"\bproject\s+(?:called|named)\s+[`'\"]?([A-Za-z_][\w.-]*?)[`'\"]?(?=[\s,.;:]|$)", re.IGNORECASE)
_VERSION = re.compile(r"(?<!python )\bversion\s+[`'\"]?(\d+(?:\.\d+){1,3})\b", re.IGNORECASE)


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
        try:
            meta = tomllib.loads(read_head(workspace / written))
        except tomllib.TOMLDecodeError:
            continue  # the format check says so
        table, project = _project_table(meta)
        if name is not None and _normalized(str(project.get("name", ""))) != _normalized(name.group(1)):
            problems.append(
                f"{written} gives the project name {project.get('name')!r}, but the task calls the project "
                f'{name.group(1)}: set name = "{name.group(1)}" under [{table}]'
            )
        if version is not None and str(project.get("version", "")) != version.group(1):
            problems.append(
                f"{written} gives the version {project.get('version')!r}, but the task asks for version "
                f'{version.group(1)}: set version = "{version.group(1)}" under [{table}]'
            )
    return problems


def _project_table(meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The table that holds the project's name and version: ``[project]`` (PEP 621) or ``[tool.poetry]``."""
    poetry = meta.get("tool", {}).get("poetry")
    if "project" not in meta and isinstance(poetry, dict):
        return "tool.poetry", poetry
    project = meta.get("project")
    return "project", project if isinstance(project, dict) else {}


def _normalized(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503): case and runs of ``-_.`` aside."""
    return re.sub(r"[-_.]+", "-", name).lower()

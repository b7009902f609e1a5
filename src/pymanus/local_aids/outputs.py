"""Aid ``output_check``: a final answer is sent back while the files it should leave are not right.

Small models finish early: they announce a file they never wrote, leave it empty, write a
template instead of the values, or write a JSON, TOML or Python file that does not parse.
Checked before an answer is accepted: every file the task names exists (anywhere in the
workspace) and is not empty or a template, and every such file the run created or changed
parses as its extension says.
"""

from __future__ import annotations

import re
from pathlib import Path

from pymanus.agent.extensions import Extension
from pymanus.local_aids.start import changed_since_start, record_start
from pymanus.tools.builtin.file_formats import format_problem
from pymanus.tools.builtin.workspace_scan import Snapshot
from pymanus.tools.tool import ToolContext

FILE_SUFFIXES = [
    "py",
    "md",
    "txt",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "toml",
    "yaml",
    "yml",
    "html",
    "htm",
    "css",
    "js",
    "ts",
    "sh",
    "cfg",
    "ini",
    "xml",
    "sql",
    "log",
    "svg",
    "png",
    "jpg",
    "pdf",
    "rst",
]
_NAMED_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:" + "|".join(FILE_SUFFIXES) + r"))(?![\w/-])")
_PLACEHOLDER = re.compile(
    r"\{\{[^{}\n]{1,60}\}\}|\$\{[\w .-]{1,40}\}|\[(?:INSERT|TODO|PLACEHOLDER)[^\]\n]{0,60}\]", re.IGNORECASE
)
_TEXT_SUFFIXES = (".md", ".txt", ".csv", ".tsv", ".json", ".html", ".yaml", ".yml")


class OutputCheck(Extension):
    """Sends back a final answer while a file the task names is missing, empty, a template or unparsable."""

    name = "output_check"

    def briefing(self, task: str, context: ToolContext) -> None:
        record_start(context)

    def check_answer(self, task: str, answer: str, context: ToolContext) -> str | None:
        root = Path(context.workspace)
        now, changed = changed_since_start(context)
        if now is None:
            return None  # too many files to check
        problems = []
        for name in named_files(task):
            path = locate(name, now)
            if path is None:
                problems.append(f"the task names {name}, but the workspace has no such file")
                continue
            text = _read(root / path)
            if now[path][1] == 0:
                problems.append(f"{path} is empty")
            elif text is not None and path.endswith(_TEXT_SUFFIXES) and _PLACEHOLDER.search(text):
                problems.append(f"{path} still holds a placeholder such as {{{{...}}}} instead of real values")
            elif text is not None and path in changed and (problem := format_problem(path, text)):
                problems.append(problem)
        if not problems:
            return None
        return "; ".join(problems) + ". Fix this, then call terminate again."


def named_files(task: str) -> list[str]:
    """The file paths and names ``task`` mentions (``report.md``, ``src/app.py``), in order, once each."""
    return list(dict.fromkeys(match.strip("./") for match in _NAMED_FILE.findall(task)))


def locate(name: str, files: Snapshot) -> str | None:
    """The workspace path of the file ``name`` names: itself, else the shallowest file ending in it."""
    if name in files:
        return name
    found = sorted((path for path in files if path.endswith(f"/{name}")), key=lambda path: path.count("/"))
    return found[0] if found else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None

"""Python that runs without an error but cannot do what its author meant (or never runs at all).

Such code passes every syntax check, so the mistake only shows as a wrong value several
steps later; small models then change everything except the culprit. The file tools and
the python tool name the line instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

_REGEX_LIKE = re.compile(r"\[\^?[^\]]*(?:\w-\w|\\[wdsWDS])[^\]]*\]|\\[sdwSDWb]|\.[*+]|\(\?")
"""A character class with a range or class escape (``[^a-z0-9]``, not a checkbox's ``[ ]``), an escape
such as ``\\s``, ``.*`` or ``(?``: text meant as a regular expression."""


def regex_in_replace(source: str) -> str | None:
    """``"line 3 calls .replace('[^a-z]', ...): ..."`` when code passes a regular expression to ``str.replace``.

    ``str.replace`` (and pandas' ``.str.replace`` without ``regex=True``) looks for the
    exact text, so ``title.replace('[^a-z0-9]+', '-')`` changes nothing.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace"):
            continue
        pattern = node.args[0] if node.args else None
        if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
            continue
        if _REGEX_LIKE.search(pattern.value) and not any(keyword.arg == "regex" for keyword in node.keywords):
            shown = f"r'{pattern.value}'" if "'" not in pattern.value else repr(pattern.value)
            return (
                f"line {node.lineno} calls .replace({shown}, ...), but str.replace looks for that exact "
                "text, not a regular expression; for a pattern use re.sub(pattern, replacement, text) (import re)"
            )
    return None


_TEST_FUNCTION = re.compile(r"^\s*(?:async\s+)?def test\w*\(", re.MULTILINE)


def undiscoverable_test(path: str, source: str) -> str | None:
    """A note when ``path`` holds tests (``def test...``) in a file that test runners will not collect."""
    file = PurePosixPath(path)
    if file.suffix != ".py" or not _TEST_FUNCTION.search(source):
        return None
    if file.name in ("__init__.py", "conftest.py") or file.name.startswith("test") or file.stem.endswith("_test"):
        return None
    return (
        f"Note: pytest and unittest only collect test files named test_*.py, so they will not run {path}; "
        f"name it {file.with_name('test_' + file.name)}."
    )

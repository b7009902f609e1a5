"""Whether a file's text is what its extension says: JSON, TOML or Python source.

A file that does not parse is wrong whatever the task: a model writes ``{'a': 1}`` to a
.json file or a script with a syntax error, and reads "Created" as success. The file tools
and the python tool say so when they write such a file.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable


def format_problem(name: str, text: str) -> str | None:
    """``"x.json is not valid JSON (...)"`` when ``text`` does not parse as ``name``'s extension says, else None."""
    suffix = name[name.rfind(".") :].lower() if "." in name else ""
    kind, parse = _FORMATS.get(suffix, ("", None))
    if parse is None:
        return None
    try:
        parse(text)
    except (ValueError, SyntaxError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        detail = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, SyntaxError) else str(exc)
        advice = _JSON_ADVICE if kind == "JSON" else ""
        return f"{name} is not valid {kind} ({detail}){advice}"
    return None


def format_warning(name: str, text: str) -> str:
    """The warning a tool adds when a file it wrote does not parse as its extension says ("" if it does)."""
    problem = format_problem(name, text)
    return f"Warning: {problem}. Fix it before using the file." if problem else ""


_JSON_ADVICE = "; write it from python with json.dump(value, f, indent=2), which quotes every key and string"


def _compile(text: str) -> None:
    compile(text, "<file>", "exec")


_FORMATS: dict[str, tuple[str, Callable[[str], object]]] = {
    ".json": ("JSON", json.loads),
    ".toml": ("TOML", tomllib.loads),
    ".py": ("Python", _compile),
}

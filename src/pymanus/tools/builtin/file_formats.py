"""Whether a file's text is what its extension says: JSON, TOML, Python source, Markdown tables.

A file that does not parse is wrong whatever the task: a model writes ``{'a': 1}`` to a
.json file, a pyproject.toml of loose lines, a script whose string literal holds a raw
line break, or a report whose code failed as a bare table header, and reads "Created" as
success. The file tools say so when they write such a file; the Manus preset's completion
check says so again before a final answer is accepted.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import PurePosixPath

from pymanus.tools.builtin.code_repair import repair
from pymanus.tools.builtin.markdown_tables import check_tables
from pymanus.tools.builtin.missing_imports import missing_modules


def format_problem(name: str, text: str) -> str | None:
    """``"x.json is not valid JSON (...)"`` when ``text`` does not parse as ``name``'s extension says, else None."""
    suffix = name[name.rfind(".") :].lower() if "." in name else ""
    if suffix in _RESULT_TEXT and code_instead_of_result(text):
        return (
            f"{name} holds Python code, not what the code computes: run the code with python and write its "
            f"result (write_file('{name}', text) inside the code)"
        )
    if suffix in _RESULT_TEXT and "Traceback (most recent call last):" in text:
        # word_counts run 212: the 1.5B wrote its code's ValueError to counts.md, then edited the traceback
        return (
            f"{name} holds a Python traceback, the error output of code, not a result: fix the code the error "
            f"came from (the note after the traceback says how) and let it write {name}"
        )
    kind, parse = _FORMATS.get(suffix, ("", None))
    if parse is None:
        return None
    try:
        parse(text)
    except (ValueError, SyntaxError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        detail = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, SyntaxError) else str(exc)
        advice = _JSON_ADVICE if kind == "JSON" else ""
        if name.rsplit("/", 1)[-1] == "pyproject.toml" and (meant := project_table_meant(text)):
            advice = f"; {meant[0]}: write_file {name} with {json.dumps(meant[1])}"
        return f"{name} is not valid {kind} ({detail}){advice}"
    if name.rsplit("/", 1)[-1] == "pyproject.toml":
        return loose_project_keys(name, text)
    return (self_import(name, text) or unimported_modules(name, text)) if kind == "Python" else None


_SHOWN_FIX = 400
"""The longest fixed pyproject.toml a warning shows whole."""
_PROJECT_KEYS = ("name", "version", "description", "readme", "dependencies", "requires-python", "authors")


def loose_project_keys(name: str, text: str) -> str | None:
    """The project keys a pyproject.toml sets outside any table, where no packaging tool reads them.

    The 1.5B wrote ``name = 'weather'`` and ``version = '0.1.0'`` as the whole file, twice, and
    ``project_name = 'weather'`` with ``project_version`` (project_layout run 231).
    """
    keys = tomllib.loads(text)
    spellings = [spelled for key in _PROJECT_KEYS for spelled in (key, f"project_{key}", f"project-{key}")]
    loose = [key for key in spellings if key in keys]
    if not loose:
        return None
    fixed = "[project]\n" + _PREFIXED_PROJECT_KEY.sub(r"\1", text.lstrip())
    how = (
        f"write_file {name} with this content: {json.dumps(fixed)}"
        if len(fixed) <= _SHOWN_FIX
        else ("write [project] as the file's first line, above them")
    )
    return (
        f"{name} sets {', '.join(loose)} outside any table, where packaging tools do not read them: they belong "
        f"under a [project] line; {how}"
    )


_PREFIXED_PROJECT_KEY = re.compile(rf"^project[_-]({'|'.join(_PROJECT_KEYS)})\b", re.MULTILINE)
_SETUP_CALL = re.compile(r"\bsetup\s*\(")
_PROJECT_AS_VALUE = re.compile(r"^\s*project\s*=\s*\{", re.MULTILINE)
_PROJECT_KEYWORD = re.compile(r"\b(name|version|description)\s*=\s*(['\"])([^'\"\n]*)\2")


def project_table_meant(text: str) -> tuple[str, str] | None:
    """What a pyproject.toml that does not parse holds instead of TOML, and the [project] table it means (else None).

    "not valid TOML" alone did not tell the 1.5B what the file should hold. It wrote setuptools'
    ``setup()`` call there (with a stray bracket, so not even Python), and ``project = {`` with
    a key on each line and a trailing comma (project_layout, run 220), which an inline table
    may not have.
    """
    if _SETUP_CALL.search(text):
        kind = "it is a setup.py script, and pyproject.toml is TOML"
    elif _PROJECT_AS_VALUE.search(text):
        kind = "it writes `project = {...}` over several lines, and a TOML table written so must be on one line"
    else:
        return None
    keys = {key: value for key, _, value in _PROJECT_KEYWORD.findall(text)}
    if "name" not in keys:
        return None
    return kind, "[project]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in keys.items())


_RESULT_TEXT = (".txt", ".md", ".csv")
"""Files that hold results, where code is never what a task wants."""
_WORK_CALLS = frozenset({"walk", "listdir", "scandir", "glob", "rglob", "read_file", "open", "read_csv", "read_text"})


_FENCE = re.compile(r"```[\w+-]*")


def code_instead_of_result(text: str) -> bool:
    """Whether ``text`` is Python that computes something (a comprehension, a call that reads files).

    The 1.5B wrote ``'\\n'.join([path for folder, _, names in os.walk('src/') ...])`` with write_file
    as the content of todo_files.txt, and called the list written. A sentence or a list of paths
    (``src/app/main.py`` parses as Python too) has no such parts. The code is read without Markdown
    fences and with the repairs the ``python`` tool makes (word_counts run 230: counts.md held the
    failed code in a json fence, its ``r'\\n'`` a raw line break).
    """
    try:
        tree = ast.parse(repair(_FENCE.sub("", text))[0])
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return True
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if called in _WORK_CALLS:
                return True
    return False


def format_warning(name: str, text: str) -> str:
    """The warning a tool adds when a file it wrote does not parse as its extension says ("" if it does)."""
    problem = format_problem(name, text)
    return f"Warning: {problem}. Fix it before using the file." if problem else ""


def unimported_modules(name: str, text: str) -> str | None:
    """``"textutils.py uses re but never imports it ..."`` for standard-library modules the code uses
    (``re.sub(...)``) and never binds: no import, assignment, parameter or definition of that name.

    add_function, runs 222 and 224: the 1.5B wrote ``re.sub`` into slugify without ``import re``,
    then changed the pattern's flags while the task's check failed with the NameError.
    """
    missing = missing_modules(ast.parse(text))
    if not missing:
        return None
    modules = [module for _, module in missing]
    imports = "; ".join(f"import {module}" for module in modules)
    return (
        f"{name} uses {', '.join(modules)} (line {missing[0][0]}) but never imports "
        f"{'it' if len(modules) == 1 else 'them'}, so calling that code raises NameError: add `{imports}` "
        "at the top of the file"
    )


def _module_names(name: str) -> tuple[str, str]:
    """The module file ``name``'s own name and its dotted name from the workspace root (cli, weather.cli)."""
    parts = name.removesuffix(".py").split("/")
    return parts[-1], ".".join(parts)


def self_import(name: str, text: str) -> str | None:
    """``"textutils.py imports itself ..."`` when a module imports its own names (a circular import)."""
    stem, dotted = _module_names(name)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:  # from .cli import main, from . import cli
            own = node.module == stem or (node.module is None and any(alias.name == stem for alias in node.names))
        elif isinstance(node, ast.ImportFrom):
            own = node.level == 0 and node.module in (stem, dotted)
        elif isinstance(node, ast.Import):
            own = any(alias.name in (stem, dotted) for alias in node.names)
        else:
            continue
        if own:
            line = text.splitlines()[node.lineno - 1].strip()
            return (
                f"{name} imports itself at line {node.lineno} (`{line}`), which fails as a circular import: "
                "a module's own functions need no import there; remove that line"
            )
    return None


def unwritten_imports(name: str, text: str, exists: Callable[[str], bool]) -> str | None:
    """A note naming the workspace modules the module ``name`` imports that do not exist yet (None: none).

    ``exists`` tells whether a workspace path exists. Only imports that are the workspace's own
    are looked at: relative ones, and absolute ones whose first part is a workspace folder. The
    1.5B began project_layout with ``from .cli import main`` as ``weather/__init__.py``, then
    "edited" the cli.py it never wrote until the run ended.
    """
    found = _first_unwritten(name, text, exists)
    if found is None:
        return None
    module, names, own_package = found
    if own_package:
        # project_layout: `from . import weather` in weather/cli.py, told to write weather/weather.py
        package = PurePosixPath(name).parent.name
        return (
            f"Note: {name} imports `{package}` from its own package, which would be a module {module} "
            f"(there is none): {name} is already part of the package {package}, so leave that import "
            "out, and import the package's modules by their own names (from .cli import main)."
        )
    missing = _imported(module, names)
    if (above := _same_name_above(module, exists)) is not None:
        # project_layout run 230: `from .cli import main` in weather/tests/test_cli.py, where weather/cli.py is
        dotted = above.removesuffix(".py").replace("/", ".")
        statement = f"from {dotted} import {', '.join(names)}" if names else f"import {dotted}"
        return (
            f"Note: {name} imports {missing}, which is not there; the module is {above}, so import it by its "
            f"full name: `{statement}`."
        )
    return f"Note: {name} imports {missing}, which does not exist yet: write {module} next{_defining(names)}."


def _same_name_above(module: str, exists: Callable[[str], bool]) -> str | None:
    """The module of ``module``'s file name in a folder above it (weather/cli.py for weather/tests/cli.py)."""
    path = PurePosixPath(module)
    for folder in path.parent.parents:
        if exists(candidate := (folder / path.name).as_posix()):
            return candidate
    return None


def unwritten_package_import(name: str, text: str, exists: Callable[[str], bool]) -> str | None:
    """Why a package's ``__init__.py`` that imports a module of the workspace not written yet is refused.

    Every import of the package runs its ``__init__.py`` first, so until that module exists the
    package cannot be imported at all, nor its tests run. The 1.5B began project_layout this way
    in four runs out of four and spent the run editing the import. The file tools refuse it once
    per file (it then insisted on it until the run ended).
    """
    if PurePosixPath(name).name != "__init__.py":
        return None
    found = _first_unwritten(name, text, exists)
    if found is None or found[2]:
        return None
    module, names, _ = found
    return (
        f"{name} was not written: it imports {_imported(module, names)}, which does not exist yet, and every "
        f"import of the package runs {name} first, so all of them would fail. Write {module} first{_defining(names)}; "
        f"then {name} can import from it. An empty {name} also makes a package."
    )


def _imported(module: str, names: list[str]) -> str:
    return f"{', '.join(names)} from {module}" if names else module


def definition_of(name: str) -> str:
    """How a note asks for the definition of the function ``name``."""
    # Not "def main(...):": the 1.5B copied the dots into weather/cli.py, which then did not parse.
    return f"def {name}(): with the parameters it takes, and its body"


def _defining(names: list[str]) -> str:
    defining = f", defining {', '.join(names)} ({definition_of(names[0])})" if names else ""
    return f", with write_file and its whole content{defining}"


def _first_unwritten(name: str, text: str, exists: Callable[[str], bool]) -> tuple[str, list[str], bool] | None:
    """The first workspace module ``name`` imports that does not exist: its path, the names imported from it,
    and whether it is the package's own name imported inside the package (None: every one exists)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    package = PurePosixPath(name).parent
    missing: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level - 1 > len(package.parts):
                continue
            base = package.parents[node.level - 2] if node.level > 1 else package
            if node.module:
                targets = [(base.joinpath(*node.module.split(".")), [alias.name for alias in node.names])]
            else:
                targets = [(base / alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and "." in node.module:
            targets = [(PurePosixPath(*node.module.split(".")), [alias.name for alias in node.names])]
        elif (
            isinstance(node, ast.ImportFrom)
            and name.endswith("/__init__.py")
            and node.module == ".".join(package.parts)
        ):
            # `from weather import cli` in weather/__init__.py imports the package's own modules
            targets = [(package / alias.name, []) for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [(PurePosixPath(*alias.name.split(".")), []) for alias in node.names if "." in alias.name]
        else:
            continue
        for target, names in targets:
            module = f"{target}.py"
            if module == name or not exists(target.parts[0]) or exists(module) or exists(f"{target}/__init__.py"):
                continue
            if target == package / package.name and not names:
                return module, [], True
            missing.setdefault(module, []).extend(names)
    if not missing:
        return None
    module, names = next(iter(missing.items()))
    return module, names, False


_OWN_IMPORT = re.compile(r"^from\s+(\.?[\w.]+)\s+import\s+([\w ,]+?)\s*$")
_TOP_LEVEL_NAME = re.compile(r"^(?:(?:async\s+)?def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def redundant_self_imports(name: str, new_text: str, module_text: str) -> tuple[str, list[str]]:
    """``new_text`` without its lines that import names from the module ``name`` itself, or from its
    package names the module defines.

    ``module_text`` is the whole module the lines go into. ``from textutils import slugify`` at the
    top of textutils.py fails as a circular import, and small models kept writing it above the
    function they added, again after being told; the line is dropped (and the tools say so) when
    the module defines the names anyway, or when ``new_text`` has code besides (the 1.5B's whole
    new textutils.py began with such a line and was refused three times). Returns the text and
    the dropped lines.
    """
    stem, dotted = _module_names(name)
    own = {stem, dotted, f".{stem}"}
    package = {".", dotted.rpartition(".")[0]} - {""} if "." in dotted else set()
    defined = {first or second for first, second in _TOP_LEVEL_NAME.findall(module_text)}
    lines = new_text.splitlines(keepends=True)
    imported: dict[int, list[str]] = {}
    for number, line in enumerate(lines):
        match = _OWN_IMPORT.match(line.rstrip("\r\n"))
        names = [part.split()[0] for part in match[2].split(",") if part.strip()] if match else []
        if match and match[1] in own and names:
            imported[number] = names
        elif match and match[1] in package and names and all(item in defined for item in names):
            # weather/cli.py began `from . import main` above its own `def main():`: the package's
            # __init__ imports main from cli, so the import is circular, and the def replaces it anyway.
            imported[number] = names
    other_code = any(line.strip() for number, line in enumerate(lines) if number not in imported)
    dropped = [n for n, names in imported.items() if other_code or all(item in defined for item in names)]
    kept = "".join(line for number, line in enumerate(lines) if number not in dropped)
    return kept, [lines[number].strip() for number in dropped]


def dropped_imports_note(name: str, dropped: list[str]) -> str:
    """Why :func:`redundant_self_imports` dropped ``dropped`` ("`from m import f` was left out: ...")."""
    lines = ", ".join(f"`{line}`" for line in dropped)
    return (
        f"{lines} was left out: {name} defines its own names itself, and a module that imports them from "
        "itself or its package fails as a circular import"
    )


def python_literal_as_json(text: str) -> str | None:
    """``text`` as JSON when it is a Python list or dict literal that is not JSON (``[{'a': None}]``), else None.

    Small models print records from Python and write what they saw to a .json file; the
    meaning is unambiguous, so the file tools write it as JSON and say so.
    """
    try:
        json.loads(text)
        return None
    except ValueError:
        pass
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (dict, list)):
        return None
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError):  # a set, bytes, a tuple key or NaN has no JSON form
        return None


LITERAL_AS_JSON_NOTE = (
    "Note: the content was Python syntax (single quotes, None, True), not JSON; it was written as JSON "
    "(as json.dump(value, f, indent=2) writes it)."
)
"""What ``write_file`` says when it converted a Python literal to JSON."""


_LINE_TEXT_SUFFIXES = (".md", ".csv", ".tsv")
"""Files made of lines, where a backslash-n on a single line is never what was meant."""


def unescaped_line_breaks(name: str, text: str) -> str | None:
    """``text`` with its ``\\n`` sequences as line breaks, when it is a Markdown, CSV or TSV file written as
    one line holding two or more of them; None otherwise.

    Escaping the JSON arguments twice, the 1.5B wrote its word-count table as
    ``| file | lines |\\n|---|---|\\n...``: one line, and so no table.
    """
    if not name.lower().endswith(_LINE_TEXT_SUFFIXES) or "\n" in text.rstrip("\n") or text.count("\\n") < 2:
        return None
    return text.replace("\\r\\n", "\n").replace("\\n", "\n")


ESCAPED_LINES_NOTE = (
    "Note: the content was one line holding \\n escapes, as arguments escaped twice give; it was written with "
    "line breaks instead. In the JSON arguments, a line break is \\n, not \\\\n."
)
"""What ``write_file`` says when it turned ``\\n`` escapes into line breaks."""


def refused_python(name: str, text: str) -> str | None:
    """Why the file tools refuse to write ``text`` to the Python file ``name`` (None: write it).

    Only a module that imports itself is refused: it can never be imported, and small
    models that wrote one kept re-running and re-writing the failing import.
    """
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None  # written, with format_warning's note
    problem = self_import(name, text)
    if problem is None:
        return None
    imported = [
        alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module for alias in node.names
    ]
    if imported and all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
        # Its whole content was `from weather.cli import main`: "without that line" left the 1.5B nothing to
        # write, and it wrote the same line six times.
        names = ", ".join(f"`{item}`" for item in imported)
        return (
            f"Not written: {problem}. {name} is unchanged. {name} is the module that must define {names}: write "
            f"it with the definition itself ({definition_of(imported[0])}), not an import."
        )
    return f"Not written: {problem}. {name} is unchanged; write it again without that line."


def broken_python(name: str, before: str, after: str) -> str | None:
    """Why a change that leaves the module ``name`` not parsing is refused (None: ``after`` parses, or
    ``before`` did not either, and a fix may take more than one change).

    The 1.5B appended a function with a docstring it never closed; the edit was kept with a
    warning, every later import failed, and its next edits went below the broken line.
    """
    # compile, not ast.parse: "'return' outside function" (a body left unindented) is raised by the compiler.
    try:
        compile(before, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    try:
        compile(after, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        lines = after.splitlines()
        shown = f": {lines[exc.lineno - 1].strip()!r}" if exc.lineno and exc.lineno <= len(lines) else ""
        return (
            f"{name} is unchanged: with this change it would not be valid Python ({exc.msg}, line {exc.lineno}"
            f"{shown}). Fix the code and send it again."
        )
    except ValueError as exc:  # a null byte
        return f"{name} is unchanged: with this change it would not be valid Python ({exc})."
    return None


def dropped_definitions(before: bytes, after: str) -> list[str]:
    """The top-level functions and classes ``before`` defines and ``after`` no longer does (an overwrite of
    a module); none when either side does not parse."""
    try:
        kept = set(_definitions(after))
        return [definition for definition in _definitions(before.decode(errors="replace")) if definition not in kept]
    except (SyntaxError, ValueError):
        return []


def dropped_note(name: str, dropped: list[str]) -> str:
    """The note for an overwrite of the module ``name`` that no longer defines ``dropped``."""
    return (
        f"Note: {name} no longer defines {', '.join(dropped)}, which it defined before this write. "
        "If they must stay, write the file again with them."
    )


def kept_definitions_note(name: str, kept: list[str]) -> str:
    """The note for an overwrite of the module ``name`` merged into it, since it lacked ``kept``."""
    return (
        f"Note: the new content had no {', '.join(kept)}, which {name} defines and the task does not ask to "
        f"remove, so it was merged into {name}: they are kept, a function or class it defines is replaced by "
        "the new one of the same name, and other new code goes after its last line. To remove code, use edit_file."
    )


def lost_definitions_refusal(name: str, dropped: list[str]) -> str:
    """Why an overwrite of the module ``name`` that loses ``dropped``, which the task does not name, and
    cannot be merged into it, is refused."""
    return (
        f"{name} was not overwritten: the new content no longer defines {', '.join(dropped)}, which {name} defines "
        f"now and the task does not ask to remove. Write the whole file again with them, or add new code with "
        f'edit_file (path "{name}", old_text "" and the new code as new_text: it goes after the last line).'
    )


def _definitions(text: str) -> list[str]:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in ast.parse(text).body if isinstance(node, kinds)]


_JSON_ADVICE = "; write it from python with json.dump(value, f, indent=2), which quotes every key and string"
"""Small models write Python dicts (single quotes) or templates (``${mean}``) to .json files."""


def _compile(text: str) -> None:
    compile(text, "<file>", "exec")


_FORMATS: dict[str, tuple[str, Callable[[str], object]]] = {
    ".json": ("JSON", json.loads),
    ".toml": ("TOML", tomllib.loads),
    ".py": ("Python", _compile),
    ".md": ("Markdown", check_tables),
}

"""Notes the python tool adds to an observation so that a small model can recover.

- A name a workspace module does not have: small models write a package's imports before
  its modules (``from . import cli`` in an ``__init__.py`` with no ``cli.py`` yet), import a
  function from the package instead of defining it (``from . import main`` as the whole of
  ``cli.py``), or test a function before writing it. The note names the file to write or
  the line to change, with the call to make.
- A test run that found no tests: ``unittest.main()`` in a block collects the block's own
  ``TestCase`` classes, so "Ran 0 tests ... OK" reads like success.
- A file the code did not find: where files of that name are (small models get a path's
  folder wrong, then guess again).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path, PurePosixPath

from pymanus.tools.builtin.workspace_scan import defining_module, scan

_TEST_FILE = re.compile(r"(?:test_\w*|\w+_test)\.py")


def is_test_file(path: str) -> bool:
    """Whether the file at ``path`` (a workspace path or a name) is a test module (``test_*.py``, ``*_test.py``)."""
    return _TEST_FILE.fullmatch(path.rsplit("/", 1)[-1]) is not None


TEXT_READ_NOTE = (
    "The code raised AttributeError (traceback above): a function that reads from an open file "
    "(json.load, csv.reader's file, pickle.load) was given text, a str. read_file(path) returns the "
    "file's text: parse it with json.loads(read_file(path)), or pass an open file: json.load(open(path))."
)
"""The note for ``'str' object has no attribute 'read'``."""


def missing_name_note(workspace: Path, missing: str, where: str, error: str, *, importer: str, circular: bool) -> str:
    """The note for ``missing``, a name the workspace module ``where`` lacks.

    Args:
        workspace: the workspace folder.
        missing: the name the code asked for.
        where: the module that lacks it (workspace-relative, ``pkg/__init__.py``).
        error: ``"ImportError"`` or ``"AttributeError"``.
        importer: the workspace file whose import failed (``pkg/cli.py``), or ``""``.
        circular: the error came from a partially initialized module.
    """
    if circular and (itself := _self_import(workspace, where)):
        return f"The code raised ImportError (traceback above): {itself}."
    package = PurePosixPath(where).parent
    in_package = PurePosixPath(where).name == "__init__.py" and package.parts
    if in_package and (note := _missing_submodule(workspace, package, missing, error, importer)) is not None:
        return note
    home = defining_module(workspace, missing)
    if home is not None and f"{home.replace('.', '/')}.py" != where:
        return (
            f"{where} in the workspace does not define `{missing}`; {home.replace('.', '/')}.py does. If the task "
            f"asks for it in {where}, write it there (edit_file with an empty old_text adds code after the last "
            f"line); otherwise import it from where it is: from {home} import {missing}."
        )
    if owner := _method_owner(workspace / where, missing):
        runs = (
            f" Run the tests with `python -m unittest {where[:-3].replace('/', '.')}`."
            if missing[:5] == "test_"
            else ""
        )
        return (
            f"`{missing}` in {where} is a method of the class {owner}, not a name the module defines, so it cannot "
            f"be imported: import {owner}, or call it on an instance, {owner}().{missing}(...).{runs}"
        )
    return (
        f"{where} in the workspace does not define `{missing}` yet. If the task asks for it, write it there "
        f'before testing it: edit_file with path "{where}", old_text "" and the new code as new_text (it is '
        "added after the last line), or write_file with the whole updated file."
    )


def _method_owner(module_file: Path, name: str) -> str | None:
    """The top-level class of ``module_file`` that defines the method ``name`` (None: none does).

    A model that imports a test method from a test module (where it is a method of a ``TestCase``)
    must be told it is a method, not told to write a function of that name.
    """
    try:
        tree = ast.parse(module_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name for item in node.body
        ):
            return node.name
    return None


def _self_import(workspace: Path, module_file: str) -> str | None:
    """What :func:`self_import` says of the workspace module ``module_file`` (None: nothing)."""
    try:
        return self_import(module_file, (workspace / module_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _missing_submodule(workspace: Path, package: PurePosixPath, missing: str, error: str, importer: str) -> str | None:
    """The note when a package lacks ``missing`` in its ``__init__.py`` and has no module of that name either.

    ``from . import cli, utils`` names modules a model has not written (or never will),
    ``pkg.__version__`` (an AttributeError) reads a name nothing defines, and a module of
    the package importing a function from the package means to define it.
    """
    module = package / f"{missing}.py"
    if (workspace / module).exists() or (workspace / package / missing).is_dir():
        return None
    dotted = ".".join(package.parts)
    init = package / "__init__.py"
    lacks = f"The package {dotted} has no `{missing}`: {init} does not define it"
    home = defining_module(workspace, missing)
    if home is not None and home.startswith(f"{dotted}."):
        submodule = home.removeprefix(f"{dotted}.")
        return (
            f"{lacks}; {home.replace('.', '/')}.py does. Import it from that module: "
            f"from .{submodule} import {missing} (inside the package), or from {home} import {missing}."
        )
    if error == "AttributeError":
        return (
            f"{lacks}. Define it there if the task asks for it; otherwise use only names the package's "
            "files define (read_file them)."
        )
    if importer and importer != str(init) and PurePosixPath(importer).parent == package:
        return (
            f"{lacks}, and no module of the package does. {importer} imports `{missing}` from its own package: "
            f"if {importer} should have `{missing}`, define it there instead ({definition_of(missing)}), "
            f"and remove that import; write_file {importer} with its whole content."
        )
    return (
        f"{lacks} and there is no {module}. Importing `{missing}` from the package (from . import {missing}) "
        f"needs one of them: if the task asks for a module {module}, write it first (write_file with its whole "
        f"content); otherwise remove `{missing}` from that import (traceback above)."
    )


_NO_TESTS = re.compile(r"^Ran 0 tests in ", re.MULTILINE)


def no_tests_note(output: str, workspace: Path) -> str | None:
    """The note when unittest ran no test, naming the workspace's test modules to run instead."""
    if not _NO_TESTS.search(output):
        return None
    files = sorted(scan(workspace) or ())
    modules = [name.removesuffix(".py").replace("/", ".") for name in files if is_test_file(name)]
    if not modules:
        return (
            "unittest ran 0 tests, so nothing was tested: it collects unittest.TestCase classes with test_* "
            "methods, and found none."
        )
    return (
        "unittest ran 0 tests, so nothing was tested: unittest.main() collects the TestCase classes of the code "
        "that calls it, not of the workspace's test files. Run those with "
        f"unittest.main(module='{modules[0]}', exit=False)"
        + (f" (each of {', '.join(modules[:4])})" if len(modules) > 1 else "")
        + "."
    )


def missing_file_note(workspace: Path, missing: str) -> str:
    """Say where the files of that name are: small models get a path's folder wrong, then guess again."""
    name = PurePosixPath(missing).name
    same = sorted(path for path in scan(workspace) or () if PurePosixPath(path).name == name)
    if not same:
        return (
            f"The code raised FileNotFoundError (traceback above): the workspace has no file named {name}. "
            "Fix the path (relative to the workspace folder) and run it again."
        )
    # find_todos: `for root, dirs, files in os.walk('.'): ... open(file)` found no file twice.
    joined = " os.walk and os.listdir give names without their folder: os.path.join(folder, name)."
    return (
        f"The code raised FileNotFoundError (traceback above): the workspace has no {missing}, but has "
        f"{', '.join(same[:5])}. Use that path (relative to the workspace folder) and run it again."
        + (joined if "/" not in missing and all("/" in path for path in same) else "")
    )


def unimported_module_note(path: str, line: int, module: str) -> str:
    """The note for a NameError in the workspace module ``path`` for a standard ``module`` it never imports."""
    return (
        f"The NameError is in {path}, line {line} (traceback above): `{module}` is a standard module that "
        f"{path} does not import. Add the import as its first line: edit_file with path {path!r}, "
        f'old_text "", insert_line 0 and new_text "import {module}"; then run this again.'
    )


def missing_import_note(path: str, line: int, module: str, home: str | None) -> str:
    """The note for a ModuleNotFoundError raised in the workspace file ``path``, which imports ``module``;
    ``home`` is the workspace module that defines a name ``module``, if one does."""
    note = (
        f"The ModuleNotFoundError is in {path}, line {line} (traceback above), a workspace file the code imports: "
        f"it imports `{module}`, which is neither a module in the workspace nor an installed library (packages "
        f"cannot be installed here). Fix that line of {path} (edit_file): "
    )
    if home == path.removesuffix(".py").replace("/", "."):
        return note + f"`{module}` is defined in {path} itself, so remove the import."
    if home:
        where = home.replace(".", "/") + ".py"
        return note + f"`{module}` is defined in {where}, so import it from there (from {home} import {module})."
    return note + "remove it, or import what the file needs from the workspace module that defines it."


def column_lengths_note(lengths: dict[str, int]) -> str:
    """The note for pandas' "All arrays must be of the same length", with each column's length."""
    counts = ", ".join(f"{name} {length}" for name, length in lengths.items())
    return (
        f"The code raised ValueError (traceback above): the table's columns have different lengths: "
        f"{counts}. Every column needs one value per row: a value added to some lists (a total) must be "
        "added to every list, or added as a row after the table is built."
    )


_CONCAT = "collect the rows in a list of dicts and build the table once with pd.DataFrame(rows), or use pd.concat"
REMOVED_APIS = {
    "DataFrame.append": f"was removed in pandas 2.0: {_CONCAT}",
    "Series.append": "was removed in pandas 2.0: use pd.concat([series, other])",
    "DataFrame.iteritems": "was removed in pandas 2.0: use .items()",
    "Series.iteritems": "was removed in pandas 2.0: use .items()",
    "DataFrame.as_matrix": "was removed in pandas 1.0: use .to_numpy()",
    "DataFrame.ix": "was removed in pandas 1.0: use .loc (labels) or .iloc (positions)",
    **{
        f"numpy.{name}": f"was removed in NumPy 1.24: use the builtin {name}"
        for name in ("float", "int", "bool", "object")
    },
}


def removed_api_note(attribute: str) -> str | None:
    """The note for an AttributeError on ``attribute`` ("DataFrame.append") that a library removed, or None."""
    if attribute not in REMOVED_APIS:
        return None
    return f"`{attribute}` {REMOVED_APIS[attribute]}, and the sandbox has the current version."


def _module_names(name: str) -> tuple[str, str]:
    """The module file ``name``'s own name and its dotted name from the workspace root (cli, pkg.cli)."""
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


def definition_of(name: str) -> str:
    """How a note asks for the definition of the function ``name``."""
    # Not "def main(...):": a model copied the dots into the module, which then did not parse.
    return f"def {name}(): with the parameters it takes, and its body"

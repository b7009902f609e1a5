"""What to do when code imports a name a workspace module does not have.

Small models write a package's imports before its modules (``from . import cli`` in an
``__init__.py`` with no ``cli.py`` yet), import a function from the package instead of
defining it (``from . import main`` as the whole of ``cli.py``), or test a function before
writing it. The python tool's note names the file to write or the line to change, with
the call to make.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from pymanus.tools.builtin.file_formats import self_import
from pymanus.tools.builtin.workspace_scan import defining_module


def missing_name_note(workspace: Path, missing: str, where: str, error: str, *, importer: str, circular: bool) -> str:
    """The note for ``missing``, a name the workspace module ``where`` lacks.

    Args:
        workspace: the workspace folder.
        missing: the name the code asked for.
        where: the module that lacks it (workspace-relative, ``weather/__init__.py``).
        error: ``"ImportError"`` or ``"AttributeError"``.
        importer: the workspace file whose import failed (``weather/cli.py``), or ``""``.
        circular: the error came from a partially initialized module.
    """
    if circular and (itself := _self_import(workspace, where)):
        return f"The code raised ImportError (traceback above): {itself}."
    package = PurePosixPath(where).parent
    in_package = PurePosixPath(where).name == "__init__.py" and package.parts
    if in_package and (note := _missing_submodule(workspace, package, missing, error, importer)) is not None:
        return note
    return (
        f"{where} in the workspace does not define `{missing}` yet. If the task asks for it, write it there "
        f'before testing it: edit_file with path "{where}", old_text "" and the new code as new_text (it is '
        "added after the last line), or write_file with the whole updated file."
    )


def _self_import(workspace: Path, module_file: str) -> str | None:
    """What :func:`self_import` says of the workspace module ``module_file`` (None: nothing)."""
    try:
        return self_import(module_file, (workspace / module_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _missing_submodule(workspace: Path, package: PurePosixPath, missing: str, error: str, importer: str) -> str | None:
    """The note when a package lacks ``missing`` in its ``__init__.py`` and has no module of that name either.

    ``from . import cli, utils`` names modules the 1.5B had not written (or never would),
    ``weather.__version__`` (an AttributeError) reads a name nothing defines, and a module of
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
            f"if {importer} should have `{missing}`, define it there instead (def {missing}(...): with its body), "
            f"and remove that import; write_file {importer} with its whole content."
        )
    return (
        f"{lacks} and there is no {module}. Importing `{missing}` from the package (from . import {missing}) "
        f"needs one of them: if the task asks for a module {module}, write it first (write_file with its whole "
        f"content); otherwise remove `{missing}` from that import (traceback above)."
    )

"""The worker that runs model-written Python inside the sandbox, one code block at a time.

Not imported by PyManus: :mod:`pymanus.tools.builtin.python` passes this file's source
to ``python -c`` inside the sandbox, so it uses the standard library only.

Protocol. Arguments: a random token and the CPU seconds granted per block. Standard
input carries blocks as ``<byte length>\\n<utf-8 source>``; the worker takes the pipe
for itself and gives the code an empty stdin. After each block it writes
``\\x1e<token>:\\x1e`` to stdout and ``\\x1e<token>:<json status>\\x1e`` to stderr, so
the host knows where the block's output ends. Variables persist between blocks (a
session); the host simply sends one block and closes the pipe for a one-shot run.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import importlib
import inspect
import json
import linecache
import os
import re
import reprlib
import resource
import sys
import traceback
import types
from collections.abc import Iterator
from typing import Any

SEPARATOR = b"\x1e"


PREIMPORTED = ("json", "csv", "math", "os", "re", "statistics", "collections", "datetime", "pathlib")


def main() -> int:
    """Serve code blocks until the command pipe closes; exit 1 if the last block failed."""
    token = sys.argv[1].encode()
    cpu_seconds = int(sys.argv[2])
    sys.argv = [""]  # the code sees a plain interpreter, not the protocol's token
    commands = os.fdopen(os.dup(0), "rb")
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    # The code's namespace is the __main__ module, as in a notebook: unittest.main() and
    # pickle look there for the classes and functions the code defines.
    main_module = types.ModuleType("__main__")
    sys.modules["__main__"] = main_module
    namespace: dict[str, Any] = main_module.__dict__
    namespace.update(
        {"__builtins__": builtins, "read_file": read_file, "write_file": write_file, "edit_file": edit_file}
    )
    # Code written as a script finds its files next to itself: os.path.dirname(__file__) is the workspace.
    namespace["__file__"] = os.path.join(os.getcwd(), "__main__.py")
    # Like a notebook with the usual imports done: models often forget `import json`.
    for name in PREIMPORTED:
        namespace[name] = importlib.import_module(name)
    status: dict[str, Any] = {"ok": True}
    while True:
        header = commands.readline()
        if not header.strip():
            return 0 if status.get("ok") else 1
        source = commands.read(int(header)).decode("utf-8", errors="replace")
        _grant_cpu(cpu_seconds)
        _forget_workspace_modules()
        status = run_block(source, cell_name(source), namespace)
        _flush()
        os.write(1, SEPARATOR + token + b":" + SEPARATOR)
        os.write(2, SEPARATOR + token + b":" + json.dumps(status).encode() + SEPARATOR)


def cell_name(source: str) -> str:
    """The block's file name in tracebacks, from its text: the same code failing the same way
    reads the same, so the agent's repeat guard sees a repeated call as one."""
    return f"<cell {hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()[:6]}>"


PREVIEW_LINES = 20
"""Lines ``read_file(path, preview=True)`` returns: the tool's ``files.PREVIEW_ROWS`` (this file runs alone)."""


class FileText(str):
    """The text ``read_file`` returns: a str that also reads like an open file.

    Small models pass it where a file goes, ``json.load(read_file('orders.json'))``, and kept
    doing so after the AttributeError's note (customer_totals, three calls in a row); ``json.load``
    only calls ``read()``. (pandas takes any str for a path, so ``pd.read_csv(read_file(p))`` still fails.)
    """

    def read(self, size: int = -1) -> str:
        return str(self) if size is None or size < 0 else str(self)[:size]


def read_file(path: str, start_line: int | None = None, end_line: int | None = None, preview: bool = False) -> FileText:
    """Return the text of a file, or of lines ``start_line`` to ``end_line`` (from 1, inclusive), or with
    ``preview`` of its first lines (a helper: models call their tools from code, with the tool's arguments)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if start_line is None and end_line is None and not preview:
        return FileText(text)
    lines = text.splitlines(keepends=True)
    first = max(start_line or 1, 1) - 1
    last = end_line if end_line is not None else first + PREVIEW_LINES if preview else len(lines)
    return FileText("".join(lines[first:last]))


def write_file(path: str, content: object, append: bool = False) -> None:
    """Write ``content`` to a file (or add it at the end, with ``append``), creating its folders, and say so.

    ``append`` because small models build a list file a line at a time from a loop.
    """
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    text = content if isinstance(content, str) else str(content)
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"{'added' if append else 'wrote'} {len(text)} characters to {path}")


def edit_file(path: str, old_text: str, new_text: str, replace_all: bool = False) -> None:
    """Replace ``old_text`` (once, or everywhere with ``replace_all``) in a file, and say so.

    With ``replace_all`` a file without ``old_text`` is no error: a rename loops over every file,
    and an error at the first file that does not use the old name would stop the loop there.
    """
    text = read_file(path)
    count = text.count(old_text) if old_text else 0
    if count == 0 and replace_all and old_text:
        print(f"{path} has no {old_text!r}: left as it is")
        return
    if count == 0:
        raise ValueError(f"old_text {old_text!r} was not found in {path}")
    if count > 1 and not replace_all:
        raise ValueError(f"old_text occurs {count} times in {path}: pass replace_all=True to replace them all")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old_text, new_text))
    print(f"edited {path}: replaced {count} occurrence{'s' * (count != 1)}")


def run_block(source: str, filename: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Run one block like a notebook cell: the value of a final expression is printed."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return {"ok": False, "error": "SyntaxError"}
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
    else:
        last = None
    try:
        with _streams_kept():
            exec(compile(tree, filename, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
                if value is not None:
                    print(repr(value))
    except SystemExit as exc:
        code = int(exc.code) if isinstance(exc.code, int) else (0 if exc.code is None else 1)  # True: 1
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
        return {"ok": code == 0, "exit": code}
    except BaseException as exc:
        sys.stderr.write(_describe_error(exc) + failing_line_values(exc))
        status: dict[str, Any] = {"ok": False, "error": type(exc).__name__}
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            status["module"] = exc.name
            if where := _workspace_frame(exc):
                status["raised_in"] = where
        elif isinstance(exc, (ImportError, AttributeError)):
            status.update(_missing_name(exc))
            if isinstance(exc, AttributeError) and exc.name and (owner := getattr(exc, "obj", None)) is not None:
                kind = owner.__name__ if isinstance(owner, types.ModuleType) else type(owner).__name__
                status["attribute"] = f"{kind}.{exc.name}"
        elif isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
            status["broken_file"] = os.path.relpath(exc.filename)  # a module the code imports
        elif isinstance(exc, FileNotFoundError) and isinstance(exc.filename, (str, bytes)):
            status["missing_file"] = os.path.relpath(os.fsdecode(exc.filename))
        elif isinstance(exc, NameError) and exc.name:
            status["undefined"] = exc.name
            if (line := comprehension_line(tree, exc.name)) is not None:
                status["comprehension_line"] = line
            if where := _workspace_frame(exc):
                status["raised_in"] = where
        elif isinstance(exc, TypeError) and (advice := call_signatures(exc)).get("signatures"):
            status.update(advice)
        elif isinstance(exc, ValueError) and (lengths := column_lengths(exc)):
            status["column_lengths"] = lengths
        return status
    return {"ok": True}


def _workspace_frame(exc: BaseException) -> list[Any] | None:
    """``[path, line]`` of the workspace file the error was raised in, when not in the code itself (a module
    it imports, such as a statement at the top level of a workspace module)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or frames[-1].filename.startswith("<"):
        return None
    last = frames[-1]
    path = os.path.abspath(last.filename)
    here = os.getcwd() + os.sep
    return [path[len(here) :], last.lineno] if path.startswith(here) else None


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def comprehension_line(tree: ast.AST, name: str) -> int | None:
    """The line of a comprehension whose loop variable is ``name``, if the code has one.

    ``words = sum(len(line.split()) for line in lines)`` followed by ``len(line.split())``:
    the NameError alone does not say that ``line`` lived only inside the brackets.
    """
    for node in ast.walk(tree):
        if isinstance(node, _COMPREHENSIONS):
            for generator in node.generators:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(generator.target)):
                    return node.lineno
    return None


@contextlib.contextmanager
def _streams_kept() -> Iterator[None]:
    """Put back ``sys.stdout`` and ``sys.stderr`` after a block that replaced them.

    Models redirect them to capture a test run's output; left replaced, every later
    traceback and print of the session would go into the model's buffer, unseen.
    """
    saved = sys.stdout, sys.stderr
    try:
        yield
    finally:
        if (sys.stdout, sys.stderr) != saved:
            _flush()
            sys.stdout, sys.stderr = saved


def _forget_workspace_modules() -> None:
    """Drop imported modules that live in the workspace, so the next import reads the file again.

    The model edits ``textutils.py`` with a file tool and imports it again in the same
    session: without this it would test the stale module and conclude its fix failed.
    """
    here = os.getcwd() + os.sep
    for name, module in list(sys.modules.items()):
        if name != "__main__" and (getattr(module, "__file__", None) or "").startswith(here):
            del sys.modules[name]  # not __main__: the code's own namespace, with its workspace __file__
    importlib.invalidate_caches()


def _missing_name(exc: ImportError | AttributeError) -> dict[str, str]:
    """For a name missing from a workspace module: the name and the module's file."""
    if isinstance(exc, ImportError):
        match = re.match(r"cannot import name '(\w+)'", str(exc))
        where = exc.path or ""
    else:
        match = re.match(r"module '[\w.]+' has no attribute '(\w+)'", str(exc))
        where = getattr(getattr(exc, "obj", None), "__file__", None) or ""
    here = os.getcwd() + os.sep
    if match is None or not where.startswith(here):
        return {}
    found = {"missing": match.group(1), "module_file": where[len(here) :]}
    # The workspace file whose import failed (a package module's "from . import main").
    files = [frame.filename for frame in traceback.extract_tb(exc.__traceback__) if frame.filename.startswith(here)]
    if isinstance(exc, ImportError) and files:
        found["importer"] = files[-1][len(here) :]
    return found


# TypeErrors a call's arguments cause: a keyword the callee does not take, one missing, too many.
_ARGUMENT_ERROR = re.compile(r"keyword argument|positional argument|required argument|\btakes\b.*\bargument")
_KEYWORD = re.compile(r"keyword argument '(\w+)'|'(\w+)' is an invalid keyword argument")
_CALLEE = re.compile(r"(\w+)\(\)")
SIGNATURE_CHARS = 600
"""A signature's share of the observation (pandas.read_csv has fifty parameters)."""
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def call_signatures(exc: TypeError) -> dict[str, Any]:
    """The signatures of the calls a TypeError about arguments comes from, on the model's failing line.

    Returns ``{"signatures": [...], "unknown": keyword, "renamed": [parameter, call]}`` (the
    keyword the callee does not take, and :func:`renamed_call`, when they apply), or ``{}``
    when the error is not about arguments.

    Small models guess parameter names (``df.to_markdown(file_path=...)``) and, told only
    "got an unexpected keyword argument", guess the same again. No call in the code is made
    again to find a callee: a dotted name is looked up in the failing frame (attribute
    lookups only), and a method of a computed object (``df.groupby(...).sum().to_markdown``)
    is taken from the frame the call opened, when the error came from inside it.
    """
    message = str(exc)
    if not _ARGUMENT_ERROR.search(message):
        return {}
    frames = list(traceback.walk_tb(exc.__traceback__))
    mine = [i for i, (frame, _) in enumerate(frames) if frame.f_code.co_filename.startswith("<cell")]
    if not mine:
        return {}
    frame, line = frames[mine[-1]]
    inner = frames[mine[-1] + 1][0] if mine[-1] + 1 < len(frames) else None
    try:
        tree = ast.parse("".join(linecache.getlines(frame.f_code.co_filename)))
    except SyntaxError:
        return {}
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)
    ]
    keyword = _KEYWORD.search(message)
    named = (keyword.group(1) or keyword.group(2)) if keyword else None
    if named:  # the call that passed the keyword the error names, if one did
        calls = [c for c in calls if any(k.arg == named for k in c.keywords)] or calls
    callee = _CALLEE.match(message)
    if callee:  # "f() missing 1 required positional argument": the calls of f, if any
        calls = [c for c in calls if _last_name(c.func) == callee.group(1)] or calls
    signatures: list[str] = []
    advice: dict[str, Any] = {}
    # The keyword the callee does not take (not "got multiple values for keyword argument": a parameter).
    unknown = named if named and ("unexpected keyword" in message or "invalid keyword" in message) else None
    if unknown:
        advice["unknown"] = unknown
    for node in calls:
        found = _callee(node.func, frame, inner)
        if found is None:
            continue
        text = _describe_signature(*found)
        if text is None or text in signatures:
            continue
        signatures.append(text)
        if unknown and "renamed" not in advice and (renamed := renamed_call(node, found[1], unknown)):
            advice["renamed"] = renamed
    advice["signatures"] = signatures[:3]
    return advice


def column_lengths(exc: ValueError) -> dict[str, int]:
    """``{column: length}`` of the table built on the model's failing line, when its columns differ in length.

    ``pd.DataFrame({'file': files, 'lines': lines})`` after ``lines.append(sum(lines))``: pandas
    says "All arrays must be of the same length" without saying which, and the same code tends to
    be sent again. A dict literal's names, or a dict the line names, are looked up in the failing
    frame; nothing is called.
    """
    if "same length" not in str(exc):
        return {}
    frames = [(f, n) for f, n in traceback.walk_tb(exc.__traceback__) if f.f_code.co_filename.startswith("<cell")]
    if not frames:
        return {}
    frame, line = frames[-1]
    try:
        tree = ast.parse("".join(linecache.getlines(frame.f_code.co_filename)))
    except SyntaxError:
        return {}
    scope = {**frame.f_globals, **frame.f_locals}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        for argument in node.args[:1]:
            columns: dict[str, Any] = {}
            if isinstance(argument, ast.Dict):
                columns = {
                    str(key.value): scope.get(value.id)
                    for key, value in zip(argument.keys, argument.values, strict=True)
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Name)
                }
            elif isinstance(argument, ast.Name) and isinstance(found := scope.get(argument.id), dict):
                columns = {str(key): value for key, value in found.items()}
            lengths = {name: len(value) for name, value in columns.items() if isinstance(value, (list, tuple))}
            if len(set(lengths.values())) > 1:
                return lengths
    return {}


def _last_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _callee(func: ast.expr, frame: types.FrameType, inner: types.FrameType | None) -> tuple[str, Any] | None:
    """The name and object of the callee ``func`` of a call in ``frame`` (``inner``: the frame it opened)."""
    name = ast.unparse(func)
    try:
        if _DOTTED.fullmatch(name):
            return name, eval(name, frame.f_globals, frame.f_locals)  # attribute lookups only (checked above)
        if isinstance(func, ast.Attribute) and inner is not None and inner.f_code.co_name == func.attr:
            owner = inner.f_locals["self"]
            return f"{type(owner).__name__}.{func.attr}", getattr(owner, func.attr)
    except Exception:
        return None
    return None


def _describe_signature(name: str, callee: Any) -> str | None:
    """``name(parameters)``, and what the docstring says of the first parameters, one per line."""
    try:
        signature = inspect.signature(callee)
    except (TypeError, ValueError):
        return None
    # Without annotations: pandas' type aliases would take more room than the names.
    bare = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    text = f"{name}{signature.replace(parameters=bare, return_annotation=inspect.Signature.empty)}"
    if len(text) > SIGNATURE_CHARS:
        text = text[: SIGNATURE_CHARS - 4] + " ...)"
    notes = parameter_notes(inspect.getdoc(callee) or "", [p.name for p in bare])
    return "\n".join([text, *(f"    {note}" for note in notes)])


def renamed_call(node: ast.Call, callee: Any, keyword: str) -> tuple[str, str] | None:
    """The call with the unknown ``keyword`` renamed to the first parameter the call leaves unset.

    A model that names the main argument wrongly (``to_markdown(file_path=...)``,
    ``read_csv(file=...)``, ``json.dump(data, file=f)``) means the parameter it did not
    pass; seen written out, the fix gets copied where a signature alone did not. A literal
    that cannot be meant so (a title given as ``name=``, not a path for ``buf``) gets none.
    """
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None
    try:
        signature = inspect.signature(callee)
        given = {k.arg: None for k in node.keywords if k.arg is not None and k.arg != keyword}
        bound = signature.bind_partial(*node.args, **given).arguments
    except (TypeError, ValueError):
        return None
    free = [
        p.name
        for p in signature.parameters.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name not in bound
    ]
    if not free:
        return None
    value = next(k.value for k in node.keywords if k.arg == keyword)
    if not _similar(keyword, free[0]) and isinstance(value, ast.Constant) and not _path_like(value.value):
        return None  # to_markdown(name='Totals'): a title, not the buffer
    fixed = ast.Call(
        func=node.func,
        args=node.args,
        keywords=[ast.keyword(arg=free[0], value=k.value) if k.arg == keyword else k for k in node.keywords],
    )
    return free[0], ast.unparse(fixed)


def _similar(name: str, other: str) -> bool:
    """Whether two parameter names look alike (``replacement`` and ``repl``)."""
    return name.startswith(other[:3]) or other.startswith(name[:3])


def _path_like(value: object) -> bool:
    """Whether a literal looks like a file path (``report.md``, ``out/data``)."""
    return isinstance(value, str) and bool(re.fullmatch(r"[\w./\\-]+", value)) and ("." in value or "/" in value)


PARAMETER_NOTES = 3
"""Parameters described under a signature: a name alone (``buf``) does not say it takes the path."""
NOTE_CHARS = 160
_SPECIAL = re.compile(r"\*{0,2}(self|cls|args|kwargs)")


def parameter_notes(doc: str, names: list[str]) -> list[str]:
    """``name: what the docstring says of it`` for the first parameters of ``names`` it describes.

    Reads both docstring styles: numpydoc (``buf : str, optional`` over an indented
    description) and Google (``buf (str): Buffer to write to.``).
    """
    lines = doc.splitlines()
    notes: list[str] = []
    for name in names:
        if len(notes) == PARAMETER_NOTES:
            break
        if _SPECIAL.fullmatch(name):
            continue
        header = re.compile(rf"^(\s*){re.escape(name)}( ?)(\([^)]*\))?\s*:\s*(.*)$")
        for index, line in enumerate(lines):
            found = header.match(line)
            if found is None:
                continue
            indent = len(found.group(1))
            described = []
            for more in lines[index + 1 :]:
                if not more.strip() or len(more) - len(more.lstrip()) <= indent:
                    break
                described.append(more)
            # numpydoc's "name : type" heads an indented description; Google's "name: text" runs on.
            joint = " - " if found.group(2) and not found.group(3) else " "
            parts = (f"{found.group(3) or ''} {found.group(4)}", " ".join(described))
            text = joint.join(" ".join(part.split()) for part in parts if part.strip())
            notes.append(f"{name}: {text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3] + '...'}")
            break
    return notes


def _describe_error(exc: BaseException) -> str:
    """The traceback of the model's own code (its cells and the workspace's modules) only, then the error.

    Frames of the worker and of libraries are left out (and counted): a small model
    reads the last lines, and pandas internals there would hide its own mistake.
    """
    workspace = os.getcwd() + os.sep
    frames = traceback.extract_tb(exc.__traceback__)
    own = [i for i, frame in enumerate(frames) if _own_file(frame.filename, workspace)]
    mine = [frames[i] for i in own]
    library = len(frames) - own[-1] - 1 if own else 0
    # Workspace modules' frames by their relative path, as the model names the files.
    listed = "".join(traceback.format_list(mine)).replace(f'File "{workspace}', 'File "')
    text = "Traceback (most recent call last):\n" + listed if mine else ""
    if library:
        text += f"  ... {library} frame{'s' if library > 1 else ''} inside libraries omitted ...\n"
    return text + "".join(traceback.format_exception_only(type(exc), exc))


_VALUE_ERRORS = (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError)
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


def failing_line_values(exc: BaseException) -> str:
    """The values of the names the model's failing line reads, when a value was wrong for it.

    Told only "'float' object is not iterable" for ``mean(totals)``, a model tends to run the same
    code again; with ``totals = 291.88 (float)`` in front of it, the cause is on the page.
    """
    if not isinstance(exc, _VALUE_ERRORS):
        return ""
    frames = [(f, n) for f, n in traceback.walk_tb(exc.__traceback__) if f.f_code.co_filename.startswith("<cell")]
    if not frames:
        return ""
    frame, line = frames[-1]
    try:
        tree = ast.parse(linecache.getline(frame.f_code.co_filename, line).strip())
    except SyntaxError:  # a line of a statement that spans several
        return ""
    loaded = (n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    shown = []
    for name in dict.fromkeys(loaded):
        scope = frame.f_locals if name in frame.f_locals else frame.f_globals
        if name not in scope:
            continue
        value = scope[name]
        if callable(value) or isinstance(value, types.ModuleType):
            continue
        shown.append(f"{name} = {_SHORT.repr(value)} ({type(value).__name__})")
    return f"Values on line {line}: {'; '.join(shown[:5])}\n" if shown else ""


def _own_file(filename: str, workspace: str) -> bool:
    """Whether a frame's file is the model's: a cell, or a workspace module outside any installed packages."""
    if filename.startswith("<cell"):
        return True
    return filename.startswith(workspace) and "-packages" + os.sep not in filename


def _grant_cpu(seconds: int) -> None:
    """Give the next block a fresh CPU budget (the hard limit was left open for this)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


if __name__ == "__main__":
    sys.exit(main())

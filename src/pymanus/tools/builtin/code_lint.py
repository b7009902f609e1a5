"""Python that runs without an error but cannot do what its author meant (or never runs at all).

Such code passes every syntax check, so the mistake only shows as a wrong value several
steps later; small models then change everything except the culprit. The file tools and
the python tool name the line instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from pymanus.tools.builtin.total_lint import total_never_added
from pymanus.tools.builtin.workspace_scan import defining_module

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


_FILLED = frozenset({"append", "extend", "add", "update", "insert"})


def loop_rebinds_list(source: str) -> str | None:
    """A note when a ``for`` loop's variable has the name of the list the code fills in that loop.

    ``files = []``, then ``for root, dirs, files in os.walk('.')`` and ``files.append(path)``
    inside it: the loop makes ``files`` each folder's own list, so the code appends to the list
    it walks (the 1.5B's walk ran on with ``././././…`` paths) and the result is lost.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    emptied = {
        target.id: node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _empty_collection(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        rebound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} & set(emptied)
        for call in (n for statement in loop.body for n in ast.walk(statement)):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in _FILLED
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id in rebound
            ):
                name = call.func.value.id
                return (
                    f"line {loop.lineno}'s for loop makes `{name}` its own loop variable, so the `{name}` that "
                    f"line {emptied[name]} creates and line {call.lineno} fills is replaced by each item the loop "
                    f"gives: give the list you fill another name (found = [] ... found.{call.func.attr}(...))"
                )
    return None


def _empty_collection(value: ast.expr) -> bool:
    """``[]``, ``{}``, ``list()``, ``set()`` or ``dict()``."""
    if isinstance(value, ast.List):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("list", "set", "dict")
        and not value.args
        and not value.keywords
    )


def float_power(source: str) -> str | None:
    """A note when code raises to a whole-number power with ``math.pow``, which always returns a float.

    ``print(math.pow(i, 2))`` prints ``4.0`` where the task wanted the square ``4``: the 1.5B's
    squares.py did that and no check of its own said so. ``i ** 2`` keeps an int an int.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "pow"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "math"
            and len(node.args) == 2
            and isinstance(exponent := node.args[1], ast.Constant)
            and type(exponent.value) is int
        ):
            base = ast.unparse(node.args[0])
            return (
                f"line {node.lineno} calls math.pow, which always returns a float (math.pow(3, 2) is 9.0, printed "
                f"with its .0); for whole numbers write {base} ** {exponent.value}, which keeps an int an int"
            )
    return None


_FOLDS = {"lower": str.lower, "casefold": str.lower, "upper": str.upper}
_SEARCHES = frozenset({"startswith", "endswith", "count", "find", "rfind", "index", "rindex"})


def case_mismatch(source: str) -> str | None:
    """A note when code looks for text with capitals in text it made lower case (or the reverse).

    ``'TODO' in open(path).read().lower()`` is never true: the 1.5B's search for TODO files
    found none, wrote an empty list and ran the same code twice more.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            pairs = [(node.left, node.comparators[0])]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq | ast.NotEq):
            pairs = [(node.left, node.comparators[0]), (node.comparators[0], node.left)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SEARCHES:
            pairs = [(node.args[0], node.func.value)] if node.args else []
        else:
            continue
        for wanted, searched in pairs:
            fold = _fold(searched)
            if fold and isinstance(wanted, ast.Constant) and isinstance(wanted.value, str):
                folded = _FOLDS[fold](wanted.value)
                if folded != wanted.value:
                    case = "upper" if fold == "upper" else "lower"
                    return (
                        f"line {node.lineno} looks for {wanted.value!r} in text made {case} case by .{fold}(), "
                        f"where it is never found; look for {folded!r} there, or leave out .{fold}()"
                    )
    return None


def _fold(node: ast.expr) -> str | None:
    """``"lower"`` for ``text.lower()`` (``casefold``, ``upper`` alike), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
        return node.func.attr if node.func.attr in _FOLDS else None
    return None


def redefined_function(source: str) -> str | None:
    """A note when one body of code (a module, a class) defines a function or class twice.

    The 1.5B added ``slugify`` to a module by appending it, then appended the same definition
    again as its "fix": Python keeps the last one, and the next fix goes to the first.
    Decorated definitions (``@property`` and its setter, ``@overload``) are meant to repeat.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for body in [tree.body, *(node.body for node in ast.walk(tree) if isinstance(node, ast.ClassDef))]:
        seen: dict[str, int] = {}
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if node.decorator_list:
                seen.pop(node.name, None)
                continue
            if node.name in seen:
                return (
                    f"line {node.lineno} defines `{node.name}` again (line {seen[node.name]} defines it too); "
                    "Python keeps only the last definition, so keep one (the right one) and remove the other"
                )
            seen[node.name] = node.lineno
    return None


def file_read_twice(source: str) -> str | None:
    """A note when code reads a whole open file twice: the second ``read()`` or ``readlines()`` gets nothing.

    The 1.5B counted lines with ``len(f.readlines())`` and then words over ``f.readlines()``
    in the same ``with`` block: every word count came out 0.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for block in ast.walk(tree):
        if not isinstance(block, ast.With | ast.AsyncWith):
            continue
        handles = {item.optional_vars.id for item in block.items if isinstance(item.optional_vars, ast.Name)}
        seen: dict[str, int] = {}
        reads = sorted(_whole_reads(block.body, handles), key=lambda read: (read[1].lineno, read[1].col_offset))
        for name, call in reads:
            if name in seen:
                return (
                    f"line {call.lineno} reads {name} again, but the read on line {seen[name]} already went to the "
                    f"end of the file, so this one gets nothing ('' or []); read it once into a variable "
                    f"(text = {name}.read()) and use that"
                )
            seen[name] = call.lineno
    return None


def _whole_reads(body: list[ast.stmt], handles: set[str]) -> list[tuple[str, ast.expr]]:
    """``handle.read()``/``handle.readlines()`` calls and ``for ... in handle`` loops in ``body`` (none when
    the body rewinds a file with ``seek``)."""
    found: list[tuple[str, ast.expr]] = []
    for node in (inner for statement in body for inner in ast.walk(statement)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("read", "readlines")
            and not node.args
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in handles
        ):
            found.append((node.func.value.id, node))
        elif (
            isinstance(node, ast.For | ast.comprehension)
            and isinstance(node.iter, ast.Name)
            and node.iter.id in handles
        ):
            found.append((node.iter.id, node.iter))
        elif isinstance(node, ast.Attribute) and node.attr == "seek":
            return []  # rewound: reading again is meant
    return found


def prints_only_literals(source: str) -> bool:
    """Whether ``source`` only prints values typed into it (``print({'mean': 23.5})``), computing nothing.

    Told that its typed stats.json held values no code printed, the 1.5B printed the same
    typed values: such output is no computed result. Arithmetic (``print(6 * 7)``) computes.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    if not tree.body:
        return False
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print"):
            return False
        for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
            try:
                ast.literal_eval(argument)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return False
    return True


def typed_write(source: str) -> str | None:
    """A note when code that computes (a loop) writes a file of numbers from text typed into it.

    word_counts: the 1.5B's code counted every file's lines and words, printed the right
    counts, and wrote counts.md from a table it had typed into a string; told the counts were
    wrong, it gave up. Top-level statements are followed in order, so a name bound to typed
    text after the loop that used it for a count holds that text where the file is written.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if not any(isinstance(node, ast.For | ast.comprehension) for node in ast.walk(tree)):
        return None
    typed: dict[str, str] = {}
    handles: dict[str, str] = {}
    for statement in tree.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
                call = node.context_expr
                if isinstance(call, ast.Call) and (path := _literal_path(call)) and _writes(call):
                    handles[node.optional_vars.id] = path
            if isinstance(node, ast.Call) and (written := _written(node, handles)):
                path, content = written
                text = _typed_text(content, typed)
                if text is not None and len(re.findall(r"\d+", text)) >= 2:
                    return (
                        f"line {node.lineno} writes {path} from text typed into the code, not from the values it "
                        "computes, so the file holds the typed numbers; build that text from the computed values "
                        "(f-strings over them)"
                    )
        _bind(statement, typed)
    return None


def _written(node: ast.Call, handles: dict[str, str]) -> tuple[str, ast.expr] | None:
    """The path and content of a ``write_file(path, text)`` or ``handle.write(text)`` call."""
    if not node.args:
        return None
    function = node.func
    if isinstance(function, ast.Name) and function.id == "write_file" and len(node.args) > 1:
        path = _literal_path(node)
        return (path, node.args[1]) if path else None
    if isinstance(function, ast.Attribute) and function.attr == "write" and isinstance(function.value, ast.Name):
        path = handles.get(function.value.id)
        return (path, node.args[0]) if path else None
    return None


def _bind(statement: ast.stmt, typed: dict[str, str]) -> None:
    """Update ``typed`` for the names a top-level statement binds: typed text, or anything else."""
    if isinstance(statement, ast.Assign) and (text := _typed_text(statement.value, typed)) is not None:
        names = [target.id for target in statement.targets if isinstance(target, ast.Name)]
        if len(names) == len(statement.targets):
            typed.update(dict.fromkeys(names, text))
            return
    for node in ast.walk(statement):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr | ast.comprehension):
            targets = [node.target]
        elif isinstance(node, ast.Attribute) and node.attr in _FILLED:
            targets = [node.value]  # lines.append(...): filled by the code
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    typed.pop(name.id, None)


def _typed_text(node: ast.expr, typed: dict[str, str]) -> str | None:
    """The text ``node`` builds when it only puts typed literals together (None: it uses computed values)."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Name):
        return typed.get(node.id)
    if isinstance(node, ast.List | ast.Tuple):
        parts = [_typed_text(item, typed) for item in node.elts]
        return None if any(part is None for part in parts) else "\n".join(str(part) for part in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _typed_text(node.left, typed), _typed_text(node.right, typed)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr) and all(isinstance(part, ast.Constant) for part in node.values):
        return "".join(str(part.value) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and node.args:
        return _typed_text(node.args[0], typed)
    return None


def code_mistakes(source: str) -> list[str]:
    """What the lints of this module that need only the code (not its error or the workspace) say of ``source``."""
    lints = (
        regex_in_replace,
        loop_rebinds_list,
        float_power,
        case_mismatch,
        redefined_function,
        file_read_twice,
        typed_write,
        total_never_added,
    )
    return [mistake for lint in lints if (mistake := lint(source))]


_KEY_ERROR = re.compile(r"^KeyError: (.+)$", re.MULTILINE)


def index_column_key(source: str, error: str) -> str | None:
    """Why a column the code asks for is missing when the code made that column the DataFrame's index.

    ``pd.read_csv('orders.csv', index_col='order_id')`` and then ``df[['order_id', ...]]`` raises
    ``KeyError: "['order_id'] not in index"``: the 1.5B read that as a problem with the file and
    tried to edit the input.
    """
    # "['order_id'] not in index", "None of [Index(['order_id'], dtype='str')] are in the [columns]", 'order_id'
    found = _KEY_ERROR.search(error)
    if found is None:
        return None
    missing = set(re.findall(r"(?<!dtype=)'([^']+)'", found.group(1)))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "set_index":
            values = node.args[:1]
        else:
            values = [keyword.value for keyword in node.keywords if keyword.arg == "index_col"]
        for value in values:
            named = [value] if not isinstance(value, ast.List | ast.Tuple) else value.elts
            for column in named:
                if isinstance(column, ast.Constant) and column.value in missing:
                    how = "set_index" if node.func.attr == "set_index" else f"index_col={column.value!r}"
                    return (
                        f"line {node.lineno} makes {column.value!r} the DataFrame's index ({how}), so it is no "
                        f"longer a column and selecting it fails; leave out {how} (or call .reset_index() "
                        f"before selecting) so that {column.value!r} stays a column"
                    )
    return None


def session_definitions(source: str, workspace: Path) -> str | None:
    """What code that defines functions or classes in the python tool's session misses: no file changes.

    Asked to fix ``median`` in stats.py, the 1.5B redefined ``median`` in a block and ran the
    tests there (stats.py kept its bug); asked to add ``slugify`` to textutils.py, it ran a
    block that only defined ``slugify``, then monkeypatched the module. A definition a
    workspace module also has is named with that module; a block of definitions and nothing
    else is named too (it ran nothing, and its functions are no file's).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    defined = [(node, name) for node in tree.body if (name := _defined_name(node))]
    for node, name in defined:
        if (home := defining_module(workspace, name)) is not None:
            module = f"{home.replace('.', '/')}.py"
            return (
                f"line {node.lineno} defines `{name}` in this Python session only: {module} keeps its own "
                f"`{name}`, and code that imports it from there (its tests) still gets that one; to change "
                f"it, edit {module} (edit_file)"
            )
    if not defined or any(not (_defined_name(node) or _imports(node)) for node in tree.body):
        return None
    names = ", ".join(f"`{name}`" for _, name in defined)
    return (
        f"line {defined[0][0].lineno} defines {names} in this Python session only, and the code runs nothing: no "
        "workspace file has it, so a module or test that imports it will not find it. To add it to a module, "
        "write it in that .py file (edit_file with an empty old_text adds code after the last line)"
    )


def _defined_name(statement: ast.stmt) -> str | None:
    """The name a top-level ``def``, ``class`` or ``name = lambda ...`` defines."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return statement.name
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Lambda):
        target = statement.targets[0]
        return target.id if len(statement.targets) == 1 and isinstance(target, ast.Name) else None
    return None


def _imports(statement: ast.stmt) -> bool:
    """Whether a top-level statement only imports or does nothing (a docstring, ``pass``)."""
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant)
    return isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass)


def rereads_output(source: str, earlier_outputs: Collection[str]) -> str | None:
    """A note when code reads a file earlier code of the run wrote, with other files, and writes it again.

    "Merge orders.csv with customers.csv into merged.csv": told to reorder merged.csv's columns,
    the 1.5B read merged.csv as the orders and merged the customers in again (``name_x``,
    ``name_y``: a KeyError). Reading back one's own output to change it alone is fine.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    reads: dict[str, int] = {}
    writes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (path := _literal_path(node)):
            if _writes(node):
                writes.add(path)
            else:
                reads.setdefault(path, node.lineno)
    for path, line in reads.items():
        if path in earlier_outputs and path in writes and len(reads) > 1:
            return (
                f"line {line} reads {path}, which earlier code of this run wrote, then writes it again: it starts "
                f"from that output, which already holds what the inputs gave it; to compute {path} again, read "
                "the input files only"
            )
    return None


_READERS = frozenset({"open", "read_file", "read_csv", "read_json", "read_excel", "read_table", "read_text"})
_WRITERS = frozenset({"write_file", "edit_file", "to_csv", "to_json", "to_excel", "write_text", "to_markdown"})


def _called(call: ast.Call) -> str:
    """The name a call calls: ``to_csv`` for ``df.to_csv(...)``, ``open`` for ``open(...)``."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _literal_path(call: ast.Call) -> str | None:
    """The workspace path a reading or writing call names as its first argument (a string literal)."""
    if _called(call) not in _READERS | _WRITERS or not call.args:
        return None
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value):
        return None
    return PurePosixPath(first.value.removeprefix("./")).as_posix()


def _writes(call: ast.Call) -> bool:
    """Whether a call :func:`_literal_path` matched writes (``open`` with a w, a or x mode)."""
    name = _called(call)
    if name != "open":
        return name in _WRITERS
    modes = [*call.args[1:2], *(keyword.value for keyword in call.keywords if keyword.arg == "mode")]
    return any(isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax") for mode in modes)


_TEST_FUNCTION = re.compile(r"^\s*(?:async\s+)?def test\w*\(", re.MULTILINE)


def undiscoverable_test(path: str, source: str) -> str | None:
    """Why test runners skip ``path`` when it holds tests (``def test...``) under a name they do not collect."""
    file = PurePosixPath(path)
    if file.suffix != ".py" or not _TEST_FUNCTION.search(source):
        return None
    if file.name in ("__init__.py", "conftest.py") or file.name.startswith("test") or file.stem.endswith("_test"):
        return None
    return (
        f"pytest and unittest only collect test files named test_*.py, so they will not run {path}; "
        f"name it {file.with_name('test_' + file.name)}."
    )


def uncalled_script(path: str, source: str) -> str | None:
    """Why running the script ``path`` printed nothing, when it only defines functions and calls none.

    The 1.5B wrote squares.py as ``def squares():`` and its loop, ran it, saw no output, and
    typed squares.txt by hand until the run ended.
    """
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    functions = [f"{s.name}()" for s in body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not functions or not all(_passive(statement) for statement in body):
        return None
    them = "it" if len(functions) == 1 else "them"
    return (
        f"{path} only defines {', '.join(functions)} and never calls {them}, so running it does nothing: "
        f"add the call `{functions[-1]}` as the last line of {path} (edit_file), then run it again."
    )


def _passive(statement: ast.stmt) -> bool:
    """Whether a top-level statement runs nothing: a definition, an import, a docstring, a call-free assignment."""
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        return statement.value is None or not any(isinstance(node, ast.Call) for node in ast.walk(statement.value))
    return isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom)

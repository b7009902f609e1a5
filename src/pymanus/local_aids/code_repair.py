"""Aid ``code_repair``: repairs of mistakes small models make when they write code inside JSON.

Backspace and form feed characters are always written back (below); every other repair is
used only when the original does not compile and the repaired code does.

Line breaks in strings. In a JSON string, ``\\n`` is a line break. A model that means the two characters
backslash-n inside a Python string literal (``print('a\\nb')``) must write ``\\\\n``;
small models rarely do, so the code arrives with a raw line break in the middle of a
string literal and fails to compile. Joining such lines back with an escaped line
break restores what the model meant. ``write_file`` applies the same repair to a ``.py``
file whose content does not compile (``print('1\\n4')`` in a script).

Quotes inside such a string. A model writing a file's text as one string, line by line, quotes
inside it as it would in the file: ``f.write('...\nif __name__ == '__main__':\n...')``.
A closing quote directly followed by a name (``'__main__``) ends no Python string (a string
prefix before a quote aside: ``'a'f'b'``), so when joining the lines alone does not compile,
that quote and the next one are escaped as the text they are.

Bodies not indented. ``with open(p, 'w') as f:`` over an unindented ``f.write(...)``: Python
stops at "expected an indented block"; the line under the header becomes its body.

Backspace and form feed. ``\\b`` and ``\\f`` are JSON escapes too: a model writing a regex's
word boundary ``\\b`` without doubling the backslash sends a backspace character, which
compiles inside a string and silently matches nothing. Python source never means those
control characters, so they always go back to the ``\\b`` and ``\\f`` the model typed.

Line breaks escaped twice. The opposite mistake: ``\\\\n`` between statements, so the code
arrives as one line with backslash-n where the line breaks belong, and Python stops at the
first "unexpected character after line continuation character". Outside string literals
a backslash-n has no other meaning, so it becomes the line break it stands for.

Programs on one line. Small models write ``for f in files: if f.endswith('.py'): print(f)``
or ``import os; for f in os.listdir(): print(f)``: compound statements after a colon or a
``;``, which Python does not allow. Splitting the line at those colons (what follows goes
one block deeper, as it would after ``if x: a; b``), at the ``;``, and before a header keyword
that follows a simple statement with no ``;`` (``path = join(d, n) with open(path) as f:``) reads it as meant; an
indented block under such a line (``for r, d, names in os.walk('.'): for n in names:``
over ``    if ...``) belongs to its last header and moves as deep.

Quotes inside f-strings. ``f'{d['total']}'`` is Python 3.12 syntax; the sandbox runs the
interpreter PyManus runs on, which may be 3.11, where the inner quote ends the string. The
quotes inside the braces that match the f-string's own become the other kind.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from pymanus.messages import ToolCall
from pymanus.tools.builtin.python_commands import compiles
from pymanus.tools.middleware import ToolMiddleware, with_note
from pymanus.tools.tool import ToolContext, ToolResult

_ESCAPE_TIP = "In the JSON arguments, write \\\\n for a \\n inside a Python string."
STRING_NOTE = f"Note: your code had line breaks inside string literals; they were run as \\n escapes. {_ESCAPE_TIP}"
INNER_QUOTES_NOTE = (
    "Quotes inside those strings like the string's own ('__main__' in a '...' string) were run as \\' escapes."
)
INNER_QUOTES_WRITTEN_NOTE = INNER_QUOTES_NOTE.replace("were run as", "were written as")
WRITTEN_STRING_NOTE = (
    f"Note: the file's code had line breaks inside string literals; they were written as \\n escapes. {_ESCAPE_TIP}"
)
"""What ``write_file`` says when it wrote a Python file with that repair."""
WRITTEN_ESCAPED_NOTE = (
    "Note: the file's code had \\n between statements instead of line breaks; it was written with line breaks "
    "there. In the JSON arguments, a line break is \\n (one backslash)."
)
ESCAPED_NOTE = (
    "Note: your code had \\n between statements instead of line breaks; it was run with line breaks there. "
    "In the JSON arguments, a line break is \\n (one backslash)."
)
BLOCKS_NOTE = (
    "Note: your code chained for/if/with statements on one line, which Python does not allow; "
    "it was run with each statement on its own line, in indented blocks."
)
_UNTERMINATED = ("unterminated string literal", "EOL while scanning string literal")
_PREFIXED_QUOTE = re.compile(r"[rRbBuUfF]{0,2}(['\"])")
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_ESCAPED_BREAK = {"\r\n": "\\r\\n", "\r": "\\r", "\n": "\\n"}


def repair(code: str) -> tuple[str, str]:
    """The code to run and a note for the model on what was repaired ("" if nothing was)."""
    code = restore_control_escapes(code)
    repaired = repair_escaped_line_breaks(code)
    if repaired is not None:
        return repaired, ESCAPED_NOTE
    if compiles(code):
        return code, ""
    strings = [(code, "")]  # the code, then with its strings' line breaks joined (then with inner quotes too)
    strings += [
        (joined, f"{STRING_NOTE} {INNER_QUOTES_NOTE}" if inner else STRING_NOTE)
        for inner in (False, True)
        if (joined := _join_string_lines(code, inner))
    ]
    for first, first_note in strings:
        if compiles(first):
            return first, first_note
        for second, second_note in _STATEMENT_REPAIRS:
            if (repaired := second(first)) is not None:
                return repaired, "\n".join(note for note in (first_note, second_note) if note)
    return code, ""


QUOTES_NOTE = (
    "Note: your code reused an f-string's quote inside its braces (f'{d['k']}'), which Python 3.11 does not "
    "allow; it was run with the other quote there (f'{d[\"k\"]}')."
)


def repair_nested_quotes(code: str) -> str | None:
    """The code with quotes inside f-string braces that close the f-string (``f'{d['k']}'``, Python 3.12
    syntax) changed to the other quote, or ``None`` when the code compiles or still fails after that."""
    if compiles(code):
        return None
    out: list[str] = []
    quote, depth, index = "", 0, 0
    while index < len(code):
        char = code[index]
        if (
            not quote
            and char in "'\""
            and index
            and code[index - 1] in "fF"
            and not code[index - 2 : index - 1].isalnum()
        ):
            quote = char
        elif quote and char == "\\" and not depth:
            out.append(code[index : index + 2])
            index += 2
            continue
        elif quote and char in "{}" and code[index + 1 : index + 2] == char and not depth:
            out.append(char * 2)  # an escaped brace, not a replacement field
            index += 2
            continue
        elif quote and char == "{":
            depth += 1
        elif quote and char == "}" and depth:
            depth -= 1
        elif quote and char == quote:
            if depth:
                char = "'" if quote == '"' else '"'
            else:
                quote = ""
        elif quote and char == "\n":
            quote, depth = "", 0  # a single-quoted f-string ends with its line
        out.append(char)
        index += 1
    repaired = "".join(out)
    return repaired if repaired != code and compiles(repaired) else None


def restore_control_escapes(code: str) -> str:
    """``code`` with backspace and form feed characters written back as ``\\b`` and ``\\f``."""
    return code.replace("\x08", "\\b").replace("\x0c", "\\f")


def repair_written(code: str) -> tuple[str, str] | None:
    """The text of a Python file to write with its line breaks repaired, and the note saying so (None: no repair)."""
    if (joined := repair_string_line_breaks(code)) is not None:
        text, inner = joined
        return text, f"{WRITTEN_STRING_NOTE} {INNER_QUOTES_WRITTEN_NOTE}" if inner else WRITTEN_STRING_NOTE
    if (split := repair_escaped_line_breaks(code)) is not None:
        return split, WRITTEN_ESCAPED_NOTE
    return None


def repair_string_line_breaks(code: str) -> tuple[str, bool] | None:
    """The code with line breaks inside one-line string literals escaped, and whether quotes inside
    them had to be escaped too; or ``None``.

    ``None`` means there is nothing to repair (the code compiles, fails for another
    reason, uses triple-quoted strings, or is still broken after the repair).
    """
    for inner_quotes in (False, True):
        joined = _join_string_lines(code, inner_quotes)
        if joined is not None and compiles(joined):
            return joined, inner_quotes
    return None


def _join_string_lines(code: str, inner_quotes: bool = False) -> str | None:
    """The code with the lines a raw line break cut out of a string literal joined back with an escape;
    with ``inner_quotes``, quotes inside such strings escaped too (:func:`_scan_line`).

    ``None`` when compiling the code does not stop at an unterminated string, the code uses
    triple-quoted strings, or a string is still open at the end.
    """
    if not _fails_with(code, *_UNTERMINATED) or "'''" in code or '"""' in code:
        return None
    joined: list[str] = []
    pending: str | None = None
    pieces = _LINE_BREAK.split(code)  # line, break, line, ...: a JSON "\r\n" decodes to CR LF, a CR breaks a line too
    for index in range(0, len(pieces), 2):
        line = pieces[index]
        pending = line if pending is None else pending + _ESCAPED_BREAK[pieces[index - 1]] + line
        pending, inside = _scan_line(pending, inner_quotes)
        if not inside:
            joined.append(pending)
            pending = None
    return None if pending is not None else "\n".join(joined)


def repair_escaped_line_breaks(code: str) -> str | None:
    """The code with each backslash-n outside string literals made a line break, or ``None``.

    ``None``: the code compiles, fails for another reason, or still fails after the repair.
    """
    if not _fails_with(code, "unexpected character after line continuation character"):
        return None
    pieces: list[str] = []
    quote: str | None = None  # the delimiter of the string literal being read (' " ''' or """)
    index = 0
    while index < len(code):
        if quote is None and code.startswith("\\n", index):
            pieces.append("\n")
            index += 2
            continue
        char = code[index]
        if quote is None and char == "#":  # a comment ends at a line break, real or escaped
            end = min(
                (found for found in (code.find("\n", index), code.find("\\n", index)) if found >= 0), default=len(code)
            )
            pieces.append(code[index:end])
            index = end
            continue
        if quote is None and char in "'\"":
            quote = char * 3 if code.startswith(char * 3, index) else char
            pieces.append(quote)
            index += len(quote)
            continue
        if quote is not None and char == "\\":
            pieces.append(code[index : index + 2])  # an escape inside a string stays as written
            index += 2
            continue
        if quote is not None and code.startswith(quote, index):
            pieces.append(quote)
            index += len(quote)
            quote = None
            continue
        pieces.append(char)
        index += 1
    repaired = "".join(pieces)
    return repaired if compiles(repaired) else None


def _fails_with(code: str, *messages: str) -> bool:
    """Whether compiling ``code`` raises a SyntaxError with one of ``messages``."""
    try:
        compile(code, "<cell>", "exec")
    except SyntaxError as exc:
        return any(message in str(exc.msg) for message in messages)
    except ValueError:  # NUL bytes
        return False
    return False


_NAME_AFTER_QUOTE = re.compile(r"\w+")
_STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})


def _scan_line(line: str, inner_quotes: bool) -> tuple[str, bool]:
    """``line`` and whether it ends inside a single- or double-quoted string literal.

    With ``inner_quotes``, a string's own quote followed by a name (``'__main__`` in
    ``'...== '__main__':...'``) is text, not its end: it and the next such quote come back escaped.
    """
    out: list[str] = []
    quote: str | None = None
    inner = False  # an escaped inner quote waits for its partner
    index = 0
    while index < len(line):
        char = line[index]
        if quote is None:
            if char == "#":
                return "".join(out) + line[index:], False
            if char in "'\"":
                quote = char
        elif char == "\\":
            out.append(line[index : index + 2])  # the escaped character stays as it is
            index += 2
            continue
        elif char == quote and (inner or (inner_quotes and _opens_inner_text(line, index + 1))):
            inner = not inner
            char = "\\" + char
        elif char == quote:
            quote = None
        out.append(char)
        index += 1
    return "".join(out), quote is not None


def _opens_inner_text(line: str, after: int) -> bool:
    """Whether the quote before ``after`` is followed by a name, not a string prefix and its quote."""
    name = _NAME_AFTER_QUOTE.match(line, after)
    if name is None:
        return False
    return not (name.group().lower() in _STRING_PREFIXES and line[name.end() : name.end() + 1] in ("'", '"'))


_COMPOUND = re.compile(r"(?:for|if|while|with|elif|else|try|except|finally|def|class|async)\b")


def repair_inline_blocks(code: str) -> str | None:
    """The code with one-line chains of statements split into lines and indented blocks, or ``None``."""
    if compiles(code):
        return None
    lines: list[str] = []
    extra, owner = "", -1  # indentation added to the block under a line split at its header colons
    for line in code.split("\n"):
        indent = line[: len(line) - len(line.lstrip())]
        if line.strip() and len(indent) <= owner:  # that block has ended
            extra, owner = "", -1
        split = _statements(line.strip(), indent + extra) or [extra + line]
        lines.extend(split)
        if len(split) > 1 and split[-1].endswith(":"):  # the block on the next lines is the last header's
            header_indent = len(split[-1]) - len(split[-1].lstrip())
            extra += " " * (header_indent - len(indent + extra))
            owner = len(indent)
    repaired = "\n".join(lines)
    return repaired if repaired != code and compiles(repaired) else None


def _statements(rest: str, indent: str) -> list[str]:
    """``rest`` split at the colons ending compound headers (what follows goes one block deeper)
    and at the ``;`` between statements; [] when it cannot be read."""
    lines: list[str] = []
    while rest:
        compound = bool(_COMPOUND.match(rest))
        cut = _top_level(rest, ":") if compound else _top_level(rest, ";", headers=_HEADERS)
        if cut is None and compound:
            return []  # a header without its colon: nothing to repair here
        if cut is None:
            lines.append(indent + rest)
            break
        header_next = not compound and rest[cut] != ";"  # `path = f(x) with open(path) as f: ...`
        lines.append(indent + rest[: cut + 1 if compound else cut].rstrip())
        rest = rest[cut if header_next else cut + 1 :].strip()
        if compound:
            indent += "    "
    return lines


_HEADERS = frozenset({"for", "with", "while", "try", "def", "class"})
"""Keywords that start a compound statement and are never inside an expression (``if`` and ``else``
are, in ``a if b else c``): after a simple statement on the same line, the next statement."""


def _top_level(statement: str, mark: str, headers: frozenset[str] = frozenset()) -> int | None:
    """Where ``mark`` (``:`` or ``;``), or one of ``headers`` after the start, first occurs outside
    brackets and strings, and for ``:``, lambdas."""
    depth = 0
    lambdas = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(statement).readline):
            if token.type == tokenize.NAME and token.string in headers and depth == 0 and token.start[1] > 0:
                return token.start[1]
            if token.type == tokenize.NAME and token.string == "lambda" and depth == 0:
                lambdas += 1
            elif token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
            elif token.type == tokenize.OP and token.string == mark and depth == 0:
                if mark == ":" and lambdas:
                    lambdas -= 1
                else:
                    return token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


INDENT_NOTE = (
    "Note: your code had a line that should be the indented body of the for/if/with/def line above it, "
    "but was not indented; it was run indented under that line."
)
_NO_BODY = re.compile(r"expected an indented block after .* on line (\d+)")


def repair_missing_indents(code: str) -> str | None:
    """The code with the line under each header that has no indented body indented under it, or ``None``."""
    lines = code.split("\n")
    for _ in lines:  # each pass indents one line
        try:
            compile("\n".join(lines), "<cell>", "exec")
        except SyntaxError as exc:
            header = _NO_BODY.search(str(exc.msg))
            if header is None or exc.lineno is None or not 1 < exc.lineno <= len(lines):
                return None
            above = lines[int(header.group(1)) - 1]
            lines[exc.lineno - 1] = above[: len(above) - len(above.lstrip())] + "    " + lines[exc.lineno - 1].lstrip()
        except ValueError:  # a NUL byte
            return None
        else:
            return "\n".join(lines) if lines != code.split("\n") else None
    return None


_STATEMENT_REPAIRS = (
    (repair_inline_blocks, BLOCKS_NOTE),
    (repair_missing_indents, INDENT_NOTE),
    (repair_nested_quotes, QUOTES_NOTE),
)
"""Repairs of statements, tried in order on the code and on the code with its strings repaired."""


@dataclass
class _Notes:
    """What each repaired call of a run was told, by call id, until its result is annotated."""

    by_call: dict[str, str] = field(default_factory=dict)


class CodeRepair(ToolMiddleware):
    """Repairs the code of ``python`` calls and of ``.py`` files written with ``write_file`` (aid ``code_repair``).

    Code that compiles runs as sent (backspace and form feed aside); a repair is used only when
    the repaired code compiles, and the result then says what was changed.
    """

    name = "code_repair"

    async def before_call(self, call: ToolCall, context: ToolContext) -> ToolCall | ToolResult:
        arguments = _arguments(call)
        if arguments is None:
            return call
        if call.name == "python" and isinstance(code := arguments.get("code"), str):
            fixed, note = repair(code)
            key = "code"
        elif (
            call.name == "write_file"
            and str(arguments.get("path", "")).endswith(".py")
            and isinstance(code := arguments.get("content"), str)
            and (written := repair_written(code)) is not None
        ):
            (fixed, note), key = written, "content"
        else:
            return call
        if fixed == code:
            return call
        context.store(_Notes).by_call[call.id] = note
        return call.model_copy(update={"arguments": json.dumps({**arguments, key: fixed})})

    async def after_call(self, call: ToolCall, result: ToolResult, context: ToolContext) -> ToolResult:
        note = context.store(_Notes).by_call.pop(call.id, "")
        return with_note(result, note, before=True)


def _arguments(call: ToolCall) -> dict[str, Any] | None:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None

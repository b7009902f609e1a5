"""Repairs of code small models write: line breaks inside string literals, blocks on one line."""

from __future__ import annotations

import pytest

from pymanus.local_aids.code_repair import (
    BLOCKS_NOTE,
    ESCAPED_NOTE,
    INDENT_NOTE,
    INNER_QUOTES_NOTE,
    INNER_QUOTES_WRITTEN_NOTE,
    QUOTES_NOTE,
    STRING_NOTE,
    WRITTEN_STRING_NOTE,
    repair,
    repair_escaped_line_breaks,
    repair_inline_blocks,
    repair_missing_indents,
    repair_nested_quotes,
    repair_string_line_breaks,
    repair_written,
)


def test_line_break_inside_an_f_string_is_escaped() -> None:
    broken = "total = 3\nprint(f'Totals:\n{total}\nDone')"
    repaired, inner_quotes = repair_string_line_breaks(broken) or ("", True)
    assert (repaired, inner_quotes) == ("total = 3\nprint(f'Totals:\\n{total}\\nDone')", False)
    scope: dict[str, object] = {}
    exec(compile(repaired, "<t>", "exec"), scope)  # the repaired code runs


def test_several_broken_strings_and_escaped_quotes() -> None:
    broken = "a = \"x\ny\"\nb = 'it\\'s\nfine'\nc = 1"
    assert repair_string_line_breaks(broken) == ("a = \"x\\ny\"\nb = 'it\\'s\\nfine'\nc = 1", False)


@pytest.mark.parametrize(
    "code",
    [
        "x = 1\nprint(x)",  # compiles: nothing to repair
        "def f(:\n    pass",  # another syntax error
        'x = """a\nb\nprint(\'c',  # triple quotes: not touched
        "print('never closed)",  # the repair cannot make it compile
    ],
)
def test_nothing_is_changed_when_the_repair_does_not_apply(code: str) -> None:
    assert repair_string_line_breaks(code) is None


def test_quotes_in_comments_are_ignored() -> None:
    code = "# it's a comment\nprint('a\nb')"
    assert repair_string_line_breaks(code) == ("# it's a comment\nprint('a\\nb')", False)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (  # blocks nested after colons
            "for a in range(3): for b in {'k': [1, 2]}['k'][0:1]: if (lambda v: v)(a): print(a, b)\nx = 1",
            "for a in range(3):\n    for b in {'k': [1, 2]}['k'][0:1]:\n        if (lambda v: v)(a):\n"
            "            print(a, b)\nx = 1",
        ),
        (  # inside a block, the new blocks go deeper
            "def f(paths):\n    for p in paths: if p: print(p)",
            "def f(paths):\n    for p in paths:\n        if p:\n            print(p)",
        ),
        (  # statements chained with ; (not the one in the string)
            "import csv; with open('a.csv') as f: rows = list(csv.reader(f)); print(len(rows), 'a;b')",
            "import csv\nwith open('a.csv') as f:\n    rows = list(csv.reader(f))\n    print(len(rows), 'a;b')",
        ),
        (  # the block under a line ending in two headers belongs to the second, and moves under it
            "found = []\nfor root, dirs, names in walk('src'): for name in names:\n    if 'T' in name:\n"
            "        found.append(name)\n    print(root)\nprint(found)",
            "found = []\nfor root, dirs, names in walk('src'):\n    for name in names:\n        if 'T' in name:\n"
            "            found.append(name)\n        print(root)\nprint(found)",
        ),
        (  # a header after a simple statement, with no ; between (not `a if b else c`)
            "for n in names: path = join(d, n) with open(path) as f: for line in f: if 'T' in line: x = 1 if n else 2",
            "for n in names:\n    path = join(d, n)\n    with open(path) as f:\n        for line in f:\n"
            "            if 'T' in line:\n                x = 1 if n else 2",
        ),
        (  # a lambda's colon is not a header's
            "key = lambda r: r[1]; for r in sorted([(1, 2)], key=key): print(r)",
            "key = lambda r: r[1]\nfor r in sorted([(1, 2)], key=key):\n    print(r)",
        ),
    ],
)
def test_statements_chained_on_one_line_become_lines_and_blocks(code: str, expected: str) -> None:
    assert repair_inline_blocks(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "for a in range(3): print(a); print(a * 2)",  # valid Python: left alone
        "for a in range(3): for b in x: print(b) print(a)",  # still broken after the split
        "with open('a') as f: lines = f.read() n = 3",  # statements joined by a space: no way to tell
        "if x > 1 print(x); for y in z: pass",  # a header without its colon
    ],
)
def test_inline_blocks_are_left_alone_when_the_split_does_not_apply(code: str) -> None:
    assert repair_inline_blocks(code) is None


def test_backspace_and_form_feed_go_back_to_the_escapes_the_model_typed() -> None:
    # The model typed \b in JSON, which decodes to a backspace: it meant the regex word boundary.
    sent = "import re\nprint(re.findall(r'\x08\\w+\x08', 'a bc'))\nprint('x\x0cy')"
    code, note = repair(sent)
    assert code == "import re\nprint(re.findall(r'\\b\\w+\\b', 'a bc'))\nprint('x\\fy')"
    assert note == ""
    assert repair("print('a\x08\nb')") == ("print('a\\b\\nb')", STRING_NOTE)


def test_repair_says_what_it_changed() -> None:
    assert repair("print('a\nb')") == ("print('a\\nb')", STRING_NOTE)
    assert repair("if 1: for a in [2]: print(a)") == ("if 1:\n    for a in [2]:\n        print(a)", BLOCKS_NOTE)
    assert repair("x = (") == ("x = (", "")


def test_a_line_break_in_a_string_and_a_chained_block_are_repaired_together() -> None:
    # find_todos: `for ...: for ...:` on one line, and '\n'.join written with a raw line break.
    code = (
        "todo = []\nfor folder, _, names in os.walk('src'): for name in names:\n"
        "    todo.append(name)\nwrite_file('todo.txt', '\n'.join(todo))"
    )
    repaired, note = repair(code)
    assert repaired == (
        "todo = []\nfor folder, _, names in os.walk('src'):\n    for name in names:\n"
        "        todo.append(name)\nwrite_file('todo.txt', '\\n'.join(todo))"
    )
    assert note == f"{STRING_NOTE}\n{BLOCKS_NOTE}"


def test_line_breaks_escaped_twice_between_statements_become_line_breaks() -> None:
    # \\n in the JSON after the first line, so the loop arrives as one line.
    broken = (
        "import os, re\nfor folder, _, names in os.walk('.'):\\n    for name in sorted(names):  # each file's\\n"
        "        if name.endswith('.md'):\\n            print(re.sub(r'\\s+', ' ', name), 'a\\nb', \"\"\"x\\ny\"\"\")"
    )
    code, note = repair(broken)
    assert note == ESCAPED_NOTE
    assert code == (
        "import os, re\nfor folder, _, names in os.walk('.'):\n    for name in sorted(names):  # each file's\n"
        "        if name.endswith('.md'):\n            print(re.sub(r'\\s+', ' ', name), 'a\\nb', \"\"\"x\\ny\"\"\")"
    )
    compile(code, "<t>", "exec")


@pytest.mark.parametrize(
    "code",
    [
        "print('a\\nb')",  # compiles: a backslash-n inside a string is an escape
        "x = 1 \\ 2",  # another stray backslash: still broken after the repair
        "def f(:\\n    pass",  # another syntax error after the repair
    ],
)
def test_escaped_line_breaks_are_left_when_the_repair_does_not_apply(code: str) -> None:
    assert repair_escaped_line_breaks(code) is None


def test_an_f_strings_own_quote_inside_its_braces_becomes_the_other_quote() -> None:
    # Python 3.12 syntax; the sandbox's 3.11 stops at it.
    code = "d = {'total': 3}\nprint(f'| total | {d['total']} |')"
    assert repair(code) == ("d = {'total': 3}\nprint(f'| total | {d[\"total\"]} |')", QUOTES_NOTE)
    assert repair_nested_quotes('print(f"{x["a"]} {{kept}}")') == "print(f\"{x['a']} {{kept}}\")"
    both = "print(f'{d['k']}:\n')"  # and a raw line break in the same string
    assert repair(both) == ("print(f'{d[\"k\"]}:\\n')", f"{STRING_NOTE}\n{QUOTES_NOTE}")
    assert repair_nested_quotes("print(f'{a}', 'b')") is None  # compiles already
    assert repair_nested_quotes("print(f'{a['b'}')") is None  # still broken after the swap


def test_carriage_returns_inside_a_string_are_escaped_like_line_breaks() -> None:
    # JSON "\r\n" and "\t" inside the model's r'...' decode to CR LF and TAB
    broken = "import re\ncounts = len(re.findall(r'\t|\n|\r\n|\n\r\nc', 'a\\nb'))\r\nprint(counts)"
    repaired, _ = repair_string_line_breaks(broken) or ("", True)
    assert repaired == "import re\ncounts = len(re.findall(r'\t|\\n|\\r\\n|\\n\\r\\nc', 'a\\nb'))\nprint(counts)"
    scope: dict[str, object] = {}
    exec(compile(repaired, "<t>", "exec"), scope)
    assert scope["counts"] == 1


def run_writes(code: str) -> dict[str, str]:
    """What ``code`` writes with ``open(name, 'w')``, by name, without touching the disk."""
    written: dict[str, str] = {}

    class Recorder:
        def __init__(self, name: str, mode: str) -> None:
            self.name = name

        def __enter__(self) -> Recorder:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def write(self, text: str) -> None:
            written[self.name] = text

    exec(compile(code, "<t>", "exec"), {"open": Recorder})
    return written


def test_quotes_inside_a_file_written_line_by_line_are_the_files_text() -> None:
    # project_layout runs 222 and 224: a package's files written as strings with raw line breaks,
    # quoting '__main__' and '0.1.0' inside them as the files do.
    code = (
        "with open('cli.py', 'w') as f:\n    f.write('def main():\n    print('Weather CLI ready')\n\n"
        "if __name__ == '__main__':\n    main()')\n"
        "with open('pyproject.toml', 'w') as f:\n    f.write('[project]\nname = 'weather'\nversion = '0.1.0'')\n"
        "print('done', 'a\nb'f'{1}')"  # a string prefix after a quote is a string, not text
    )
    repaired, note = repair(code)
    assert note == f"{STRING_NOTE} {INNER_QUOTES_NOTE}"
    assert run_writes(repaired) == {
        "cli.py": "def main():\n    print('Weather CLI ready')\n\nif __name__ == '__main__':\n    main()",
        "pyproject.toml": "[project]\nname = 'weather'\nversion = '0.1.0'",
    }
    assert repaired.endswith("print('done', 'a\\nb'f'{1}')")
    assert repair("f.write('a\nif x == 'yes':')  # it's 'b'") == (
        "f.write('a\\nif x == \\'yes\\':')  # it's 'b'",
        f"{STRING_NOTE} {INNER_QUOTES_NOTE}",
    )
    assert repair_written("x = 'a'\nprint('a\nb')") == ("x = 'a'\nprint('a\\nb')", WRITTEN_STRING_NOTE)
    text, written_note = repair_written("print('say 'hi'\nnow')") or ("", "")
    assert (text, written_note) == ("print('say \\'hi\\'\\nnow')", f"{WRITTEN_STRING_NOTE} {INNER_QUOTES_WRITTEN_NOTE}")
    # An apostrophe escaped as text leaves the string open: no repair, the code stays as it was.
    assert repair_string_line_breaks("print('Hello,\nWorld')\nprint('it's fine')") is None


def test_a_line_under_a_header_that_is_not_indented_becomes_its_body() -> None:
    # `with open(...) as f:` over an unindented f.write, with raw line breaks too.
    code = "import os\nwith open('a.txt', 'w') as f:\nf.write('x\ny')\nfor n in [1]:\n  if n:\n  print(n)"
    repaired, note = repair(code)
    assert repaired == (
        "import os\nwith open('a.txt', 'w') as f:\n    f.write('x\\ny')\nfor n in [1]:\n  if n:\n      print(n)"
    )
    assert note == f"{STRING_NOTE}\n{INDENT_NOTE}"
    assert run_writes(repaired) == {"a.txt": "x\ny"}
    assert repair("if True:\nprint(1)") == ("if True:\n    print(1)", INDENT_NOTE)
    assert repair_missing_indents("print(1)") is None  # compiles
    assert repair_missing_indents("if True:\nprint(1)\nx = (") is None  # another error remains
    assert repair_missing_indents("if True:") is None  # no line to indent

"""Code that runs but cannot do what it means: a regular expression given to str.replace, a loop
variable named like the list the loop fills, tests no runner collects."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.tools.builtin.code_lint import (
    case_mismatch,
    code_mistakes,
    file_read_twice,
    float_power,
    index_column_key,
    loop_rebinds_list,
    prints_only_literals,
    redefined_function,
    regex_in_replace,
    rereads_output,
    session_definitions,
    typed_write,
    undiscoverable_test,
)
from pymanus.tools.builtin.listing_lint import missing_walk_folder, shallow_listing


@pytest.mark.parametrize(
    ("source", "line", "shown"),
    [
        ("slug = title.lower().replace(r'[^a-zA-Z0-9]', '-')", 1, "r'[^a-zA-Z0-9]'"),
        ("x = 1\ntext = text.replace('\\\\s+', ' ')", 2, "r'\\s+'"),
        ("df['name'].str.replace('[a-z]+', '')", 1, "r'[a-z]+'"),
        ("t.replace(\"(?i)it's\", '')", 1, '"(?i)it\'s"'),
        ("def f(t):\n    return t.replace('.*', '')", 2, "r'.*'"),
    ],
)
def test_a_pattern_given_to_replace_is_named(source: str, line: int, shown: str) -> None:
    assert regex_in_replace(source) == (
        f"line {line} calls .replace({shown}, ...), but str.replace looks for that exact text, not a regular "
        "expression; for a pattern use re.sub(pattern, replacement, text) (import re)"
    )


@pytest.mark.parametrize(
    "source",
    [
        "t.replace('a', 'b')",
        "t.replace('- [ ]', '- [x]')",  # a checkbox, not a character class
        "t.replace('...', '…')",
        "s.str.replace(r'\\s+', ' ', regex=True)",
        "re.sub(r'[^a-z]+', '-', t)",
        "t.replace(old, new)",
        "t.replace(",  # does not parse: the syntax check speaks for it
    ],
)
def test_plain_replacements_are_fine(source: str) -> None:
    assert regex_in_replace(source) is None


def test_tests_in_a_file_runners_do_not_collect_get_a_note() -> None:
    tests = "from weather import cli\n\n\ndef test_main():\n    cli.main()\n"
    assert undiscoverable_test("tests/main.py", tests) == (
        "pytest and unittest only collect test files named test_*.py, so they will not run tests/main.py; "
        "name it tests/test_main.py."
    )
    for collected in ("tests/test_main.py", "tests/main_test.py", "test_cli.py", "tests/conftest.py"):
        assert undiscoverable_test(collected, tests) is None, collected
    assert undiscoverable_test("tests/helpers.py", "def make_user():\n    return 1\n") is None
    assert undiscoverable_test("tests/notes.md", tests) is None


WALK = (
    "import os\n"
    "files = []\n"
    "for root, dirs, files in os.walk('src'):\n"
    "    for name in files:\n"
    "        if 'TODO' in open(os.path.join(root, name)).read():\n"
    "            files.append(os.path.join(root, name))\n"
    "print(files)\n"
)


def test_a_loop_variable_named_like_the_list_the_loop_fills_is_named() -> None:
    assert loop_rebinds_list(WALK) == (
        "line 3's for loop makes `files` its own loop variable, so the `files` that line 2 creates and line 6 "
        "fills is replaced by each item the loop gives: give the list you fill another name "
        "(found = [] ... found.append(...))"
    )
    assert loop_rebinds_list("seen = set()\nfor seen in groups:\n    seen.add(1)\n") is not None
    assert code_mistakes(WALK + "t = t.replace('[^a-z]', '-')\n")[0].startswith("line 8 calls .replace(")


@pytest.mark.parametrize(
    "source",
    [
        WALK.replace("files = []", "found = []")
        .replace("files.append", "found.append")
        .replace("print(files", "print(found"),
        "rows = []\nfor rows in chunks:\n    print(rows)\n",  # rebound, but not filled in the loop
        "rows = [1]\nfor rows in chunks:\n    rows.append(2)\n",  # not an empty list the code builds
        "for (",
    ],
)
def test_loops_that_fill_a_list_of_another_name_are_fine(source: str) -> None:
    assert loop_rebinds_list(source) is None


def test_a_whole_number_power_through_math_pow_is_named() -> None:
    source = "import math\nfor i in range(1, 11):\n    print(math.pow(i, 2))\n"
    assert float_power(source) == (
        "line 3 calls math.pow, which always returns a float (math.pow(3, 2) is 9.0, printed with its .0); "
        "for whole numbers write i ** 2, which keeps an int an int"
    )
    assert code_mistakes(source) == [float_power(source)]


@pytest.mark.parametrize(
    "source",
    ["print(math.pow(x, 0.5))", "print(i ** 2)", "print(pow(i, 2))", "print(numpy.pow(i, 2))", "math.pow("],
)
def test_float_powers_and_int_powers_are_fine(source: str) -> None:
    assert float_power(source) is None


def test_walking_a_folder_the_workspace_does_not_have_is_named(tmp_path: Path) -> None:
    # word_counts: os.walk('.\\texts') found no file, without an error, and the table got no rows.
    (tmp_path / "texts").mkdir()
    (tmp_path / "src").mkdir()
    code = "import os\nfor folder, _, names in os.walk('.\\\\texts'):\n    print(names)\n"
    assert missing_walk_folder(code, tmp_path) == (
        "line 2 walks '.\\\\texts', which is not a folder of the workspace (paths take /, not \\), so os.walk "
        "gives nothing, without an error; its folders are src, texts"
    )
    assert "walks 'text', which is not" in (missing_walk_folder("os.walk('text')", tmp_path) or "")
    for fine in ("os.walk('texts')", "os.walk('./src/')", "os.walk(folder)", "os.walk('../..')", "ast.walk('x')"):
        assert missing_walk_folder(fine, tmp_path) is None, fine


def test_text_with_capitals_looked_for_in_lower_cased_text_is_named() -> None:
    # find_todos: the search found no file, and the 1.5B ran it twice more.
    code = "import os\nfound = [p for p in paths\n         if 'TODO' in open(p).read().lower()]\n"
    assert case_mismatch(code) == (
        "line 3 looks for 'TODO' in text made lower case by .lower(), where it is never found; look for 'todo' "
        "there, or leave out .lower()"
    )
    assert any("looks for 'TODO'" in mistake for mistake in code_mistakes(code))
    assert "look for 'TODO:' there, or leave out .upper()" in (case_mismatch("line.upper().startswith('todo:')") or "")
    assert "looks for 'Yes'" in (case_mismatch("answer = reply.casefold() == 'Yes'") or "")


@pytest.mark.parametrize(
    "source",
    [
        "'todo' in text.lower()",
        "'TODO' in text",
        "text.lower().count('a1-')",
        "text.lower() == name",
        "'TODO' in text.lower(locale)",
        "text.strip() != 'Done'",
    ],
)
def test_case_folds_that_match_are_fine(source: str) -> None:
    assert case_mismatch(source) is None


def test_listing_a_folder_whose_files_are_in_subfolders_is_named(tmp_path: Path) -> None:
    # find_todos: os.listdir('.') over a workspace whose files are under src/app/.
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "main.py").write_text("# TODO\n")
    (tmp_path / "README.md").write_text("# Demo\n")
    code = "import os\nfor f in os.listdir('.'):\n    if 'TODO' in open(f).read():\n        print(f)\n"
    assert shallow_listing(code, tmp_path) == (
        "line 2 lists '.' with os.listdir, which gives the names in that one folder only, not the files in its "
        "subfolders (such as src/app/main.py); os.walk('.') visits them all"
    )
    assert shallow_listing("import os\nos.listdir()", tmp_path) is not None  # the working folder, too
    assert shallow_listing("import os\nos.listdir('src/app')", tmp_path) is None  # no subfolders there
    assert shallow_listing("import os\nos.listdir('../..')", tmp_path) is None  # outside the workspace
    assert shallow_listing("import os\nos.listdir(folder)", tmp_path) is None  # not a literal
    assert shallow_listing("for root, _, names in os.walk('.'): pass", tmp_path) is None


_NOT_IN_INDEX = "KeyError: \"['order_id'] not in index\""


@pytest.mark.parametrize(
    ("source", "how"),
    [
        (
            "df = pd.read_csv('orders.csv', index_col='order_id')\nprint(df[['order_id', 'amount']])",
            "index_col='order_id'",
        ),
        ("df = pd.read_csv('o.csv', index_col=['order_id'])\ndf[['order_id']]", "index_col='order_id'"),
        ("df = pd.read_csv('o.csv')\ndf = df.set_index('order_id')\ndf[['order_id']]", "set_index"),
    ],
)
def test_selecting_the_column_made_the_index_is_explained(source: str, how: str) -> None:
    # merge_csv: read_csv(..., index_col='order_id'), then a selection of order_id raised KeyError.
    note = index_column_key(source, f"Traceback ...\n{_NOT_IN_INDEX}")
    assert note is not None and f"makes 'order_id' the DataFrame's index ({how})" in note
    assert note.endswith("so that 'order_id' stays a column")
    assert index_column_key(source, "KeyError: 'order_id'") is not None  # a single column: df['order_id']
    pandas_3 = "KeyError: \"None of [Index(['order_id'], dtype='str')] are in the [columns]\""
    assert index_column_key(source, pandas_3) == note


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("df = pd.read_csv('o.csv', index_col='customer_id')\ndf[['order_id']]", _NOT_IN_INDEX),  # another column
        ("df = pd.read_csv('o.csv')\ndf[['order_id']]", _NOT_IN_INDEX),  # no index set
        ("df = pd.read_csv('o.csv', index_col='order_id')", "ValueError: bad"),  # another error
        ("df = pd.read_csv(", _NOT_IN_INDEX),  # not Python
    ],
)
def test_other_key_errors_get_no_index_note(source: str, error: str) -> None:
    assert index_column_key(source, error) is None


def test_a_function_defined_twice_is_named() -> None:
    # add_function: the same slugify appended twice; the fix went to the first, the second ran.
    source = "def word_count(t):\n    return 1\ndef slugify(t):\n    return ''\ndef slugify(t):\n    return ''\n"
    assert redefined_function(source) == (
        "line 5 defines `slugify` again (line 3 defines it too); Python keeps only the last definition, "
        "so keep one (the right one) and remove the other"
    )
    assert code_mistakes(source) == [redefined_function(source)]
    method = "class Cart:\n    def total(self):\n        return 1\n\n    def total(self):\n        return 2\n"
    assert redefined_function(method) is not None and redefined_function(method).startswith("line 5 defines `total`")


@pytest.mark.parametrize(
    "source",
    [
        "class C:\n    @property\n    def x(self): return 1\n    @x.setter\n    def x(self, v): pass\n",
        "@overload\ndef f(a: int) -> int: ...\n@overload\ndef f(a: str) -> str: ...\ndef f(a): return a\n",
        "def f():\n    def inner(): pass\n    return inner\ndef g():\n    def inner(): pass\n",  # separate scopes
        "def f(:",
    ],
)
def test_definitions_meant_to_repeat_are_fine(source: str) -> None:
    assert redefined_function(source) is None


@pytest.mark.parametrize(
    ("source", "only_literals"),
    [
        ("print({'mean': 23.5, 'median': 24.3})", True),  # column_stats, after its typed file was sent back
        ("print(23.5)\nprint('done', 24.3)", True),
        ("print(mean)", False),
        ("print(round(23.456, 2))", False),
        ("print(6 * 7)", False),  # arithmetic computes
        ("print(f'{total}')", False),
        ("import json\nprint(json.dumps({'a': 1}))", False),
        ("x = 3", False),  # prints nothing
        ("print(", False),
    ],
)
def test_code_that_only_prints_typed_values_is_recognised(source: str, only_literals: bool) -> None:
    assert prints_only_literals(source) is only_literals


def test_a_block_redefining_a_workspace_modules_function_names_the_module(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "stats.py").write_text("def median(values):\n    return values[0]\n")
    code = "import statistics\n\nclass Helper:\n    pass\n\ndef median(values):\n    return 0\n\nprint(median([1]))"
    assert session_definitions(code, tmp_path) == (
        "line 6 defines `median` in this Python session only: pkg/stats.py keeps its own `median`, and code that "
        "imports it from there (its tests) still gets that one; to change it, edit pkg/stats.py (edit_file)"
    )


def test_a_block_that_only_defines_new_functions_says_no_file_has_them(tmp_path: Path) -> None:
    code = '"""Helpers."""\nimport re\n\ndef slugify(title):\n    return title\n\nclass Slug:\n    pass\n'
    assert session_definitions(code, tmp_path) == (
        "line 4 defines `slugify`, `Slug` in this Python session only, and the code runs nothing: no workspace file "
        "has it, so a module or test that imports it will not find it. To add it to a module, write it in that .py "
        "file (edit_file with an empty old_text adds code after the last line)"
    )


@pytest.mark.parametrize(
    "code",
    [
        "def slugify(title):\n    return title\n\nprint(slugify('A'))",  # defines and runs: trying it out
        "print(1)",  # defines nothing
        "def broken(:",  # does not parse
    ],
)
def test_blocks_that_run_what_they_define_or_define_nothing_get_no_session_note(code: str, tmp_path: Path) -> None:
    (tmp_path / "textutils.py").write_text("def word_count(text):\n    return 0\n")
    assert session_definitions(code, tmp_path) is None


def test_a_lambda_bound_to_a_name_counts_as_a_definition(tmp_path: Path) -> None:
    (tmp_path / "textutils.py").write_text("slugify = lambda title: title\n")
    note = session_definitions("from textutils import slugify\nslugify = lambda title: title.lower()", tmp_path)
    assert note is not None and note.startswith("line 2 defines `slugify` in this Python session only: textutils.py")
    alone = session_definitions("to_upper = lambda text: text.upper()", tmp_path)
    assert alone is not None and alone.startswith("line 1 defines `to_upper` in this Python session only, and")
    assert session_definitions("a = b = lambda text: text", tmp_path) is None  # two names: not a definition


MERGE_AGAIN = (
    "import pandas as pd\n"
    "orders = pd.read_csv('./merged.csv')\n"
    "customers = pd.read_csv('customers.csv')\n"
    "merged = pd.merge(orders, customers, on='customer_id')\n"
    "merged.to_csv('merged.csv', index=False)\n"
)


def test_code_combining_its_earlier_output_with_inputs_into_that_output_is_named() -> None:
    assert rereads_output(MERGE_AGAIN, {"merged.csv"}) == (
        "line 2 reads merged.csv, which earlier code of this run wrote, then writes it again: it starts from that "
        "output, which already holds what the inputs gave it; to compute merged.csv again, read the input files only"
    )
    with_open = (
        "rows = open('out.txt').read() + open('in.txt').read()\nwith open('out.txt', mode='w') as f:\n    f.write(rows)"
    )
    assert rereads_output(with_open, {"out.txt"}) is not None


@pytest.mark.parametrize(
    ("code", "earlier"),
    [
        (MERGE_AGAIN, set()),  # merged.csv is an input the task gave, or written by hand
        (MERGE_AGAIN.replace("to_csv('merged.csv'", "to_csv('other.csv'"), {"merged.csv"}),  # not written again
        ("df = pd.read_csv('merged.csv')\ndf[['a', 'b']].to_csv('merged.csv')", {"merged.csv"}),  # changes it alone
        ("text = read_file('report.md')\nwrite_file('report.md', text + '\\n| Total | 3 |')", {"report.md"}),
        ("open(name).read()\nopen(name, 'w')", {"merged.csv"}),  # no literal paths
    ],
)
def test_code_that_does_not_combine_its_output_with_inputs_gets_no_note(code: str, earlier: set[str]) -> None:
    assert rereads_output(code, earlier) is None


def test_a_file_read_twice_in_one_with_block_is_named() -> None:
    # word_counts: lines from f.readlines(), then words from f.readlines() again, which were all 0.
    code = (
        "with open(path) as f:\n    lines = len(f.readlines())\n    words = sum(len(l.split()) for l in f.readlines())"
    )
    assert file_read_twice(code) == (
        "line 3 reads f again, but the read on line 2 already went to the end of the file, so this one gets "
        "nothing ('' or []); read it once into a variable (text = f.read()) and use that"
    )
    assert file_read_twice("with open(p) as h:\n    first = h.read()\n    for line in h:\n        print(line)")
    assert any("reads f again" in mistake for mistake in code_mistakes(code))


@pytest.mark.parametrize(
    "code",
    [
        "with open(p) as f:\n    text = f.read()\nwith open(q) as f:\n    other = f.read()",  # two files
        "with open(p) as f:\n    a = f.read()\n    f.seek(0)\n    b = f.read()",  # rewound
        "with open(p) as f, open(q) as g:\n    a = f.read()\n    b = g.read()",
        "with open(p) as f:\n    header = f.readline()\n    rest = f.read()",  # a line, then the rest
    ],
)
def test_reading_each_file_once_gets_no_note(code: str) -> None:
    assert file_read_twice(code) is None


TYPED_TABLE = (
    "import os\n"
    "rows = []\n"
    "for name in sorted(os.listdir('texts')):\n"
    "    lines = len(read_file('texts/' + name).splitlines())\n"
    "    rows.append((name, lines))\n"
    "lines = ['| file | lines |', '|---|---|', '| alpha.txt | 101 |', '| beta.txt | 120 |']\n"
    "write_file('counts.md', '\\n'.join(lines) + '\\n')\n"
    "print(rows)\n"
)


def test_code_that_computes_but_writes_a_typed_table_is_named() -> None:
    # word_counts: the counts were computed and printed, and the file got the typed table.
    assert typed_write(TYPED_TABLE) == (
        "line 7 writes counts.md from text typed into the code, not from the values it computes, so the file "
        "holds the typed numbers; build that text from the computed values (f-strings over them)"
    )
    handle = "for x in y:\n    pass\nwith open('out.md', 'w') as f:\n    f.write('| a | 1 |\\n| b | 2 |')"
    assert typed_write(handle) is not None and typed_write(handle).startswith("line 4 writes out.md")


@pytest.mark.parametrize(
    "code",
    [
        TYPED_TABLE.replace("write_file('counts.md', '\\n'.join(lines)", "write_file('counts.md', str(rows)"),
        "lines = ['| a | 1 |', '| b | 2 |']\nwrite_file('t.md', '\\n'.join(lines))",  # no loop: all typed anyway
        "for r in rows:\n    pass\nwrite_file('t.md', '# Report\\nSee below.')",  # no numbers
        "lines = []\nfor n, c in rows:\n    lines.append(f'| {n} | {c} |')\nwrite_file('t.md', '\\n'.join(lines))",
        "for r in rows:\n    pass\nwrite_file('t.md', f'| total | {sum(rows)} | 2 |')",  # a computed value in it
    ],
)
def test_code_writing_computed_text_gets_no_typed_write_note(code: str) -> None:
    assert typed_write(code) is None

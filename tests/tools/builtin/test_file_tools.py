"""The file tools: what they do, every bad input, and no way out of the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.file_cases import call
from pymanus.sandbox import PathJail
from pymanus.tools import Tool, ToolContext
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.tool import ArgumentsError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return folder


def test_tool_names_are_the_contract(tools: dict[str, Tool]) -> None:
    assert list(tools) == ["read_file", "write_file", "edit_file", "list_dir", "find_files", "grep"]
    assert not tools["write_file"].parallel_safe and not tools["edit_file"].parallel_safe
    assert tools["read_file"].parallel_safe
    assert set(tools["read_file"].parameters["properties"]) == {"path", "start_line", "end_line", "preview"}


# -- read_file ---------------------------------------------------------------------------
async def test_read_file_numbers_lines(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "a.txt").write_text("one\ntwo\nthree\n")
    result = await call(tools["read_file"], path="a.txt")
    assert not result.is_error
    assert result.text == "a.txt (lines 1-3 of 3):\n     1\tone\n     2\ttwo\n     3\tthree"


async def test_read_file_line_range(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await call(tools["read_file"], path="a.txt", start_line=10, end_line=12)
    assert result.text.splitlines() == [
        "a.txt (lines 10-12 of 100):",
        "    10\tline 10",
        "    11\tline 11",
        "    12\tline 12",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"start_line": 0}, "counts from 1"),
        ({"start_line": 5, "end_line": 2}, "before start_line"),
        ({"start_line": 50}, "has only 3 lines"),
    ],
)
async def test_read_file_bad_ranges(
    tools: dict[str, Tool], jail: PathJail, arguments: dict[str, int], message: str
) -> None:
    (jail.root / "a.txt").write_text("1\n2\n3\n")
    result = await call(tools["read_file"], path="a.txt", **arguments)
    assert result.is_error and message in result.text


async def test_read_file_missing_suggests_close_names(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "report.csv").write_text("a\n")
    result = await call(tools["read_file"], path="reprot.csv")
    assert result.is_error and "does not exist" in result.text and "report.csv" in result.text


async def test_read_file_on_a_directory(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "sub").mkdir()
    result = await call(tools["read_file"], path="sub")
    assert result.is_error and "is a directory" in result.text and "list_dir" in result.text


async def test_read_file_binary(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2000))
    (jail.root / "blob.dat").write_bytes(b"abc\x00def")
    png = await call(tools["read_file"], path="img.png")
    assert "binary file" in png.text and "PNG image" in png.text and "KB" in png.text
    blob = await call(tools["read_file"], path="blob.dat")
    assert "binary file" in blob.text and "7 B" in blob.text


async def test_read_file_other_encoding(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "latin.txt").write_bytes("café crème\n".encode("latin-1") * 10)
    result = await call(tools["read_file"], path="latin.txt")
    assert "other than UTF-8" in result.text and "latin-1" in result.text


async def test_read_file_empty(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "empty.txt").write_text("")
    assert (await call(tools["read_file"], path="empty.txt")).text == "empty.txt is empty (0 bytes)."


async def test_read_file_size_limit_and_ranges_of_big_files(jail: PathJail) -> None:
    tools = {t.name: t for t in file_tools(jail, max_read_bytes=1000)}
    (jail.root / "big.txt").write_text("".join(f"row {i}\n" for i in range(1000)))
    refused = await call(tools["read_file"], path="big.txt")
    assert refused.is_error and "start_line" in refused.text and "python" in refused.text
    part = await call(tools["read_file"], path="big.txt", start_line=500, end_line=501)
    assert "row 499" in part.text and "row 500" in part.text


async def test_read_file_stops_at_its_budget_and_says_how_to_go_on(jail: PathJail) -> None:
    tools = {t.name: t for t in file_tools(jail, max_chars=200)}
    (jail.root / "long.txt").write_text("".join(f"line number {i}\n" for i in range(1, 100)))
    result = await call(tools["read_file"], path="long.txt")
    assert "continue with start_line=" in result.text and len(result.text) < 400


async def test_read_file_cuts_very_long_lines(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "wide.txt").write_text("x" * 50_000 + "\n")
    result = await call(tools["read_file"], path="wide.txt")
    assert "line cut: 50,000 characters" in result.text and len(result.text) < 3000


async def test_preview_of_a_csv_names_its_header(tools: dict[str, Tool], jail: PathJail) -> None:
    rows = "".join(f"{i},{i * 2},name {i}\n" for i in range(100))
    (jail.root / "data.csv").write_text("id,double,label\n" + rows)
    result = await call(tools["read_file"], path="data.csv", preview=True)
    assert "first line is the header" in result.text
    assert "3 columns: id, double, label" in result.text
    assert "101 lines" in result.text
    assert len(result.text.splitlines()) == 21


async def test_preview_of_a_tsv_and_of_plain_text(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "t.tsv").write_text("a\tb\n1\t2\n")
    assert "TSV" in (await call(tools["read_file"], path="t.tsv", preview=True)).text
    (jail.root / "n.txt").write_text("hello\n")
    plain = await call(tools["read_file"], path="n.txt", preview=True)
    assert "header" not in plain.text and "hello" in plain.text


# -- write_file --------------------------------------------------------------------------
async def test_write_file_creates_parents_and_reports(tools: dict[str, Tool], jail: PathJail) -> None:
    result = await call(tools["write_file"], path="out/deep/notes.md", content="# Title\nbody\n")
    assert result.text == "Created out/deep/notes.md: 13 bytes written, 2 lines."
    assert (jail.root / "out" / "deep" / "notes.md").read_text() == "# Title\nbody\n"
    again = await call(tools["write_file"], path="out/deep/notes.md", content="é")
    assert again.text.startswith("Overwrote") and "2 bytes" in again.text


async def test_old_text_from_another_file_names_that_file(tools: dict[str, Tool], jail: PathJail) -> None:
    # The test's line "fixed" in the module: the edit is in the wrong file, whatever new_text says.
    (jail.root / "stats.py").write_text("def median(v):\n    return v[0]\n")
    (jail.root / "test_stats.py").write_text("assert median([4, 1]) == 2.5\n")
    line = "assert median([4, 1]) == 2.5"
    result = await call(tools["edit_file"], path="stats.py", old_text=line, new_text=line)
    assert result.is_error and "old_text was not found in stats.py." in result.text
    assert result.text.endswith(" It is in: test_stats.py (1).")
    nowhere = await call(tools["edit_file"], path="stats.py", old_text="return v[1]", new_text="return v[2]")
    assert "It is in" not in nowhere.text


async def test_an_edit_that_changes_nothing_is_refused(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "pricing.py").write_text("def compute_total(items):\n    return 0\n")
    result = await call(tools["edit_file"], path="pricing.py", old_text="compute_total", new_text="compute_total")
    assert result.is_error and "old_text and new_text are the same, so this edit would change nothing" in result.text


async def test_write_file_onto_a_directory(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "sub").mkdir()
    result = await call(tools["write_file"], path="sub", content="x")
    assert result.is_error and "directory" in result.text
    result = await call(tools["write_file"], path=".", content="x")
    assert result.is_error and "workspace directory itself" in result.text


async def test_write_through_a_planted_symlink_is_refused(
    tools: dict[str, Tool], jail: PathJail, outside: Path
) -> None:
    (jail.root / "innocent.txt").symlink_to(outside / "secret.txt")
    (jail.root / "folder").symlink_to(outside)
    for path in ("innocent.txt", "folder/new.txt", "folder/secret.txt"):
        result = await call(tools["write_file"], path=path, content="pwned")
        assert result.is_error and "symbolic link" in result.text
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert not (outside / "new.txt").exists()


# -- edit_file ---------------------------------------------------------------------------
async def test_edit_replaces_text_that_occurs_once(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "code.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    result = await call(tools["edit_file"], path="code.py", old_text="return 1", new_text="return 2")
    assert not result.is_error and "Lines 2-2 now read" in result.text and "return 2" in result.text
    assert (jail.root / "code.py").read_text() == "def f():\n    return 2\n\nprint(f())\n"


async def test_edit_text_not_found_names_the_closest_line(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "code.py").write_text("alpha = 1\ntotal = compute(alpha)\nprint(total)\n")
    result = await call(tools["edit_file"], path="code.py", old_text="total = compute(alpa)", new_text="x")
    assert result.is_error and "not found" in result.text
    assert "closest line is 2" in result.text and "total = compute(alpha)" in result.text


async def test_edit_text_quoted_without_its_indentation_is_found_and_new_text_indented_alike(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # A function's body quoted flush left, as models do.
    source = "def slugify(title):\n    import re\n\n    return re.sub('[^a-z]+', '-', title)\n"
    (jail.root / "textutils.py").write_text(source)
    old = "import re\n\nreturn re.sub('[^a-z]+', '-', title)"
    new = "import re\n\nreturn re.sub('[^a-z0-9]+', '-', title.lower()).strip('-')"
    result = await call(tools["edit_file"], path="textutils.py", old_text=old, new_text=new)
    assert not result.is_error, result.text
    assert "old_text is at line 2 of textutils.py with each line indented by '    '" in result.text
    assert (jail.root / "textutils.py").read_text() == (
        "def slugify(title):\n    import re\n\n    return re.sub('[^a-z0-9]+', '-', title.lower()).strip('-')\n"
    )


async def test_edit_text_without_indentation_matching_twice_or_unevenly_is_not_found(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    body = "    x = 1\n    return x\n"
    source = f"def a():\n{body}\n\ndef b():\n{body}\n\nclass C:\n    def f(self):\n        x = 2\n"
    (jail.root / "code.py").write_text(source)
    twice = await call(tools["edit_file"], path="code.py", old_text="x = 1\nreturn x", new_text="return 2")
    assert twice.is_error and "not found" in twice.text
    uneven = await call(tools["edit_file"], path="code.py", old_text="def f(self):\nx = 2", new_text="pass")
    assert uneven.is_error and "not found" in uneven.text
    assert (jail.root / "code.py").read_text() == source


async def test_edit_ambiguous_text_gives_count_and_lines(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "a.txt").write_text("x = 1\ny = 2\nx = 1\n")
    result = await call(tools["edit_file"], path="a.txt", old_text="x = 1", new_text="x = 3")
    assert result.is_error and "occurs 2 times" in result.text and "lines 1, 3" in result.text
    assert "set replace_all to true" in result.text
    assert (jail.root / "a.txt").read_text() == "x = 1\ny = 2\nx = 1\n"


async def test_edit_replace_all_renames_every_occurrence(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "doc.md").write_text("Skylark is free.\r\nSkylark reads notes.\r\nSkylarks sing.\r\n")
    result = await call(tools["edit_file"], path="doc.md", old_text="Skylark", new_text="Nimbus", replace_all=True)
    assert not result.is_error and "replaced 3 occurrences" in result.text
    assert (jail.root / "doc.md").read_text() == "Nimbus is free.\nNimbus reads notes.\nNimbuss sing.\n"
    assert "Restored" in (await call(tools["edit_file"], path="doc.md", undo=True)).text
    assert (jail.root / "doc.md").read_text().startswith("Skylark is free.")
    missing = await call(tools["edit_file"], path="doc.md", old_text="Skylarc", new_text="x", replace_all=True)
    assert missing.is_error and "not found" in missing.text and "closest line" in missing.text


async def test_edit_of_a_word_names_the_other_files_that_use_it(tools: dict[str, Tool], jail: PathJail) -> None:
    """A rename usually spans files: the model learns where the old name still is."""
    (jail.root / "shop").mkdir()
    (jail.root / "shop" / "pricing.py").write_text("def calc_tot(items):\n    return sum(items)\n")
    (jail.root / "shop" / "cart.py").write_text("from shop.pricing import calc_tot\nx = calc_tot([1])\n")
    (jail.root / "main.py").write_text("import shop\nprint(shop.pricing.calc_tot([2]))\n")
    (jail.root / "notes.txt").write_text("calc_totals is another name\n")
    result = await call(
        tools["edit_file"], path="shop/pricing.py", old_text="def calc_tot(", new_text="def compute_total("
    )
    assert "also appears" not in result.text  # not a single word: an ordinary edit
    result = await call(
        tools["edit_file"], path="shop/cart.py", old_text="calc_tot", new_text="total", replace_all=True
    )
    assert result.text.endswith("calc_tot also appears in other files: main.py (1).")


async def test_edit_keeps_crlf_files_working(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await call(tools["edit_file"], path="win.txt", old_text="one\ntwo", new_text="1\n2")
    assert not result.is_error
    assert (jail.root / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


@pytest.mark.parametrize(
    ("after", "expected"),
    [(0, "new\na\nb"), (1, "a\nnew\nb"), (2, "a\nb\nnew\n")],
)
async def test_edit_inserts_after_a_line(tools: dict[str, Tool], jail: PathJail, after: int, expected: str) -> None:
    (jail.root / "f.txt").write_text("a\nb")
    result = await call(tools["edit_file"], path="f.txt", insert_line=after, new_text="new")
    assert not result.is_error and "new" in result.text
    assert (jail.root / "f.txt").read_text() == expected


async def test_edit_with_empty_old_text_appends(tools: dict[str, Tool], jail: PathJail) -> None:
    """Adding a function to a module is one call, with no line number to get right."""
    (jail.root / "m.py").write_text("def a():\n    return 1")
    result = await call(tools["edit_file"], path="m.py", old_text="", new_text="\n\ndef b():\n    return 2")
    assert not result.is_error and "Lines 3-" in result.text
    assert (jail.root / "m.py").read_text() == "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    await call(tools["edit_file"], path="m.py", old_text="", insert_line=0, new_text="import re")
    assert (jail.root / "m.py").read_text().startswith("import re\ndef a():")


async def test_edit_of_a_file_not_written_yet(tools: dict[str, Tool], jail: PathJail) -> None:
    """Adding lines creates it (undo deletes it again); replacing in it points to write_file."""
    refused = await call(tools["edit_file"], path="new.py", old_text="x = 1", new_text="x = 2")
    assert refused.is_error and "new.py does not exist yet" in refused.text
    assert "call write_file with path 'new.py'" in refused.text and not (jail.root / "new.py").exists()
    created = await call(tools["edit_file"], path="pkg/new.py", old_text="", new_text="x = 1")
    assert not created.is_error and created.text.startswith("Created pkg/new.py. Lines 1-1")
    assert (jail.root / "pkg" / "new.py").read_text() == "x = 1\n"
    assert "deleted" in (await call(tools["edit_file"], path="pkg/new.py", undo=True)).text
    assert not (jail.root / "pkg" / "new.py").exists()


async def test_simple_edit_requires_the_text_to_write(jail: PathJail) -> None:
    """The variant for small models: constrained decoding writes every required key."""
    simple = {t.name: t for t in file_tools(jail, simple_edit=True)}["edit_file"]
    assert simple.parameters["required"] == ["path", "old_text", "new_text"]
    assert "undo" not in simple.parameters["properties"]
    (jail.root / "f.txt").write_text("a\nb\n")
    assert not (await call(simple, path="f.txt", old_text="b", new_text="c")).is_error
    assert not (await call(simple, path="f.txt", old_text="", new_text="d")).is_error
    assert (jail.root / "f.txt").read_text() == "a\nc\nd\n"
    with pytest.raises(ArgumentsError, match="new_text: Field required"):
        simple.validate({"path": "f.txt", "old_text": "a"})
    wrong = await call(simple, path="f.txt", old_text="a", new_text="x", insert_line=1)
    assert wrong.is_error and "insert_line goes with an empty old_text" in wrong.text


async def test_edit_bad_inputs(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "f.txt").write_text("a\nb\n")
    (jail.root / "bin.dat").write_bytes(b"\x00\x01\x02")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"path": "f.txt"}, "Give old_text (with new_text) to replace"),
        ({"path": "f.txt", "old_text": "a", "insert_line": 1}, "insert_line goes with an empty old_text"),
        ({"path": "f.txt", "undo": True, "old_text": "a"}, "undo=true takes only the path"),
        ({"path": "f.txt", "undo": True, "replace_all": True}, "undo=true takes only the path"),
        ({"path": "f.txt", "old_text": "", "new_text": "x", "replace_all": True}, "give the old_text to replace"),
        ({"path": "f.txt", "old_text": ""}, "new_text is empty: give the lines to insert after line 2"),
        ({"path": "f.txt", "insert_line": 7, "new_text": "x"}, "between 0 and 2"),
        ({"path": "f.txt", "insert_line": -1, "new_text": "x"}, "between 0 and 2"),
        ({"path": "f.txt", "insert_line": 2}, "new_text is empty: give the lines to insert after line 2"),
        ({"path": "missing.txt", "old_text": "a", "new_text": "b"}, "does not exist"),
        ({"path": "bin.dat", "old_text": "a", "new_text": "b"}, "binary"),
        ({"path": "f.txt", "undo": True}, "no change to f.txt to undo"),
    ]
    for arguments, message in cases:
        result = await call(tools["edit_file"], **arguments)
        assert result.is_error and message in result.text, (arguments, result.text)
    assert (jail.root / "f.txt").read_text() == "a\nb\n"


async def test_undo_reverts_edits_and_writes_in_order(tools: dict[str, Tool], jail: PathJail) -> None:
    await call(tools["write_file"], path="f.txt", content="v1\n")
    await call(tools["write_file"], path="f.txt", content="v2\n")
    await call(tools["edit_file"], path="f.txt", old_text="v2", new_text="v3")
    assert (jail.root / "f.txt").read_text() == "v3\n"
    for expected in ("v2\n", "v1\n"):
        result = await call(tools["edit_file"], path="f.txt", undo=True)
        assert "Restored" in result.text
        assert (jail.root / "f.txt").read_text() == expected
    deleted = await call(tools["edit_file"], path="f.txt", undo=True)
    assert "deleted" in deleted.text and not (jail.root / "f.txt").exists()
    assert (await call(tools["edit_file"], path="f.txt", undo=True)).is_error


async def test_undo_history_belongs_to_one_set_of_tools(jail: PathJail) -> None:
    first = {t.name: t for t in file_tools(jail)}
    second = {t.name: t for t in file_tools(jail)}
    await call(first["write_file"], path="f.txt", content="x")
    assert (await call(second["edit_file"], path="f.txt", undo=True)).is_error
    assert not (await call(first["edit_file"], path="f.txt", undo=True)).is_error


# -- list_dir ----------------------------------------------------------------------------
async def test_list_dir_tree_with_sizes_and_depth(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "src" / "pkg").mkdir(parents=True)
    (jail.root / "src" / "pkg" / "mod.py").write_text("x" * 2048)
    (jail.root / "README.md").write_text("hi")
    (jail.root / "node_modules" / "lib").mkdir(parents=True)
    result = await call(tools["list_dir"])
    assert result.text.splitlines() == [
        "./",
        "  node_modules/  (1 entries)",
        "  src/",
        "    pkg/  (1 entries)",
        "  README.md  2 B",
    ]
    deep = await call(tools["list_dir"], path="src", depth=3)
    assert "mod.py  2.0 KB" in deep.text


async def test_list_dir_bad_inputs(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "f.txt").write_text("x")
    assert "between 1 and 10" in (await call(tools["list_dir"], depth=0)).text
    assert "is a file" in (await call(tools["list_dir"], path="f.txt")).text
    assert "does not exist" in (await call(tools["list_dir"], path="nope")).text
    (jail.root / "hollow").mkdir()
    assert "(empty)" in (await call(tools["list_dir"], path="hollow")).text


async def test_list_dir_caps_entries(tools: dict[str, Tool], jail: PathJail) -> None:
    for i in range(350):
        (jail.root / f"f{i:03}.txt").write_text("")
    result = await call(tools["list_dir"])
    assert "stopped after 300 entries" in result.text


async def test_list_dir_shows_but_does_not_follow_outside_links(
    tools: dict[str, Tool], jail: PathJail, outside: Path
) -> None:
    (jail.root / "escape").symlink_to(outside)
    result = await call(tools["list_dir"], depth=3)
    assert "escape -> outside the workspace, not followed" in result.text
    assert "secret.txt" not in result.text


# -- find_files --------------------------------------------------------------------------
async def test_find_files_by_name_and_by_path(tools: dict[str, Tool], jail: PathJail) -> None:
    for rel in ("a.py", "src/b.py", "src/deep/c.py", "src/deep/d.txt", "docs/e.py"):
        (jail.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (jail.root / rel).write_text("x")
    names = await call(tools["find_files"], pattern="*.py")
    assert [line.split()[0] for line in names.text.splitlines()] == ["a.py", "docs/e.py", "src/b.py", "src/deep/c.py"]
    paths = await call(tools["find_files"], pattern="src/**/*.py")
    assert [line.split()[0] for line in paths.text.splitlines()] == ["src/b.py", "src/deep/c.py"]
    scoped = await call(tools["find_files"], pattern="*.txt", path="src")
    assert scoped.text.split()[0] == "src/deep/d.txt"
    none = await call(tools["find_files"], pattern="*.rs")
    assert not none.is_error and "No files match" in none.text


@pytest.mark.parametrize(("pattern", "message"), [("", "empty"), ("/etc/*", "relative"), ("../*", "without '..'")])
async def test_find_files_bad_patterns(tools: dict[str, Tool], pattern: str, message: str) -> None:
    result = await call(tools["find_files"], pattern=pattern)
    assert result.is_error and message in result.text


async def test_find_files_does_not_follow_links_out(tools: dict[str, Tool], jail: PathJail, outside: Path) -> None:
    (jail.root / "escape").symlink_to(outside)
    (jail.root / "leak.txt").symlink_to(outside / "secret.txt")
    result = await call(tools["find_files"], pattern="*.txt")
    assert "secret" not in result.text and "leak" not in result.text


# -- grep --------------------------------------------------------------------------------
async def test_grep_reports_file_line_text(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "a.py").write_text("import os\ndef main():\n    return os.getcwd()\n")
    (jail.root / "b.txt").write_text("nothing\nDEF here\n")
    result = await call(tools["grep"], pattern=r"def \w+")
    assert result.text == "a.py:2: def main():"
    folded = await call(tools["grep"], pattern="def", ignore_case=True, glob="*.txt")
    assert folded.text == "b.txt:2: DEF here"
    single = await call(tools["grep"], pattern="os", path="a.py")
    assert single.text.splitlines() == ["a.py:1: import os", "a.py:3: return os.getcwd()"]


async def test_grep_bad_regex_and_no_matches(tools: dict[str, Tool], jail: PathJail) -> None:
    (jail.root / "a.txt").write_text("x\n")
    bad = await call(tools["grep"], pattern="print(")
    assert bad.is_error and "Invalid regular expression" in bad.text and "backslash" in bad.text
    none = await call(tools["grep"], pattern="zzz")
    assert not none.is_error and "No matches" in none.text
    missing = await call(tools["grep"], pattern="x", path="nope")
    assert missing.is_error and "does not exist" in missing.text


async def test_grep_caps_matches_and_skips_binary_and_outside(
    tools: dict[str, Tool], jail: PathJail, outside: Path
) -> None:
    (jail.root / "many.txt").write_text("hit\n" * 500)
    (jail.root / "bin.dat").write_bytes(b"hit\x00hit")
    (jail.root / "leak.txt").symlink_to(outside / "secret.txt")
    result = await call(tools["grep"], pattern="hit|SECRET")
    assert "stopped at 100 matches" in result.text
    assert "bin.dat" not in result.text and "SECRET" not in result.text


# -- the jail, through every tool -----------------------------------------------------------
ESCAPES = ["../outside/secret.txt", "/etc/passwd", "sub/../../outside/secret.txt"]
CALLS = {
    "read_file": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "pwned"},
    "edit_file": lambda p: {"path": p, "old_text": "TOP", "new_text": "pwned"},
    "list_dir": lambda p: {"path": p.rsplit("/", 1)[0] or "/"},
    "find_files": lambda p: {"pattern": "*", "path": p.rsplit("/", 1)[0] or "/"},
    "grep": lambda p: {"pattern": "SECRET", "path": p},
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("path", ESCAPES)
async def test_no_tool_reaches_outside(
    tools: dict[str, Tool], outside: Path, name: str, path: str, tmp_path: Path
) -> None:
    (tmp_path / "ws" / "sub").mkdir(exist_ok=True)
    result = await call(tools[name], **CALLS[name](path))
    assert result.is_error, result.text
    assert "outside the workspace" in result.text and "relative to the workspace" in result.text
    assert "SECRET" not in result.text and "root:" not in result.text
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


@pytest.mark.parametrize("name", list(CALLS))
async def test_no_tool_follows_a_planted_symlink(
    tools: dict[str, Tool], jail: PathJail, outside: Path, name: str
) -> None:
    (jail.root / "link").symlink_to(outside)
    result = await call(tools[name], **CALLS[name]("link/secret.txt"))
    assert result.is_error and "symbolic link" in result.text
    assert "SECRET" not in result.text
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_the_factory_jail_wins_over_the_context_workspace(
    tools: dict[str, Tool], jail: PathJail, outside: Path
) -> None:
    context = ToolContext(run_id="r", workspace=outside)
    await call(tools["write_file"], context, path="secret.txt", content="mine")
    assert (jail.root / "secret.txt").read_text() == "mine"
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"

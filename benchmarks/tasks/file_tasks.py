"""File tasks: count, search and look things up across a folder; answer questions about files."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.tasks.checks import (
    clean_cell,
    failed,
    find_row,
    markdown_rows,
    mentions_count,
    numbers_in,
    passed,
    read_text,
    write_csv,
    write_files,
)
from benchmarks.tasks.task import Task, Verdict

# -- count lines and words of several files ---------------------------------------------------
TEXTS = {
    "alpha": (
        "The river runs past the old mill\nand the mill wheel turns all day\nchildren count the boats that pass\n"
    ),
    "beta": (
        "Rain again today\n"
        "we stayed inside and read\n"
        "the kettle sang twice\n"
        "nobody answered the phone\n"
        "by evening the sky was clear\n"
    ),
    "gamma": "One long line with exactly twelve words in it and it stops\n",
}


def text_counts() -> dict[str, tuple[int, int]]:
    """Lines and words of each text (what ``wc -l`` and ``wc -w`` say)."""
    return {name: (text.count("\n"), len(text.split())) for name, text in TEXTS.items()}


def setup_texts(workspace: Path) -> None:
    """Write texts/*.txt."""
    write_files(workspace, {f"texts/{name}.txt": text for name, text in TEXTS.items()})


def check_counts(workspace: Path, output: str) -> Verdict:
    """counts.md has a row per file with its lines and words, and a total row."""
    text = read_text(workspace, "counts.md")
    if text is None:
        return failed("counts.md is missing")
    rows = markdown_rows(text)
    if not rows:
        return failed("counts.md has no markdown table")
    counts = text_counts()
    total = (sum(lines for lines, _ in counts.values()), sum(words for _, words in counts.values()))
    labels: dict[str, tuple[str, ...]] = {
        name: (f"{name}.txt", name, f"texts/{name}.txt", f"./texts/{name}.txt") for name in counts
    }
    labels["total"] = ("total", "totals", "sum", "all", "all files")
    for name, (lines, words) in {**counts, "total": total}.items():
        row = find_row(rows, *labels[name])
        if row is None:
            return failed(f"no row for {name}")
        values = {n.value for cell in row if clean_cell(cell) not in labels[name] for n in numbers_in(cell)}
        if lines not in values or words not in values:
            return failed(f"{name}: expected {lines} lines and {words} words, row is {' | '.join(row)}")
    return passed()


# -- find the files that contain a word -------------------------------------------------------
TODO_TREE = {
    "src/app/main.py": "def main():\n    # TODO: read the port from the config\n    return 8000\n",
    "src/app/utils.py": "def clamp(value, low, high):\n    return max(low, min(value, high))\n",
    "src/app/db/__init__.py": "",
    "src/app/db/models.py": 'class User:\n    """A user."""\n\n    name = ""  # TODO add email\n',
    "src/web/views.py": "def index():\n    return 'home'\n",
    "src/web/templates/index.html": "<html>\n<!-- TODO: add the footer -->\n<body></body>\n</html>\n",
    "src/web/static/style.css": "body { margin: 0; }\n",
    "README.md": "# Demo\n\nTODO: write the docs.\n",
}
TODO_FILES = {"src/app/main.py", "src/app/db/models.py", "src/web/templates/index.html"}


def setup_todo_tree(workspace: Path) -> None:
    """Write a small source tree, some files with TODO and one outside src/."""
    write_files(workspace, TODO_TREE)


def _listed_path(line: str) -> str:
    """A listed path as ``src/...``: bullets, quotes, ``./``, ``:line`` suffixes and prefixes dropped."""
    path = re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", line).strip().strip("`'\"").strip()
    path = re.sub(r":\d+.*$", "", path).removeprefix("./")
    if "src/" in path:
        return path[path.index("src/") :]
    return path if path.startswith("src") else f"src/{path}"


def check_todo_list(workspace: Path, output: str) -> Verdict:
    """todo_files.txt lists exactly the files under src/ that contain TODO."""
    text = read_text(workspace, "todo_files.txt")
    if text is None:
        return failed("todo_files.txt is missing")
    # Lines that cannot be paths (a heading such as "Files with TODO:") are not counted.
    lines = [line for line in text.splitlines() if "/" in line or "." in line]
    listed = {_listed_path(line) for line in lines}
    if listed != TODO_FILES:
        return failed(f"missing {sorted(TODO_FILES - listed)}, unexpected {sorted(listed - TODO_FILES)}")
    return passed()


# -- answer a question from a data file -------------------------------------------------------
INVENTORY = (
    ("bolts", 140, "A1"),
    ("nuts", 8, "A1"),
    ("washers", 55, "A2"),
    ("hinges", 3, "B1"),
    ("screws", 230, "A2"),
    ("brackets", 9, "B2"),
    ("pulleys", 12, "C1"),
    ("springs", 0, "C1"),
    ("gears", 10, "C2"),
    ("chains", 6, "C2"),
    ("clamps", 31, "B1"),
    ("rivets", 75, "A3"),
    ("pins", 4, "A3"),
    ("magnets", 7, "B2"),
)
LOW_STOCK = sum(1 for _, quantity, _ in INVENTORY if quantity < 10)


def setup_inventory(workspace: Path) -> None:
    """Write inventory.csv."""
    write_csv(workspace / "inventory.csv", ("item", "quantity", "location"), INVENTORY)


def check_low_stock_answer(workspace: Path, output: str) -> Verdict:
    """The answer states the count of items under 10 units, and no other number but the 10."""
    if not mentions_count(output, LOW_STOCK):
        return failed(f"the answer does not say {LOW_STOCK}: {output[:120]!r}")
    others = {n.value for n in numbers_in(output)} - {LOW_STOCK, 10}
    if others:
        return failed(f"the answer also gives {sorted(others)}: {output[:120]!r}")
    return passed()


# -- find a setting in a folder of config files -----------------------------------------------
CONFIG_FILES = {
    "config/app.toml": '[app]\nname = "orders"\nlog_level = "info"\n',
    "config/servers.ini": (
        "[production]\nhost = orders.example.com\nport = 8443\n\n"
        "[staging]\nhost = staging.orders.example.com\nport = 9090\n\n"
        "[development]\nhost = localhost\nport = 5000\n"
    ),
    "config/README.md": "Server settings are in servers.ini; application settings in app.toml.\n",
}


def setup_config(workspace: Path) -> None:
    """Write config/ with the server settings in one of its files."""
    write_files(workspace, CONFIG_FILES)


def check_port_answer(workspace: Path, output: str) -> Verdict:
    """The answer gives the staging port and not the others."""
    values = {n.value for n in numbers_in(output)}
    if 9090 not in values:
        return failed(f"the answer does not give 9090: {output[:120]!r}")
    if values & {8443, 5000}:
        return failed(f"the answer also gives another server's port: {output[:120]!r}")
    return passed()


TASKS = [
    Task(
        name="word_counts",
        prompt=(
            "For each .txt file in the texts folder, count its lines and words, and write counts.md with a table "
            "of file, lines and words. Add a total row at the end."
        ),
        setup=setup_texts,
        check=check_counts,
        kind="files",
        tags=("count", "markdown", "multi-file"),
    ),
    Task(
        name="find_todos",
        prompt=("Find every file under src/ that contains TODO and write their paths to todo_files.txt, one per line."),
        setup=setup_todo_tree,
        check=check_todo_list,
        kind="files",
        tags=("search",),
    ),
    Task(
        name="low_stock_answer",
        prompt="How many items in inventory.csv have fewer than 10 units in stock? Just tell me the number.",
        setup=setup_inventory,
        check=check_low_stock_answer,
        kind="answer",
        tags=("csv", "question"),
    ),
    Task(
        name="staging_port_answer",
        prompt="Which port does the staging server use? The settings are somewhere in the config folder.",
        setup=setup_config,
        check=check_port_answer,
        kind="answer",
        tags=("search", "question"),
    ),
]

"""Code tasks: the README's quick start, fix a bug so a test passes, add a function, rename
across files, lay out a project.

Checkers run the produced code with the interpreter running the benchmark, in a
subprocess with a timeout, and use hidden cases of their own so a hard-coded answer fails.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from benchmarks.tasks.checks import failed, last_line, passed, read_text, run_python, squash, write_files
from benchmarks.tasks.task import Task, Verdict

# -- fix a bug so the test passes -------------------------------------------------------------
STATS_MODULE = '''\
"""Small statistics helpers for the shop's reports."""


def mean(values):
    """The arithmetic mean of ``values``."""
    if not values:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values):
    """The middle value of ``values``; for an even count, the mean of the two middle values."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle] + ordered[middle + 1]) / 2
'''

STATS_TEST = """\
import unittest

from stats import mean, median


class StatsTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_odd(self):
        self.assertEqual(median([7, 1, 3]), 3)

    def test_median_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_median_empty(self):
        with self.assertRaises(ValueError):
            median([])


if __name__ == "__main__":
    unittest.main()
"""

# Cases the test file does not show, so a fix that special-cases the test's data fails.
STATS_HIDDEN = """\
from stats import median
assert median([10, 40]) == 25, median([10, 40])
assert median([9, 2, 7, 4, 5, 1]) == 4.5, median([9, 2, 7, 4, 5, 1])
assert median([5]) == 5
assert median([3, 1, 2]) == 2
"""


def setup_stats(workspace: Path) -> None:
    """Write stats.py (with the bug) and test_stats.py."""
    write_files(workspace, {"stats.py": STATS_MODULE, "test_stats.py": STATS_TEST})


def check_stats_fixed(workspace: Path, output: str) -> Verdict:
    """The test passes unchanged, and so do hidden cases."""
    if read_text(workspace, "test_stats.py") != STATS_TEST:
        return failed("test_stats.py was changed or removed")
    code, text = run_python(workspace, ["-m", "unittest", "test_stats"])
    if code != 0:
        return failed(f"the tests still fail: {last_line(text)}")
    code, text = run_python(workspace, ["-c", STATS_HIDDEN])
    if code != 0:
        return failed(f"median is still wrong on other inputs: {last_line(text)}")
    return passed()


# -- add a function ---------------------------------------------------------------------------
TEXTUTILS_MODULE = '''\
"""Text helpers for the blog."""


def word_count(text: str) -> int:
    """The number of words in ``text``."""
    return len(text.split())


def title_case(text: str) -> str:
    """``text`` with the first letter of every word in upper case."""
    return " ".join(word[:1].upper() + word[1:] for word in text.split())
'''

SLUGIFY_HIDDEN = """\
import inspect
import textutils

cases = {
    "Hello, World!": "hello-world",
    "  Python 3.11 -- what's new?  ": "python-3-11-what-s-new",
    "already-a-slug": "already-a-slug",
    "ABC": "abc",
    "--Top 10 Tips--": "top-10-tips",
    "one___two": "one-two",
}
for title, slug in cases.items():
    got = textutils.slugify(title)
    assert got == slug, f"slugify({title!r}) returned {got!r}, expected {slug!r}"
assert list(inspect.signature(textutils.slugify).parameters) == ["title"], "the parameter must be named title"
assert textutils.word_count("a b c") == 3, "word_count changed"
assert textutils.title_case("hello there") == "Hello There", "title_case changed"
"""


def setup_textutils(workspace: Path) -> None:
    """Write textutils.py."""
    write_files(workspace, {"textutils.py": TEXTUTILS_MODULE})


def check_slugify(workspace: Path, output: str) -> Verdict:
    """slugify works on cases the prompt did not show; the old functions still work."""
    if read_text(workspace, "textutils.py") is None:
        return failed("textutils.py is missing")
    code, text = run_python(workspace, ["-c", SLUGIFY_HIDDEN])
    if code != 0:
        return failed(last_line(text))
    return passed()


# -- rename a function across files -----------------------------------------------------------
RENAME_FILES = {
    "shop/__init__.py": '"""A tiny shop."""\n',
    "shop/pricing.py": '''\
"""Prices and totals."""

TAX_RATE = 0.2


def calc_tot(items):
    """The total price of ``items`` (pairs of unit price and quantity), tax included."""
    net = sum(price * quantity for price, quantity in items)
    return round(net * (1 + TAX_RATE), 2)
''',
    "shop/cart.py": '''\
"""A shopping cart."""

from shop.pricing import calc_tot


class Cart:
    """Items a customer is about to buy."""

    def __init__(self):
        self.items = []

    def add(self, price, quantity=1):
        self.items.append((price, quantity))

    def total(self):
        return calc_tot(self.items)
''',
    "main.py": """\
from shop import pricing
from shop.cart import Cart

cart = Cart()
cart.add(2.5, 4)
cart.add(10.0)
print("cart total:", cart.total())
print("single item:", pricing.calc_tot([(3.0, 1)]))
""",
}
RENAME_EXPECTED_OUTPUT = "cart total: 24.0\nsingle item: 3.6"


def setup_rename_function(workspace: Path) -> None:
    """Write the shop package and main.py."""
    write_files(workspace, RENAME_FILES)


def check_rename_function(workspace: Path, output: str) -> Verdict:
    """No ``calc_tot`` is left, ``compute_total`` is defined, and main.py prints what it did."""
    for name in RENAME_FILES:
        text = read_text(workspace, name)
        if text is None:
            return failed(f"{name} is missing")
        if re.search(r"\bcalc_tot\b", text):
            return failed(f"{name} still uses calc_tot")
    if not re.search(r"^def compute_total\(", read_text(workspace, "shop/pricing.py") or "", re.MULTILINE):
        return failed("shop/pricing.py does not define compute_total")
    code, text = run_python(workspace, ["main.py"])
    if code != 0 or text != RENAME_EXPECTED_OUTPUT:
        return failed(f"python main.py now prints {text[-200:]!r}")
    return passed()


# -- lay out a new project --------------------------------------------------------------------
def setup_empty(workspace: Path) -> None:
    """Nothing: the task starts from an empty folder."""


def check_squares(workspace: Path, output: str) -> Verdict:
    """squares.py prints the ten squares, one per line, and squares.txt holds what it prints."""
    expected = [str(n * n) for n in range(1, 11)]
    code, text = run_python(workspace, ["squares.py"])
    if code != 0 or text.split() != expected:
        return failed(f"python squares.py printed {squash(text)[:120]!r} (exit {code})")
    saved = read_text(workspace, "squares.txt")
    if saved is None:
        return failed("squares.txt is missing")
    if saved.split() != expected or len(saved.strip().splitlines()) != 10:
        return failed(f"squares.txt holds {squash(saved)[:120]!r}, not the ten squares one per line")
    return passed()


def check_project_layout(workspace: Path, output: str) -> Verdict:
    """The package, its CLI, a test, a README and a pyproject.toml with name and version."""
    for name in ("weather/__init__.py", "weather/cli.py", "README.md", "pyproject.toml"):
        if not (workspace / name).is_file():
            return failed(f"{name} is missing")
    if not (read_text(workspace, "README.md") or "").strip():
        return failed("README.md is empty")
    try:
        meta = tomllib.loads(read_text(workspace, "pyproject.toml") or "")
    except tomllib.TOMLDecodeError as exc:
        return failed(f"pyproject.toml is not valid TOML: {exc}")
    tool = meta.get("tool")
    project = meta.get("project") or (tool.get("poetry") if isinstance(tool, dict) else None)
    if not isinstance(project, dict):
        return failed("pyproject.toml has no [project] table")
    if str(project.get("name", "")).lower() != "weather" or str(project.get("version", "")) != "0.1.0":
        return failed(f"pyproject.toml names {project.get('name')!r} version {project.get('version')!r}")
    files = [*(workspace / "tests").glob("test*.py"), *(workspace / "tests").glob("*_test.py")]  # pytest finds both
    tests = [path for path in files if "main" in path.read_text(errors="replace")]
    if not tests:
        return failed("tests/ has no test file that tests main()")
    code, text = run_python(workspace, ["-c", "from weather.cli import main; main()"])
    if code != 0 or "Weather CLI ready" not in text:
        return failed(f"main() printed {last_line(text)!r}")
    return passed()


TASKS = [
    Task(
        name="squares_script",
        prompt=(
            "Write squares.py that prints the squares of the numbers 1 to 10, one per line, run it, "
            "and save what it prints to squares.txt"
        ),
        setup=setup_empty,
        check=check_squares,
        kind="code",
        tags=("script", "quick-start"),
    ),
    Task(
        name="fix_failing_test",
        prompt=(
            "The tests in test_stats.py fail. Find the bug in stats.py and fix it so that "
            "`python -m unittest test_stats` passes. Don't change the tests."
        ),
        setup=setup_stats,
        check=check_stats_fixed,
        kind="code",
        tags=("bugfix", "test"),
    ),
    Task(
        name="add_function",
        prompt=(
            "Add a function `slugify(title: str) -> str` to textutils.py that turns a title into a URL slug: "
            "lowercase, every run of characters that are not letters or digits becomes a single hyphen, and no "
            'hyphen at the start or the end. For example, slugify("Hello, World!") returns "hello-world". '
            "Keep the existing functions as they are."
        ),
        setup=setup_textutils,
        check=check_slugify,
        kind="code",
        tags=("feature",),
    ),
    Task(
        name="rename_function",
        prompt=(
            "Rename the function calc_tot to compute_total everywhere in this project: its definition and every "
            "place that uses it. `python main.py` must still work and print the same as before."
        ),
        setup=setup_rename_function,
        check=check_rename_function,
        kind="code",
        tags=("refactor", "multi-file"),
    ),
    Task(
        name="project_layout",
        prompt=(
            "Set up a new Python project called weather in this folder: a package folder weather with __init__.py "
            'and cli.py, where cli.py has a main() function that prints "Weather CLI ready"; a tests folder with '
            "a test for main(); a README.md that says what the project is; and a pyproject.toml with the project "
            "name and version 0.1.0."
        ),
        setup=setup_empty,
        check=check_project_layout,
        kind="code",
        tags=("scaffold", "multi-file"),
    ),
]

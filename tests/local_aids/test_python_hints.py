"""The python tool's notes that need the workspace: test runs that found no tests."""

from __future__ import annotations

from pathlib import Path

from pymanus.local_aids.python_hints import no_tests_note

NO_TESTS = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n"


def test_no_tests_note_names_every_test_module(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_cli.py").write_text("")
    (tmp_path / "weather_test.py").write_text("")
    (tmp_path / "weather.py").write_text("")
    note = no_tests_note(NO_TESTS, tmp_path)
    assert note is not None and note.endswith(
        "Run those with unittest.main(module='tests.test_cli', exit=False) (each of tests.test_cli, weather_test)."
    )
    assert no_tests_note(NO_TESTS.replace("Ran 0 tests", "Ran 3 tests"), tmp_path) is None


def test_no_tests_note_without_test_files_says_what_unittest_collects(tmp_path: Path) -> None:
    (tmp_path / "stats.py").write_text("")
    assert no_tests_note(NO_TESTS, tmp_path) == (
        "unittest ran 0 tests, so nothing was tested: it collects unittest.TestCase classes with test_* "
        "methods, and found none."
    )

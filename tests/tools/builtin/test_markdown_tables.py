"""Markdown tables a model wrote: the mistakes that leave one unreadable, named or mended."""

from __future__ import annotations

import pytest

from pymanus.tools.builtin.markdown_tables import check_tables, drop_header_row, mend_tables

TO_MARKDOWN = "| region   |   total |\n|:---------|--------:|\n| East     |    4.5 |\n| North    |      3 |"


@pytest.mark.parametrize(
    "written",
    [
        f"## Totals\n| Region | Total |\n|---|---|\n{TO_MARKDOWN}\n\nDone.",
        f"## Totals\n| Region | Total |\n|---|---|\n\n{TO_MARKDOWN}\n\nDone.",
        f"## Totals\n| Region |\n|---|\n{TO_MARKDOWN}\n\nDone.",  # another number of cells: still no table
    ],
)
def test_a_header_written_above_the_tables_own_is_dropped(written: str) -> None:
    # sales_report runs 104 and 105: a header by hand, then DataFrame.to_markdown()'s table.
    assert mend_tables(written) == (
        f"## Totals\n{TO_MARKDOWN}\n\nDone.",
        ["the header row written above the table's own header was removed"],
    )


def test_tables_that_need_no_mending_are_left_alone() -> None:
    assert mend_tables(f"## Totals\n{TO_MARKDOWN}\n") is None
    assert mend_tables(f"{TO_MARKDOWN}\n\nAnd by city:\n\n{TO_MARKDOWN}\n") is None  # two tables with rows


def test_a_table_whose_first_row_repeats_its_header_is_named_where_it_is_not_mended() -> None:
    # An edit_file result is checked as written: the warning names the row.
    with pytest.raises(ValueError, match=r"the table at line 1 repeats its header as its first row \(line 3\)"):
        check_tables("| file | lines |\n|---|---|\n| File | lines |\n| a.txt | 3 |\n")


@pytest.mark.parametrize(
    ("text", "mended"),
    [
        ("| a | b |\n|---|---|\n| A | B |\n| 1 | 2 |\n", "| a | b |\n|---|---|\n| 1 | 2 |\n"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n| a | b |\n", None),  # a later row is left to the model
        ("| a | b |\n|---|---|\n| a | c |\n", None),
        (
            "Intro\n\n| a |\n|---|\n| a |\n| 1 |\n\n| b |\n|---|\n| b |\n",
            "Intro\n\n| a |\n|---|\n| 1 |\n\n| b |\n|---|\n",
        ),
    ],
)
def test_only_a_first_row_equal_to_the_header_is_dropped(text: str, mended: str | None) -> None:
    assert drop_header_row(text) == mended


# status_summary run 232: a |---| line after the last row, which the check read as the header of a
# table with no rows ("the table at line 5 has a header and no rows"), naming a row as its header.
@pytest.mark.parametrize(
    ("text", "mended"),
    [
        (
            "| Team | Progress |\n|---|---|\n| Atlas | 72% |\n| Comet | 90% |\n|---|---|",
            "| Team | Progress |\n|---|---|\n| Atlas | 72% |\n| Comet | 90% |",
        ),
        (
            "| a |\n|---|\n| 1 |\n|---|\n\nText.\n| b |\n|---|\n| 2 |\n|---|\n",
            "| a |\n|---|\n| 1 |\n\nText.\n| b |\n|---|\n| 2 |\n",
        ),
    ],
)
def test_a_rule_line_closing_a_table_is_dropped(text: str, mended: str) -> None:
    assert mend_tables(text) == (mended, ["the |---| line after the table's last row was removed"])
    check_tables(mended)


def test_a_rule_line_between_rows_is_no_closing_one() -> None:
    # Two tables with no empty line between them: the second header is the model's to fix.
    stacked = "| a |\n|---|\n| 1 |\n| b |\n|---|\n| 2 |\n"
    assert mend_tables(stacked) is None
    with pytest.raises(ValueError, match="has a second header at line 4"):
        check_tables(stacked)

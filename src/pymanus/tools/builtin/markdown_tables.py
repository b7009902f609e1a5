"""Markdown tables: reading them, what makes one unreadable, and mending the four mistakes that do.

A table a model computed is worth little if it does not render: a header with no rows, two
headers, empty lines between rows. :func:`check_tables` names the problem (a warning on the
written file); :func:`mend_tables` repairs the four mistakes with one reading only, and
:func:`mend_table_files` does so in the files code wrote, through the workspace's jail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pymanus.errors import PathEscapeError
from pymanus.sandbox import PathJail

TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
"""The line under a Markdown table's header: ``|---|:---:|``."""


def check_tables(text: str) -> None:
    """Raise ValueError for a Markdown table of a header row and no rows under it, or of two headers.

    Two headers come from a header written by hand above ``DataFrame.to_markdown()``'s own, or
    from a list of rows that starts with the column names (``[['file', 'lines'], ...]``) made
    into a DataFrame: its first row repeats the header.
    """
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if TABLE_RULE.match(line) and "|" in line:
            below = lines[number] if number < len(lines) else ""
            if (blank := _blank_inside_table(lines, number)) is not None:
                raise ValueError(
                    f"the table at line {number - 1} is cut by the empty line {blank}, and a table ends at an empty "
                    "line: write its rows one after another with no empty line between them (rows that already "
                    "end in \\n are joined with '', not '\\n')"
                )
            if "|" not in below:
                raise ValueError(
                    f"the table at line {number - 1} has a header and no rows: write the whole table at once, "
                    "with a row for each item (from python when the values are computed)"
                )
            if _repeats_header(lines[number - 2], below):
                raise ValueError(
                    f"the table at line {number - 1} repeats its header as its first row (line {number + 1}): "
                    "the rows it was made from start with the header; make the table from the data rows only "
                    "(pd.DataFrame(rows, columns=[...]) with rows that hold values)"
                )
            if number >= 3 and "|" in lines[number - 3]:
                start = next(n for n in range(number - 2, 0, -1) if n == 1 or "|" not in lines[n - 2])
                raise ValueError(
                    f"the table at line {start} has a second header at line {number - 1}: a table has one "
                    "header row, then its data rows. DataFrame.to_markdown(index=False) writes the whole table, "
                    "its header and |---| line included, so write no header of your own before it"
                )


def _repeats_header(header: str, row: str) -> bool:
    """Whether table row ``row`` has the cells of ``header``, case aside (``File`` under ``file``)."""
    return [cell.lower() for cell in table_cells(row)] == [cell.lower() for cell in table_cells(header)]


def table_cells(row: str) -> list[str]:
    """The cells of a Markdown table row, stripped."""
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def markdown_table(text: str) -> tuple[list[str], list[list[str]]] | None:
    """The header and rows of the first Markdown table in ``text`` (``None``: it has none)."""
    lines = text.splitlines()
    for number, line in enumerate(lines[1:], start=1):
        if TABLE_RULE.match(line) and "|" in line and "|" in lines[number - 1]:
            rows = []
            for row in lines[number + 1 :]:
                if "|" not in row:
                    break
                rows.append(table_cells(row))
            return table_cells(lines[number - 1]), rows
    return None


def mend_tables(text: str) -> tuple[str, list[str]] | None:
    """``text`` with its Markdown tables mended, and what was mended, in words (None: nothing was).

    Four mistakes that leave a table a model computed unreadable, with one reading only: a header
    written by hand above the one ``DataFrame.to_markdown()`` writes (sales_report, runs 104 and
    105), a first row that repeats the header (:func:`drop_header_row`), empty lines between
    rows (:func:`close_table_gaps`), and a ``|---|`` line after the last row (:func:`drop_closing_rule`).
    """
    fixes = []
    if (ended := drop_closing_rule(text)) is not None:  # first: its rule would read as a second header's
        text = ended
        fixes.append("the |---| line after the table's last row was removed")
    if (single := drop_hand_header(text)) is not None:
        text = single
        fixes.append("the header row written above the table's own header was removed")
    if (headed := drop_header_row(text)) is not None:
        text = headed
        fixes.append("the first row, a copy of the header, was removed")
    if (closed := close_table_gaps(text)) is not None:
        text = closed
        fixes.append("the empty lines between its table rows were removed")
    return (text, fixes) if fixes else None


def drop_closing_rule(text: str) -> str | None:
    """``text`` without the ``|---|`` lines that close a table under its last row (None: none do).

    status_summary run 232: the 1.5B ended its table with the rule line it began it with; read as
    the header of a table with no rows, it made the warning name the last row as a header.
    """
    lines = text.split("\n")
    kept: list[str] = []
    in_rows = False  # reading the rows under a table's |---| line
    for number, line in enumerate(lines):
        below = lines[number + 1] if number + 1 < len(lines) else ""
        if in_rows and _is_rule(line) and "|" not in below and not _is_rule(kept[-1]):
            continue
        in_rows = (in_rows or (_is_rule(line) and bool(kept) and "|" in kept[-1])) and "|" in line
        kept.append(line)
    return "\n".join(kept) if len(kept) < len(lines) else None


def drop_hand_header(text: str) -> str | None:
    """``text`` without a table header and ``|---|`` line followed, after nothing but empty lines, by
    another header and ``|---|`` line (None: it has none). A header with no rows is no table; the rows
    below are the second header's (``to_markdown()`` with the index has a column more)."""
    lines = text.split("\n")
    changed = False
    number = 0
    while number + 1 < len(lines):
        if "|" in lines[number] and _is_rule(lines[number + 1]):
            after = next((n for n in range(number + 2, len(lines)) if lines[n].strip()), None)
            if after is not None and after + 1 < len(lines) and "|" in lines[after] and _is_rule(lines[after + 1]):
                del lines[number:after]
                changed = True
                continue
        number += 1
    return "\n".join(lines) if changed else None


def drop_header_row(text: str) -> str | None:
    """``text`` without the first row of each table whose cells are its header's (None: no table has one).

    ``pd.DataFrame([['Region', 'Total'], ['South', 4865.83], ...], columns=['Region', 'Total'])``
    makes the column names a row too. Told so in a warning, the 1.5B wrote the same rows again
    (sales_report, run 220); a row that names the columns is never one of the values.
    """
    lines = text.split("\n")
    changed = False
    for number in range(len(lines) - 2, 0, -1):
        row = lines[number + 1]
        if (
            _is_rule(lines[number])
            and "|" in lines[number - 1]
            and "|" in row
            and _repeats_header(lines[number - 1], row)
        ):
            del lines[number + 1]
            changed = True
    return "\n".join(lines) if changed else None


def _is_rule(line: str) -> bool:
    return bool(TABLE_RULE.match(line)) and "|" in line


def close_table_gaps(text: str) -> str | None:
    """``text`` without the empty lines that cut its Markdown tables between two rows (None: none do).

    ``'\\n'.join(rows)`` of rows that already end in a line break leaves an empty line between every
    two rows; a table ends at the first, so the rows after it are no table: word_counts' counts.md
    came out as a header alone over and over. A gap under the header row is closed when the ``|---|``
    line after it has the header's number of cells; a gap under the ``|---|`` line or a row, when the
    line after it is a row with that number of cells and is not the header of another table.
    """
    lines = text.split("\n")
    kept: list[str] = []
    cells = 0  # the number of cells of the table being read; 0 outside tables
    changed = False
    for number, line in enumerate(lines):
        if _is_rule(line):
            header = len(kept)
            while header and not kept[header - 1].strip():
                header -= 1
            if header and "|" in kept[header - 1] and len(table_cells(kept[header - 1])) == len(table_cells(line)):
                changed = changed or header < len(kept)
                del kept[header:]  # the header's own line break ended in another one
                cells = len(table_cells(line))
        elif cells and not line.strip():
            after = next((n for n in range(number + 1, len(lines)) if lines[n].strip()), None)
            row = lines[after] if after is not None else ""
            later = lines[after + 1] if after is not None and after + 1 < len(lines) else ""
            if row.lstrip().startswith("|") and len(table_cells(row)) == cells and not TABLE_RULE.match(later):
                changed = True
                continue
            cells = 0
        elif "|" not in line:
            cells = 0
        kept.append(line)
    return "\n".join(kept) if changed else None


def _blank_inside_table(lines: list[str], rule: int) -> int | None:
    """The number of the first empty line between rows of the table whose ``|---|`` is line ``rule``.

    ``'\\n'.join(rows)`` of rows that each end in a line break leaves one between every two rows.
    """
    number = rule + 1
    while number <= len(lines) and "|" in lines[number - 1]:
        number += 1
    follows = lines[number] if number < len(lines) else ""
    after = lines[number + 1] if number + 1 < len(lines) else ""
    cut = number <= len(lines) and not lines[number - 1].strip()
    if cut and follows.lstrip().startswith("|") and not TABLE_RULE.match(after):
        return number  # an empty line, then a row that is not the header of another table
    return None


MAX_MENDED_BYTES = 1_000_000
"""Markdown files larger than this are left as the code wrote them (a report, not a data dump, is mended)."""


def mend_table_files(jail: PathJail, names: Iterable[str]) -> dict[str, list[str]]:
    """Mend the tables of the Markdown files ``names`` (:func:`mend_tables`): what was mended, by file.

    Reads and writes go through ``jail``: a link the code made out of the workspace is left alone.
    """
    mended = {}
    for name in names:
        if not name.lower().endswith(".md"):
            continue
        try:
            reader, _ = jail.open_read(name)
            with reader:
                data = reader.read(MAX_MENDED_BYTES + 1)
            if len(data) > MAX_MENDED_BYTES or (mending := mend_tables(data.decode("utf-8"))) is None:
                continue
            writer, _, _ = jail.open_write(name)
            with writer:
                writer.write(mending[0].encode("utf-8"))
        except (OSError, UnicodeDecodeError, PathEscapeError):
            continue  # a link out of the workspace, or not text: left as the code wrote it
        mended[name] = mending[1]
    return mended

"""Checks of the tables and lists a run wrote against the task: the table and columns it asks for,
cells left empty, one item per line, files from the folder the task names.

Small models merge two CSV files with a left join (a row of empty cells for a customer
with no order), keep pandas' column order instead of the one the task lists, or add an
index column, and call the result done: the rows were in front of them, but they did not
hold them against the task; or they write a Markdown report of loose lines when the
task asks for a table, or a table of totals without the regions they belong to; or they
print a list on one line (``1.0 4.0 9.0``) into a file the task wants one item per line,
or list files outside the folder the task names.
:func:`table_problems` names these when a final answer is given
(:func:`pymanus.agent.manus.missing_outputs`), for every model.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path

from pymanus.agent.progress import input_files, read_head, written_files
from pymanus.agent.saved_output import saved_output
from pymanus.agent.task_scope import FILE_NAME, locate, scoped_folder
from pymanus.sandbox.streams import fit
from pymanus.tools.builtin.markdown_tables import markdown_table
from pymanus.tools.builtin.workspace_scan import empty_cells, is_file
from pymanus.tools.tool import ToolContext

_NAME = r"(?!and\b)[`'\"]?[A-Za-z_][\w-]*[`'\"]?"
# "the columns order_id, customer_id, name", "columns: player and score"
_COLUMNS = re.compile(rf"\bcolumns\s*:?\s*({_NAME}(?:\s*,\s*{_NAME})*(?:\s*,?\s+and\s+{_NAME})?)")
_TABLE = re.compile(r"\btable\b", re.IGNORECASE)
# "a table of regions and totals", "a table of file, lines and words"
_TABLE_OF = re.compile(
    r"\btable (?:of|with) ((?:[\w ]+?)(?:\s*,\s*[\w ]+?)*\s+and\s+[\w ]+?)"  # items, the last after "and"
    r"(?=[.;:!?]|,? (?:then|to|in|for|sorted|ordered)\b|$)"  # up to the end of the phrase
)
_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
_NOT_A_COLUMN = {"a", "an", "the", "its", "their", "each", "every", "all", "of", "for", "with", "in", "from"}
_TABLES = (".csv", ".tsv", ".md")
# "one per line", "one path a line", "each on its own line"
_ONE_PER_LINE = re.compile(r"\bone(?:\s+\w+)?\s+(?:per|a|each)\s+line\b|\beach\s+on\s+(?:its|a)\s+own\s+line\b", re.I)
_LISTS = (".txt", ".md", ".csv", ".log")
_LIST_SEPARATOR = re.compile(r"\s*[,;]\s*|\s+")
# A number, a path or a quoted string: items of a list, not words of a sentence.
_LIST_ITEM = re.compile(r"-?\d+(?:\.\d+)?|[\w.-]*[/.][\w./-]+|'[^']*'|\"[^\"]*\"")
# "Add a total row at the end", "with a totals row", "a row for the total"
_TOTAL_ROW = re.compile(r"\btotals? (?:row|line)\b|\brow (?:for|of|with) (?:the )?totals?\b", re.IGNORECASE)
# "with one row per order", "one line for each customer"
_ROW_PER = re.compile(r"\bone (?:row|line) (?:per|for each|for every) (\w+)", re.IGNORECASE)
_HTML_TABLE = re.compile(r"<table\b", re.IGNORECASE)
_TOTAL_CELL = re.compile(r"\btotals?\b|\bsum\b", re.IGNORECASE)
_NUMBER_CELL = re.compile(r"-?\d+(?:\.(\d+))?")
_INPUTS_READ = 50
"""Input CSV files read to learn whether the inputs have empty cells."""


def table_problems(task: str, context: ToolContext) -> list[str]:
    """What is wrong with the tables the run wrote: no table, other columns than the task lists, empty cells."""
    workspace = Path(context.workspace)
    written = written_files(context)
    problems = []
    empty = _empty_cell_problems(task, workspace, written, input_files(context, written))
    requested = requested_columns(task)
    path = _written_path(workspace, requested[0], written) if requested is not None else None
    header = table_header(path) if path is not None else None
    # A merge line to run that also selects the columns says it all: one fix, not two notes.
    selected = requested is not None and any(f"[{requested[1]!r}]" in problem for problem in empty)
    if requested is not None and header is not None and list(map(_key, header)) != list(map(_key, requested[1])):
        name, columns = requested
        order = " in this order" if sorted(map(_key, header)) == sorted(map(_key, columns)) else ""
        problems += (
            []
            if selected
            else [
                f"{name} has the columns {', '.join(header)}, but the task asks for the columns {', '.join(columns)}"
                f"{order} (with pandas, select them: df[{columns!r}])"
            ]
        )
    markdown = requested_markdown_table(task)
    path = _written_path(workspace, markdown, written) if markdown is not None else None
    header = table_header(path) if path is not None else None
    if path is not None and header is None:
        # sales_report run 211: to_markdown('report.md', tablefmt='html'), then header=True for a Markdown one
        html = " (it holds an HTML <table>: with pandas, to_markdown without tablefmt writes Markdown)"
        problems.append(
            f"{markdown} has no Markdown table{html if _HTML_TABLE.search(read_head(path)) else ''}, and the task "
            "asks for one: a header row, a |---|---| line, then one row per item, like | North | 12.50 |"
        )
    items = table_items(task)
    if header is not None and len(items) > len(header):
        problems.append(
            f"{markdown}'s table has {len(header)} column{'s' * (len(header) != 1)} ({', '.join(header)}), but "
            f"the task asks for a table of {' and '.join(items)}: one column each (pandas drops the index, the row "
            "labels, of a Series or DataFrame written with index=False; use "
            "data.reset_index().to_markdown(index=False) to keep them as a column)"
        )
    problems.extend(empty)
    if not empty:  # the empty cells' note already gives the merge that makes one row per row
        problems.extend(_rows_per_item_problems(task, workspace, written, input_files(context, written)))
    problems.extend(_total_row_problems(task, workspace, written))
    problems.extend(_one_line_lists(task, workspace, written))
    problems.extend(_paths_out_of_scope(task, workspace, written))
    return problems


def _total_row_problems(task: str, workspace: Path, written: Sequence[str]) -> list[str]:
    """A table the task asks a total row of that has none, or whose total row is not the sum of the rows above.

    word_counts: the 1.5B's table of file, lines and words had no total row ("Add a total row at
    the end"), and its answer said the counts were right.
    """
    match = _TOTAL_ROW.search(task)
    name = _file_near(task, match.start(), _TABLES) if match else None
    path = _written_path(workspace, name, written) if name is not None else None
    table = read_table(path) if path is not None else None
    if name is None or table is None:
        return []
    header, rows = table
    totals = [row for row in rows if any(_TOTAL_CELL.search(cell) and not _number(cell) for cell in row)]
    if not totals:
        # word_counts: pandas' df.sum() gave the last row every column's sum, and the file names joined
        # into one string ('texts/alpha.txttexts/beta.txt...') where Total belongs.
        if len(rows) > 2 and (summed := _sums(header, rows[-1], rows[:-1])) and not any(summed.values()):
            label = rows[-1][0].strip() if rows[-1] else ""
            return [
                f"{name}'s last row sums the rows above, but its first cell is {fit(label, 60)!r}, not Total: "
                "write Total in that cell (a sum of text columns joins their text)"
            ]
        return [
            f"{name}'s table has no total row, and the task asks for one: add a last row with Total in its first "
            "column and the sum of each column of numbers (compute the sums with python)"
        ]
    total, above = totals[-1], rows[: rows.index(totals[-1])]
    wrong = [problem for problem in _sums(header, total, above).values() if problem]
    if wrong:
        return [f"{name}'s total row gives {'; '.join(wrong)}: compute the totals with python from the same values"]
    return []


def _sums(header: Sequence[str], total: Sequence[str], above: Sequence[Sequence[str]]) -> dict[str, str]:
    """For each column of numbers in ``above`` that ``total`` has a number in: "" when it is their sum,
    else what is wrong with it."""
    checked = {}
    for index, column in enumerate(header):
        values = [_number(row[index]) if index < len(row) else None for row in above]
        given = _number(total[index]) if index < len(total) else None
        if given is None or not values or None in values:
            continue
        expected = sum(v[0] for v in values if v is not None)
        right = abs(given[0] - expected) <= 0.51 * 10 ** -given[1]  # the total as rounded in the cell
        checked[column] = "" if right else f"{column} {total[index].strip()}, but the rows above sum to {expected:g}"
    return checked


def _number(cell: str) -> tuple[float, int] | None:
    """A table cell's number and its decimals (``"1,234.50"`` → ``(1234.5, 2)``), or ``None``."""
    text = cell.strip().strip("*_`$€£").replace(",", "").strip()
    match = _NUMBER_CELL.fullmatch(text)
    return (float(text), len(match.group(1) or "")) if match else None


def read_table(path: Path) -> tuple[list[str], list[list[str]]] | None:
    """The header and rows of a CSV or TSV file, or of the first Markdown table of a .md file."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        rows = list(csv.reader(read_head(path).splitlines(), delimiter="\t" if suffix == ".tsv" else ","))
        return (rows[0], rows[1:]) if rows else None
    return markdown_table(read_head(path)) if suffix == ".md" else None


def _written_path(workspace: Path, name: str, written: Sequence[str]) -> Path | None:
    """Where the file the task calls ``name`` is, if the run wrote it."""
    path = locate(workspace, name)
    return path if path is not None and path.relative_to(workspace).as_posix() in written else None


def requested_columns(task: str) -> tuple[str, list[str]] | None:
    """The table file the task lists columns for, and the columns: ("merged.csv", ["order_id", ...]).

    The file is the last table file the task names before the list (or else the first after it).
    """
    match = _COLUMNS.search(task)
    if match is None:
        return None
    columns = [name.strip("`'\"") for name in _SEPARATOR.split(match.group(1).strip())]
    if len(columns) < 2 or any(name.lower() in _NOT_A_COLUMN for name in columns):
        return None  # "the columns of the table", "the columns name and the total": not a list of names
    name = _file_near(task, match.start(), _TABLES)
    return (name, columns) if name is not None else None


def requested_markdown_table(task: str) -> str | None:
    """The Markdown file the task asks a table in ("a markdown report to report.md with a table")."""
    match = _TABLE.search(task)
    return _file_near(task, match.start(), (".md",)) if match else None


def table_items(task: str) -> list[str]:
    """What the task says each row of its table holds: "a table of regions and totals" -> [regions, totals]."""
    match = _TABLE_OF.search(task)
    if match is None:
        return []
    items = [item.strip() for item in _SEPARATOR.split(match.group(1)) if item.strip()]
    return items if all(len(item.split()) <= 3 for item in items) else []  # names, not a sentence


def _file_near(task: str, position: int, suffixes: tuple[str, ...]) -> str | None:
    """The last file with one of ``suffixes`` the task names before ``position``, or else the first after it."""
    files = [(m.start(), m.group(1)) for m in FILE_NAME.finditer(task) if m.group(1).lower().endswith(suffixes)]
    before = [name for start, name in files if start < position]
    after = [name for start, name in files if start > position]
    return before[-1] if before else after[0] if after else None


def table_header(path: Path) -> list[str] | None:
    """The column names of a CSV or TSV file, or of the first table of a Markdown file."""
    table = read_table(path)
    return table[0] if table is not None else None


def _one_line_lists(task: str, workspace: Path, written: Sequence[str]) -> list[str]:
    """The file the task wants one item per line, when the run wrote all its items on one line."""
    match = _ONE_PER_LINE.search(task)
    name = _file_near(task, match.start(), _LISTS) if match else None
    path = _written_path(workspace, name, written) if name is not None else None
    if path is None:
        return []
    lines = [line for line in read_head(path).splitlines() if line.strip()]
    items = _LIST_SEPARATOR.split(lines[0].strip(" []()")) if len(lines) == 1 else []
    if len(items) < 2 or not all(_LIST_ITEM.fullmatch(item) for item in items):
        return []  # one item, or a line of words: nothing says it was meant as several
    saved = saved_output(task)
    if saved is not None and saved.file == name:  # the file is the script's output: the script is what to fix
        fix = (
            f"change {saved.script} so it prints each item on its own line (one print per item), then run "
            f"`python {saved.script} > {name}` again"
        )
    else:
        fix = "write each on its own line ('\\n'.join(...) or one print per item)"
    shown = lines[0][:80]
    return [f"{name} holds {len(items)} items on one line ({shown!r}), but the task asks for one per line: {fix}"]


def _paths_out_of_scope(task: str, workspace: Path, written: Sequence[str]) -> list[str]:
    """Lists of workspace files the run wrote that name files outside the folder the task is about,
    or the list itself (the 1.5B walked '.' for "every file under src/" and listed its own output)."""
    folder = scoped_folder(task, workspace)
    problems = []
    for name in written:
        if not name.lower().endswith(_LISTS):
            continue
        listed = [line.strip() for line in read_head(workspace / name).splitlines() if line.strip()]
        files = [path for path in listed if is_file(workspace / path)]
        outside = [path for path in files if folder and not path.startswith(f"{folder}/")]
        if name in files:
            # Told only "lists itself", the 1.5B typed every workspace file in place of its computed list.
            others = f", and keep the other {len(listed) - 1}" if len(listed) > 1 else ""
            problems.append(f"{name} lists itself (line {listed.index(name) + 1}): leave that line out{others}")
        elif outside:
            problems.append(
                f"{name} lists {', '.join(outside[:3])}, which {'is' if len(outside) == 1 else 'are'} not under "
                f"{folder}/, the folder the task asks about: search only there (os.walk('{folder}'))"
            )
    return problems


def _key(column: str) -> str:
    """A column name as compared: case, spaces and punctuation aside ("Order ID" is order_id)."""
    return re.sub(r"[\W_]+", "", column).lower()


def _empty_cell_problems(task: str, workspace: Path, written: Sequence[str], inputs: Sequence[str]) -> list[str]:
    """Written CSV files with empty cells, when the run's input CSV files have none."""
    sources = [name for name in inputs if name.lower().endswith(".csv")][:_INPUTS_READ]
    if not sources or any(empty_cells(name, read_head(workspace / name).splitlines()) for name in sources):
        return []
    problems = []
    for name in written:
        lines = read_head(workspace / name).splitlines()
        counted = empty_cells(name, lines)
        if counted:
            cells = ", ".join(f"{count} in {column}" for column, count in counted.items())
            rows = (line for line in lines[1:] if any(not cell.strip() for cell in next(csv.reader([line]), [])))
            example = next((f", as in the row {row!r}" for row in rows), "")  # none when a quoted cell spans lines
            problems.append(
                f"{name} has empty cells ({cells}) though the input CSV files have none{example}: "
                f"{_unmatched_rows(task, workspace, sources, list(counted), name)}"
            )
    return problems


def _rows_per_item_problems(task: str, workspace: Path, written: Sequence[str], inputs: Sequence[str]) -> list[str]:
    """A table the task asks one row per item of ("one row per order") with another count of rows than
    the input table of those items (orders.csv).

    merge_csv run 211: the 1.5B merged customers on the left, then filled the empty cells of the
    customer without orders with 0: 13 rows for 12 orders, and no empty cell left to notice.
    """
    match = _ROW_PER.search(task)
    out = _file_near(task, match.start(), _TABLES) if match is not None else None
    path = _written_path(workspace, out, written) if out is not None else None
    if match is None or out is None or path is None:
        return []
    item = _singular(match.group(1).lower())
    tables = [name for name in inputs if name.lower().endswith((".csv", ".tsv"))]
    source = next((name for name in tables if _singular(Path(name).stem.lower()) == item), None)
    if source is None or source == out:
        return []
    have, want = read_table(path), read_table(workspace / source)
    if have is None or want is None or (rows := count_rows(have[1])) == (expected := count_rows(want[1])):
        return []
    code = _left_merge(task, workspace, source, [name for name in tables if name != source], out)
    how = f"run: {code}" if code else f"merge with {source} on the left and how='left'"
    return [
        f"{out} has {rows} row{'s' * (rows != 1)}, but the task asks for one row per {match.group(1)} and {source} "
        f"has {expected}: "
        f"a merge keeps every row of its left table with how='left', and only the rows that match with the "
        f"default how='inner'. For one row per row of {source}, {how}"
    ]


def count_rows(rows: Sequence[Sequence[str]]) -> int:
    """The rows of a table that hold anything (an empty line of a CSV file is no row)."""
    return sum(any(cell.strip() for cell in row) for row in rows)


def _singular(word: str) -> str:
    """``word`` without its plural ending ("orders" → "order", "entries" → "entry")."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _unmatched_rows(task: str, workspace: Path, sources: Sequence[str], empty_columns: Sequence[str], out: str) -> str:
    """How a merge leaves cells empty, naming the input the empty columns come from when only one has them all.

    The 1.5B merged ``customers`` with ``orders`` ``how='left'``: a customer without orders became a
    row of empty order cells. Told that a left merge keeps unmatched rows, and then to put orders on
    the left, it ran its merge again unchanged: with two inputs, the note gives the line to run.
    """
    holders = [name for name in sources if set(empty_columns) <= set(table_header(workspace / name) or ())]
    if len(holders) != 1 or len(sources) < 2:
        return (
            "rows that found no match in a merge (how='left' or 'outer' keeps such rows with empty cells; "
            f"the default how='inner' keeps only the rows that match){_OR_UNPARSED}"
        )
    source = holders[0]
    others = [name for name in sources if name != source]
    if code := _left_merge(task, workspace, source, others, out):
        return (
            f"rows of {others[0]} that match no row of {source} (a merge with how='left' keeps every row of its "
            f"left table). For one row per row of {source}, {source} goes on the left; run: {code}"
        )
    table = re.sub(r"\W+", "_", Path(source).stem)
    return (
        f"the empty columns come from {source}, so these rows are from another file and match no row of {source} "
        "(a merge with how='left' keeps every row of its left table, how='outer' every row of both); "
        f"to keep one row per row of {source}, put it on the left: {table}.merge(other, on=..., how='left')"
        f"{_OR_UNPARSED}"
    )


_OR_UNPARSED = ", or values that did not parse? Check the code that wrote it"


def _left_merge(task: str, workspace: Path, keep: str, others: Sequence[str], out: str) -> str | None:
    """The pandas line that writes ``out`` with one row per row of ``keep``, when one other input shares columns."""
    kept = table_header(workspace / keep) or []
    if len(others) != 1 or not (shared := [c for c in kept if c in (table_header(workspace / others[0]) or ())]):
        return None
    on = repr(shared[0]) if len(shared) == 1 else repr(shared)
    requested = requested_columns(task)
    select = f"[{requested[1]!r}]" if requested is not None and Path(requested[0]).name == Path(out).name else ""
    return (
        f"pd.read_csv({keep!r}).merge(pd.read_csv({others[0]!r}), on={on}, how='left'){select}"
        f".to_csv({out!r}, index=False)"
    )

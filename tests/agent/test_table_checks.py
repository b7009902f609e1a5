"""Tables the run wrote, held against the task: the columns it lists, cells left empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from pymanus.agent import progress
from pymanus.agent.manus import missing_outputs
from pymanus.agent.table_checks import requested_columns, table_header, table_items, table_problems
from pymanus.tools.tool import ToolContext

MERGE_TASK = (
    "Merge orders.csv with customers.csv on customer_id and write merged.csv with one row per order "
    "and the columns order_id, customer_id, name, city, amount."
)


def start_run(workspace: Path, task: str, inputs: dict[str, str]) -> ToolContext:
    """A run of ``task`` started on a workspace holding ``inputs``."""
    for name, text in inputs.items():
        (workspace / name).write_text(text)
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(task, context)
    return context


@pytest.fixture
def merge_run(tmp_path: Path) -> ToolContext:
    return start_run(
        tmp_path,
        MERGE_TASK,
        {
            "orders.csv": "order_id,customer_id,amount\n5001,1,9.5\n5002,1,3.0\n",
            "customers.csv": "customer_id,name,city\n1,Ana,Lyon\n2,Ben,Porto\n",
        },
    )


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        (MERGE_TASK, ("merged.csv", ["order_id", "customer_id", "name", "city", "amount"])),
        ("From scores.csv, write top5.csv with the columns player and score.", ("top5.csv", ["player", "score"])),
        (
            "Make a table with columns: `file`, `lines`, and `words`; save it as counts.md",
            ("counts.md", ["file", "lines", "words"]),
        ),
        ("Write out.csv with the columns name and the total.", None),  # "the" is no column
        ("Sort the columns of data.csv.", None),
        ("Write the columns id, name.", None),  # no table file named
        ("Write report.md with a table of regions and totals.", None),
    ],
)
def test_the_columns_a_task_lists_and_their_file(task: str, expected: tuple[str, list[str]] | None) -> None:
    assert requested_columns(task) == expected


def test_headers_of_csv_tsv_and_markdown_tables(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text('id,"full name"\n1,x\n')
    (tmp_path / "a.tsv").write_text("id\tname\n")
    (tmp_path / "a.md").write_text("# Report\n\n| Region | Total |\n|:---|---:|\n| North | 3 |\n")
    (tmp_path / "b.md").write_text("no table | here\n")
    assert table_header(tmp_path / "a.csv") == ["id", "full name"]
    assert table_header(tmp_path / "a.tsv") == ["id", "name"]
    assert table_header(tmp_path / "a.md") == ["Region", "Total"]
    assert table_header(tmp_path / "b.md") is None


def test_columns_out_of_order_or_missing_send_the_answer_back(merge_run: ToolContext) -> None:
    merged = Path(merge_run.workspace) / "merged.csv"
    merged.write_text("customer_id,name,city,order_id,amount\n1,Ana,Lyon,5001,9.5\n1,Ana,Lyon,5002,3.0\n")
    problem = missing_outputs(MERGE_TASK, "Done.", merge_run)
    assert problem is not None
    assert (
        "merged.csv has the columns customer_id, name, city, order_id, amount, but the task asks for the columns "
        "order_id, customer_id, name, city, amount in this order "
        "(with pandas, select them: df[['order_id', 'customer_id', 'name', 'city', 'amount']])"
    ) in problem
    merged.write_text("order_id,customer_id,name,amount\n5001,1,Ana,9.5\n5002,1,Ana,3.0\n")
    problem = missing_outputs(MERGE_TASK, "Done.", merge_run)
    assert problem is not None and "has the columns order_id, customer_id, name, amount, but" in problem
    assert "in this order" not in problem
    merged.write_text("Order ID,Customer ID,Name,City,Amount\n5001,1,Ana,Lyon,9.5\n5002,1,Ana,Lyon,3.0\n")
    assert missing_outputs(MERGE_TASK, "Done.", merge_run) is None  # the same names, written as titles


def test_empty_cells_the_inputs_lack_send_the_answer_back(merge_run: ToolContext) -> None:
    workspace = Path(merge_run.workspace)
    (workspace / "merged.csv").write_text(
        "order_id,customer_id,name,city,amount\n5001,1,Ana,Lyon,9.5\n5002,1,Ana,Lyon,3.0\n,2,Ben,Porto,\n"
    )
    assert table_problems(MERGE_TASK, merge_run) == [
        "merged.csv has empty cells (1 in order_id, 1 in amount) though the input CSV files have none, as in the "
        "row ',2,Ben,Porto,': rows of customers.csv that match no row of orders.csv (a merge with how='left' "
        "keeps every row of its left table). For one row per row of orders.csv, orders.csv goes on the left; run: "
        "pd.read_csv('orders.csv').merge(pd.read_csv('customers.csv'), on='customer_id', how='left')"
        "[['order_id', 'customer_id', 'name', 'city', 'amount']].to_csv('merged.csv', index=False)"
    ]
    # Columns out of order too (customers merged first): the line to run selects them, so one note says it all.
    (workspace / "merged.csv").write_text("customer_id,name,city,order_id,amount\n1,Ana,Lyon,5001,9.5\n2,Ben,Porto,,\n")
    [problem] = table_problems(MERGE_TASK, merge_run)
    assert problem.startswith("merged.csv has empty cells") and "how='left')[['order_id', 'customer_id'," in problem
    # Empty cells in columns of both inputs: no one input to name.
    (workspace / "merged.csv").write_text("order_id,customer_id,name,city,amount\n5001,,Ana,Lyon,9.5\n")
    [problem] = table_problems(MERGE_TASK, merge_run)
    assert "(1 in customer_id)" in problem and "rows that found no match in a merge (how='left' or" in problem
    (workspace / "customers.csv").write_text("customer_id,name,city\n1,Ana,\n2,Ben,Porto\n")
    # Written by the run now, so no longer an input: the inputs left (orders.csv) have no empty cells.
    assert table_problems(MERGE_TASK, merge_run)


def test_a_table_of_one_row_per_item_with_another_count_of_rows_than_its_input_is_sent_back(
    merge_run: ToolContext,
) -> None:
    # merge_csv run 211: customers merged on the left, the orderless customer's empty cells filled with 0.
    workspace = Path(merge_run.workspace)
    (workspace / "merged.csv").write_text(
        "order_id,customer_id,name,city,amount\n5001.0,1,Ana,Lyon,9.5\n5002.0,1,Ana,Lyon,3.0\n0.0,2,Ben,Porto,0.0\n"
    )
    assert table_problems(MERGE_TASK, merge_run) == [
        "merged.csv has 3 rows, but the task asks for one row per order and orders.csv has 2: a merge keeps every "
        "row of its left table with how='left', and only the rows that match with the default how='inner'. For one "
        "row per row of orders.csv, run: pd.read_csv('orders.csv').merge(pd.read_csv('customers.csv'), "
        "on='customer_id', how='left')[['order_id', 'customer_id', 'name', 'city', 'amount']]"
        ".to_csv('merged.csv', index=False)"
    ]
    (workspace / "merged.csv").write_text("order_id,customer_id,name,city,amount\n5001,1,Ana,Lyon,9.5\n")
    assert "merged.csv has 1 row, but the task asks" in table_problems(MERGE_TASK, merge_run)[0]  # an inner merge
    (workspace / "merged.csv").write_text(
        "order_id,customer_id,name,city,amount\n5001,1,Ana,Lyon,9.5\n5002,1,Ana,Lyon,3.0\n\n"
    )
    assert table_problems(MERGE_TASK, merge_run) == []  # one row per order (a blank line is no row)
    # no input table of the items the task counts: nothing to compare with
    task = MERGE_TASK.replace("one row per order", "one row per purchase")
    (workspace / "merged.csv").write_text("order_id,customer_id,name,city,amount\n5001,1,Ana,Lyon,9.5\n")
    assert table_problems(task, merge_run) == []


def test_with_a_third_input_the_merge_to_keep_is_named_without_its_line(tmp_path: Path) -> None:
    inputs = {
        "orders.csv": "order_id,customer_id,amount\n5001,1,9.5\n",
        "customers.csv": "customer_id,name,city\n1,Ana,Lyon\n2,Ben,Porto\n",
        "regions.csv": "city,region\nLyon,South\n",
    }
    context = start_run(tmp_path, MERGE_TASK, inputs)
    (tmp_path / "merged.csv").write_text("order_id,customer_id,name,city,amount\n5001,1,Ana,Lyon,9.5\n,2,Ben,Porto,\n")
    [problem] = table_problems(MERGE_TASK, context)
    assert (
        "to keep one row per row of orders.csv, put it on the left: orders.merge(other, on=..., how='left')" in problem
    )
    assert "pd.read_csv" not in problem


def test_empty_cells_are_fine_when_an_input_has_them_too(tmp_path: Path) -> None:
    task = "Copy people.csv to contacts.csv."
    context = start_run(tmp_path, task, {"people.csv": "name,email\nAna,\nBen,ben@example.org\n"})
    (tmp_path / "contacts.csv").write_text("name,email\nAna,\nBen,ben@example.org\n")
    assert table_problems(task, context) == []
    assert missing_outputs(task, "Done.", context) is None


def test_a_table_file_the_run_did_not_write_is_not_judged(merge_run: ToolContext) -> None:
    Path(merge_run.workspace, "merged.csv").write_text("x,y\n1,\n")
    progress.task_message(MERGE_TASK, merge_run)  # merged.csv was there before the run
    assert table_problems(MERGE_TASK, merge_run) == []


def test_a_markdown_report_without_the_table_the_task_asks_for_is_sent_back(tmp_path: Path) -> None:
    task = "Read sales.csv and write a markdown report to report.md with a table of regions and totals."
    context = start_run(tmp_path, task, {"sales.csv": "region,amount\nNorth,1.5\n"})
    (tmp_path / "report.md").write_text("# Sales\n\nNorth: 1.5\n")
    assert table_problems(task, context) == [
        "report.md has no Markdown table, and the task asks for one: a header row, a |---|---| line, "
        "then one row per item, like | North | 12.50 |"
    ]
    # sales_report run 211: pandas' to_markdown(..., tablefmt='html')
    (tmp_path / "report.md").write_text("<table>\n<thead>\n<tr><th>region</th></tr>\n</thead>\n</table>\n")
    assert table_problems(task, context) == [
        "report.md has no Markdown table (it holds an HTML <table>: with pandas, to_markdown without tablefmt "
        "writes Markdown), and the task asks for one: a header row, a |---|---| line, then one row per item, like "
        "| North | 12.50 |"
    ]
    (tmp_path / "report.md").write_text("# Sales\n\n| region | total |\n|---|---|\n| North | 1.5 |\n")
    assert table_problems(task, context) == []
    assert table_problems("Write report.md summarising sales.csv.", context) == []  # no table asked for


def test_a_table_with_fewer_columns_than_the_task_lists_is_sent_back(tmp_path: Path) -> None:
    task = "Read sales.csv and write a markdown report to report.md with a table of regions and totals."
    context = start_run(tmp_path, task, {"sales.csv": "region,amount\nNorth,1.5\n"})
    # What Series.to_markdown(index=False) writes: the totals without their regions.
    (tmp_path / "report.md").write_text("|   amount |\n|---------:|\n|      1.5 |")
    assert table_problems(task, context) == [
        "report.md's table has 1 column (amount), but the task asks for a table of regions and totals: one column "
        "each (pandas drops the index, the row labels, of a Series or DataFrame written with index=False; use "
        "data.reset_index().to_markdown(index=False) to keep them as a column)"
    ]
    (tmp_path / "report.md").write_text("| region | amount |\n|---|---:|\n| North | 1.5 |")
    assert table_problems(task, context) == []


@pytest.mark.parametrize(
    ("task", "items"),
    [
        ("write counts.md with a table of file, lines and words. Add a total row.", ["file", "lines", "words"]),
        ("Make a table with name and score, sorted by score, to scores.md", ["name", "score"]),
        ("write a table of the top 5 players to top.md", []),  # one item: any number of columns
        ("a table of what each region sold and what it earned in the whole of last year", []),  # a sentence
    ],
)
def test_what_each_row_of_the_table_holds(task: str, items: list[str]) -> None:
    assert table_items(task) == items


SQUARES_TASK = "Write squares.py that prints the squares of 1 to 10, one per line, and save its output to squares.txt"


@pytest.mark.parametrize(
    "written",
    ["1.0 4.0 9.0 16.0\n", "[1, 4, 9, 16]\n", "1, 4, 9, 16", "src/a.py src/b/c.py\n", "'a.txt', 'b.txt'\n"],
)
def test_a_list_written_on_one_line_where_the_task_wants_one_per_line_is_sent_back(
    tmp_path: Path, written: str
) -> None:
    context = start_run(tmp_path, SQUARES_TASK, {})
    (tmp_path / "squares.txt").write_text(written)
    [problem] = table_problems(SQUARES_TASK, context)
    assert problem.startswith(f"squares.txt holds {len(written.split())} items on one line")
    assert "but the task asks for one per line: change squares.py so it prints each item on its own line" in problem
    assert "run `python squares.py > squares.txt` again" in problem
    answer = missing_outputs(SQUARES_TASK, "Done.", context)
    assert answer is not None and problem in answer


@pytest.mark.parametrize(
    ("task", "written"),
    [
        (SQUARES_TASK, "1\n4\n9\n16\n"),
        (SQUARES_TASK, "42\n"),  # one item
        (SQUARES_TASK, "No squares to print\n"),  # words, not a list
        ("Write squares.txt with the squares of 1 to 4.", "1 4 9 16\n"),  # no line layout asked for
        ("Find every file with TODO and write their paths to todo.txt, each on its own line.", "src/a.py\n"),
    ],
)
def test_lists_laid_out_as_asked_or_with_one_item_pass(tmp_path: Path, task: str, written: str) -> None:
    context = start_run(tmp_path, task, {})
    name = "todo.txt" if "todo.txt" in task else "squares.txt"
    (tmp_path / name).write_text(written)
    assert table_problems(task, context) == []


def test_each_on_its_own_line_asks_for_one_item_per_line_too(tmp_path: Path) -> None:
    task = "Find every file with TODO and write their paths to todo.txt, each on its own line."
    context = start_run(tmp_path, task, {})
    (tmp_path / "todo.txt").write_text("src/a.py, src/b.py\n")
    [problem] = table_problems(task, context)
    assert problem.startswith("todo.txt holds 2 items on one line ('src/a.py, src/b.py')")
    assert problem.endswith("write each on its own line ('\\n'.join(...) or one print per item)")  # no script


TODO_TASK = "Find every file under src/ that contains TODO and write their paths to todo_files.txt, one per line."


def test_a_list_of_files_outside_the_folder_the_task_is_about_is_sent_back(tmp_path: Path) -> None:
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "main.py").write_text("# TODO\n")
    (tmp_path / "README.md").write_text("TODO: docs\n")
    context = start_run(tmp_path, TODO_TASK, {})
    (tmp_path / "todo_files.txt").write_text("README.md\nsrc/app/main.py\n")
    assert table_problems(TODO_TASK, context) == [
        "todo_files.txt lists README.md, which is not under src/, the folder the task asks about: "
        "search only there (os.walk('src'))"
    ]
    (tmp_path / "todo_files.txt").write_text("todo_files.txt\nsrc/app/main.py\n")
    assert table_problems(TODO_TASK, context) == [
        "todo_files.txt lists itself (line 1): leave that line out, and keep the other 1"
    ]
    (tmp_path / "todo_files.txt").write_text("todo_files.txt\n")
    assert table_problems(TODO_TASK, context) == ["todo_files.txt lists itself (line 1): leave that line out"]
    for fine in ("src/app/main.py\n", "app/main.py\n", "No file has a TODO.\n"):
        (tmp_path / "todo_files.txt").write_text(fine)
        assert table_problems(TODO_TASK, context) == [], fine
    everywhere = "Find every file that contains TODO and write their paths to todo_files.txt, one per line."
    (tmp_path / "todo_files.txt").write_text("README.md\nsrc/app/main.py\n")
    assert table_problems(everywhere, context) == []  # no folder named: any file may be listed


def test_lines_no_file_system_takes_as_paths_are_no_files(tmp_path: Path) -> None:
    # word_counts: a tool's note (300 characters on a line) written into counts.md crashed the check.
    note = "The code raised ValueError (traceback above): the line unpacks 3 names " + "x" * 300
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "alpha.txt").write_text("one two\n")
    task = "For each .txt file in the texts folder, count its lines and words, and write counts.md with a table."
    context = start_run(tmp_path, task, {})
    (tmp_path / "counts.md").write_text(f"{note}\n| {note} | 3 | 4 |\nnul\0byte.txt\n")
    (tmp_path / "todo.txt").write_text(f"{note}\n")
    problem = missing_outputs(task, "Done.", context, uncomputed=True)
    assert problem is not None and "counts.md" in problem
    assert progress.locate(tmp_path, note) is None


COUNTS_TASK = (
    "For each .txt file in the texts folder, count its lines and words, and write counts.md with a table "
    "of file, lines and words. Add a total row at the end."
)


def test_a_table_without_the_total_row_the_task_asks_for_is_sent_back(tmp_path: Path) -> None:
    # word_counts run 81: three rows of counts, no total row, and "the counts are correct".
    context = start_run(tmp_path, COUNTS_TASK, {"alpha.txt": "a b\n"})
    (tmp_path / "counts.md").write_text(
        "| file | lines | words |\n|---|---|---|\n| alpha.txt | 3 | 20 |\n| beta.txt | 5 | 22 |\n"
    )
    assert table_problems(COUNTS_TASK, context) == [
        "counts.md's table has no total row, and the task asks for one: add a last row with Total in its first "
        "column and the sum of each column of numbers (compute the sums with python)"
    ]
    (tmp_path / "counts.md").write_text(
        "| file | lines | words |\n|---|---|---|\n| alpha.txt | 3 | 20 |\n| beta.txt | 5 | 22 |\n"
        "| **Total** | 8 | 42 |\n"
    )
    assert table_problems(COUNTS_TASK, context) == []
    # Without "total row" in the task, no total row is asked for.
    assert table_problems(COUNTS_TASK.replace(" Add a total row at the end.", ""), context) == []


def test_a_last_row_of_sums_without_total_in_it_is_named_for_what_it_lacks(tmp_path: Path) -> None:
    # word_counts run 209: pandas' df.sum() made the last row, and joined the file names where Total belongs.
    context = start_run(tmp_path, COUNTS_TASK, {"alpha.txt": "a b\n"})
    (tmp_path / "counts.md").write_text(
        "| file | lines | words |\n|:---|---:|---:|\n| texts/alpha.txt | 3 | 20 |\n| texts/beta.txt | 5 | 22 |\n"
        "| texts/gamma.txt | 1 | 12 |\n| texts/alpha.txttexts/beta.txttexts/gamma.txt | 9 | 54 |\n"
    )
    assert table_problems(COUNTS_TASK, context) == [
        "counts.md's last row sums the rows above, but its first cell is "
        "'texts/alpha.txttexts/beta.txttexts/gamma.txt', not Total: write Total in that cell (a sum of text "
        "columns joins their text)"
    ]
    # a last row that is not the sum of the others is a row like them: the total row is missing
    (tmp_path / "counts.md").write_text(
        "| file | lines | words |\n|---|---|---|\n| texts/alpha.txt | 3 | 20 |\n| texts/beta.txt | 5 | 22 |\n"
        "| texts/gamma.txt | 1 | 12 |\n"
    )
    assert table_problems(COUNTS_TASK, context)[0].startswith("counts.md's table has no total row")


def test_a_total_row_that_is_not_the_sum_of_the_rows_above_is_sent_back(tmp_path: Path) -> None:
    task = "Write totals.csv with the amount per region, and a totals row."
    context = start_run(tmp_path, task, {"sales.csv": "region,amount\nNorth,1\n"})
    (tmp_path / "totals.csv").write_text('region,amount,orders\nNorth,10.25,2\nSouth,"1,200.50",3\nTotal,1210.70,5\n')
    assert table_problems(task, context) == [
        "totals.csv's total row gives amount 1210.70, but the rows above sum to 1210.75: compute the totals with "
        "python from the same values"
    ]
    (tmp_path / "totals.csv").write_text('region,amount,orders\nNorth,10.25,2\nSouth,"1,200.50",3\nTotal,1210.75,5\n')
    assert table_problems(task, context) == []
    (tmp_path / "totals.csv").write_text("region,amount\nNorth,10.25\nSouth,1200.5\nTotal,1211\n")  # rounded
    assert table_problems(task, context) == []

"""A JSON file the task gives a shape ("as {"mean": ..., "median": ...}", "as a JSON list") is held to it."""

from __future__ import annotations

import json
from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.json_checks import json_shape_problems
from pymanus.agent.manus import missing_outputs
from pymanus.tools.tool import ToolContext

STATS_TASK = (
    "What are the mean and the median of the temperature column in readings.csv? "
    'Save them to stats.json as {"mean": ..., "median": ...}, rounded to two decimals.'
)


def test_a_list_where_the_task_spells_out_an_object_is_sent_back(tmp_path: Path) -> None:
    (tmp_path / "readings.csv").write_text("sensor,temperature\nlab,22.1\nroof,23.6\n")
    context = ToolContext(run_id="r", workspace=tmp_path)
    progress.task_message(STATS_TASK, context)
    records = [{"sensor": "lab", "temperature": 22.1, "mean_temp": 22.85}]
    (tmp_path / "stats.json").write_text(json.dumps(records))
    assert json_shape_problems(STATS_TASK, tmp_path) == [
        'stats.json holds a JSON list, but the task asks for one object like {"mean": ..., "median": ...}: '
        "build that dict in python and write it with json.dump"
    ]
    problem = missing_outputs(STATS_TASK, "Saved.", context)
    assert problem is not None and "asks for one object like" in problem
    (tmp_path / "stats.json").write_text('{"mean": 22.85}')
    assert json_shape_problems(STATS_TASK, tmp_path) == [
        "stats.json has no key 'median'; the task asks for the keys 'mean', 'median'"
    ]
    (tmp_path / "stats.json").write_text('{"mean": 22.85, "median": 22.85}')
    assert json_shape_problems(STATS_TASK, tmp_path) == []
    assert missing_outputs(STATS_TASK, "Saved.", context) is None


def test_a_json_list_or_object_the_task_names_in_words(tmp_path: Path) -> None:
    task = (
        "Save the shipped orders to shipped.json, as a JSON list. Save the totals to totals.json as a JSON "
        "object mapping each customer's name to their total."
    )
    (tmp_path / "shipped.json").write_text('{"1001": {"status": "shipped"}}')
    (tmp_path / "totals.json").write_text('[["Alice", 12.5]]')
    assert json_shape_problems(task, tmp_path) == [
        "shipped.json holds a JSON object, but the task asks for a JSON list",
        "totals.json holds a JSON list, but the task asks for one object like {...}: "
        "build that dict in python and write it with json.dump",
    ]
    (tmp_path / "shipped.json").write_text('[{"id": 1001}]')
    (tmp_path / "totals.json").write_text('{"Alice": 12.5}')
    assert json_shape_problems(task, tmp_path) == []
    # customer_totals run 213: the mapping wrapped in a key, with an average beside it
    (tmp_path / "totals.json").write_text('{"customer_totals": {"Alice": 12.5, "Bob": 3.0}, "average_total": 7.75}')
    assert json_shape_problems(task, tmp_path) == [
        "totals.json puts its mapping under the key 'customer_totals' (with 'average_total' beside it), but the "
        "task asks for the mapping itself as the object: write that dict alone (json.dump(customer_totals, f))"
    ]
    (tmp_path / "totals.json").write_text('{"totals": {"Alice": 12.5, "Bob": 3.0}}')
    assert "under the key 'totals', but" in json_shape_problems(task, tmp_path)[0]
    # a mapping of each name to an object is a mapping, not a wrapper
    (tmp_path / "totals.json").write_text('{"Alice": {"total": 12.5}, "Bob": {"total": 3.0}}')
    assert json_shape_problems(task, tmp_path) == []
    # without "mapping", an object with a nested one is what the task may want
    plain = task.replace(" mapping each customer's name to their total", "")
    (tmp_path / "totals.json").write_text('{"customer_totals": {"Alice": 12.5}, "average_total": 7.75}')
    assert json_shape_problems(plain, tmp_path) == []


def test_missing_broken_and_unshaped_files_are_left_to_other_checks(tmp_path: Path) -> None:
    assert json_shape_problems(STATS_TASK, tmp_path) == []  # not written: "the workspace has no such file"
    (tmp_path / "stats.json").write_text("{not json")
    assert json_shape_problems(STATS_TASK, tmp_path) == []  # the parse check names it
    (tmp_path / "out.json").write_text("[1, 2]")
    assert json_shape_problems("Write the squares to out.json.", tmp_path) == []  # no shape given


CONVERT_TASK = (
    "Convert products.csv to products.json: a list with one object per row, using the column names as keys. "
    "Prices and stock counts should be numbers, not strings."
)


def test_numbers_written_as_strings_are_sent_back_when_the_task_wants_numbers(tmp_path: Path) -> None:
    rows = [{"sku": "0042", "name": "Lamp", "price": "24.5", "stock": "3"}, {"sku": "0043", "price": 5, "stock": 1}]
    (tmp_path / "products.json").write_text(json.dumps(rows))
    (problem,) = json_shape_problems(CONVERT_TASK, tmp_path)
    assert problem.startswith('products.json holds numbers as strings ("price": "24.5", "stock": "3")')
    assert "0042" not in problem  # the task does not name sku: an id may be text
    assert (
        json_shape_problems(
            CONVERT_TASK.replace(" Prices and stock counts should be numbers, not strings.", ""), tmp_path
        )
        == []
    )
    rows[0].update(price=24.5, stock=3)
    (tmp_path / "products.json").write_text(json.dumps(rows))
    assert json_shape_problems(CONVERT_TASK, tmp_path) == []


def test_a_json_list_with_another_count_of_objects_than_the_csv_has_rows_is_sent_back(tmp_path: Path) -> None:
    # csv_to_json run 225: the 1.5B printed the records, then wrote [] to products.json.
    (tmp_path / "products.csv").write_text("sku,price,stock\nA-1,2.5,3\nA-2,4.0,1\n\nA-3,1.0,0\n")  # an empty line
    (tmp_path / "products.json").write_text("[]")
    (problem,) = json_shape_problems(CONVERT_TASK, tmp_path)
    assert problem.startswith(
        "products.json has 0 objects, but the task asks for one per row and products.csv has 3: build the list "
        "from every row (pd.read_csv('products.csv').to_dict(orient='records'))"
    )
    rows = [{"sku": f"A-{n}", "price": 1.0, "stock": n} for n in (1, 2, 3)]
    (tmp_path / "products.json").write_text(json.dumps(rows))
    assert json_shape_problems(CONVERT_TASK, tmp_path) == []
    (tmp_path / "products.json").write_text("[]")
    assert json_shape_problems(CONVERT_TASK.replace("one object per row", "the products in stock"), tmp_path) == []

"""Data tasks: CSV and JSON in, a report, a filtered or aggregated file, or statistics out."""

from __future__ import annotations

import json
import random
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.tasks.checks import (
    as_number,
    clean_cell,
    close,
    failed,
    find_row,
    fmt,
    load_json,
    markdown_rows,
    passed,
    read_csv,
    read_text,
    row_has_value,
    write_csv,
)
from benchmarks.tasks.task import Task, Verdict

REGIONS = ("North", "South", "East", "West")
PRODUCTS = ("Widget", "Gadget", "Gizmo")
CUSTOMERS = ("Alice Martin", "Bob Chen", "Carla Diaz", "Deepak Rao", "Emma Stone")


# -- sales.csv → report.md ------------------------------------------------------------------
def sales_rows() -> list[tuple[str, str, str, float]]:
    """20 sales (date, region, product, amount); every region appears."""
    rng = random.Random(7)
    regions = [REGIONS[i % len(REGIONS)] for i in range(20)]
    rng.shuffle(regions)
    return [
        (f"2024-03-{day + 1:02d}", region, rng.choice(PRODUCTS), round(rng.uniform(40, 1900), 2))
        for day, region in enumerate(regions)
    ]


def region_totals() -> dict[str, float]:
    """The total amount per region of :func:`sales_rows`."""
    totals: dict[str, float] = defaultdict(float)
    for _, region, _, amount in sales_rows():
        totals[region] += amount
    return {region: round(total, 2) for region, total in totals.items()}


def setup_sales(workspace: Path) -> None:
    """Write sales.csv."""
    write_csv(workspace / "sales.csv", ("date", "region", "product", "amount"), sales_rows())


def check_sales_report(workspace: Path, output: str) -> Verdict:
    """report.md has a markdown table with a row per region holding its total."""
    text = read_text(workspace, "report.md")
    if text is None:
        return failed("report.md is missing")
    rows = markdown_rows(text)
    if not rows:
        return failed("report.md has no markdown table")
    for region, total in region_totals().items():
        row = find_row(rows, region)
        if row is None:
            return failed(f"no table row for {region}")
        if not row_has_value(row, total, skip=[region.lower()]):
            return failed(f"{region}: expected total {fmt(total)}, row is {' | '.join(row)}")
    return passed()


# -- orders.json → shipped.json / customer_totals.json -------------------------------------
def orders() -> list[dict[str, Any]]:
    """20 orders; every customer has at least one order that is not cancelled."""
    rng = random.Random(11)
    statuses = ["shipped"] * 9 + ["pending"] * 6 + ["cancelled"] * 5
    rng.shuffle(statuses)
    result = []
    for index, status in enumerate(statuses):
        customer = CUSTOMERS[index % len(CUSTOMERS)] if index < len(CUSTOMERS) else rng.choice(CUSTOMERS)
        if index < len(CUSTOMERS) and status == "cancelled":
            status = "pending"
        total = round(rng.uniform(15, 480), 2)
        result.append({"id": 1001 + index, "customer": customer, "status": status, "total": total})
    return result


def setup_orders(workspace: Path) -> None:
    """Write orders.json."""
    (workspace / "orders.json").write_text(json.dumps(orders(), indent=2) + "\n", encoding="utf-8")


def _order_list(data: object) -> list[object] | None:
    """The list of orders in ``data``: the list itself, or the one list in a wrapping object."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        lists = [value for value in data.values() if isinstance(value, list)]
        return lists[0] if len(lists) == 1 else None
    return None


def check_shipped(workspace: Path, output: str) -> Verdict:
    """shipped.json lists exactly the shipped orders, with their fields."""
    data, error = load_json(workspace, "shipped.json")
    if error:
        return failed(error)
    items = _order_list(data)
    if items is None or not all(isinstance(item, dict) for item in items):
        return failed("shipped.json is not a list of order objects")
    expected = {order["id"]: order for order in orders() if order["status"] == "shipped"}
    got = {as_number(item.get("id")): item for item in items if isinstance(item, dict)}
    missing = sorted(set(expected) - set(got))
    extra = sorted(str(key) for key in set(got) - set(expected))
    if missing or extra:
        return failed(f"wrong orders: missing {missing}, unexpected {extra}")
    for key, order in expected.items():
        item = got[key]
        for field in ("customer", "status", "total"):
            if field not in item:
                return failed(f"order {key} lost its field {field!r}")
        if not close(item["total"], order["total"]) or item["customer"] != order["customer"]:
            return failed(f"order {key} has wrong values: {item}")
    return passed()


def customer_totals() -> dict[str, float]:
    """What each customer spent, cancelled orders left out."""
    totals: dict[str, float] = defaultdict(float)
    for order in orders():
        if order["status"] != "cancelled":
            totals[order["customer"]] += order["total"]
    return {name: round(total, 2) for name, total in totals.items()}


def check_customer_totals(workspace: Path, output: str) -> Verdict:
    """customer_totals.json maps every customer to the right total (and nothing else)."""
    data, error = load_json(workspace, "customer_totals.json")
    if error:
        return failed(error)
    if isinstance(data, list):  # [{"customer": ..., "total": ...}] says the same thing
        pairs = [list(item.values()) for item in data if isinstance(item, dict) and len(item) == 2]
        data = {str(a): b for a, b in pairs} if len(pairs) == len(data) else None
    if not isinstance(data, dict):
        return failed("customer_totals.json is not an object of customer: total")
    got = {str(key).strip().lower(): value for key, value in data.items()}
    expected = customer_totals()
    for name, total in expected.items():
        if name.lower() not in got:
            return failed(f"{name} is missing")
        if not close(got[name.lower()], total):
            return failed(f"{name}: expected {fmt(total)}, got {got[name.lower()]!r}")
    extra = set(got) - {name.lower() for name in expected}
    if extra:
        return failed(f"unexpected keys: {sorted(extra)}")
    return passed()


# -- customers.csv + orders.csv → merged.csv ------------------------------------------------
CITIES = ("Lyon", "Porto", "Oslo", "Graz", "Turin", "Ghent")
MERGE_NAMES = ("Ana", "Ben", "Chloe", "Dario", "Elif", "Farid")


def merge_orders() -> list[tuple[int, int, float]]:
    """12 orders (order_id, customer_id, amount) over 6 customers."""
    rng = random.Random(23)
    return [(5001 + i, 1 + rng.randrange(len(MERGE_NAMES)), round(rng.uniform(5, 250), 2)) for i in range(12)]


def setup_merge(workspace: Path) -> None:
    """Write customers.csv and orders.csv."""
    customers = [(i + 1, name, city) for i, (name, city) in enumerate(zip(MERGE_NAMES, CITIES, strict=True))]
    write_csv(workspace / "customers.csv", ("customer_id", "name", "city"), customers)
    write_csv(workspace / "orders.csv", ("order_id", "customer_id", "amount"), merge_orders())


def check_merge(workspace: Path, output: str) -> Verdict:
    """merged.csv has one row per order with the customer's name and city."""
    rows, error = read_csv(workspace, "merged.csv")
    if error:
        return failed(error)
    needed = ("order_id", "customer_id", "name", "city", "amount")
    missing = [column for column in needed if column not in rows[0]] if rows else list(needed)
    if missing:
        return failed(f"merged.csv lacks columns {missing}")
    by_id = {row["order_id"]: row for row in rows}
    expected = merge_orders()
    if len(rows) != len(expected):
        return failed(f"merged.csv has {len(rows)} rows, expected {len(expected)}")
    for order_id, customer_id, amount in expected:
        row = by_id.get(str(order_id))
        if row is None:
            return failed(f"order {order_id} is missing")
        name, city = MERGE_NAMES[customer_id - 1], CITIES[customer_id - 1]
        if row["name"] != name or row["city"] != city or not close(row["amount"], amount):
            return failed(f"order {order_id}: expected {name}, {city}, {amount}; got {row}")
    return passed()


# -- products.csv → products.json ------------------------------------------------------------
PRODUCT_ROWS = (
    ("A-100", "Desk lamp", "lighting", 24.5, 12),
    ("A-101", "Floor lamp", "lighting", 89.0, 3),
    ("B-200", "Office chair", "furniture", 149.99, 7),
    ("B-201", "Standing desk", "furniture", 420.0, 2),
    ("C-300", "USB hub", "electronics", 19.95, 40),
    ("C-301", "Webcam", "electronics", 59.9, 0),
    ("C-302", "Headset", "electronics", 74.25, 15),
    ("D-400", "Notebook", "stationery", 3.5, 250),
)
PRODUCT_COLUMNS = ("sku", "name", "category", "price", "in_stock")


def setup_products(workspace: Path) -> None:
    """Write products.csv."""
    write_csv(workspace / "products.csv", PRODUCT_COLUMNS, PRODUCT_ROWS)


def check_products_json(workspace: Path, output: str) -> Verdict:
    """products.json has one object per row, the CSV's keys, and numbers as numbers."""
    data, error = load_json(workspace, "products.json")
    if error:
        return failed(error)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        return failed("products.json is not a list of objects")
    if len(data) != len(PRODUCT_ROWS):
        return failed(f"products.json has {len(data)} objects, expected {len(PRODUCT_ROWS)}")
    by_sku = {item.get("sku"): item for item in data}
    for row in PRODUCT_ROWS:
        item = by_sku.get(row[0])
        if item is None:
            return failed(f"product {row[0]} is missing")
        if set(item) != set(PRODUCT_COLUMNS):
            return failed(f"product {row[0]} has keys {sorted(item)}, expected {list(PRODUCT_COLUMNS)}")
        for key, value in zip(PRODUCT_COLUMNS, row, strict=True):
            got = item[key]
            if isinstance(value, str):
                if got != value:
                    return failed(f"product {row[0]}: {key} is {got!r}, expected {value!r}")
            elif isinstance(got, bool) or not isinstance(got, int | float):
                return failed(f"product {row[0]}: {key} is {got!r}, not a number")
            elif isinstance(value, int | float) and abs(got - value) > 1e-6:
                return failed(f"product {row[0]}: {key} is {got!r}, expected {value!r}")
    return passed()


# -- readings.csv → stats.json --------------------------------------------------------------
def temperatures() -> list[float]:
    """16 temperature readings (an even count, so the median is a mean of two)."""
    rng = random.Random(5)
    return [round(rng.uniform(14, 27), 1) for _ in range(16)]


def setup_readings(workspace: Path) -> None:
    """Write readings.csv."""
    rows = [
        (f"2024-05-01T{hour:02d}:00", "roof" if hour % 2 else "lab", value) for hour, value in enumerate(temperatures())
    ]
    write_csv(workspace / "readings.csv", ("timestamp", "sensor", "temperature"), rows)


def check_stats(workspace: Path, output: str) -> Verdict:
    """stats.json holds the mean and the median, to two decimals."""
    data, error = load_json(workspace, "stats.json")
    if error:
        return failed(error)
    if not isinstance(data, dict):
        return failed("stats.json is not an object")
    got = {str(key).strip().lower(): value for key, value in data.items()}
    values = temperatures()
    for key, expected in (("mean", statistics.mean(values)), ("median", statistics.median(values))):
        if key not in got:
            return failed(f"stats.json has no {key!r}")
        if not close(got[key], expected, tolerance=0.0051):
            return failed(f"{key}: expected {expected:.2f}, got {got[key]!r}")
    return passed()


# -- scores.csv → top5.csv ------------------------------------------------------------------
PLAYERS = (
    "ava", "liam", "noah", "mia", "zoe", "omar", "ines", "yuki", "ravi", "lena",
    "tom", "sara", "ivan", "nora", "paul", "kai", "ella", "hugo", "jade", "finn",
)  # fmt: skip


def scores() -> list[tuple[str, int]]:
    """20 players with distinct scores."""
    rng = random.Random(3)
    return list(zip(PLAYERS, rng.sample(range(100, 1000), len(PLAYERS)), strict=True))


def setup_scores(workspace: Path) -> None:
    """Write scores.csv."""
    write_csv(workspace / "scores.csv", ("player", "score"), scores())


def check_top5(workspace: Path, output: str) -> Verdict:
    """top5.csv holds the five best players, best first, with their scores."""
    rows, error = read_csv(workspace, "top5.csv")
    if error:
        return failed(error)
    if not rows or "player" not in rows[0] or "score" not in rows[0]:
        return failed("top5.csv lacks the columns player and score")
    expected = sorted(scores(), key=lambda pair: -pair[1])[:5]
    got = [(clean_cell(row["player"]), as_number(row["score"])) for row in rows]
    if got != [(name, float(score)) for name, score in expected]:
        return failed(f"expected {expected}, got {[(row['player'], row['score']) for row in rows]}")
    return passed()


TASKS = [
    Task(
        name="sales_report",
        prompt=(
            "Read sales.csv, compute the total amount per region, and write a markdown report to report.md "
            "with a table of regions and totals."
        ),
        setup=setup_sales,
        check=check_sales_report,
        kind="data",
        tags=("csv", "markdown"),
    ),
    Task(
        name="shipped_orders",
        prompt=(
            'orders.json has our recent orders. Save the ones whose status is "shipped" to shipped.json, '
            "as a JSON list, keeping all their fields."
        ),
        setup=setup_orders,
        check=check_shipped,
        kind="data",
        tags=("json", "filter"),
    ),
    Task(
        name="customer_totals",
        prompt=(
            "Using orders.json, work out how much each customer spent in total, not counting cancelled orders. "
            "Save the result to customer_totals.json as a JSON object mapping each customer's name to their total."
        ),
        setup=setup_orders,
        check=check_customer_totals,
        kind="data",
        tags=("json", "aggregate"),
    ),
    Task(
        name="merge_csv",
        prompt=(
            "Merge orders.csv with customers.csv on customer_id and write merged.csv with one row per order "
            "and the columns order_id, customer_id, name, city, amount."
        ),
        setup=setup_merge,
        check=check_merge,
        kind="data",
        tags=("csv", "join"),
    ),
    Task(
        name="csv_to_json",
        prompt=(
            "Convert products.csv to products.json: a list with one object per row, using the column names as "
            "keys. Prices and stock counts should be numbers, not strings."
        ),
        setup=setup_products,
        check=check_products_json,
        kind="data",
        tags=("csv", "json", "convert"),
    ),
    Task(
        name="column_stats",
        prompt=(
            "What are the mean and the median of the temperature column in readings.csv? Save them to stats.json "
            'as {"mean": ..., "median": ...}, rounded to two decimals.'
        ),
        setup=setup_readings,
        check=check_stats,
        kind="data",
        tags=("csv", "statistics"),
    ),
    Task(
        name="top_scores",
        prompt=(
            "From scores.csv, write top5.csv with the five players who have the highest scores, highest first, "
            "with the columns player and score."
        ),
        setup=setup_scores,
        check=check_top5,
        kind="data",
        tags=("csv", "sort"),
    ),
]

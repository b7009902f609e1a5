"""Whether a JSON file the task describes has the shape the task gives it.

"Save them to stats.json as {"mean": ..., "median": ...}": the 1.5B wrote stats.json with
``DataFrame.to_json(orient='records')``, a list of every row with the mean and median added
as columns, and called the task done. A task that spells out an object's keys after a
``.json`` name, or says "as a JSON list" or "as a JSON object", is checked for that shape; one
that says its values are numbers ("Prices and stock counts should be numbers, not strings") has
its JSON files checked for numbers written as strings (the 1.5B's ``csv.DictReader`` rows).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pymanus.agent.progress import read_head
from pymanus.agent.table_checks import count_rows, read_table

_JSON_FILE = r"(?<![\w./-])(?P<file>(?:[\w-]+/)*\w[\w.-]*\.json)\b"
# "stats.json as {"mean": ..., "median": ...}": an object literal in the sentence that names the file.
_TEMPLATE = re.compile(_JSON_FILE + r"[^.{\n]*?\{(?P<body>[^{}\n]*\"[^{}\n]*)\}")
# "shipped.json, as a JSON list", "customer_totals.json as a JSON object mapping ...".
_KIND = re.compile(
    _JSON_FILE + r"[^.\n]*?\bas\s+an?\s+JSON\s+(?P<kind>list|array|object)\b(?P<mapping>\s+mapping\b)?", re.IGNORECASE
)
_KEY = re.compile(r"\"([^\"]+)\"\s*:")
_WANTS_NUMBERS = re.compile(r"\b(?:be|are|as)\s+(?:real\s+)?numbers\b|\bnumbers?,?\s+not\s+strings?\b", re.IGNORECASE)
_NUMBER_TEXT = re.compile(r"\s*-?(?:\d+\.?\d*|\.\d+)\s*")
# "a list with one object per row", "one record for each line"
_OBJECT_PER_ROW = re.compile(
    r"\bone (?:object|item|entry|record|dict(?:ionary)?) (?:per|for each|for every) (?:row|line|record)\b",
    re.IGNORECASE,
)
_TABLE_FILE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*\w[\w.-]*\.(?:csv|tsv))\b", re.IGNORECASE)
SHOWN_STRINGS = 3


def json_shape_problems(task: str, workspace: Path) -> list[str]:
    """Notes on the JSON files ``task`` gives a shape that exist but have another one."""
    problems = []
    for name, keys, kind in _shapes(task):
        try:
            data = json.loads(read_head(workspace / name))
        except ValueError:
            continue  # missing, unparsable or too big to read: other checks name the first two
        if kind == "list" and not isinstance(data, list):
            problems.append(f"{name} holds a JSON {_kind_of(data)}, but the task asks for a JSON list")
        elif kind in ("object", "mapping") and not isinstance(data, dict):
            like = "{" + ", ".join(f'"{key}": ...' for key in keys) + "}" if keys else "{...}"
            problems.append(
                f"{name} holds a JSON {_kind_of(data)}, but the task asks for one object like {like}: "
                f"build that dict in python and write it with json.dump"
            )
        elif kind == "mapping" and isinstance(data, dict) and (wrapper := _wrapped_mapping(data)):
            others = [key for key in data if key != wrapper]
            beside = f" (with {', '.join(map(repr, others[:3]))} beside it)" if others else ""
            problems.append(
                f"{name} puts its mapping under the key {wrapper!r}{beside}, but the task asks for the mapping "
                f"itself as the object: write that dict alone (json.dump({_identifier(wrapper)}, f))"
            )
        elif isinstance(data, dict) and (missing := [key for key in keys if key not in data]):
            problems.append(
                f"{name} has no key {', '.join(map(repr, missing))}; the task asks for the keys "
                f"{', '.join(map(repr, keys))}"
            )
    return problems + _rows_as_objects(task, workspace) + _numbers_as_strings(task, workspace)


def _rows_as_objects(task: str, workspace: Path) -> list[str]:
    """Notes on the JSON lists ``task`` asks for one object per row of its one CSV file that have another length.

    csv_to_json run 225: the 1.5B printed the eight records, then wrote ``[]`` to products.json,
    and the run ended as done.
    """
    sources = list(dict.fromkeys(_TABLE_FILE.findall(task)))
    if not _OBJECT_PER_ROW.search(task) or len(sources) != 1 or (table := read_table(workspace / sources[0])) is None:
        return []
    rows = count_rows(table[1])
    problems = []
    for name, data in _named_json(task, workspace):
        if isinstance(data, list) and len(data) != rows:
            problems.append(
                f"{name} has {len(data)} object{'s' * (len(data) != 1)}, but the task asks for one per row and "
                f"{sources[0]} has {rows}: build the list from every row "
                f"(pd.read_csv('{sources[0]}').to_dict(orient='records')) and write it with json.dump"
            )
    return problems


def _numbers_as_strings(task: str, workspace: Path) -> list[str]:
    """Notes on the JSON files ``task`` names that hold numbers as strings when it wants numbers."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", task) if _WANTS_NUMBERS.search(s)]
    if not sentences:
        return []
    # Only the fields the sentence names ("Prices and stock counts ..."): an id such as "0042" stays text.
    words = {word for word in re.findall(r"[a-z]{3,}", " ".join(sentences).lower())}
    problems = []
    for name, data in _named_json(task, workspace):
        found = [(key, value) for key, value in _numeric_strings(data) if _named(key, words)]
        if found:
            shown = ", ".join(f'"{key}": "{value}"' for key, value in found[:SHOWN_STRINGS])
            problems.append(
                f"{name} holds numbers as strings ({shown}), but the task wants numbers: convert them "
                "with float() or int() before writing the file"
            )
    return problems


def _named_json(task: str, workspace: Path) -> list[tuple[str, object]]:
    """(name, data) of each JSON file ``task`` names that parses (missing or broken ones are other checks')."""
    parsed = []
    for name in dict.fromkeys(match.group("file") for match in re.finditer(_JSON_FILE, task)):
        try:
            parsed.append((name, json.loads(read_head(workspace / name))))
        except ValueError:
            continue
    return parsed


def _named(key: str, words: set[str]) -> bool:
    """Whether a part of ``key`` ("stock" of "stock_count") starts a word of ``words`` ("prices" for "price")."""
    parts = [part for part in re.split(r"[^a-z]+", key.lower()) if len(part) >= 3]
    return any(word.startswith(part) for part in parts for word in words)


def _numeric_strings(data: object, key: str = "") -> list[tuple[str, str]]:
    """(key, value) of every string in ``data`` that is a number written as text."""
    if isinstance(data, dict):
        return [found for k, v in data.items() for found in _numeric_strings(v, str(k))]
    if isinstance(data, list):
        return [found for item in data for found in _numeric_strings(item, key)]
    return [(key, data)] if isinstance(data, str) and _NUMBER_TEXT.fullmatch(data) else []


def _shapes(task: str) -> list[tuple[str, list[str], str]]:
    """(file, the keys the task lists for it, "object", "mapping" or "list") for each JSON file the task shapes."""
    shapes: dict[str, tuple[list[str], str]] = {}
    for match in _KIND.finditer(task):
        kind = "list" if match.group("kind").lower() != "object" else "mapping" if match.group("mapping") else "object"
        shapes[match.group("file")] = ([], kind)
    for match in _TEMPLATE.finditer(task):
        if keys := _KEY.findall(match.group("body")):
            shapes[match.group("file")] = (keys, "object")
    return [(name, keys, kind) for name, (keys, kind) in shapes.items()]


def _wrapped_mapping(data: dict[str, object]) -> str | None:
    """The key of the one nested object in ``data`` when ``data`` wraps a mapping rather than being it.

    customer_totals run 213: ``{"customer_totals": {"Alice Martin": 899.85, ...}, "average_total": 738.7}``
    for "a JSON object mapping each customer's name to their total". An object whose every value is an
    object (each customer to their total and count) is a mapping, not a wrapper.
    """
    nested = [key for key, value in data.items() if isinstance(value, dict)]
    if len(nested) == 1 and (len(data) == 1 or any(not isinstance(v, dict | list) for v in data.values())):
        return nested[0]
    return None


def _identifier(key: str) -> str:
    return re.sub(r"\W+", "_", key).strip("_") or "mapping"


def _kind_of(data: object) -> str:
    if isinstance(data, list):
        return "list"
    if isinstance(data, dict):
        return "object"
    return "string" if isinstance(data, str) else "number" if isinstance(data, int | float) else "value"

"""Whether an output that gives something for "each customer" or "per region" covers all of them.

"Work out how much each customer spent in total, not counting cancelled orders. Save the result
to customer_totals.json as a JSON object mapping each customer's name to their total": the 1.5B
kept only the orders with ``status == 'shipped'``, so Bob Chen, whose orders were all pending, had
no entry, and the answer was accepted. When the task asks about each (every, per) *thing* and an
input table has a column of that name, every value of that column is a group the task asks about;
a file the run wrote that names some of them but not all has left groups out. A group the task's
own condition drops ("not counting cancelled orders", a customer with only cancelled orders) is
left out rightly, so the note asks the model to check its filter rather than to add the group, and
an answer sent back this way is accepted after the done check's rejection limit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pymanus.agent.progress import READ_LIMIT, input_files, read_head, written_files
from pymanus.tools.builtin.workspace_scan import data_records, is_number
from pymanus.tools.tool import ToolContext

_GROUP = re.compile(r"\b(?:each|every|per)\s+([a-z]+)\b", re.IGNORECASE)
_OUTPUT_SUFFIXES = (".json", ".csv", ".tsv", ".md", ".txt")
_SHOWN = 3
"""Missing groups named in one problem."""


def coverage_problems(task: str, context: ToolContext) -> list[str]:
    """Files the run wrote that give some of the groups the task asks about but not all of them."""
    words = {word.lower() for word in _GROUP.findall(task)}
    if not words:
        return []
    workspace = Path(context.workspace)
    written = written_files(context)
    outputs = {name: read_head(workspace / name) for name in written if Path(name).suffix.lower() in _OUTPUT_SUFFIXES}
    problems = []
    for source in input_files(context, written):
        for column, groups in _group_columns(workspace / source, words).items():
            for name, text in outputs.items():
                missing = [group for group in groups if group not in text]
                if missing and len(missing) < len(groups):  # about these groups, but not all of them
                    more = f" (and {len(missing) - _SHOWN} more)" if len(missing) > _SHOWN else ""
                    problems.append(
                        f"{name} has nothing for {', '.join(map(repr, missing[:_SHOWN]))}{more}, "
                        f"{'a' if len(missing) == 1 else 'each a'} {column} in {source}, while the task asks "
                        f"about each {column}: check which rows your code keeps (a filter such as == on one "
                        f"value drops the others) and write the file again"
                    )
    return problems


def _group_columns(path: Path, words: set[str]) -> dict[str, list[str]]:
    """The columns of the table in ``path`` named by one of ``words`` ("customer", "region"), each with its
    distinct text values in the order they first appear; columns with fewer than two are left out."""
    records = _records(path)
    if not records:
        return {}
    columns: dict[str, list[str]] = {}
    for column in records[0]:
        if column.strip().lower() not in words:
            continue
        values: list[str] = []
        for record in records:
            value = record.get(column)
            value = value.strip() if isinstance(value, str) else ""
            if value and not is_number(value) and value not in values:
                values.append(value)
        if len(values) >= 2:
            columns[column.strip().lower()] = values
    return columns


def _records(path: Path) -> Sequence[dict[str, object]]:
    """The rows of a CSV or TSV file, or the objects of a JSON list, as dicts; empty for anything else."""
    try:
        if path.stat().st_size >= READ_LIMIT:
            return []  # only its start would be read: a cut last row would name a group that is not there
    except OSError:
        return []
    return data_records(path.name, read_head(path))

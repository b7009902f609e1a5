"""Whether the run's code leaves out the records a task leaves out: "not counting cancelled orders".

"Work out how much each customer spent in total, not counting cancelled orders": with the task in
front of it, the 1.5B summed every order, wrote the totals and the done check accepted them; in
another run it kept ``status == 'shipped'`` only and lost the pending orders. When the task leaves
out a value that one of an input file's category fields holds ("cancelled" in ``status``), code that
leaves those records out names the value. If no code the run ran and no script it wrote names it,
the output cannot have left them out, and the note says how to: compare the field with the value.
A filter that keeps every other value by name instead is sent back once needlessly, and the
answer is then accepted after the rejection limit.
"""

from __future__ import annotations

import re
from pathlib import Path

from pymanus.agent.progress import input_files, read_head, written_files
from pymanus.tools.builtin.python_state import CODE_SOURCES
from pymanus.tools.builtin.workspace_scan import category_fields
from pymanus.tools.tool import ToolContext

# "not counting cancelled orders", "excluding refunded payments", "ignoring the archived ones"
_LEFT_OUT = re.compile(
    r"\b(?:not\s+(?:counting|including)|excluding|except(?:\s+for)?|ignoring|leaving\s+out|skipping|without)"
    r"\s+(?:the\s+|any\s+|all\s+)?([A-Za-z][\w-]*)",
    re.IGNORECASE,
)


def unfiltered_exclusions(task: str, context: ToolContext) -> list[str]:
    """The values the task leaves out of an input file's records that no code of the run compares with."""
    left_out = {word.lower() for word in _LEFT_OUT.findall(task)}
    if not left_out:
        return []
    workspace = Path(context.workspace)
    written = written_files(context)
    scripts = [read_head(workspace / name) for name in written if name.endswith(".py")]
    code = "\n".join([str(context.state.get(CODE_SOURCES, "")), *scripts]).lower()
    problems = []
    for source in input_files(context, written):
        for field, counts in category_fields(source, read_head(workspace / source)).items():
            for value, count in counts.items():
                if value.lower() in left_out and value.lower() not in code:
                    problems.append(
                        f"the task leaves out what is {value}, and {count} records of {source} have {field} "
                        f"{value!r}, but no code this run ran compares with {value!r}: compute the result again "
                        f"with python, skipping those records (if row[{field!r}] != {value!r}), and save it again"
                    )
    return problems

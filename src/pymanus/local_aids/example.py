"""Aid ``worked_example``: the system prompt ends with one short worked run.

Small models imitate an example more readily than they follow rules. The example (a task
of its own, about listing classes) shows one ``python`` call that finds, computes and writes
everything, prints what it wrote, then ``terminate``. Its search covers the whole workspace
with no file-type filter, since small models copy an example's filters into their own code.
"""

from __future__ import annotations

import json

from pymanus.agent.extensions import Extension

_EXAMPLE_CODE = """\
import os, re
rows = []
for folder, _, names in os.walk('.'):
    for name in sorted(names):
        path = os.path.relpath(os.path.join(folder, name))
        for found in re.findall(r'class (\\w+)', read_file(path)):
            rows.append((path, found))
lines = ['| file | class |', '|---|---|'] + [f'| {p} | {c} |' for p, c in rows]
write_file('classes.md', '\\n'.join(lines) + '\\n')
print(rows)"""
_EXAMPLE_ANSWER = "classes.md lists 2 classes: Cart (shop/cart.py) and Item (shop/models.py)."
EXAMPLE_RUN = (
    "Example of a good run (for another task):\n"
    "Task: List the classes defined in this project in classes.md, as a table of file and class.\n"
    f"Call: python {json.dumps({'code': _EXAMPLE_CODE})}\n"
    "Result: [('shop/cart.py', 'Cart'), ('shop/models.py', 'Item')]\n\n"
    "Files written: classes.md (4 lines).\n"
    "Call: terminate " + json.dumps({"status": "success", "message": _EXAMPLE_ANSWER})
)


class WorkedExample(Extension):
    """Ends the system prompt with :data:`EXAMPLE_RUN`."""

    name = "worked_example"
    instructions = EXAMPLE_RUN

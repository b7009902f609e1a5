"""What the python tool records of a run's code in ``ToolContext.state``, for the checks that judge its work."""

from __future__ import annotations

from collections.abc import MutableMapping

CODE_RAN = "python.code_ran"
"""``ToolContext.state`` key: when (``time.time()``) the first block that ran without error started."""
CODE_WROTE = "python.code_wrote"
"""``ToolContext.state`` key: the files the run's code wrote, each with the (mtime ns, size) it left them with.

Code that wrote its result and then failed (a ``print`` of the wrong type) still computed that file."""
CODE_OUTPUT = "python.output"
"""``ToolContext.state`` key: what the run's code printed, the latest :data:`CODE_OUTPUT_CHARS` characters."""
CODE_OUTPUT_CHARS = 100_000
CODE_FOUND = "python.found"
"""``ToolContext.state`` key: what the blocks that ran without error printed (the latest :data:`CODE_OUTPUT_CHARS`
characters): the paths a walk found. A failed walk's traceback and its notes name paths it did not find
(find_todos run 230: the path a FileNotFoundError note gave became the list of files holding TODO)."""
CODE_SOURCES = "python.code"
"""``ToolContext.state`` key: the code of the blocks that ran without error, the latest :data:`CODE_OUTPUT_CHARS`
characters (what a completion check asks of the run's computation: did it leave out the rows the task leaves out)."""


def append_capped(state: MutableMapping[str, object], key: str, text: str) -> None:
    """Add ``text`` to the text kept under ``key``, keeping its latest :data:`CODE_OUTPUT_CHARS` characters."""
    state[key] = (str(state.get(key, "")) + "\n" + text)[-CODE_OUTPUT_CHARS:]

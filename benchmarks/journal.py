"""The cost of the change journal per tool call, on a workspace of many files.

Builds a workspace of ``--files`` small text files (100 folders), then times tool calls
that each change one file, through a toolset with the journal
(:class:`pymanus.tools.journaling.FileJournal`) and through the same toolset without it,
alternating, and prints the median time of each and their ratio:

* ``write_file`` of one file;
* ``python`` (the preset's session worker, in the real sandbox) writing one file.

The first code call of a run in a workspace the journal has never seen saves every
file's bytes once; that one-time cost is printed on its own. The first code call of a
later run finds the files in the journal's index and only walks them (size and mtime)
and starts watching them; after that, a call costs what it changed (inotify).

    python benchmarks/journal.py [--files 10000] [--calls 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from pymanus.messages import ToolCall
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.journaling import FileJournal
from pymanus.tools.tool import ToolContext
from pymanus.tools.toolset import Toolset


def make_workspace(root: Path, files: int) -> None:
    folders = 100
    for n in range(files):
        folder = root / f"d{n % folders:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:05d}.txt").write_text(f"file {n}\n" * 20)


async def timed(toolset: Toolset, call: ToolCall, context: ToolContext) -> float:
    started = time.perf_counter()
    outcome = await toolset.run_call(call, context)
    elapsed = time.perf_counter() - started
    if outcome.result.is_error:
        raise SystemExit(f"{call.name} failed: {outcome.result.text}")
    return elapsed


async def compare(name: str, tools: list, workspace: Path, make_call, calls: int) -> dict[str, float]:
    plain = Toolset(tools)
    journaled = Toolset(tools, [FileJournal(workspace)])
    context_plain = ToolContext(run_id="plain", workspace=workspace)
    context_journal = ToolContext(run_id="journaled", workspace=workspace)
    # Warm both (the worker starts; the journal saves the workspace once) and time that first call.
    await timed(plain, make_call(0), context_plain)
    first = await timed(journaled, make_call(0), context_journal)
    without, with_journal = [], []
    for n in range(1, calls + 1):
        without.append(await timed(plain, make_call(n), context_plain))
        with_journal.append(await timed(journaled, make_call(n), context_journal))
    later = await timed(journaled, make_call(calls + 1), ToolContext(run_id="later", workspace=workspace))
    base, cost = statistics.median(without), statistics.median(with_journal)
    row = {
        "call": name,
        "without_ms": base * 1000,
        "with_ms": cost * 1000,
        "ratio": cost / base,
        "first_ms": first * 1000,
        "later_first_ms": later * 1000,
    }
    print(
        f"{name:<11} without {row['without_ms']:7.2f} ms   with journal {row['with_ms']:7.2f} ms   "
        f"ratio {row['ratio']:.2f}x   (first call of the first run: {row['first_ms']:.0f} ms; "
        f"of a later run: {row['later_first_ms']:.0f} ms)"
    )
    return row


async def main(files: int, calls: int) -> list[dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="pymanus-journal-bench-") as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        make_workspace(workspace, files)
        print(f"workspace: {files:,} files; median of {calls} calls each, alternating")
        rows = []
        jail = PathJail(workspace)
        writers = file_tools(jail)

        def write(n: int) -> ToolCall:
            arguments = {"path": "d000/f00000.txt", "content": f"version {n}\n" * 20}
            return ToolCall(id=f"w{n}", name="write_file", arguments=json.dumps(arguments))

        rows.append(await compare("write_file", writers, workspace, write, calls))
        runner = PythonRunner(Sandbox(workspace))
        try:

            def python(n: int) -> ToolCall:
                code = f"open('d001/f00001.txt', 'w').write('version {n}\\n' * 20)"
                return ToolCall(id=f"p{n}", name="python", arguments=json.dumps({"code": code}))

            rows.append(await compare("python", [runner.tool], workspace, python, calls))
        finally:
            await runner.aclose()
        return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=15)
    options = parser.parse_args()
    asyncio.run(main(options.files, options.calls))

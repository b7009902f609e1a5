"""The cost of the change journal per tool call, on a workspace of many files.

Builds a workspace of ``--files`` small text files (100 folders), then times tool calls
that each change one file, through a toolset with the journal
(:class:`pymanus.tools.journaling.FileJournal`) and through the same toolset without it,
and prints the median time of each, their ratio and the difference:

* ``write_file`` of one file;
* ``edit_file`` of one line of one file;
* ``python`` (the preset's session worker, in the real sandbox) writing one file.

The two are timed in pairs, in alternating order (with, without; without, with; ...), so
a disk or a processor that gets busier during the run slows both alike; the medians of
many pairs leave out the calls that waited on something else. The ratio is also given
for each of six blocks of consecutive pairs (its range shows how noisy the machine was)
and for the quietest block, the one with the fastest calls without the journal.

The first code call of a run in a workspace the journal has never seen saves every
file's bytes once; that one-time cost is printed on its own. The first code call of a
later run finds the files in the journal's index and only walks them (size and mtime)
and starts watching them; after that, a call costs what it changed (inotify).

    python benchmarks/journal.py [--files 10000] [--rounds 300] [--code-rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pymanus.messages import ToolCall
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.journaling import FileJournal
from pymanus.tools.tool import Tool, ToolContext
from pymanus.tools.toolset import Toolset

MakeCall = Callable[[int], ToolCall]
BLOCKS = 6
"""The pairs are also summarised in this many blocks of consecutive pairs."""


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


async def compare(name: str, tools: list[Tool], workspace: Path, make_call: MakeCall, rounds: int) -> dict:
    plain = Toolset(tools)
    journaled = Toolset(tools, [FileJournal(workspace)])
    context_plain = ToolContext(run_id=f"{name}-plain", workspace=workspace)
    context_journal = ToolContext(run_id=f"{name}-journaled", workspace=workspace)
    numbers = itertools.count()  # every call its own content

    async def run(toolset: Toolset, context: ToolContext) -> float:
        return await timed(toolset, make_call(next(numbers)), context)

    # Warm both (a worker starts; the journal saves the workspace once) and time that first call.
    await run(plain, context_plain)
    first = await run(journaled, context_journal)
    without, with_journal = [], []
    for n in range(rounds):
        if n % 2:
            with_journal.append(await run(journaled, context_journal))
            without.append(await run(plain, context_plain))
        else:
            without.append(await run(plain, context_plain))
            with_journal.append(await run(journaled, context_journal))
    later = await run(journaled, ToolContext(run_id=f"{name}-later", workspace=workspace))
    base, cost = statistics.median(without), statistics.median(with_journal)
    # The same medians per block of pairs: a disk or processor busy for a while shows as blocks apart,
    # and the quietest block (the lowest median without the journal) is the cost on an idle machine.
    size = max(1, rounds // BLOCKS)
    blocks = [
        (statistics.median(without[i : i + size]), statistics.median(with_journal[i : i + size]))
        for i in range(0, rounds - size + 1, size)
    ]
    ratios = [b / a for a, b in blocks]
    quiet = min(blocks)
    row = {
        "call": name,
        "pairs": rounds,
        "without_ms": round(base * 1000, 3),
        "with_ms": round(cost * 1000, 3),
        "ratio": round(cost / base, 3),
        "added_us": round((cost - base) * 1e6),
        "block_ratios": [round(r, 3) for r in ratios],
        "quietest_block_ratio": round(quiet[1] / quiet[0], 3),
        "first_ms": round(first * 1000, 1),
        "later_first_ms": round(later * 1000, 1),
    }
    print(
        f"{name:<10} without {base * 1000:7.3f} ms  with journal {cost * 1000:7.3f} ms  ratio {cost / base:.2f}x "
        f"(+{(cost - base) * 1e6:.0f} us)  blocks {min(ratios):.2f}-{max(ratios):.2f}x, quietest "
        f"{quiet[1] / quiet[0]:.2f}x ({quiet[0] * 1000:.3f} ms)  first call {first * 1000:.0f} ms, "
        f"of a later run {later * 1000:.0f} ms",
        flush=True,
    )
    return row


def file_calls() -> dict[str, MakeCall]:
    def write(n: int) -> ToolCall:
        arguments = {"path": "d000/f00000.txt", "content": f"version {n}\n" * 20}
        return ToolCall(id=f"w{n}", name="write_file", arguments=json.dumps(arguments))

    line = "edit -1"

    def edit(n: int) -> ToolCall:
        nonlocal line  # each call changes the line the call before it wrote
        arguments = {"path": "d002/f00002.txt", "old_text": f"{line}\n", "new_text": f"edit {n}\n"}
        line = f"edit {n}"
        return ToolCall(id=f"e{n}", name="edit_file", arguments=json.dumps(arguments))

    return {"write_file": write, "edit_file": edit}


def python_call(n: int) -> ToolCall:
    code = f"open('d001/f00001.txt', 'w').write('version {n}\\n' * 20)"
    return ToolCall(id=f"p{n}", name="python", arguments=json.dumps({"code": code}))


async def main(files: int, rounds: int, code_rounds: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="pymanus-journal-bench-") as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        make_workspace(workspace, files)
        print(f"workspace: {files:,} files; medians of {rounds} pairs of file calls, {code_rounds} of code calls")
        tools = file_tools(PathJail(workspace))
        rows = []
        for name, make_call in file_calls().items():
            if name == "edit_file":
                (workspace / "d002" / "f00002.txt").write_text("edit -1\n" + "unchanged\n" * 19)
            rows.append(await compare(name, tools, workspace, make_call, rounds))
        runner = PythonRunner(Sandbox(workspace))
        try:
            rows.append(await compare("python", [runner.tool], workspace, python_call, code_rounds))
        finally:
            await runner.aclose()
        return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=300, help="pairs of file-tool calls timed")
    parser.add_argument("--code-rounds", type=int, default=40, help="pairs of python calls timed")
    parser.add_argument("--json", action="store_true", help="also print the rows as one JSON line")
    options = parser.parse_args()
    result = asyncio.run(main(options.files, options.rounds, options.code_rounds))
    if options.json:
        print(json.dumps(result))

"""The model alone is the floor: the agent against one plain completion of the same model.

    python benchmarks/model_floor.py                         # the configured (default) model
    python benchmarks/model_floor.py --model local:qwen2.5-coder-0.5b --only rle,roman
    python benchmarks/model_floor.py --modes agent --aids all,-worked_example

Each problem is a function to write from its signature and docstring, with hidden tests.
``plain``: one chat completion of the model, asked for the function in a code block; the
code block is tested. ``agent``: ``pymanus run``'s agent (the preset with the aids the
configuration turns on for the model, or those ``--aids`` names), asked to implement the function in ``solution.py``;
that file is tested. Where one completion does the job, the agent must solve at least as
many problems, in fewer seconds per solved problem. Prints one row per problem and mode,
then per mode: solved, total seconds and seconds per solved problem.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks.tasks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.tasks.run import parse_aids

from pymanus import Message
from pymanus.agent.manus import preset_model
from pymanus.config import Settings
from pymanus.local_aids import equipped_agent
from pymanus.models.base import Model, ModelSettings


@dataclass(frozen=True)
class Problem:
    name: str
    stub: str
    tests: str


PROBLEMS = [
    Problem(
        "rle",
        '''def run_length_encode(text: str) -> str:
    """Encode each run of one repeated character as the character followed by the run's length.

    >>> run_length_encode("aaabcc")
    'a3b1c2'
    """''',
        "assert run_length_encode('aaabcc') == 'a3b1c2'\nassert run_length_encode('') == ''\n"
        "assert run_length_encode('zzzzzzzzzzzz') == 'z12'\nassert run_length_encode('abA') == 'a1b1A1'",
    ),
    Problem(
        "balanced",
        '''def is_balanced(text: str) -> bool:
    """Whether every bracket ( [ { in ``text`` is closed by its partner in the right order.

    Characters other than brackets are ignored.
    """''',
        "assert is_balanced('a(b[c]{d})e')\nassert not is_balanced('(]')\nassert not is_balanced('((')\n"
        "assert is_balanced('')\nassert not is_balanced('}{')\nassert is_balanced('{[()()]}')",
    ),
    Problem(
        "intervals",
        '''def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping or touching closed intervals; return them sorted by start.

    >>> merge_intervals([(5, 7), (1, 3), (2, 4)])
    [(1, 4), (5, 7)]
    """''',
        "assert merge_intervals([(5, 7), (1, 3), (2, 4)]) == [(1, 4), (5, 7)]\n"
        "assert merge_intervals([]) == []\nassert merge_intervals([(1, 2), (2, 3)]) == [(1, 3)]\n"
        "assert merge_intervals([(1, 10), (2, 3)]) == [(1, 10)]",
    ),
    Problem(
        "roman",
        '''def roman_to_int(numeral: str) -> int:
    """The value of a Roman numeral such as "MCMXCIV" (1994)."""''',
        "assert roman_to_int('MCMXCIV') == 1994\nassert roman_to_int('III') == 3\n"
        "assert roman_to_int('XLII') == 42\nassert roman_to_int('MMXXVI') == 2026",
    ),
    Problem(
        "frequencies",
        '''def word_frequencies(text: str) -> dict[str, int]:
    """How often each word occurs, case-insensitively; words are runs of letters (a-z)."""''',
        "assert word_frequencies('The cat, the DOG.') == {'the': 2, 'cat': 1, 'dog': 1}\n"
        "assert word_frequencies('') == {}\nassert word_frequencies(\"it's 3 o'clock\") == "
        "{'it': 1, 's': 1, 'o': 1, 'clock': 1}",
    ),
    Problem(
        "flatten",
        '''def flatten(nested: list) -> list:
    """The items of arbitrarily nested lists, in order: flatten([1, [2, [3, []], 4]]) == [1, 2, 3, 4]."""''',
        "assert flatten([1, [2, [3, []], 4]]) == [1, 2, 3, 4]\nassert flatten([]) == []\n"
        "assert flatten([[['a']], 'b']) == ['a', 'b']",
    ),
    Problem(
        "chunks",
        '''def chunks(items: list, size: int) -> list[list]:
    """Split ``items`` into consecutive lists of ``size`` items (the last may be shorter).

    Raises ValueError when ``size`` is less than 1.
    """''',
        "assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\nassert chunks([], 3) == []\n"
        "try:\n    chunks([1], 0)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no ValueError')",
    ),
    Problem(
        "second",
        '''def second_largest(numbers: list[int]) -> int | None:
    """The second largest distinct value, or None when there are fewer than two distinct values."""''',
        "assert second_largest([3, 1, 4, 4, 2]) == 3\nassert second_largest([7, 7]) is None\n"
        "assert second_largest([]) is None\nassert second_largest([-1, -5]) == -5",
    ),
    Problem(
        "snake",
        '''def camel_to_snake(name: str) -> str:
    """Convert a camelCase or PascalCase identifier to snake_case: "parseHTTPResponse" -> "parse_http_response"."""''',
        "assert camel_to_snake('parseHTTPResponse') == 'parse_http_response'\n"
        "assert camel_to_snake('UserId') == 'user_id'\nassert camel_to_snake('simple') == 'simple'",
    ),
    Problem(
        "duration",
        '''def parse_duration(text: str) -> int:
    """Seconds in a duration of hours, minutes and seconds parts, each optional.

    "1h30m" -> 5400, "45s" -> 45, "2h5s" -> 7205.
    """''',
        "assert parse_duration('1h30m') == 5400\nassert parse_duration('45s') == 45\n"
        "assert parse_duration('2h5s') == 7205\nassert parse_duration('10m') == 600",
    ),
    Problem(
        "median",
        '''def median(values: list[float]) -> float:
    """The median of a non-empty list (the mean of the two middle values for an even count)."""''',
        "assert median([3, 1, 2]) == 2\nassert median([4, 1, 3, 2]) == 2.5\nassert median([5]) == 5",
    ),
    Problem(
        "rotate",
        '''def rotate_clockwise(matrix: list[list[int]]) -> list[list[int]]:
    """The matrix turned 90 degrees clockwise: [[1, 2], [3, 4]] -> [[3, 1], [4, 2]]. Works for any m x n."""''',
        "assert rotate_clockwise([[1, 2], [3, 4]]) == [[3, 1], [4, 2]]\n"
        "assert rotate_clockwise([[1, 2, 3]]) == [[1], [2], [3]]\nassert rotate_clockwise([]) == []",
    ),
]

PLAIN_PROMPT = (
    "Complete this Python function. Reply with the whole function in one ```python code block.\n\n"
    "```python\n{stub}\n```"
)
AGENT_PROMPT = "Implement the function below in solution.py.\n\n```python\n{stub}\n```"
CODE_BLOCK = re.compile(r"```(?:python|py)?\n(.*?)```", re.S)


def passes(code: str, tests: str) -> bool:
    """Whether ``code`` followed by ``tests`` runs without error, in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder, "check.py")
        script.write_text(f"{code}\n\n{tests}\n", encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=20, cwd=folder)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0


async def plain(model: Model, problem: Problem) -> tuple[bool, float]:
    start = time.perf_counter()
    response = await model.request(
        [Message.user(PLAIN_PROMPT.format(stub=problem.stub))], [], ModelSettings(max_tokens=1024)
    )
    seconds = time.perf_counter() - start
    blocks = CODE_BLOCK.findall(response.message.text)
    code = max(blocks, key=len) if blocks else response.message.text
    return await asyncio.to_thread(passes, code, problem.tests), seconds


async def agent(
    settings: Settings, model: Model, problem: Problem, seconds_limit: float, aids: list[str] | None
) -> tuple[bool, float, int]:
    workspace = Path(tempfile.mkdtemp(prefix=f"pymanus-floor-{problem.name}-"))
    run_settings = settings.model_copy(
        update={"agent": settings.agent.model_copy(update={"workspace": str(workspace)})}
    )
    runner = equipped_agent(run_settings, model=model, aids=aids)
    start = time.perf_counter()
    steps = 0
    try:
        async with asyncio.timeout(seconds_limit):
            result = await runner.run(AGENT_PROMPT.format(stub=problem.stub))
        steps = result.steps
    except TimeoutError:
        pass
    seconds = time.perf_counter() - start
    solution = workspace / "solution.py"
    code = solution.read_text(encoding="utf-8", errors="replace") if solution.is_file() else ""
    ok = bool(code) and await asyncio.to_thread(passes, code, problem.tests)
    shutil.rmtree(workspace, ignore_errors=True)
    return ok, seconds, steps


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model to measure (default: the configured one)")
    parser.add_argument("--only", help="comma-separated problem names")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per agent run")
    parser.add_argument("--modes", default="plain,agent", help="plain, agent or both")
    parser.add_argument("--aids", help="local aids for the agent: none, all, NAME,... or all,-NAME")
    args = parser.parse_args()
    aids = parse_aids(args.aids)
    overrides = {"model": {"name": args.model}} if args.model else {}
    settings = Settings.load(overrides=overrides)
    model = preset_model(settings)
    problems = [p for p in PROBLEMS if not args.only or p.name in args.only.split(",")]
    modes = args.modes.split(",")
    totals = {mode: [0, 0.0] for mode in modes}
    print(f"model {model.name}; {len(problems)} problems")
    for problem in problems:
        if "plain" in modes:
            ok, seconds = await plain(model, problem)
            totals["plain"][0] += ok
            totals["plain"][1] += seconds
            print(f"{problem.name:12} plain {'PASS' if ok else 'FAIL'} {seconds:6.1f} s", flush=True)
        if "agent" in modes:
            ok, seconds, steps = await agent(settings, model, problem, args.timeout, aids)
            totals["agent"][0] += ok
            totals["agent"][1] += seconds
            print(f"{problem.name:12} agent {'PASS' if ok else 'FAIL'} {seconds:6.1f} s {steps} steps", flush=True)
    for mode, (solved, seconds) in totals.items():
        per = f"{seconds / solved:.1f}" if solved else "-"
        print(f"{mode}: {solved}/{len(problems)} solved, {seconds:.0f} s in all, {per} s per solved problem")
    await model.aclose()


if __name__ == "__main__":
    asyncio.run(main())

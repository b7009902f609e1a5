"""The limits that keep a run bounded: repeated calls and failing tools."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pymanus.messages import ToolCall
from pymanus.tools.toolset import ToolOutcome


def canonical_call(name: str, arguments: dict[str, object] | str) -> str:
    """A key equal for two calls of one tool with the same arguments, in any key order."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return f"{name}:{arguments}"
    return f"{name}:{json.dumps(arguments, sort_keys=True, separators=(',', ':'), default=str)}"


@dataclass
class RepeatGuard:
    """Counts identical calls with identical results; the first repeat earns a hint, ``max_repeats`` ends the run.

    A call whose result changed is not a repeat: running the same test after editing the
    code is progress, and a hint that "repeating will not change anything" would be false.
    """

    max_repeats: int = 3
    _seen: Counter[str] = field(default_factory=Counter)
    _counted: dict[str, int] = field(default_factory=dict)
    """Per call and result: the step that last counted it."""
    _last_step: list[str] = field(default_factory=list)
    """The calls of the last step that made any."""

    def observe(self, outcome: ToolOutcome, shown: str | None = None, *, step: int = 0) -> int:
        """Record a call; return how many times this exact call has now given this result.

        ``shown``: the result as the model saw it, when the run replaced it (a final answer sent back).
        The same call made twice in one response (``step``) counts once: the model had not seen
        its result yet, so it did not repeat itself.
        """
        call = canonical_call(outcome.call.name, outcome.arguments or outcome.call.arguments)
        key = f"{call}\0{outcome.result.text if shown is None else shown}"
        if self._counted.get(key) != step:
            self._counted[key] = step
            self._seen[key] += 1
        return self._seen[key]

    def repeats_last_step(self, calls: Sequence[ToolCall]) -> bool:
        """Record a step's calls; whether the step before made exactly the same ones (whatever their results).

        Calls made again at once, with nothing else run in between, are a loop even when their
        output differs in a detail (a timing, an address).
        """
        made = sorted(canonical_call(call.name, call.arguments) for call in calls)
        repeated = made == self._last_step
        self._last_step = made
        return repeated

    def exhausted(self, count: int) -> bool:
        """Whether a call made ``count`` times should end the run."""
        return self.max_repeats > 0 and count >= self.max_repeats


@dataclass
class FailureGuard:
    """Counts failed calls in a row per tool; a tool past its retry budget ends the run."""

    _streaks: Counter[str] = field(default_factory=Counter)

    def observe(self, outcome: ToolOutcome, budget: int) -> bool:
        """Record an outcome; return True when the tool has failed more than ``budget`` times in a row."""
        name = outcome.call.name
        if outcome.failure is None:
            self._streaks[name] = 0
            return False
        self._streaks[name] += 1
        return self._streaks[name] > budget

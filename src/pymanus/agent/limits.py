"""The bounds of one run: steps, time, repeated calls, answers sent back, and what it may spend."""

from __future__ import annotations

from dataclasses import dataclass, field

from pymanus.messages import Usage


@dataclass(frozen=True)
class Price:
    """What a model costs, per million tokens (in any currency; limits use the same one)."""

    input: float = 0.0
    output: float = 0.0

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage``."""
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class UsageLimits:
    """What one run may spend on its model; ``None`` is no limit.

    Checked before every request: a run whose spending has reached a limit ends in error with
    reason ``"usage_limit"`` and says which limit, never silently. The response that crossed a
    token or cost limit has been paid for, so a run can end past a limit by one response.
    """

    max_requests: int | None = None
    """Model requests (retries inside the gateway are one request)."""
    max_input_tokens: int | None = None
    """Prompt tokens, summed over the requests."""
    max_output_tokens: int | None = None
    """Completion tokens, summed over the requests."""
    max_total_tokens: int | None = None
    """Prompt and completion tokens together."""
    max_cost: float | None = None
    """Cost by the agent's :class:`Price` (no price: nothing is counted)."""

    def exceeded(self, usage: Usage, cost: float) -> str | None:
        """Which limit ``usage`` (and ``cost``) has reached, as a sentence; ``None`` while none is."""
        checks = (
            (self.max_requests, usage.requests, "requests"),
            (self.max_input_tokens, usage.prompt_tokens, "input tokens"),
            (self.max_output_tokens, usage.completion_tokens, "output tokens"),
            (self.max_total_tokens, usage.total_tokens, "total tokens"),
        )
        for limit, spent, what in checks:
            if limit is not None and spent >= limit:
                return f"The run reached its limit of {limit:,} {what} ({spent:,} spent)."
        if self.max_cost is not None and cost >= self.max_cost:
            return f"The run reached its cost limit of {self.max_cost:g} ({cost:.4f} spent)."
        return None


@dataclass
class RunLimits:
    """The bounds of one run."""

    max_steps: int = 30
    timeout: float | None = None
    """Wall-clock seconds for the whole run (``None``: no limit)."""
    max_repeats: int = 3
    """Identical calls with identical results that end the run as stuck; the first repeat only earns a hint."""
    max_rejections: int = 2
    """Final answers the answer checks may send back before one is accepted anyway."""
    usage: UsageLimits = field(default_factory=UsageLimits)
    """Requests, tokens and cost the run may spend."""
    wrap_up: bool = True
    """A run stuck repeating a call that *succeeds* gets one last request, offering only
    ``terminate``, for its final answer; without it, or when that answer is not accepted,
    the run ends stuck."""

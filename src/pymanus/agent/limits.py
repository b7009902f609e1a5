"""The bounds of one run: steps, time, repeated calls and answers sent back."""

from __future__ import annotations

from dataclasses import dataclass


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
    wrap_up: bool = True
    """A run stuck repeating a call that *succeeds* gets one last request, offering only
    ``terminate``, for its final answer; without it, or when that answer is not accepted,
    the run ends stuck."""

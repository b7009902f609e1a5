"""Responses tried before they run: a step sampled again while a trial says its calls would not do.

A run may be given a :data:`~pymanus.agent.hooks.CallTrial`: ``trial(task, calls, context)`` says
whether a response's calls would pass the task's own test when made, and if not, why
(a :class:`~pymanus.agent.hooks.TrialResult`), or ``None`` when they cannot be judged (they are not
the kind of calls it tries). When the first response of a step fails its trial, the step's request
is sampled again, more freely and with the trial's report added to it, up to
:attr:`~pymanus.agent.limits.RunLimits.trial_samples` times: the first response whose calls pass
is the one that runs; when none does, the first response runs, as it would have without a trial.
The report is what a draw needs: asked again without it, the 1.5B wrote the same wrong ``slugify``
in other words.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from pymanus.agent.events import AnyEvent
from pymanus.agent.hooks import TrialResult
from pymanus.errors import ModelOutputError
from pymanus.models.base import ModelResponse

logger = logging.getLogger(__name__)


async def tried_response(
    first: ModelResponse,
    sample: Callable[[str], AsyncIterator[AnyEvent | ModelResponse]],
    trial: Callable[[ModelResponse], Awaitable[TrialResult | None]],
    samples: int,
) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
    """Yield the events of the samples drawn, then the response to run.

    ``sample(report)`` draws another response for the same request with ``report`` added (its
    events, then the response); ``trial`` tries a response's calls.
    """
    tried = await trial(first) if samples > 0 and first.message.tool_calls else None
    if tried is None or tried.passed:
        yield first
        return
    for drawn in range(1, samples + 1):
        candidate = None
        try:
            async for item in sample(tried.report):
                if isinstance(item, ModelResponse):
                    candidate = item
                else:
                    yield item
        except ModelOutputError as exc:  # an unreadable sample is one that does not pass
            logger.info("a sampled response could not be read (%s)", exc)
            continue
        if candidate is not None and candidate.message.tool_calls and _passed(await trial(candidate)):
            logger.info("sample %d of %d passed the trial its step's first response failed", drawn, samples)
            yield candidate
            return
    logger.info("no sample passed the trial; the step's first response runs")
    yield first


def _passed(result: TrialResult | None) -> bool:
    return result is not None and result.passed

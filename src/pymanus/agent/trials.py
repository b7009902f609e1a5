"""Responses tried before they run: a step sampled again while a trial says its calls would not do.

A run may be given a :data:`CallTrial`: ``trial(task, calls, context)`` says whether a response's
calls would pass the task's own test when made (``True``), would not (``False``), or cannot be
judged (``None``: they are not the kind of calls it tries). When the first response of a step
fails its trial, the step's request is sampled again, more freely, up to
:attr:`~pymanus.agent.limits.RunLimits.trial_samples` times: the first response whose calls pass
is the one that runs; when none does, the first response runs, as it would have without a trial.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from pymanus.agent.events import AnyEvent
from pymanus.errors import ModelOutputError
from pymanus.models.base import ModelResponse

logger = logging.getLogger(__name__)


async def tried_response(
    first: ModelResponse,
    sample: Callable[[], AsyncIterator[AnyEvent | ModelResponse]],
    passes: Callable[[ModelResponse], Awaitable[bool | None]],
    samples: int,
) -> AsyncGenerator[AnyEvent | ModelResponse, None]:
    """Yield the events of the samples drawn, then the response to run.

    ``sample`` draws another response for the same request (its events, then the response);
    ``passes`` is the trial of a response's calls.
    """
    if samples < 1 or not first.message.tool_calls or await passes(first) is not False:
        yield first
        return
    for drawn in range(1, samples + 1):
        candidate = None
        try:
            async for item in sample():
                if isinstance(item, ModelResponse):
                    candidate = item
                else:
                    yield item
        except ModelOutputError as exc:  # an unreadable sample is one that does not pass
            logger.info("a sampled response could not be read (%s)", exc)
            continue
        if candidate is not None and candidate.message.tool_calls and await passes(candidate):
            logger.info("sample %d of %d passed the trial its step's first response failed", drawn, samples)
            yield candidate
            return
    logger.info("no sample passed the trial; the step's first response runs")
    yield first

"""What of the history is sent each call: every request fits, and no tool call loses its result.

The loop keeps the whole conversation (``RunResult.messages``); :class:`WindowedModel`, a
model wrapper, fits the messages of each request before passing them on. The fitting itself
is :class:`ContextWindow`, one per conversation, which knows nothing of models: it is given
a token counter and, optionally, a function that writes summaries.

A conversation is read as a *head* (the system prompt and the task, the first user
message: always sent) and *turns*: an assistant message with its tool calls and the tool
messages that answer them are one turn, never split; any other message is a turn of its
own. When the request is over budget, these strategies apply in order, each only while it
is still over:

1. cut long tool results of old turns (their head is kept, with a marker);
2. drop images (screenshots) from old turns;
3. cover the oldest turns with a summary the model writes (computed when the cut moves,
   extended from the previous summary, never recomputed), or drop them with a marker.
   The cut moves in jumps, down to ``refill`` of the budget, so the next steps append to
   an unchanged prefix (a provider's prompt cache keeps working) and the cost of a step
   stays flat;
4. as a last resort, cut long tool results of the latest turns too.

The latest ``keep_recent`` turns are never summarised or dropped. A request that still
does not fit raises :class:`~pymanus.errors.ContextOverflowError`; none is sent oversize.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pymanus.agent.extensions import Extension
from pymanus.context.tokens import TokenCounter, estimate_tool_tokens
from pymanus.context.turns import Turn, cut_tool_result, fingerprint, split_turns, without_images
from pymanus.errors import ContextOverflowError, ModelError
from pymanus.messages import Message, Usage
from pymanus.models.base import Model, ModelResponse, ModelSettings, StreamItem, ToolDefinition, WrapperModel
from pymanus.tools.tool import ToolContext

if TYPE_CHECKING:
    from pymanus.config import Settings

logger = logging.getLogger("pymanus.context")

Summarise = Callable[[str | None, list[Message]], Awaitable[str]]
"""``summarise(previous_summary, messages)``: a summary of what ``previous_summary`` covered
followed by ``messages``."""

SUMMARY_HEADER = "[Summary of the earlier steps of this task (their messages no longer fit in the context window)]"

_SCOPE: ContextVar[Mapping[str, Any]] = ContextVar("pymanus_context_scope", default=MappingProxyType({}))


@dataclass(frozen=True)
class WindowPolicy:
    """How a :class:`ContextWindow` makes a request fit (``[context]`` in the config)."""

    cut_tool_results: bool = True
    """Cut long tool results of old turns (keep the head, add a marker)."""
    tool_result_tokens: int = 400
    """A cut tool result keeps about this many tokens."""
    drop_images: bool = True
    """Replace the images of old turns with a short note."""
    summarise: bool = True
    """Cover the oldest turns with a model-written summary (else they are dropped with a note)."""
    keep_recent: int = 3
    """The latest turns, always sent (only their long tool results may be cut, as a last resort)."""
    refill: float = 0.7
    """When turns are summarised or dropped, the request is brought down to this share of the budget."""
    summary_tokens: int = 600
    """The most tokens a summary may take."""


@dataclass
class Trim:
    """What one fitting did (logged as one ``pymanus.context`` record)."""

    budget: int
    tokens_before: int
    tokens_after: int = 0
    cut_results: int = 0
    dropped_images: int = 0
    summarised: int = 0
    """Messages newly covered by the summary."""
    dropped: int = 0
    """Messages newly dropped without a summary."""
    covered: int = 0
    """Messages of the history not sent verbatim (summarised or dropped, this call or before)."""
    last_resort: int = 0
    """Tool results of the latest turns that had to be cut."""

    @property
    def changed(self) -> bool:
        """Whether anything of the history was left out or shortened."""
        return self.tokens_after != self.tokens_before or self.covered > 0

    def describe(self) -> str:
        """One line for the log."""
        parts = [
            f"{n} {what}"
            for n, what in (
                (self.cut_results, "old tool results cut"),
                (self.dropped_images, "images dropped"),
                (self.summarised, "messages summarised"),
                (self.dropped, "messages dropped"),
                (self.last_resort, "recent tool results cut"),
            )
            if n
        ]
        kept = f"; {self.covered} earlier messages covered" if self.covered else ""
        return (", ".join(parts) or "earlier cut kept") + kept


@dataclass
class _Cover:
    """The oldest turns not sent verbatim: how many, and the summary standing for them."""

    turns: int = 0
    messages: int = 0
    summary: str | None = None
    summarised_messages: int = 0
    mark: str = ""
    """Fingerprint of the last covered turn, to recognise the same conversation next call."""
    cutting: bool = False
    """Old tool results are cut (the conversation outgrew its budget once)."""


@dataclass
class ContextWindow:
    """Fits the requests of one conversation into ``budget`` tokens.

    Args:
        budget: tokens the messages may take (the window less the completion's reserve
            and the tool definitions; :class:`WindowedModel` works it out per request).
        policy: which strategies apply and how far.
        counter: counts message tokens (cached per message).
    """

    policy: WindowPolicy = field(default_factory=WindowPolicy)
    counter: TokenCounter = field(default_factory=TokenCounter)
    _cover: _Cover = field(default_factory=_Cover)
    _cut_cache: dict[tuple[int, int], tuple[Message, Message]] = field(default_factory=dict)
    _note: Message | None = None

    async def fit(
        self, messages: Sequence[Message], budget: int, summarise: Summarise | None = None
    ) -> tuple[list[Message], Trim]:
        """The messages to send in place of ``messages``, within ``budget`` tokens, and what was done.

        Raises :class:`ContextOverflowError` when even the head, a summary and the latest
        turns do not fit.
        """
        count = self.counter.messages
        head, turns = split_turns(messages)
        trim = Trim(budget=budget, tokens_before=count(messages))
        if not self._same_conversation(turns):
            self._cover = _Cover()
        if self._cover.turns == 0 and not self._cover.cutting and trim.tokens_before <= budget:
            trim.tokens_after = trim.tokens_before
            return list(messages), trim

        live = [list(turn) for turn in turns[self._cover.turns :]]
        recent = min(self.policy.keep_recent, len(live))
        fitted = self._assemble(head, live)
        # Once a conversation has outgrown its budget, old results stay cut (each as it ages),
        # so the prefix of later requests does not flip between cut and whole.
        if (self._cover.cutting or count(fitted) > budget) and self.policy.cut_tool_results:
            self._cover.cutting = True
            trim.cut_results = self._cut_results(live[: len(live) - recent])
            fitted = self._assemble(head, live)
        if count(fitted) > budget and self.policy.drop_images:
            trim.dropped_images = self._drop_images(live[: len(live) - recent])
            fitted = self._assemble(head, live)
        if count(fitted) > budget and len(live) > recent:
            covered_before = self._cover.turns
            take = await self._cover_oldest(head, live, recent, budget, trim, summarise)
            if take:
                self._cover.mark = fingerprint(turns[covered_before + take - 1])
                live = live[take:]
                fitted = self._assemble(head, live)
        if count(fitted) > budget and self.policy.cut_tool_results:
            trim.last_resort = self._cut_results(live[len(live) - recent :])
            fitted = self._assemble(head, live)
        trim.tokens_after = count(fitted)
        trim.covered = self._cover.messages
        if trim.tokens_after > budget:
            raise ContextOverflowError(
                f"the request does not fit the context window even after trimming: it needs "
                f"{trim.tokens_after} tokens and {budget} are available for messages (system prompt and task: "
                f"{count(head)} tokens; latest {recent} turns: {sum(count(t) for t in live[len(live) - recent :])})"
            )
        return fitted, trim

    # -- the strategies --------------------------------------------------------------------
    def _cut_results(self, turns: list[Turn]) -> int:
        """Cut, in place, the tool results of ``turns`` longer than the policy allows."""
        keep = self.policy.tool_result_tokens
        cut = 0
        for turn in turns:
            for index, message in enumerate(turn):
                if message.role != "tool" or self.counter.message(message) <= keep + 16:
                    continue
                shorter = self._cached_cut(message, keep)
                if shorter is not message:
                    turn[index] = shorter
                    cut += 1
        return cut

    def _cached_cut(self, message: Message, keep: int) -> Message:
        # The same old result is cut at every step: keep the cut copy, so it is counted once.
        key = (id(message), keep)
        hit = self._cut_cache.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        shorter = cut_tool_result(message, keep)
        if shorter.text == message.text:
            shorter = message
        if len(self._cut_cache) > 4096:
            self._cut_cache.clear()
        self._cut_cache[key] = (message, shorter)
        return shorter

    @staticmethod
    def _drop_images(turns: list[Turn]) -> int:
        dropped = 0
        for turn in turns:
            for index, message in enumerate(turn):
                if message.images:
                    dropped += len(message.images)
                    turn[index] = without_images(message)
        return dropped

    async def _cover_oldest(
        self,
        head: list[Message],
        live: list[Turn],
        recent: int,
        budget: int,
        trim: Trim,
        summarise: Summarise | None,
    ) -> int:
        """Move the cut forward (summarising or dropping the turns it passes) down to the refill target;
        the number of turns it passed."""
        count = self.counter.messages
        use_summary = self.policy.summarise and summarise is not None
        target = int(budget * self.policy.refill)
        # The cover note's size once written: a summary takes at most summary_tokens.
        note_tokens = self.policy.summary_tokens + 40 if use_summary else 40
        size = count(head) + note_tokens + sum(count(turn) for turn in live)
        take = 0
        while take < len(live) - recent and size > target:
            size -= count(live[take])
            take += 1
        if take == 0:
            return 0
        passed = [message for turn in live[:take] for message in turn]
        cover = self._cover
        if use_summary and summarise is not None:
            try:
                cover.summary = await summarise(cover.summary, passed)
                cover.summarised_messages = cover.messages + len(passed)
                trim.summarised = len(passed)
            except ModelError as exc:
                logger.warning("summary failed (%s); the oldest turns are dropped instead", exc)
                trim.dropped = len(passed)
        else:
            trim.dropped = len(passed)
        cover.turns += take
        cover.messages += len(passed)
        return take

    # -- assembly --------------------------------------------------------------------------
    def _assemble(self, head: list[Message], live: list[Turn]) -> list[Message]:
        return [*head, *self._cover_note(), *(m for turn in live for m in turn)]

    def _cover_note(self) -> list[Message]:
        cover = self._cover
        if cover.messages == 0:
            return []
        lines = []
        if cover.summary is not None:
            lines += [SUMMARY_HEADER, cover.summary.strip()]
        dropped = cover.messages - cover.summarised_messages
        if dropped:
            lines.append(f"[{dropped} earlier messages were removed to fit the context window.]")
        note = self._cached_note("\n".join(lines))
        return [note]

    def _cached_note(self, text: str) -> Message:
        # One message object while the note is unchanged, so its count is cached.
        if self._note is None or self._note.content != text:
            self._note = Message.user(text)
        return self._note

    def _same_conversation(self, turns: list[Turn]) -> bool:
        """Whether ``turns`` continue the conversation the cover was made for."""
        cover = self._cover
        if cover.turns == 0:
            return True
        return len(turns) > cover.turns and fingerprint(turns[cover.turns - 1]) == cover.mark


def conversation_key(messages: Sequence[Message]) -> str:
    """Names a conversation by its head (system prompt and task): one window per key."""
    head, _ = split_turns(messages)
    return fingerprint(head)


class WindowedModel(WrapperModel):
    """A model whose every request is fitted into its context window first.

    Args:
        wrapped: the model called.
        context_window: tokens the model accepts (default: the wrapped model's; without
            either, requests pass unchanged).
        policy: the strategies (see :class:`WindowPolicy`).
        reserve_tokens: tokens kept for the completion when a request sets no ``max_tokens``.
        count_text: counts the tokens of a text (default: the innermost model's own tokenizer
            when it has one, as local models do, else the calibrated estimate).
        exact: check each near-full request with the wrapped model's own ``count_tokens``
            (its tokenizer; default: when the innermost model has one, as local models do).
        select_tools: picks the tools offered to each request (see
            :mod:`pymanus.context.tool_selection`); ``None`` offers all.

    When the endpoint still answers that a request is too long
    (:class:`~pymanus.errors.ContextOverflowError`), the counts are taken to be low by the
    ratio it reports (or by a quarter when it reports none), and the request is fitted
    again and sent once more; the correction holds for later requests. The tokens spent on
    summaries are added to the usage of the response that needed them.
    """

    def __init__(
        self,
        wrapped: Model,
        *,
        context_window: int | None = None,
        policy: WindowPolicy | None = None,
        reserve_tokens: int = 1024,
        count_text: Callable[[str], int] | None = None,
        exact: bool | None = None,
        select_tools: ToolChooser | None = None,
        max_conversations: int = 64,
    ) -> None:
        super().__init__(wrapped)
        self.window_tokens = context_window
        self.policy = policy or WindowPolicy()
        self.reserve_tokens = reserve_tokens
        self.counter = TokenCounter(count_text or _own_text_counter(wrapped))
        self.exact = _has_own_tokenizer(wrapped) if exact is None else exact
        self.select_tools = select_tools
        self.correction = 1.0
        """Real tokens per counted token, as the endpoint's overflow errors or exact counts showed."""
        self.endpoint_window: int | None = None
        """The window an endpoint's overflow error reported, when smaller than the configured one."""
        self._sent = 0
        self._windows: OrderedDict[str, ContextWindow] = OrderedDict()
        self._max_conversations = max_conversations

    def __repr__(self) -> str:
        return f"WindowedModel({self.wrapped!r})"

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """The wrapped model's answer to the fitted request."""
        fitted, offered, spent = await self._fit(messages, tools, settings)
        try:
            response = await self.wrapped.request(fitted, offered, settings)
        except ContextOverflowError as exc:
            self._overflowed(exc, self._sent)
            fitted, offered, more = await self._fit(messages, tools, settings)
            spent = spent + more
            response = await self.wrapped.request(fitted, offered, settings)
        return _with_usage(response, spent)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """The wrapped model's stream for the fitted request (fitted again once on an overflow)."""
        fitted, offered, spent = await self._fit(messages, tools, settings)
        for attempt in (1, 2):
            started = False
            try:
                async for item in self.wrapped.stream(fitted, offered, settings):
                    started = True
                    yield _with_usage(item, spent) if isinstance(item, ModelResponse) else item
                return
            except ContextOverflowError as exc:
                if started or attempt == 2:
                    raise
                self._overflowed(exc, self._sent)
                fitted, offered, more = await self._fit(messages, tools, settings)
                spent = spent + more

    def window_for(self, messages: Sequence[Message]) -> ContextWindow:
        """The :class:`ContextWindow` of the conversation ``messages`` belong to."""
        key = conversation_key(messages)
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = ContextWindow(self.policy, self.counter)
            if len(self._windows) > self._max_conversations:
                self._windows.popitem(last=False)
        self._windows.move_to_end(key)
        return window

    async def _fit(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> tuple[list[Message], list[ToolDefinition], Usage]:
        offered = list(tools) if self.select_tools is None else self.select_tools(messages, tools, settings)
        total = self.window_tokens or self.wrapped.context_window
        if total is not None and self.endpoint_window is not None:
            total = min(total, self.endpoint_window)
        if total is None:
            return list(messages), offered, Usage()
        window = self.window_for(messages)
        spent = Usage()

        async def summarise(previous: str | None, covered: list[Message]) -> str:
            nonlocal spent
            from pymanus.context.summary import summarise as write_summary

            text, usage = await write_summary(
                self.wrapped,
                previous,
                covered,
                max_tokens=self.policy.summary_tokens,
                request_tokens=int(total / self.correction) - self.policy.summary_tokens,
            )
            spent = spent + usage
            return text

        reserve = settings.max_tokens or self.reserve_tokens
        available = total - reserve
        tool_tokens = estimate_tool_tokens(offered)
        for _ in range(3):
            budget = int(available / self.correction) - tool_tokens
            fitted, trim = await window.fit(messages, budget, summarise)
            if not self.exact:
                break
            real = self.wrapped.count_tokens(fitted) + tool_tokens
            if trim.tokens_after:  # learn the ratio early, before the window fills (summaries need it)
                self.correction = max(self.correction, real / (trim.tokens_after + tool_tokens))
            if real <= available:
                break
            # The tokenizer counts more than the estimate: fit again with the counts scaled up.
            self.correction = max(self.correction, real / max(trim.tokens_after + tool_tokens, 1)) * 1.02
        if trim.changed:
            _log_trim(trim, self.name, tool_tokens)
        self._sent = trim.tokens_after + tool_tokens
        return fitted, offered, spent

    def _overflowed(self, error: ContextOverflowError, sent: int) -> None:
        """Learn from an endpoint's overflow error: its real window, and how low the counts were."""
        found = _OVERFLOW_NUMBERS.search(str(error))
        limit, requested = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
        if requested > limit > 0:
            self.endpoint_window = limit
            if sent and requested > sent * self.correction:
                self.correction = requested / sent
        else:  # nothing to learn from: assume the counts are a third too low
            self.correction *= 4 / 3
        self.correction *= 1.02  # a margin: the numbers are the endpoint's, the counts ours
        logger.warning(
            "%s: the endpoint found the request too long (%s); fitting it again (window %s, counts scaled by %.2f)",
            self.name,
            error,
            self.endpoint_window,
            self.correction,
            extra={
                **_run_scope(),
                "event": "context_overflow",
                "model": self.name,
                "endpoint_window": self.endpoint_window,
                "correction": self.correction,
            },
        )


ToolChooser = Callable[[Sequence[Message], Sequence[ToolDefinition], ModelSettings], list[ToolDefinition]]
"""``choose(messages, tools, settings)``: the tools to offer this request."""

_OVERFLOW_NUMBERS = re.compile(r"(?:maximum context length|context window) is (\d+) tokens\D+?(\d+) tokens", re.I)


def _innermost(model: Model) -> Model:
    while isinstance(model, WrapperModel):
        model = model.wrapped
    return model


def _has_own_tokenizer(model: Model) -> bool:
    return type(_innermost(model)).count_tokens is not Model.count_tokens


def _own_text_counter(model: Model) -> Callable[[str], int] | None:
    """The innermost model's own text counter (its tokenizer), if it has one."""
    inner = _innermost(model)
    return inner.count_text if type(inner).count_text is not Model.count_text else None


def _with_usage(response: ModelResponse, spent: Usage) -> ModelResponse:
    if spent == Usage():
        return response
    return response.model_copy(update={"usage": response.usage + spent})


def _run_scope() -> dict[str, Any]:
    """The run id and step of the call, when :class:`WindowScope` set them."""
    return dict(_SCOPE.get())


class WindowScope(Extension):
    """Tells :class:`WindowedModel` which run and step its requests belong to, for its log records.

    The model sees only messages; this extension, called by the loop right before each
    request (the briefing before the first, the reminder before the others), records the
    run id and step in a context variable of the run's task. It adds no text.
    """

    name = "context_scope"

    def briefing(self, task: str, context: ToolContext) -> None:
        _SCOPE.set({"run_id": context.run_id})

    def reminder(self, task: str, context: ToolContext) -> None:
        _SCOPE.set({"run_id": context.run_id, "step": context.step})


def _log_trim(trim: Trim, model: str, tool_tokens: int) -> None:
    logger.info(
        "context trimmed for %s: %d -> %d tokens (budget %d): %s",
        model,
        trim.tokens_before,
        trim.tokens_after,
        trim.budget,
        trim.describe(),
        extra={
            **_run_scope(),
            "event": "context_trim",
            "model": model,
            "tokens_before": trim.tokens_before,
            "tokens_after": trim.tokens_after,
            "budget": trim.budget,
            "tool_tokens": tool_tokens,
            "cut_results": trim.cut_results,
            "dropped_images": trim.dropped_images,
            "summarised": trim.summarised,
            "dropped": trim.dropped,
            "covered": trim.covered,
            "last_resort": trim.last_resort,
        },
    )


def windowed_model(model: Model, settings: Settings) -> Model:
    """``model`` fitted into its window as ``settings`` say (``[model]`` and ``[context]``).

    Unchanged when ``[context] enabled`` is off, or when no window is known (neither
    ``[model] context_window`` nor the model's own, as a local model's ``n_ctx``).
    """
    context = settings.context
    window = settings.model.context_window or model.context_window
    if not context.enabled or window is None:
        return model
    local = settings.model.name.startswith("local:")
    threshold = context.tool_selection if (not local or context.tool_selection_local) else 0
    count_text = None
    if settings.model.tokenizer:
        from pymanus.context.tokens import tokenizer_file_counter

        count_text = tokenizer_file_counter(settings.model.tokenizer)
    chooser = None
    if threshold:
        from pymanus.context.tool_selection import tool_selector

        chooser = tool_selector(settings, threshold)
    policy = WindowPolicy(
        cut_tool_results=context.cut_tool_results,
        tool_result_tokens=context.tool_result_tokens,
        drop_images=context.drop_images,
        summarise=context.summarise,
        keep_recent=context.keep_recent,
    )
    return WindowedModel(
        model,
        context_window=window,
        policy=policy,
        reserve_tokens=context.reserve_tokens,
        count_text=count_text,
        select_tools=chooser,
    )

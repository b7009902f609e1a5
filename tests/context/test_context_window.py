"""ContextWindow: each strategy, the pairing invariant, the summary cache, the overflow error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.chat_server import validate_request
from pymanus.context.tokens import TokenCounter
from pymanus.context.turns import CUT_MARKER, IMAGE_NOTE, cut_text, split_turns
from pymanus.context.window import SUMMARY_HEADER, ContextWindow, WindowPolicy
from pymanus.errors import ContextOverflowError
from pymanus.messages import ImagePart, Message, TextPart, ToolCall

SYSTEM = Message.system("You are a test agent.")
TASK = Message.user("TASK: count the lines of every file.")


def step(i: int, result: str, calls: int = 1) -> list[Message]:
    """One turn: an assistant message with ``calls`` tool calls and their results."""
    ids = [f"c{i}_{k}" for k in range(calls)]
    out = [Message.assistant(f"step {i}", [ToolCall(id=c, name="read", arguments=json.dumps({"i": i})) for c in ids])]
    out += [Message.tool(c, "read", f"result {i}/{k}: {result}") for k, c in enumerate(ids)]
    return out


def conversation(steps: int, result: str = "x" * 2000) -> list[Message]:
    messages = [SYSTEM, TASK]
    for i in range(steps):
        messages += step(i, result)
    return messages


def valid(messages: list[Message]) -> bool:
    body = {"model": "m", "messages": [m.to_wire() for m in messages]}
    problem = validate_request(body)
    assert problem is None, problem.message
    return True


class Summaries:
    """A summariser that records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[Message]]] = []

    async def __call__(self, previous: str | None, messages: list[Message]) -> str:
        self.calls.append((previous, messages))
        return f"summary #{len(self.calls)} of {len(messages)} more messages"


counter = TokenCounter()


async def test_a_request_that_fits_is_sent_unchanged() -> None:
    messages = conversation(3, "short")
    fitted, trim = await ContextWindow().fit(messages, 10_000)
    assert fitted == messages and all(a is b for a, b in zip(fitted, messages, strict=True))
    assert not trim.changed


async def test_old_tool_results_are_cut_first_keeping_their_head() -> None:
    messages = conversation(6)
    budget = counter.messages(messages) - 500
    fitted, trim = await ContextWindow(WindowPolicy(keep_recent=2, tool_result_tokens=100)).fit(messages, budget)
    assert valid(fitted) and counter.messages(fitted) <= budget
    assert len(fitted) == len(messages) and trim.cut_results >= 1 and trim.summarised == trim.dropped == 0
    cut = [m for m in fitted if m.role == "tool" and "cut to fit the context window" in m.text]
    assert cut and all(m.text.startswith("result ") for m in cut)
    assert fitted[-4:] == messages[-4:]  # the two latest turns are whole


def test_cut_text_keeps_the_head_and_says_how_much_went() -> None:
    text = "line\n" * 1000
    short = cut_text(text, 50)
    assert short.startswith("line\nline\n") and len(short) < 300
    removed = len(text) - short.index("\n[...")
    assert CUT_MARKER.format(cut=removed) in short
    assert cut_text("small", 50) == "small"


async def test_old_images_are_dropped_before_turns() -> None:
    image = ImagePart(url="data:image/png;base64," + "A" * 100)
    messages = [SYSTEM, TASK]
    for i in range(4):
        messages += step(i, "ok")
        messages.append(Message.user([TextPart(text=f"screenshot {i}"), image]))
    budget = counter.messages(messages) - 800
    fitted, trim = await ContextWindow(WindowPolicy(keep_recent=2)).fit(messages, budget)
    assert valid(fitted) and counter.messages(fitted) <= budget
    assert trim.dropped_images >= 2 and trim.summarised == trim.dropped == 0
    assert fitted[-1].images  # the latest screenshot is still seen
    assert IMAGE_NOTE in fitted[4].text and not fitted[4].images


async def test_oldest_turns_are_summarised_once_and_the_summary_extended() -> None:
    summaries = Summaries()
    window = ContextWindow(WindowPolicy(keep_recent=2, summary_tokens=100))
    budget = 8000
    history = conversation(100)
    sent = []
    for n in range(2, len(history) + 1, 2):  # one request per step, the history growing
        fitted, trim = await window.fit(history[:n], budget, summaries)
        assert valid(fitted) and counter.messages(fitted) <= budget
        assert fitted[:2] == [SYSTEM, TASK]
        sent.append((fitted, trim.summarised > 0))
    # Few summary calls for 100 steps, each covering only messages never summarised before.
    assert 1 <= len(summaries.calls) <= 20
    covered = [m for _, batch in summaries.calls for m in batch]
    call_ids = [m.tool_call_id for m in covered if m.role == "tool"]
    assert len(call_ids) == len(set(call_ids))
    assert summaries.calls[0][0] is None
    for i, (previous, _) in enumerate(summaries.calls[1:], start=1):  # each extends the one before
        assert previous == f"summary #{i} of {len(summaries.calls[i - 1][1])} more messages"
    last = sent[-1][0]
    assert last[2].text.startswith(SUMMARY_HEADER) and f"summary #{len(summaries.calls)}" in last[2].text
    # Between moves of the cut, a request repeats the one before up to the result that has just
    # aged out of the latest turns (and is cut now): a provider's prompt cache keeps working.
    first_move = next(i for i, (_, moved) in enumerate(sent) if moved)
    for (before, _), (after, moved) in zip(sent[first_move:], sent[first_move + 1 :], strict=False):
        if not moved:
            stable = len(before) - 2 * 2 - 2
            assert after[:stable] == before[:stable]


async def test_without_a_summariser_the_oldest_turns_are_dropped_with_a_note() -> None:
    messages = conversation(30)
    fitted, trim = await ContextWindow(WindowPolicy(keep_recent=3)).fit(messages, 3000)
    assert valid(fitted) and counter.messages(fitted) <= 3000
    assert trim.dropped > 0 and trim.summarised == 0
    assert f"[{trim.dropped} earlier messages were removed" in fitted[2].text
    assert fitted[-6:] == messages[-6:]


async def test_parallel_calls_stay_with_all_their_results() -> None:
    messages = [SYSTEM, TASK]
    for i in range(20):
        messages += step(i, "y" * 800, calls=3)
    fitted, _ = await ContextWindow(WindowPolicy(summarise=False)).fit(messages, 2500)
    assert valid(fitted) and counter.messages(fitted) <= 2500


async def test_a_huge_latest_result_is_cut_as_a_last_resort() -> None:
    messages = [*conversation(2, "short"), *step(2, "z" * 100_000)]
    fitted, trim = await ContextWindow().fit(messages, 2000)
    assert valid(fitted) and counter.messages(fitted) <= 2000
    assert trim.last_resort == 1 and fitted[-1].tool_call_id == messages[-1].tool_call_id


async def test_a_task_larger_than_the_window_is_a_clear_error() -> None:
    messages = [SYSTEM, Message.user("x" * 40_000), *step(0, "ok")]
    with pytest.raises(ContextOverflowError, match=r"does not fit the context window even after trimming.*system"):
        await ContextWindow().fit(messages, 5000)


async def test_another_conversation_resets_the_cut() -> None:
    window = ContextWindow(WindowPolicy(summarise=False))
    first = conversation(30)
    await window.fit(first, 3000)
    other = [SYSTEM, TASK, *step(99, "short")]  # same head, different history
    fitted, trim = await window.fit(other, 3000)
    assert fitted == other and trim.covered == 0


def test_split_turns_keeps_calls_with_their_results() -> None:
    messages = conversation(2, "r")
    head, turns = split_turns([*messages, Message.user("reminder")])
    assert head == [SYSTEM, TASK]
    assert [len(t) for t in turns] == [2, 2, 1]


# -- the invariant, over random conversations ---------------------------------------------

turn_spec = st.one_of(
    st.tuples(st.just("calls"), st.integers(1, 3), st.integers(0, 6000)),
    st.tuples(st.just("user"), st.integers(0, 1), st.integers(0, 800)),
    st.tuples(st.just("text"), st.just(0), st.integers(0, 800)),
)


def build(specs: list[tuple[str, int, int]]) -> list[Message]:
    messages = [SYSTEM, TASK]
    for i, (kind, n, size) in enumerate(specs):
        if kind == "calls":
            messages += step(i, "r" * size, calls=n)
        elif kind == "user":
            parts: list[TextPart | ImagePart] = [TextPart(text="u" * size)]
            if n:
                parts.append(ImagePart(url="data:image/png;base64,AAAA"))
            messages.append(Message.user(parts))
        else:
            messages.append(Message.assistant("a" * size))
    return messages


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(turn_spec, min_size=0, max_size=40),
    budget=st.integers(300, 12_000),
    summarise=st.booleans(),
    keep_recent=st.integers(1, 4),
)
async def test_fitted_conversations_are_valid_and_within_budget(
    specs: list[tuple[str, int, int]], budget: int, summarise: bool, keep_recent: int
) -> None:
    messages = build(specs)
    policy = WindowPolicy(keep_recent=keep_recent, summary_tokens=80)
    window = ContextWindow(policy)
    try:
        fitted, _ = await window.fit(messages, budget, Summaries() if summarise else None)
    except ContextOverflowError:
        # Only when what is always kept cannot fit: the head, the latest turns with results cut, and
        # (when older turns were left out) the note standing for them: a summary or a line.
        _, turns = split_turns(messages)
        recent = [m for t in turns[-keep_recent:] for m in t]
        note = (policy.summary_tokens + 60 if summarise else 30) if len(turns) > keep_recent else 0
        floor = counter.messages([SYSTEM, TASK]) + note
        floor += sum(
            min(counter.message(m), policy.tool_result_tokens + 40) if m.role == "tool" else counter.message(m)
            for m in recent
        )
        assert floor > budget
        return
    assert valid(fitted)
    assert counter.messages(fitted) <= budget
    assert fitted[:2] == [SYSTEM, TASK]
    # Every latest turn is there (its results possibly cut), in order, at the end.
    _, turns = split_turns(messages)
    latest = [m for t in turns[-keep_recent:] for m in t]
    tail = fitted[len(fitted) - len(latest) :] if latest else []
    assert [(m.role, m.tool_call_id) for m in tail] == [(m.role, m.tool_call_id) for m in latest]
    if counter.messages(messages) <= budget:
        assert fitted == messages

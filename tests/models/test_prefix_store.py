"""Prompt heads kept on disk: a later process loads the system prompt's evaluation (real llama.cpp)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from helpers.local_models import ADD, SMALL, requires_model
from pymanus.messages import Message
from pymanus.models import local
from pymanus.models.base import ModelResponse, ModelSettings
from pymanus.models.local import LocalModel
from pymanus.models.prefix_store import KEPT_FILES, MIN_TOKENS

pytestmark = [pytest.mark.local_model, requires_model]

RULES = " ".join(f"Rule {n}: check every result twice before you answer." for n in range(1, 40))
GREEDY = ModelSettings(seed=1, temperature=0.0, max_tokens=80, parallel_tool_calls=False)


@pytest.fixture(scope="module")
def small() -> LocalModel:
    return LocalModel.from_spec(SMALL)


def _conversation(system: str = RULES) -> list[Message]:
    return [Message.system(system), Message.user("What is 2 + 40? Use the tool.")]


def _new_process(model: LocalModel) -> None:
    """Forget the context's cache, as a fresh process starts."""
    model._runtime.llm.n_tokens = 0


def _said(response: ModelResponse) -> tuple[str, list[tuple[str, str]]]:
    message = response.message
    return message.text, [(call.name, call.arguments) for call in message.tool_calls]


def _store() -> Path:
    return local.prompt_store_dir()


async def test_a_later_process_loads_the_head_instead_of_evaluating_it(small: LocalModel) -> None:
    _new_process(small)
    first = await small.request(_conversation(), [ADD], GREEDY)
    full = first.usage.prompt_tokens
    assert small.last_prompt_eval_tokens == full
    assert len(list(_store().glob("*.kv"))) == 1
    _new_process(small)
    again = await small.request(_conversation(), [ADD], GREEDY)
    evaluated = small.last_prompt_eval_tokens
    assert evaluated is not None and full - evaluated > MIN_TOKENS  # the head came from the file
    assert full - evaluated > full - 40  # only the user turn and the generation prompt were evaluated
    assert _said(again) == _said(first)  # the loaded state is the evaluated one


async def test_a_file_that_does_not_load_is_replaced(small: LocalModel, caplog: pytest.LogCaptureFixture) -> None:
    _new_process(small)
    first = await small.request(_conversation(), [ADD], GREEDY)
    [saved] = _store().glob("*.kv")
    saved.write_bytes(b"not a llama.cpp state")
    _new_process(small)
    with caplog.at_level(logging.WARNING, logger="pymanus.models.local"):
        again = await small.request(_conversation(), [ADD], GREEDY)
    assert "does not load; it is removed" in caplog.text
    assert small.last_prompt_eval_tokens == first.usage.prompt_tokens  # evaluated in full, nothing lost
    assert _said(again) == _said(first)
    assert saved.stat().st_size > 1000  # saved afresh


async def test_short_heads_and_models_told_not_to_are_not_kept(small: LocalModel) -> None:
    _new_process(small)
    await small.request(_conversation("You are a helpful agent."), [ADD], GREEDY)
    assert not list(_store().glob("*.kv"))
    quiet = LocalModel.from_spec(SMALL)
    quiet.keep_prompt_heads = False
    _new_process(quiet)
    await quiet.request(_conversation(), [ADD], GREEDY)
    assert not list(_store().glob("*.kv"))


async def test_only_the_most_recent_heads_are_kept(small: LocalModel) -> None:
    for n in range(KEPT_FILES + 2):
        _new_process(small)
        await small.request(_conversation(f"{RULES} Variant {n}."), [ADD], GREEDY)
    assert len(list(_store().glob("*.kv"))) == KEPT_FILES
    assert not list(_store().glob("*.part"))

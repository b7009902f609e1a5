"""Tool selection: large toolsets offer the tools relevant to the step, and never lose the essential ones."""

from __future__ import annotations

from helpers.tool_cases import DESCRIPTIONS, TOOLS, ask, names
from pymanus.context.ranking import BM25, words
from pymanus.context.tool_selection import ToolSelector
from pymanus.context.window import WindowedModel
from pymanus.messages import Message, ToolCall
from pymanus.models.base import ModelSettings
from pymanus.models.testing import ScriptedModel


def test_words_split_names_and_drop_stop_words() -> None:
    assert words("The sendEmail to web_fetch files") == ["send", "email", "web", "fetch", "file"]


def test_bm25_ranks_the_matching_document_first() -> None:
    index = BM25([["weather", "forecast", "city"], ["send", "email"], ["weather", "send"]])
    scores = index.scores(["weather", "forecast"])
    assert scores[0] > scores[2] > scores[1] == 0


def test_a_small_toolset_is_offered_whole() -> None:
    assert ToolSelector(threshold=20)(ask("weather in Paris"), TOOLS, ModelSettings()) == TOOLS


def test_relevant_tools_and_terminate_are_offered_in_their_order() -> None:
    chosen = names(ToolSelector(threshold=12)(ask("What is the weather forecast in Paris?"), TOOLS, ModelSettings()))
    assert "weather" in chosen and "terminate" in chosen
    assert len(chosen) < len(TOOLS)
    assert chosen == [n for n in DESCRIPTIONS if n in chosen]  # original order, for prompt caches


def test_tools_used_in_the_last_steps_stay_offered() -> None:
    call = ToolCall(id="c1", name="stock_price", arguments='{"ticker": "ACME"}')
    history = [Message.assistant(None, [call]), Message.tool("c1", "stock_price", "42.0")]
    messages = ask("Send an email with the weather forecast for Oslo", *history)
    chosen = names(ToolSelector(threshold=12)(messages, TOOLS, ModelSettings()))
    assert {"stock_price", "send_email", "weather", "terminate"} <= set(chosen)


def test_allowed_tools_of_the_request_are_always_offered() -> None:
    settings = ModelSettings(allowed_tools=["resize_image"])
    chosen = names(ToolSelector(threshold=12)(ask("weather forecast"), TOOLS, settings))
    assert "resize_image" in chosen


def test_when_nothing_matches_every_tool_is_offered() -> None:
    assert ToolSelector(threshold=12)(ask("zzz qqq"), TOOLS, ModelSettings()) == TOOLS


async def test_the_windowed_model_offers_the_selected_tools() -> None:
    model = ScriptedModel(["ok"], context_window=8000)
    windowed = WindowedModel(model, select_tools=ToolSelector(threshold=12))
    await windowed.request(ask("translate this text to French"), TOOLS, ModelSettings())
    offered = names(model.request_tools[0])
    assert "translate" in offered and "terminate" in offered and len(offered) < len(TOOLS)

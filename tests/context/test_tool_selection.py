"""Tool selection: large toolsets offer the tools relevant to the step, and never lose the essential ones."""

from __future__ import annotations

from pymanus.context.tool_selection import BM25, ToolSelector, words
from pymanus.context.window import WindowedModel
from pymanus.messages import Message, ToolCall
from pymanus.models.base import ModelSettings, ToolDefinition
from pymanus.models.testing import ScriptedModel

DESCRIPTIONS = {
    "read_file": "Read a text file from the workspace",
    "write_file": "Create or overwrite a file with content",
    "list_dir": "List the files of a folder as a tree",
    "grep": "Search file contents with a regular expression",
    "python": "Run Python code for computation and data analysis",
    "shell": "Run a shell command",
    "web_fetch": "Fetch a web page and return its text",
    "web_search": "Search the web for pages about a query",
    "send_email": "Send an email message to a recipient address",
    "calendar_add": "Add an event to the user's calendar at a date and time",
    "weather": "Get the weather forecast for a city",
    "translate": "Translate text between human languages",
    "stock_price": "Look up the current price of a stock ticker",
    "resize_image": "Resize or crop an image file",
    "terminate": "Finish the task with the final answer",
}
TOOLS = [ToolDefinition(name=n, description=d) for n, d in DESCRIPTIONS.items()]


def ask(text: str, *history: Message) -> list[Message]:
    return [Message.system("sys"), Message.user(text), *history]


def names(tools: list[ToolDefinition]) -> list[str]:
    return [t.name for t in tools]


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

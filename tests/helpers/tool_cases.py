"""A toolset of fifteen tools for the tool-selection tests, and small helpers around it."""

from __future__ import annotations

from pymanus.messages import Message
from pymanus.models.base import ToolDefinition

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

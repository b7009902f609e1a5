"""The Manus preset: the general-purpose agent ``pymanus run`` builds from settings.

It offers the file tools, a sandboxed ``python``, ``web_fetch``, ``web_search``,
``planning``, ``ask_human`` and ``terminate`` (plus ``shell`` when the config enables
it), with a system prompt that says what each tool is for, and a first message that lists
the workspace's files. Every change to the workspace is journaled (and can be undone:
:mod:`pymanus.tools.journaling`), and ``[workspace] read_only`` paths cannot be changed.
A text-only reply that is clearly unfinished is sent back once, for every model
(:mod:`pymanus.agent.unfinished`; ``[agent] nudge_unfinished``).
What a caller adds (extensions, a narrower toolset, sampling
settings) comes in as arguments: the preset itself holds no model-specific behaviour.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from pymanus.agent.agent import Agent
from pymanus.agent.extensions import Extension
from pymanus.agent.limits import Price, UsageLimits
from pymanus.agent.unfinished import UnfinishedReplyNudge
from pymanus.config import Settings
from pymanus.models.base import Model, ModelSettings
from pymanus.sandbox.paths import PathJail
from pymanus.sandbox.process import Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.human import AskHuman, ask_human_tool
from pymanus.tools.builtin.planning import planning_tool
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.search import SearchConfig, build_search_backends, web_search_tool
from pymanus.tools.builtin.shell import shell_tool
from pymanus.tools.builtin.web import WebPolicy, web_fetch_tool
from pymanus.tools.builtin.workspace_scan import list_workspace
from pymanus.tools.journaling import FileJournal
from pymanus.tools.tool import Tool, ToolContext

SYSTEM_PROMPT = """\
You are PyManus, an autonomous agent. You complete the user's task yourself by calling tools, \
one step at a time, until it is done.

Every file you read or write is in the workspace, your current folder; use paths relative to it \
(e.g. "report.md"). Files the user mentions are in the workspace; the first message lists them.

Tools:
{tools}

How to work:
- Read an input file (unless the first message shows it) before you rely on its content.
- Use `python` for anything computed from files (sums, tables, statistics, counts, searches); print the \
results. Never type by hand numbers or lists that code can compute, and never write placeholders.
- Code the task asks you to write or change goes into its file (`write_file` with the whole file, or \
`edit_file` for one exact piece); then run it or its tests with `python`. Code run by `python` is not saved.
- If a tool reports an error, read it, fix the cause and try a different way; never repeat the same call.
- Before finishing, make sure every file the task asks for exists with the right content.
- When the task is done, call `terminate` with status "success" and a short answer for the user. \
If it truly cannot be done, call `terminate` with status "failure" and say why."""

_TOOL_PURPOSES = {
    "read_file": "read a text file (line ranges; preview=true for the first rows of a CSV)",
    "write_file": "create or overwrite a file (code, text or data)",
    "edit_file": "replace an exact piece of text in a file (or every occurrence), or add lines to it",
    "list_dir": "list the files of a folder as a tree",
    "find_files": "find files by glob pattern",
    "grep": "search file contents with a regular expression",
    "python": "run Python code to compute or check something (the code itself is not saved)",
    "shell": "run a shell command",
    "web_fetch": "read a web page as text",
    "web_search": "search the web",
    "planning": "keep a checklist plan for long tasks",
    "ask_human": "ask the user a question when the task is ambiguous",
    "terminate": "finish the task with your answer",
}


def describe_tools(tools: list[Tool]) -> str:
    """One line per tool: its name and what it is for."""
    return "\n".join(f"- {t.name}: {_TOOL_PURPOSES.get(t.name, t.description.splitlines()[0])}" for t in tools)


class WorkspaceListing(Extension):
    """Adds the workspace's files, with their sizes, to the first message."""

    name = "workspace_listing"

    def briefing(self, task: str, context: ToolContext) -> str:
        return list_workspace(Path(context.workspace))


class WorkspaceJournal(Extension):
    """Brings :class:`~pymanus.tools.journaling.FileJournal`; last, so it sees each call as it really runs."""

    name = "journal"

    def __init__(self, workspace: Path, settings: Settings) -> None:
        self.middleware = FileJournal(
            workspace, read_only=settings.workspace.read_only, keep_runs=settings.workspace.keep_runs
        )


def sandbox_for(settings: Settings) -> Sandbox:
    """The sandbox ``settings`` ask for, around their workspace."""
    workspace = Path(settings.agent.workspace).expanduser().resolve()
    return Sandbox(
        workspace,
        backend=settings.sandbox.backend,
        read_only_binds=settings.sandbox.read_only_roots,
        read_only_globs=settings.workspace.read_only,
    )


def preset_model(settings: Settings) -> Model:
    """The model ``settings`` name, with their endpoint, window, timeouts, retries and fallbacks;
    every request fitted into the window (``[context]``, :mod:`pymanus.context.window`)."""
    from pymanus.context.window import windowed_model
    from pymanus.models.resilience import gateway_model

    return windowed_model(gateway_model(settings.model), settings)


def _price(settings: Settings, model_name: str) -> Price | None:
    """The price ``settings`` give ``model_name`` (``None``: none given)."""
    price = settings.prices.get(model_name)
    return Price(input=price.input, output=price.output) if price is not None else None


def build_manus_agent(
    settings: Settings,
    *,
    model: Model | None = None,
    asker: AskHuman | None = None,
    sandbox: Sandbox | None = None,
    extensions: Sequence[Extension] = (),
    tools: Collection[str] | None = None,
    model_settings: ModelSettings | None = None,
) -> Agent:
    """The general-purpose agent for ``settings``.

    Args:
        settings: model, workspace, limits, sandbox and web settings.
        model: use this model instead of the one ``settings`` names.
        asker: answers ``ask_human``; without one the tool is not offered (a run with
            nobody to answer would only wait on a tool that cannot help).
        sandbox: where code runs (default: :func:`sandbox_for` ``settings``).
        extensions: added after the workspace listing (prompts, answer checks, middleware).
        tools: offer only these built-in tools (``terminate`` is always offered, and so are
            ``ask_human``, ``shell`` and ``web_fetch`` when the settings enable them).
        model_settings: sampling settings for every request.
    """
    model = model or preset_model(settings)
    sandbox = sandbox or sandbox_for(settings)
    workspace = sandbox.workspace
    jail = PathJail(workspace, settings.sandbox.read_only_roots)
    python = PythonRunner(sandbox)
    search = SearchConfig(
        searxng_url=settings.web.searxng_url or None,
        local_folder=Path(settings.web.search_docs).expanduser() if settings.web.search_docs else workspace,
    )
    web_fetch = web_fetch_tool(WebPolicy(allow_domains=settings.web.allow_domains))
    simple_edit = tools is not None and "edit_file" in tools  # a narrowed toolset gets the simpler edit schema
    offered: list[Tool] = [*file_tools(jail, simple_edit=simple_edit), python.tool]
    offered += [web_fetch, web_search_tool(build_search_backends(search)), planning_tool()]
    if tools is not None:
        opened = {"web_fetch"} if settings.web.allow_domains else set()
        offered = [t for t in offered if t.name in tools or t.name in opened]
    if asker is not None:
        offered.append(ask_human_tool(asker))
    if settings.sandbox.shell:
        offered.append(shell_tool(sandbox, allow_programs=settings.sandbox.shell_allow or None))
    agent = Agent(
        model,
        tools=offered,
        system_prompt="",
        max_steps=settings.agent.max_steps,
        timeout=settings.agent.timeout,
        workspace=workspace,
        stream=True,
        extensions=[
            WorkspaceListing(),
            *([UnfinishedReplyNudge()] if settings.agent.nudge_unfinished else []),
            *extensions,
            *_context_extensions(model),
            WorkspaceJournal(workspace, settings),
        ],
        settings=model_settings,
        usage_limits=UsageLimits(**settings.limits.model_dump()),
        price=_price(settings, model.name),
    )
    if settings.context.memory:
        _install_memory(agent, settings)
    agent.system_prompt = SYSTEM_PROMPT.format(tools=describe_tools(list(agent.toolset)))
    agent.on_run_end(python.close_session)
    agent.on_close(python.aclose)
    return agent


def _context_extensions(model: Model) -> list[Extension]:
    """:class:`~pymanus.context.window.WindowScope` when the model is windowed (its trims then name the run)."""
    from pymanus.context.window import WindowedModel, WindowScope
    from pymanus.models.cassette import RecordingModel

    while isinstance(model, RecordingModel):  # ``pymanus run --record`` records the windowed model
        model = model.wrapped
    return [WindowScope()] if isinstance(model, WindowedModel) else []


def _install_memory(agent: Agent, settings: Settings) -> None:
    """``[context] memory``: past runs in the briefing, ``search_memory``, each run recorded at its end."""
    from pymanus.context.memory import LongTermMemory, open_memory

    context = settings.context
    store = open_memory(context.memory, vectors=context.memory_vectors, embedding_model=context.embedding_model)
    LongTermMemory(store).install(agent)

    async def close() -> None:
        store.close()

    agent.on_close(close)

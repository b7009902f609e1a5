"""The Manus preset: the general-purpose agent ``pymanus run`` builds from settings.

It offers the file tools, a sandboxed ``python``, ``web_fetch``, ``web_search``,
``planning``, ``ask_human`` and ``terminate`` (plus ``shell`` when the config enables
it), with a system prompt that says what each tool is for. Embedded (``local:``) models
get a compact toolset (:data:`COMPACT_TOOLS`). The first message adds a briefing on the
workspace and each reminder the run's progress (:mod:`pymanus.agent.progress`) and the
results of the checks and examples the task names (:mod:`pymanus.agent.task_checks`) and
of the renames it asks for (:mod:`pymanus.agent.renames`); a completion check sends a final
answer back while a file the task names is missing, a check fails or a rename is unfinished.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.agent import Agent
from pymanus.agent.count_checks import count_problems
from pymanus.agent.coverage_checks import coverage_problems
from pymanus.agent.done_check import done_answer, done_evidence
from pymanus.agent.exclusion_checks import unfiltered_exclusions
from pymanus.agent.json_checks import json_shape_problems
from pymanus.agent.progress import read_head
from pymanus.agent.project_checks import missing_tests, pyproject_problems
from pymanus.agent.renames import rename_notes
from pymanus.agent.table_checks import table_problems
from pymanus.agent.task_checks import CheckResult, TaskChecks
from pymanus.agent.task_scope import locate, missing_sources, named_files
from pymanus.config import Settings
from pymanus.models.base import Model, ModelSettings
from pymanus.sandbox.paths import PathJail
from pymanus.sandbox.process import Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.human import AskHuman, ask_human_tool
from pymanus.tools.builtin.planning import planning_tool
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.builtin.python_state import CODE_OUTPUT, CODE_RAN
from pymanus.tools.builtin.search import SearchConfig, build_search_backends, web_search_tool
from pymanus.tools.builtin.shell import shell_tool
from pymanus.tools.builtin.web import WebPolicy, web_fetch_tool
from pymanus.tools.builtin.workspace_scan import scan
from pymanus.tools.tool import Tool, ToolContext

SYSTEM_PROMPT = """\
You are PyManus, an autonomous agent. You complete the user's task yourself by calling tools, \
one step at a time, until it is done.

Every file you read or write is in the workspace, your current folder; use paths relative to it \
(e.g. "report.md"). Files the user mentions are in the workspace; the first message lists them and shows the small ones.

Tools:
{tools}

How to work:
- Read an input file (unless the first message shows it or its first rows) before you rely on its content.
- Use `python` for anything computed from files (sums, tables, statistics, counts of lines or words, \
which files contain something); print the results. Never type by hand numbers or lists that code can compute. \
Write files with `write_file` or from Python, always with the real computed values, never placeholders. \
A .md file is Markdown: tables are rows like "| North | 12.50 |" under a header row and a "|---|---|" line.
- To create several files (a project, a package), call `write_file` once per file with its whole, short content.
- To change code, first write the change into the file: `write_file` with the whole updated file \
(keep everything that must stay), or `edit_file` to replace one exact piece; then run it or its tests with `python`.
- A rename changes every file that uses the old name: `edit_file` with replace_all=true in each file, \
or `python` with re.sub over the files.
- If a tool reports an error, read it, fix the cause and try a different way; never repeat the same call.
- Before finishing, make sure every file the task asks for exists with the right content.
- When the task is done, call `terminate` with status "success" and a short answer for the user. \
If it truly cannot be done, call `terminate` with status "failure" and say why."""

# A worked run for small models, which imitate an example more readily than they follow rules:
# one python call that finds, computes and writes everything (backslashes doubled in JSON),
# prints what it wrote, then terminate. Its task is unlike the benchmark suite's. Its search
# covers the whole workspace with no file-type filter and no ^ anchor: the 1.5B copies the
# example's code, and copied `.endswith('.py')` and `^` into searches of every kind of file,
# and a folder name into a rename that had to cover the whole project.
_EXAMPLE_CODE = """\
import os, re
rows = []
for folder, _, names in os.walk('.'):
    for name in sorted(names):
        path = os.path.relpath(os.path.join(folder, name))
        for found in re.findall(r'class (\\w+)', read_file(path)):
            rows.append((path, found))
lines = ['| file | class |', '|---|---|'] + [f'| {p} | {c} |' for p, c in rows]
write_file('classes.md', '\\n'.join(lines) + '\\n')
print(rows)"""
_EXAMPLE_ANSWER = "classes.md lists 2 classes: Cart (shop/cart.py) and Item (shop/models.py)."
EXAMPLE_RUN = (
    "\n\nExample of a good run (for another task):\n"
    "Task: List the classes defined in this project in classes.md, as a table of file and class.\n"
    f"Call: python {json.dumps({'code': _EXAMPLE_CODE})}\n"
    "Result: wrote 77 characters to classes.md\n"
    "[('shop/cart.py', 'Cart'), ('shop/models.py', 'Item')]\n\n"
    "Files written: classes.md (4 lines).\n"
    "Call: terminate " + json.dumps({"status": "success", "message": _EXAMPLE_ANSWER})
)
"""The worked example closing a small model's system prompt."""


_TOOL_PURPOSES = {
    "read_file": "read a text file (line ranges; preview=true for the first rows of a CSV)",
    "write_file": "create or overwrite a file",
    "edit_file": "replace an exact piece of text in a file (or every occurrence), or add lines to it",
    "list_dir": "list the files of a folder as a tree",
    "find_files": "find files by glob pattern",
    "grep": "search file contents with a regular expression",
    "python": "run Python code (computation, data, checks)",
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


def missing_outputs(
    task: str,
    answer: str,
    context: ToolContext,
    checks: Sequence[CheckResult] = (),
    *,
    uncomputed: bool = False,
) -> str | None:
    """What is still wrong with a final answer, as a note for the model (``None``: accept it).

    Small models often finish early: they announce a file they never wrote, write a
    template instead of the values, or answer with a placeholder. Checked: every file and
    folder the task names exists and no file is empty or a template, the answer is not a placeholder,
    no file still uses a name the task renames, every JSON, TOML or Python file the run
    wrote parses, the tables it wrote have the columns the task lists and no empty cells
    the inputs lack (:mod:`pymanus.agent.table_checks`), a pyproject.toml gives the project name and
    version the task gives (:mod:`pymanus.agent.project_checks`), a JSON file has the shape the task gives it
    (:mod:`pymanus.agent.json_checks`), the line and word counts of files
    in its tables are those of the files (:mod:`pymanus.agent.count_checks`), an output about "each customer"
    covers every customer of the input tables (:mod:`pymanus.agent.coverage_checks`), the run's code
    leaves out the records the task leaves out (:mod:`pymanus.agent.exclusion_checks`), a task that only asks a question
    changed no file (:func:`progress.restore_changed_inputs` puts them back), the task's named checks
    and the checks of the run's own work (``checks``, already run: the tests it wrote pass, its
    package modules import) pass, and (``uncomputed``) no data file was written from the
    model's head and the answer has no number that is in no file and no code output (see
    :func:`progress.uncomputed_outputs` and :func:`progress.unfounded_answer_numbers`).
    """
    workspace = Path(context.workspace)
    snapshot = scan(workspace)  # once, for every bare name the task gives
    if snapshot is not None and missing_sources(task, snapshot):
        return None  # an input the task reads is missing: its outputs cannot be made, and a "failure" is the answer
    problems = []
    for name in named_files(task):
        path = locate(workspace, name, snapshot)
        if path is None:
            problems.append(f"the task names {name}, but the workspace has no such file")
        elif progress.empty_output(path):
            problems.append(f"{name} is empty")
        elif path.is_file() and path.suffix in _TEXT_SUFFIXES and _PLACEHOLDER.search(read_head(path)):
            problems.append(f"{name} still contains a placeholder such as {{{{...}}}} instead of real values")
    for folder in progress.missing_folders(task, context):
        problems.append(f"the task asks for a {folder[:-1]} folder, but the workspace has no {folder} at its top")
    if _PLACEHOLDER_ANSWER.fullmatch(answer.strip()):
        problems.append(f"your answer {answer.strip()!r} is a placeholder, not the actual answer")
    for check in checks:
        if not check.passed:
            whose = "a check of the files this run wrote fails" if check.own else "the task's check still fails"
            problems.append(f"{whose}: {check.describe(CHECK_NOTE_CHARS)}")
    problems.extend(rename_notes(task, workspace))
    problems.extend(progress.invalid_outputs(context))
    problems.extend(table_problems(task, context))
    problems.extend(pyproject_problems(task, context))
    problems.extend(json_shape_problems(task, workspace))
    problems.extend(missing_tests(task, context))
    problems.extend(count_problems(context))
    problems.extend(coverage_problems(task, context))
    problems.extend(unfiltered_exclusions(task, context))
    problems.extend(progress.restore_changed_inputs(task, context))
    typed: list[str] = []
    if uncomputed:
        # What the checks printed was in front of the model too ("AssertionError: 3.5 != 2.5").
        printed = "\n".join([str(context.state.get(CODE_OUTPUT, "")), *(check.output for check in checks)])
        code_since = context.state.get(CODE_RAN)
        typed += progress.uncomputed_outputs(task, context, code_since=code_since, printed=printed)
        typed += progress.unfounded_answer_numbers(task, answer, context, printed)
    if not problems and not typed:
        return None
    # No "or give up" here: small models copied that into a terminate with status "failure"
    # right after fixing the problem (the answer is accepted anyway after max_rejections).
    # "Compute with python" only for typed values: after a pyproject.toml without its [project]
    # table, the 1.5B ran python to print the package's __version__ instead of writing the file.
    how = " (compute values with python)" if typed else ""
    return "; ".join(problems + typed) + f". Fix this{how}, then call terminate again."


CHECK_NOTE_CHARS = 800
"""Output of a failing check quoted when a final answer is sent back."""
_TEXT_SUFFIXES = {".md", ".txt", ".csv", ".tsv", ".json", ".html", ".yaml", ".yml"}
# Template slots a model left unfilled: {{total}}, ${mean}, <result>, [INSERT ...].
_PLACEHOLDER = re.compile(
    r"\{\{[^{}\n]{1,60}\}\}|\$\{[\w .-]{1,40}\}|\[(?:INSERT|TODO|PLACEHOLDER)[^\]\n]{0,60}\]|\A\s*<[\w .-]{1,40}>\s*\Z",
    re.IGNORECASE,
)
_PLACEHOLDER_ANSWER = re.compile(r"<[\w .-]{0,40}>|\{\{?[\w .-]{0,40}\}?\}|\[[\w .-]{0,40}\]|")


COMPACT_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_dir", "python"})
"""The built-in tools a small local model gets (plus ``terminate``, and ``ask_human``,
``shell`` and ``web_fetch`` when enabled): on 2 cores every tool schema costs seconds of prompt evaluation,
and a 1.5B model picks worse among many tools. Python covers searching and listing."""


def compact_toolset(model: Model) -> bool:
    """Whether the preset offers ``model`` only the compact toolset (embedded models)."""
    return model.name.startswith("local:")


def preset_settings(model: Model) -> ModelSettings:
    """Sampling settings for the preset: small local models get one call per step.

    A small model that chains several calls in one response writes the later ones
    before it has seen the earlier results (a report written before the numbers exist).
    """
    if model.name.startswith("local:"):
        return ModelSettings(parallel_tool_calls=False)
    return ModelSettings()


def build_manus_agent(settings: Settings, *, model: Model | None = None, asker: AskHuman | None = None) -> Agent:
    """The general-purpose agent for ``settings``.

    Args:
        settings: model, workspace, limits, sandbox and web settings.
        model: use this model instead of the one ``settings`` names.
        asker: answers ``ask_human``; without one the tool is not offered (a run with
            nobody to answer only distracts a small model with a tool that cannot help).
    """
    if model is None:
        from pymanus.models.resolve import resolve_model

        model = resolve_model(
            settings.model.name,
            base_url=settings.model.base_url or None,
            api_key=settings.model.api_key or None,
            context_window=settings.model.context_window,
            vision=settings.model.vision,
            request_timeout=settings.model.request_timeout,
        )
    workspace = Path(settings.agent.workspace).expanduser().resolve()
    jail = PathJail(workspace, settings.sandbox.read_only_roots)
    sandbox = Sandbox(workspace, backend=settings.sandbox.backend, read_only_binds=settings.sandbox.read_only_roots)
    python = PythonRunner(sandbox)
    search = SearchConfig(
        searxng_url=settings.web.searxng_url or None,
        local_folder=Path(settings.web.search_docs).expanduser() if settings.web.search_docs else workspace,
    )
    web_fetch = web_fetch_tool(WebPolicy(allow_domains=settings.web.allow_domains))
    compact = compact_toolset(model)
    tools: list[Tool] = [*file_tools(jail, simple_edit=compact), python.tool]
    if not compact:
        tools += [web_fetch, web_search_tool(build_search_backends(search)), planning_tool()]
    else:
        tools = [t for t in tools if t.name in COMPACT_TOOLS]
        if settings.web.allow_domains:  # the user opened the web to it
            tools.append(web_fetch)
    if asker is not None:
        tools.append(ask_human_tool(asker))
    if settings.sandbox.shell:
        tools.append(shell_tool(sandbox, allow_programs=settings.sandbox.shell_allow or None))

    checks = TaskChecks(sandbox)

    async def check_results(task: str, context: ToolContext) -> list[CheckResult]:
        return await checks.results(task, context, written=progress.written_files(context))

    async def task_message(task: str, context: ToolContext) -> str:
        return progress.task_message(task, context, await check_results(task, context), withhold_briefed=compact)

    async def next_step_prompt(task: str, context: ToolContext) -> str:
        return progress.next_step_prompt(task, context, await check_results(task, context))

    # Values typed instead of computed are caught for small models only: with the web open, or
    # for a larger model, numbers may come from pages it read.
    uncomputed = compact and not settings.web.allow_domains

    async def completion_check(task: str, answer: str, context: ToolContext) -> str | None:
        results = await check_results(task, context)
        return missing_outputs(task, answer, context, results, uncomputed=uncomputed)

    async def done_check(task: str, context: ToolContext) -> str | None:
        results = await check_results(task, context)
        if not done_evidence(task, context, results):
            return None
        answer = done_answer(context)
        return answer if missing_outputs(task, answer, context, results, uncomputed=uncomputed) is None else None

    agent = Agent(
        model,
        tools=tools,
        system_prompt="",
        next_step_prompt=next_step_prompt,
        task_message=task_message,
        max_steps=settings.agent.max_steps,
        timeout=settings.agent.timeout,
        attempts=settings.agent.attempts,
        workspace=workspace,
        stream=True,
        completion_check=completion_check,
        # A step costs an embedded model 15 s and more; a hosted model's own summary is worth its step.
        done_check=done_check if compact else None,
        settings=preset_settings(model),
    )
    agent.system_prompt = SYSTEM_PROMPT.format(tools=describe_tools(list(agent.toolset))) + (
        EXAMPLE_RUN if compact else ""
    )
    agent.on_run_end(python.close_session)
    agent.on_run_restart(python.close_session)
    agent.on_close(python.aclose)
    return agent

"""Workspace-aware prompts: a briefing in the first message, progress in each reminder.

Small models lose track of a task's state: they test a function before writing it,
redo work that is done, or never call ``terminate`` once the files exist. Two prompts
keep the state in front of them, computed from the workspace rather than believed
from the model:

- the first message adds what the workspace holds (names, lines, CSV columns, JSON
  shapes), which saves the exploratory steps;
- the reminder after each step says which files the run has written so far, which
  files and folders the task names that do not exist yet, which files still use a name the task
  renames (:mod:`pymanus.agent.renames`), and, once nothing is missing, to check and
  call ``terminate``.

Both show the results of the checks the task names (:mod:`pymanus.agent.task_checks`)
when they are given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pymanus.agent.renames import rename_notes
from pymanus.agent.request_settings import BRIEFED_WITHHELD_TOOLS, PARALLEL_WHILE_UNCHANGED, WITHHELD_TOOLS
from pymanus.agent.saved_output import saved_output
from pymanus.agent.task_checks import CheckResult
from pymanus.agent.task_scope import (
    MISSING_SOURCE,
    SOURCE_KEEPS_FILES,
    TASK_KEEPS_FILES,
    files_not_to_change,
    locate,
    missing_sources,
    named_files,
    scoped_folder,
    selects_files,
    source_files,
)
from pymanus.sandbox.streams import fit
from pymanus.tools.builtin.code_lint import code_mistakes, undiscoverable_test
from pymanus.tools.builtin.file_formats import format_problem
from pymanus.tools.builtin.file_state import (
    FOUND_FILES,
    KEPT_FILES,
    PRINTED_FILES,
    SHOWN_FILES,
    SHOWN_HEADS,
    TASK_FOLDERS,
    TASK_WORDS,
)
from pymanus.tools.builtin.file_views import NUMBERED_LINE
from pymanus.tools.builtin.python_state import CODE_WROTE
from pymanus.tools.builtin.workspace_scan import Snapshot, changed_files, describe_workspace, file_stamp, scan
from pymanus.tools.tool import ToolContext

NEXT_STEP_PROMPT = (
    "Decide the next step towards finishing the task and call one tool. "
    "If every requested result exists, call `terminate`."
)
QUESTION_STEP_PROMPT = (
    "The task asks a question and needs no file. If the result above gives the answer, call `terminate` now "
    'with status "success" and the answer as message; if it is an error, fix it.'
)
"""The reminder of a task that only asks. With "every requested result exists" the 1.5B went on to
list_dir and read_file, three steps, after it had printed the answer; with "otherwise call one tool
to find it" it called a tool in 8 of 8 samples, and with this wording it answered in 12 of 12 and
fixed a KeyError in 6 of 6 (step 2 of low_stock_answer and staging_port_answer, replayed with 6 seeds)."""

BRIEFED_TOOLS = frozenset({"read_file", "list_dir"})
"""Tools no response may call while the workspace is as the first message showed it, every file
(whole, or a data file's first rows; or that it is empty): a read of a shown file only points
back to it, a step lost (15 s on 2 cores). top_scores, after its code failed, listed its one-file
workspace three times; data tasks read the CSV whose first rows they were shown, then wrote code."""
CHECKED_TOOLS = frozenset({"python"})
"""Tools also withheld while the workspace is as the first message showed it, when a check the task
names failed there: the message shows what the check's run printed, so code run before any change
only repeats it. add_function began with ``from textutils import slugify`` in 5 of 8 runs, a step
lost to an ImportError, and fix_failing_test with re-typing the test. So too while an empty workspace
stays empty, when the task names modules and other files it writes (:data:`WRITTEN_SUFFIXES`) and
nothing to compute: project_layout began with one ``python`` call writing every file from string
literals in 2 of 4 runs (222, 231), which broke on their quotes and line breaks, where ``write_file``
takes each file's text as it is."""
WRITTEN_SUFFIXES = frozenset({".py", ".md", ".rst", ".toml", ".cfg", ".ini", ".yaml", ".yml"})
"""Files a task writes rather than computes: source, configuration and documentation."""
PROSE_SUFFIXES = frozenset({".txt", ".md", ".rst", ""})
"""Files of prose: while one is shown whole, ``read_file`` stays callable. Denied that read, the
1.5B rewrote meeting.txt and summarized status/*.txt through python, and lost text in 2 runs of 4
(a bullet holding the whole paragraph; a table of file names for a summary); after reading the text
itself, it wrote it with write_file in 4 of 4."""
_START = "progress.start"
"""``ToolContext.state`` key of the workspace scan taken when the run started."""
_CHECKS_FAILED = "progress.checks_failed_at_start"
"""``ToolContext.state`` key: whether a check the task names failed when the run started."""
_SHOWN = 8
BRIEF_CHECK_CHARS = 1_500
"""Output of a named check shown in the first message."""
TASK_CHARS = 600
"""Characters of the task repeated in the reminders before the run writes anything."""
REMINDER_CHECK_CHARS = 800
"""Output of a failing check shown in a reminder (resent before every step)."""


# Folders the task asks for: "a tests folder", "a package folder weather", "the directory named out".
_FOLDER_NAME = re.compile(
    r"\b(?:an?|the)\s+(?:package\s+)?(?:folder|directory)\s+(?:named\s+|called\s+)?[`'\"]?([\w.-]+)[`'\"]?(?=[\s,.;:]|$)"
    r"|\b(?:an?|the)\s+[`'\"]?([\w.-]+)[`'\"]?\s+(?:folder|directory)\b",
    re.IGNORECASE,
)
_NOT_A_FOLDER_NAME = re.compile(
    r"a|an|the|and|or|with|for|of|in|to|that|this|new|same|current|whole|given"
    r"|parent|root|workspace|project|other|empty|separate|single|each|every|its|their|your|my|output|package",
    re.IGNORECASE,
)
_REMOVAL = re.compile(r"\b(?:delete|remove|clean|clear|empty|rename|move)\b", re.IGNORECASE)


def named_folders(task: str) -> list[str]:
    """The folders ``task`` asks for by name ("a tests folder" → ``tests``), not when it removes or moves some."""
    if _REMOVAL.search(task):
        return []
    found = (first or second for first, second in _FOLDER_NAME.findall(task))
    return list(dict.fromkeys(name.strip(".") for name in found if not _NOT_A_FOLDER_NAME.fullmatch(name)))


def missing_folders(task: str, context: ToolContext) -> list[str]:
    """The folders the task asks for (as ``name/``) that are not at the top of the workspace.

    A new project's folders go there: "set up a project in this folder: a package folder weather
    ...; a tests folder" means ``tests/``, not ``weather/tests/`` (the 1.5B put its test there, and
    a project whose tests pytest finds only inside the package failed the user's layout). A folder
    of that name that was anywhere in the workspace when the run started counts where it is.
    """
    existed = {part for relative in context.state.get(_START) or () for part in relative.split("/")[:-1]}
    workspace = Path(context.workspace)
    return [f"{name}/" for name in named_folders(task) if name not in existed and not (workspace / name).is_dir()]


# Numbers worth checking: decimals (1,234.5; 5.25 ending a sentence) and integers of two digits or more
# (counts, totals), not single digits (list numbering, "3 teams").
_NUMBER = re.compile(r"(?<![\w.])(?:\d[\d,]*\.\d+|\d[\d,]*\d)(?!\w|\.\d)")
_DATA_SUFFIXES = (".md", ".csv", ".tsv", ".json", ".txt", ".html")
_TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl")
READ_LIMIT = 200_000
_KNOWN_INPUTS = 200
"""Input files whose numbers count as given (a bound on the reading in a huge workspace)."""


def _value(number: str) -> float:
    return round(float(number.replace(",", "")), 2)


def _numbers(text: str) -> set[float]:
    return {_value(number) for number in _NUMBER.findall(text)}


def invalid_outputs(context: ToolContext) -> list[str]:
    """Files the run wrote in a format that does not parse (JSON, TOML, Python source, and
    Markdown with a table of a header and no rows), or that hold a tool's numbered lines.

    Such a file is wrong whatever the task (:mod:`pymanus.tools.builtin.file_formats`), and so
    is one holding what read_file showed the model, line numbers and all. A module whose code
    cannot do what its author meant (:func:`~pymanus.tools.builtin.code_lint.code_mistakes`:
    ``math.pow(i, 2)`` printing ``4.0``) is named too: the 1.5B read the warning ``write_file``
    gave and kept the code; so is a test file no test runner collects (``tests/cli.py``).
    """
    workspace = Path(context.workspace)
    problems = []
    for name in written_files(context):
        text = read_head(workspace / name)
        if _copied_tool_lines(text):
            problems.append(f"{name} holds lines copied from a tool's output, with the line numbers the tool shows")
            continue
        if len(text) >= READ_LIMIT:
            continue  # a head cannot be judged
        problem = format_problem(name, text)
        if problem is not None:
            problems.append(problem)
        elif name.endswith(".py"):
            problems.extend(f"{name}: {mistake}" for mistake in code_mistakes(text))
            problems.extend(filter(None, [undiscoverable_test(name, text)]))
    return problems


def _copied_tool_lines(text: str) -> bool:
    """Whether most lines of ``text`` (two or more) are numbered as the file tools show them."""
    lines = [line for line in text.splitlines() if line.strip()]
    return len(lines) >= 2 and 2 * len(NUMBERED_LINE.findall(text)) >= len(lines)


def written_files(context: ToolContext) -> list[str]:
    """The files the run has created or changed so far ([] before :func:`task_message` took the first scan)."""
    return changed_files(context.state.get(_START), scan(Path(context.workspace)))


def checks_failed_at_start(context: ToolContext) -> bool:
    """Whether a check the task names failed when :func:`task_message` briefed the run."""
    return bool(context.state.get(_CHECKS_FAILED))


def input_files(context: ToolContext, written: Sequence[str]) -> list[str]:
    """The files the workspace held when the run started, other than those in ``written``."""
    return [name for name in sorted(context.state.get(_START) or ()) if name not in written]


def _known_numbers(workspace: Path, names: Sequence[str], *texts: str) -> set[float]:
    """The numbers in ``texts`` and in the files ``names`` (any text: a port in settings.py is as given as a CSV's)."""
    known = set().union(*map(_numbers, texts))
    for name in names[:_KNOWN_INPUTS]:
        known |= _numbers(read_head(workspace / name))
    return known


def unfounded_answer_numbers(task: str, answer: str, context: ToolContext, printed: str) -> list[str]:
    """A problem with the numbers of a final answer that no file, no code output (``printed``) and not the task hold.

    A small model that read the settings file still answers 9091 for the 9090 in front of it.
    """
    numbers = _NUMBER.findall(answer)
    if not numbers:
        return []
    workspace = Path(context.workspace)
    known = _known_numbers(workspace, sorted(scan(workspace) or ()), task, printed)
    unknown = list(dict.fromkeys(number for number in numbers if _value(number) not in known))
    if not unknown:
        return []
    return [
        f"your answer gives {', '.join(unknown[:3])}, which is in no file, in no output of your code and not in "
        "the task: answer with the values as the files hold them or as your code printed them"
    ]


_QUESTION = re.compile(r"^\s*(?:which|what|how|where|when|who|whose|why|is|are|does|do|did|can)\b[^?!\n]*\?", re.I)
_CHANGE = re.compile(
    r"\b(?:write|save|create|change|fix|rename|update|edit|add|remove|delete|replace|convert|merge|move|set|make|"
    r"refactor|generate|produce|modify|append|sort|format|clean|store|put|record|note|correct)\b",
    re.IGNORECASE,
)


def asks_only(task: str) -> bool:
    """Whether ``task`` asks a question and no change ("Which port does staging use? ...")."""
    return bool(_QUESTION.match(task)) and not _CHANGE.search(task)


def restore_changed_inputs(task: str, context: ToolContext) -> list[str]:
    """Put back the files the run changed though the task only reads them, and say so.

    The 1.5B edited the settings it was asked about (the staging port), then answered with
    its own edit, and told of it, "fixed" it by editing again. A question asks for no change,
    and a task that converts or reads named files (:func:`~pymanus.agent.task_scope.source_files`)
    asks for none in them: the file tools refuse to change those files
    (:data:`~pymanus.tools.builtin.file_state.KEPT_FILES`, set by :func:`task_message`), and what
    code changed anyway goes back to its content when the run started, with a note.
    """
    originals: dict[str, bytes] = context.state.get(_ORIGINALS) or {}
    if not originals:
        return []
    workspace = Path(context.workspace)
    changed = [name for name, content in originals.items() if _read_bytes(workspace / name) != content]
    for name in changed:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_bytes(originals[name])
    if not changed:
        return []
    back = f"{'it is' if len(changed) == 1 else 'they are'} back as {'it was' if len(changed) == 1 else 'they were'}"
    if asks_only(task):
        return [
            f"the task asks a question and no change, but the run changed {', '.join(changed)}; {back}: answer "
            "from the files as they are now"
        ]
    return [
        f"the task only reads {', '.join(changed)}, but the run changed {'it' if len(changed) == 1 else 'them'}; "
        f"{back}: make the task's output again from {'it' if len(changed) == 1 else 'them'} as "
        f"{'it is' if len(changed) == 1 else 'they are'} now"
    ]


def _originals(workspace: Path, files: Snapshot) -> dict[str, bytes]:
    """The content of ``files`` (name -> (mtime, size)), up to :data:`_ORIGINALS_LIMIT` bytes in all."""
    kept: dict[str, bytes] = {}
    budget = _ORIGINALS_LIMIT
    for name, (_, size) in sorted(files.items()):
        if size <= budget and (content := _read_bytes(workspace / name)) is not None:
            kept[name] = content
            budget -= size
    return kept


QUESTION_KEEPS_FILES = (
    "the task asks a question and no change, so the files stay as they are. Answer from them: read them "
    "or compute with python, then call terminate with the answer."
)
"""Why the file tools refuse to change a workspace file in a task that only asks a question."""
FILE_CHANGING_TOOLS = frozenset({"write_file", "edit_file"})
"""Tools no response may call in a task that only asks a question: the 1.5B edited the port it
was asked about in every run, refused or not (``python`` stays, to read and compute)."""
_ORIGINALS = "progress.originals"
"""``ToolContext.state`` key: the files the task only reads (all of them for a question), as the run found them."""
_ORIGINALS_LIMIT = 4_000_000
"""Bytes of a workspace kept to put back (larger files, and files past this total, are not)."""


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def uncomputed_outputs(task: str, context: ToolContext, *, code_since: float | None, printed: str = "") -> list[str]:
    """Problems with data files the run wrote by hand, not from code.

    ``code_since``: when code first ran without error in the run (``time.time()``), or
    ``None``; ``printed``: what the run's code printed.

    A small model reads a CSV and writes a report of made-up totals, or of a table header
    with no rows. A data file written while no code has run is sent back when the workspace has
    data to compute from (CSV, TSV or JSON inputs), when it holds numbers (decimals, or
    integers of two digits or more) that are in no input, not in the task and in no output of
    code (a block that failed still showed values), or when it
    lists workspace files (picked by what is in them, they are found by reading every file,
    which code does and a small model does not; a file that names every input is a report on
    each, unless the task picks files by content). Once code has run, such a file written by
    hand, before or after the code, is sent back while it holds numbers or workspace paths the
    code's output does not show: the model wrote its guess, computed the real values (or found
    nothing), and kept the guess. A file
    as the run's code left it (:data:`~pymanus.tools.builtin.python_state.CODE_WROTE`) is computed,
    even when that code failed later (a ``print`` of the wrong type after the file was written).
    """
    start = context.state.get(_START)
    if start is None:
        return []
    workspace = Path(context.workspace)
    written = written_files(context)
    inputs = input_files(context, written)
    data = [name for name in inputs if name.endswith(_TABLE_SUFFIXES)]
    known = _known_numbers(workspace, inputs, task)
    shown_numbers = known | _numbers(printed)
    code_wrote = context.state.get(CODE_WROTE, {})
    problems = []
    for name in written:
        path = workspace / name
        if not name.endswith(_DATA_SUFFIXES) or name in start:
            continue  # an input the run edited holds its own numbers (a rename keeps "200 MB")
        if name in code_wrote and file_stamp(path) == code_wrote[name]:
            continue
        text = read_head(path)
        listed = [other for other in inputs if other in text]
        if len(listed) < 2 or (len(listed) == len(inputs) and not selects_files(task)):
            listed = []  # every input named: a report on each of them, not a list of files found by content
        if code_since is not None:
            # The paths are counted, not named: told "does not show its src/app/utils.py, ...", the
            # 1.5B wrote exactly those to the file.
            paths = sum(other not in printed for other in listed)
            unseen = [n for n in _NUMBER.findall(text) if _value(n) not in shown_numbers]
            if paths or unseen:
                shown = f"its {', '.join(dict.fromkeys(unseen[:3]))}" if unseen else ""
                if paths:
                    counted = f"{paths} of the paths it lists" if paths > 1 else "a path it lists"
                    shown = f"{shown} and {counted}" if shown else counted
                when = (
                    "was written before any code ran, and the code's output since does not show"
                    if _modified(path) < code_since - _CLOCK_SLACK
                    else "was written by hand, and no code's output shows"
                )
                problems.append(
                    f"{name} {when} {shown}: write {name} again from what the code computes, in that code "
                    f"(write_file('{name}', text) inside it)"
                )
        elif listed:
            problems.append(
                f"{name} lists workspace files, but no code looked at them: find them with python "
                "(os.walk, open and read each file) so that the list is exact"
            )
        elif data:
            problems.append(
                f"{name} was written without running any code, but its values come from {', '.join(data[:3])}"
            )
        # Code that failed still showed values ("Values on line 10: rows = [('texts/alpha.txt', 3, 20), ...]"):
        # the 1.5B wrote the table from them, and they were computed.
        elif unknown := [n for n in _NUMBER.findall(text) if _value(n) not in shown_numbers]:
            shown = ", ".join(dict.fromkeys(unknown[:3]))
            problem = f"{name} holds numbers that are in no input and no code computed ({shown})"
            # "Write squares.py ..., run it, and save what it prints to squares.txt": the 1.5B typed
            # squares.txt, and typed it again when told its numbers were computed by no code.
            if script := next((other for other in written if other.endswith(".py")), None):
                problem += (
                    f"; if it is what {script} prints, save that instead: call python with the code "
                    f"`python {script} > {name}`"
                )
            problems.append(problem)
    return problems


_CLOCK_SLACK = 1.0
"""Seconds a file's modification time may trail the clock (file systems stamp coarsely): a file
that code wrote must not count as written before it."""


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


MAY_BE_EMPTY = frozenset({"__init__.py", "py.typed", ".gitkeep", ".keep", ".nojekyll"})
"""Files whose presence is their content: an empty package ``__init__.py`` is complete."""


def empty_output(path: Path) -> bool:
    """Whether ``path`` is an empty file that should have content (not a marker such as ``__init__.py``)."""
    try:
        return path.is_file() and path.stat().st_size == 0 and path.name not in MAY_BE_EMPTY
    except OSError:
        return False


def read_head(path: Path) -> str:
    """The start of a file as text ("" if it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return handle.read(READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return ""


def task_message(
    task: str, context: ToolContext, checks: Sequence[CheckResult] = (), *, withhold_briefed: bool = False
) -> str:
    """The task, then a briefing on the workspace and the checks; remembers the workspace as it was.

    ``withhold_briefed``: while the workspace stays as the briefing shows it in full, reading or
    listing it again is withheld, and so is running code when a check the task names failed
    (:data:`CHECKED_TOOLS`): a small model spends steps re-reading what it was shown; a remote
    model keeps one tool list, so its provider's prompt cache holds across steps.
    """
    workspace = Path(context.workspace)
    context.state[_START] = snapshot = scan(workspace)
    # set below if needed
    for key in (_ORIGINALS, KEPT_FILES, WITHHELD_TOOLS, BRIEFED_WITHHELD_TOOLS, PARALLEL_WHILE_UNCHANGED, FOUND_FILES):
        context.state.pop(key, None)
    context.state[TASK_WORDS] = frozenset(re.findall(r"\w+", task))
    context.state[TASK_FOLDERS] = frozenset(folder.rstrip("/") for folder in missing_folders(task, context))
    saved = saved_output(task)
    context.state[PRINTED_FILES] = {} if saved is None else {PurePosixPath(saved.file).as_posix(): saved.script}
    if selects_files(task):
        context.state[FOUND_FILES] = scoped_folder(task, workspace)
    if snapshot is not None and asks_only(task):
        context.state[_ORIGINALS] = _originals(workspace, snapshot)
        context.state[KEPT_FILES] = dict.fromkeys(snapshot, QUESTION_KEEPS_FILES)
        context.state[WITHHELD_TOOLS] = FILE_CHANGING_TOOLS  # a question needs no file written
    elif snapshot is not None:
        kept = {
            **dict.fromkeys(source_files(task, snapshot), SOURCE_KEEPS_FILES),
            **dict.fromkeys(files_not_to_change(task, snapshot), TASK_KEEPS_FILES),
        }
        if kept:
            context.state[_ORIGINALS] = _originals(workspace, {name: snapshot[name] for name in kept})
            context.state[KEPT_FILES] = kept
    named = named_files(task)
    from_nothing = snapshot == {} and saved is None and len(named) >= 2
    if from_nothing:
        # Files to create from nothing, none of them a script's output: no call waits on a result. On
        # project_layout the 1.5B, one call per reply, began with weather/__init__.py importing cli.py
        # and spent its steps on that import. (squares_script, allowed several, typed squares.txt.)
        context.state[PARALLEL_WHILE_UNCHANGED] = snapshot
    suffixes = {PurePosixPath(name).suffix for name in named}
    scaffold = from_nothing and ".py" in suffixes and suffixes <= WRITTEN_SUFFIXES
    absent = missing_sources(task, snapshot) if snapshot is not None else []
    if absent:  # the 1.5B wrote a sales.csv of its own, from the system prompt's example rows, and reported totals
        context.state[KEPT_FILES] = {**context.state.get(KEPT_FILES, {}), **dict.fromkeys(absent, MISSING_SOURCE)}
    shown: list[str] = []
    heads: list[str] = []
    parts = [task, describe_workspace(workspace, shown=shown, heads=heads, first=named)]
    if absent:
        parts.append(
            f"Not in the workspace: {', '.join(absent)}, which the task reads. Do not make up its content: if it "
            'is not there under another name, call terminate with status "failure" and say so.'
        )
    for key, paths in ((SHOWN_FILES, shown), (SHOWN_HEADS, heads)):
        context.state[key] = {path: snapshot[path] for path in paths if snapshot and path in snapshot}
    context.state[_CHECKS_FAILED] = failing = any(not check.passed for check in checks if not check.own)
    if withhold_briefed and snapshot is not None and set(snapshot) <= {*shown, *heads}:  # empty too
        prose = any(PurePosixPath(path).suffix in PROSE_SUFFIXES for path in shown)
        briefed = BRIEFED_TOOLS - {"read_file"} if prose else BRIEFED_TOOLS
        context.state[BRIEFED_WITHHELD_TOOLS] = (snapshot, briefed | CHECKED_TOOLS if failing or scaffold else briefed)
    if checks:
        parts.append("The task's checks, run now:\n" + "\n".join(c.describe(BRIEF_CHECK_CHARS) for c in checks))
    return "\n\n".join(parts)


def next_step_prompt(task: str, context: ToolContext, checks: Sequence[CheckResult] = ()) -> str:
    """The reminder before each request after the first: what is written, what is missing, what fails."""
    workspace = Path(context.workspace)
    now = scan(workspace)
    written = changed_files(context.state.get(_START), now)
    named = named_files(task)
    missing = [name for name in named if locate(workspace, name, now) is None]
    missing += [folder for folder in missing_folders(task, context) if not any(n.startswith(folder) for n in missing)]
    # The 1.5B created README.md with `touch` and spent its steps on tests: empty, it was still owed.
    empty = [name for name in named if (path := locate(workspace, name, now)) and empty_output(path)]
    parts = []
    if written:
        more = f" and {len(written) - _SHOWN} more" if len(written) > _SHOWN else ""
        parts.append(f"Files written so far: {', '.join(written[:_SHOWN])}{more}.")
    if missing:
        parts.append(
            f"Not written yet: {', '.join(missing)}. Write {'it' if len(missing) == 1 else 'them'} now "
            "(write_file for code or text, python for computed results)."
        )
    if empty:
        them = "it" if len(empty) == 1 else "them"
        parts.append(f"Still empty: {', '.join(empty)}. Write what the task asks of {them}.")
    parts.extend(check.describe(REMINDER_CHECK_CHARS if not check.passed else 300) for check in checks)
    renames = rename_notes(task, workspace)
    parts.extend(f"{note}, then the same in each other file." for note in renames)
    if any(not check.passed for check in checks):
        parts.append("Find the cause, fix it in the files (the checks run again after every change) and call one tool.")
    elif renames:
        parts.append("Call one tool.")
    elif written and not missing and not empty:
        parts.append(
            "If they complete the task correctly, call `terminate` now with a short answer; "
            "otherwise decide the next step and call one tool."
        )
    else:
        parts.append(QUESTION_STEP_PROMPT if asks_only(task) else NEXT_STEP_PROMPT)
    if written:
        return " ".join(parts)
    # The task again until something is written: after reading the inputs a small model forgets
    # its conditions ("not counting cancelled orders"). Not after that: repeated every step, it
    # cost a third more prompt tokens and kept models working on finished tasks.
    return f"The task: {fit(task, TASK_CHARS)}\n" + " ".join(parts)

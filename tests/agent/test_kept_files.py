"""Files the Manus preset keeps as they were: the inputs of a question, the files a task only
reads, a folder the task asks for that must not become a file, and a file that must hold what a
script prints."""

from __future__ import annotations

from pathlib import Path

from helpers.file_cases import call as call_tool
from helpers.preset_cases import run_preset
from pymanus import RunState
from pymanus.agent import progress
from pymanus.agent.manus import missing_outputs
from pymanus.agent.task_scope import missing_sources
from pymanus.models import ScriptedModel, call
from pymanus.sandbox import PathJail
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.tool import ToolContext


def test_a_question_answered_by_changing_the_files_puts_them_back(tmp_path: Path) -> None:
    context = ToolContext(run_id="r", workspace=tmp_path)
    (tmp_path / "config").mkdir()
    settings = tmp_path / "config" / "servers.ini"
    settings.write_text("[staging]\nport = 9090\n")
    task = "Which port does the staging server use? The settings are in the config folder."
    progress.task_message(task, context)
    assert missing_outputs(task, "9090", context) is None
    settings.write_text("[staging]\nport = 8080\n")
    (tmp_path / "notes.txt").write_text("scratch")  # a new file changes nothing that was there
    problem = missing_outputs(task, "8080", context)
    assert problem is not None
    assert "the task asks a question and no change, but the run changed config/servers.ini; it is back" in problem
    assert settings.read_text() == "[staging]\nport = 9090\n"
    assert missing_outputs(task, "9090", context) is None
    counted = "How many items in config/servers.ini have a port? Just tell me the number."  # a file name's dot
    progress.task_message(counted, context)
    settings.write_text("[staging]\nport = 1\n")
    assert "the run changed config/servers.ini" in (missing_outputs(counted, "1", context) or "")
    change = "Which port does staging use? Set it to 9091 in config/servers.ini."  # a change it asks for
    progress.task_message(change, context)
    settings.write_text("[staging]\nport = 9091\n")
    assert missing_outputs(change, "Done: 9091.", context) is None
    assert settings.read_text() == "[staging]\nport = 9091\n"


async def test_a_file_the_task_only_reads_is_kept_as_it_was(tmp_path: Path) -> None:
    """csv_to_json: the 1.5B renamed the input's sku column with edit_file, then converted it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    products = workspace / "products.csv"
    products.write_text("sku,price\nA-100,24.5\n")
    code = (
        "open('products.csv', 'w').write('product_id,price\\nA-100,24.5\\n')\n"
        "import pandas as pd\npd.read_csv('products.csv').to_json('products.json', orient='records')"
    )
    model = ScriptedModel(
        [
            call("edit_file", path="products.csv", old_text="sku", new_text="product_id"),
            call("python", code=code),
            call("terminate", status="success", message="Converted."),
            call(
                "python",
                code="import pandas as pd\npd.read_csv('products.csv').to_json('products.json', orient='records')",
            ),
            call("terminate", status="success", message="Converted."),
        ]
    )
    result = await run_preset(workspace, model, "Convert products.csv to products.json: one object per row.")
    assert result.state is RunState.FINISHED
    tool_texts = [m.text for m in result.messages if m.role == "tool"]
    assert tool_texts[0].startswith(
        "products.csv was not changed: the task reads this file to make its output and does not ask to change it"
    )
    assert "the task only reads products.csv, but the run changed it; it is back as it was" in tool_texts[2]
    assert products.read_text() == "sku,price\nA-100,24.5\n"
    assert (workspace / "products.json").read_text() == '[{"sku":"A-100","price":24.5}]'


async def test_a_folder_the_task_asks_for_is_not_written_as_a_file(tmp_path: Path) -> None:
    """project_layout: the 1.5B called write_file with path "tests" for "a tests folder"."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel(
        [
            call("write_file", path="tests", content="from . import main"),
            call("write_file", path="tests/test_main.py", content="def test_main():\n    assert True\n"),
            call("write_file", path="notes", content="a file with no extension is fine elsewhere"),
            call("terminate", status="success", message="Done."),
        ]
    )
    result = await run_preset(workspace, model, "Create a tests folder with a test for main().")
    refused, written, notes = [m.text for m in result.messages if m.role == "tool"][:3]
    assert refused == (
        "tests was not written: the task asks for a tests folder, not a file. Give write_file a path inside it, "
        "such as tests/test_main.py."
    )
    assert written.startswith("Created tests/test_main.py") and notes.startswith("Created notes")
    assert (workspace / "tests").is_dir()


async def test_a_file_that_keeps_a_scripts_output_is_not_typed_by_hand(tmp_path: Path) -> None:
    """The quick start: the 1.5B typed squares.txt before it wrote squares.py, and the two disagreed."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel(
        [
            call("write_file", path="squares.txt", content="1\n4\n9\n"),
            call("edit_file", path="./squares.txt", old_text="", new_text="1\n"),
            call("write_file", path="squares.py", content="for i in range(1, 4):\n    print(i * i)\n"),
            call("python", code="python squares.py > squares.txt"),
            call("terminate", status="success", message="Done."),
        ]
    )
    task = "Write squares.py that prints the squares of 1 to 3, run it, and save what it prints to squares.txt"
    result = await run_preset(workspace, model, task)
    typed, edited = [m.text for m in result.messages if m.role == "tool"][:2]
    assert typed == (
        "squares.txt was not written: the task asks for it to hold what squares.py prints, so it comes from "
        "running the script, not from typing it. Write squares.py first, then call python with the code "
        "`python squares.py > squares.txt`."
    )
    assert edited.startswith("squares.txt was not written")
    assert result.state is RunState.FINISHED
    assert (workspace / "squares.txt").read_text() == "1\n4\n9\n"


async def test_a_typed_output_over_a_written_script_is_told_the_one_call_left(tmp_path: Path) -> None:
    """squares_script run 103: the 1.5B typed squares.txt seven times over a squares.py that printed it right."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel(
        [
            call("write_file", path="squares.py", content="for i in range(1, 4):\n    print(i * i)\n"),
            call("write_file", path="squares.txt", content="1\n4\n9\n"),
            call("python", code="python squares.py > squares.txt"),
            call("terminate", status="success", message="Done."),
        ]
    )
    task = "Write squares.py that prints the squares of 1 to 3, run it, and save what it prints to squares.txt"
    result = await run_preset(workspace, model, task)
    typed = [m.text for m in result.messages if m.role == "tool"][1]
    assert typed.endswith(
        "squares.py is written: call python with the code `python squares.py > squares.txt` now (if what it "
        "prints is not right, change squares.py first)."
    )
    assert result.state is RunState.FINISHED


async def test_the_tests_a_task_says_not_to_change_stay_as_they_are(tmp_path: Path) -> None:
    """fix_failing_test: the 1.5B added a function to test_stats.py so that its own import of it worked."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "stats.py").write_text("def double(x):\n    return x * 3\n")
    test = "from stats import double\n\ndef test_double():\n    assert double(2) == 4\n"
    (workspace / "test_stats.py").write_text(test)
    model = ScriptedModel(
        [
            call("edit_file", path="test_stats.py", old_text="", new_text="def test_more():\n    pass\n"),
            call("edit_file", path="stats.py", old_text="x * 3", new_text="x * 2"),
            call("terminate", status="success", message="Fixed."),
        ]
    )
    task = "The test in test_stats.py fails. Fix the bug in stats.py. Don't change the tests."
    result = await run_preset(workspace, model, task)
    refused, fixed = [m.text for m in result.messages if m.role == "tool"][:2]
    assert refused == (
        "test_stats.py was not changed: the task says not to change this file, so it stays as it is. Change the "
        "other files instead."
    )
    assert fixed.startswith("Edited stats.py")
    assert (workspace / "test_stats.py").read_text() == test


async def test_the_file_tools_do_not_change_the_files_a_question_is_about(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "config").mkdir(parents=True)
    settings = workspace / "config" / "servers.ini"
    settings.write_text("[staging]\nport = 9090\n")
    model = ScriptedModel(
        [
            call("edit_file", path="config/servers.ini", old_text="9090", new_text="9091"),
            call("write_file", path="config/servers.ini", content="port = 1\n"),
            call("write_file", path="notes.txt", content="staging: 9090\n"),  # a new file is not an input
            call("terminate", status="success", message="Port 9090."),
        ]
    )
    result = await run_preset(workspace, model, "Which port does the staging server use?")
    assert result.state is RunState.FINISHED and result.output == "Port 9090."
    # the grammar of a local model holds these (read_file too, once notes.txt changed the workspace)
    callable_names = {tool.name for tool in model.request_tools[3]}
    assert {"read_file", "python", "terminate"} <= callable_names and not {"write_file", "edit_file"} & callable_names
    edit, write, scratch = [m.text for m in result.messages if m.role == "tool"][:3]
    for refused in (edit, write):
        assert refused.startswith(
            "config/servers.ini was not changed: the task asks a question and no change, so the files stay as they are"
        )
    assert scratch.startswith("Created notes.txt")
    assert settings.read_text() == "[staging]\nport = 9090\n"
    change = ScriptedModel(
        [
            call("edit_file", path="config/servers.ini", old_text="9090", new_text="9091"),
            call("terminate", status="success", message="Set to 9091."),
        ]
    )
    await run_preset(workspace, change, "Set the staging port in config/servers.ini to 9091.")
    assert settings.read_text() == "[staging]\nport = 9091\n"  # a task that asks for the change gets it
    assert "edit_file" in {tool.name for tool in change.request_tools[0]}


async def test_a_list_of_files_picked_by_content_comes_from_code(tmp_path: Path) -> None:
    """find_todos: the 1.5B read one file and typed a list of four to six paths from their names."""
    workspace = tmp_path / "ws"
    (workspace / "src" / "app" / "db").mkdir(parents=True)
    (workspace / "src" / "app" / "main.py").write_text("# TODO: read the port\n")
    (workspace / "src" / "app" / "utils.py").write_text("def slug(text):\n    return text\n")
    (workspace / "src" / "app" / "db" / "models.py").write_text("# TODO: add an index\n")
    (workspace / "README.md").write_text("TODO: write the docs\n")
    walk = (
        "import os\nfor root, _, names in os.walk('.'):\n    for name in sorted(names):\n"
        "        path = os.path.join(root, name)\n        if 'TODO' in open(path).read():\n            print(path)\n"
    )
    model = ScriptedModel(
        [
            call("write_file", path="todo_files.txt", content="src/app/main.py\nsrc/app/utils.py\n"),
            call("python", code=walk),
            call("write_file", path="todo_files.txt", content="./README.md\nsrc/app/main.py\nsrc/app/db/models.py"),
            call("edit_file", path="todo_files.txt", old_text="", new_text="src/app/main.py\nsrc/app/utils.py\n"),
            call("write_file", path="todo_files.txt", content="src/app/main.py\nsrc/app/db/models.py\n"),
            call("terminate", status="success", message="Listed."),
        ]
    )
    task = "Find every file under src/ that contains TODO and write their paths to todo_files.txt, one per line."
    result = await run_preset(workspace, model, task)
    guessed, _, outside, unshown, written = [m.text for m in result.messages if m.role == "tool"][:5]
    assert guessed == (
        "todo_files.txt was not written: the task picks files by what is in them, so the list must come from code "
        "that reads every file, and no code has printed any of them yet (a list typed from file names misses some "
        "and adds others). Call python: walk src/ with os.walk('src/'), open and read each file, and write the "
        "paths found in that code with write_file('todo_files.txt', '\\n'.join(found))."
    )
    assert outside.startswith(
        "todo_files.txt was not written: the task asks only for files under src/, and README.md is not under it."
    )
    assert "no code's output shows 1 of the 2 paths it would list" in unshown
    assert written.startswith("Created todo_files.txt")
    assert result.state is RunState.FINISHED
    assert (workspace / "todo_files.txt").read_text() == "src/app/main.py\nsrc/app/db/models.py\n"


async def test_paths_in_an_error_are_not_paths_the_code_found(tmp_path: Path) -> None:
    """find_todos run 230: the walk failed with FileNotFoundError on a doubled path, the hint named the
    path it meant, and the 1.5B wrote that one path as the list of files holding TODO."""
    workspace = tmp_path / "ws"
    (workspace / "src" / "web").mkdir(parents=True)
    (workspace / "src" / "web" / "index.html").write_text("<!-- TODO: footer -->\n")
    (workspace / "src" / "main.py").write_text("# TODO: port\n")
    walk = (
        "import os\nfor root, _, names in os.walk('src'):\n    for name in names:\n"
        "        print(read_file(os.path.join(root, root, name)))\n"
    )
    model = ScriptedModel(
        [
            call("python", code=walk),
            call("write_file", path="todo_files.txt", content="src/main.py\n"),
            call("terminate", status="success", message="Listed."),
        ]
    )
    task = "Find every file under src/ that contains TODO and write their paths to todo_files.txt, one per line."
    result = await run_preset(workspace, model, task)
    failed, refused = [m.text for m in result.messages if m.role == "tool"][:2]
    assert "FileNotFoundError" in failed and "but has src/main.py" in failed
    assert refused.startswith("todo_files.txt was not written: the task picks files by what is in them")
    assert not (workspace / "todo_files.txt").exists()


async def test_a_list_of_files_a_task_does_not_pick_by_content_may_be_typed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    model = ScriptedModel(
        [
            call("write_file", path="files.txt", content="src/main.py\n"),
            call("terminate", status="success", message="Listed."),
        ]
    )
    result = await run_preset(workspace, model, "Write the path of main.py to files.txt.")
    assert next(m.text for m in result.messages if m.role == "tool").startswith("Created files.txt")


async def test_an_overwrite_that_loses_functions_the_task_does_not_name_is_merged_into_the_module(
    tmp_path: Path,
) -> None:
    """add_function runs 69 and 70: the 1.5B rewrote textutils.py as its slugify alone; refused, it never
    wrote the whole file."""
    module = tmp_path / "textutils.py"
    original = '"""Text helpers."""\n\n\ndef word_count(t):\n    return 1\n\n\ndef title_case(t):\n    return t\n'
    module.write_text(original)
    context = ToolContext(run_id="r", workspace=tmp_path)
    progress.task_message("Add a function slugify to textutils.py. Replace title_case with it.", context)
    [write] = [tool for tool in file_tools(PathJail(tmp_path)) if tool.name == "write_file"]
    alone = "from textutils import slugify\nimport re\n\ndef slugify(t):\n    return re.sub('x', '-', t)\n"
    merged = await call_tool(write, context, path="textutils.py", content=alone)
    assert (
        not merged.is_error
        and (
            "Note: the new content had no word_count, which textutils.py defines and the task does not ask to remove, "
            "so it was merged into textutils.py: they are kept, a function or class it defines is replaced by the new "
            "one of the same name, and other new code goes after its last line. To remove code, use edit_file."
        )
        in merged.text
    )
    assert module.read_text() == (
        '"""Text helpers."""\n\nimport re\n\n\ndef word_count(t):\n    return 1\n\n\ndef title_case(t):\n    return t\n'
        "\n\ndef slugify(t):\n    return re.sub('x', '-', t)\n"
    )  # its own import left out, as in any write
    changed = "def title_case(t):\n    return t.upper()\n"
    assert not (await call_tool(write, context, path="textutils.py", content=changed)).is_error
    assert "def title_case(t):\n    return t.upper()\n\n\ndef slugify" in module.read_text()  # replaced where it was
    named = "def word_count(t):\n    return 1\n"  # title_case and slugify: the task names them
    assert not (await call_tool(write, context, path="textutils.py", content=named)).is_error
    assert module.read_text() == named
    module.write_text(original)
    broken = "def slugify(t):\n    return t\nbreak\n"  # parses, but no merge of it compiles
    refused = await call_tool(write, context, path="textutils.py", content=broken)
    assert refused.is_error and refused.text == (
        "textutils.py was not overwritten: the new content no longer defines word_count, which textutils.py "
        "defines now and the task does not ask to remove. Write the whole file again with them, or add new code "
        'with edit_file (path "textutils.py", old_text "" and the new code as new_text: it goes after the last line).'
    )
    assert module.read_text() == original
    unbriefed = await call_tool(write, path="textutils.py", content=named)  # no task: only a note
    assert not unbriefed.is_error and "Note: textutils.py no longer defines title_case" in unbriefed.text
    assert module.read_text() == named


STATS = (
    "def mean(values):\n    return sum(values) / len(values)\n\n\n"
    "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n"
    "    return (ordered[middle] + ordered[middle + 1]) / 2\n"
)


async def test_a_line_of_a_function_sent_as_the_whole_module_is_refused(tmp_path: Path) -> None:
    """fix_failing_test run 104: the 1.5B sent `median = len(ordered) // 2 - 1` alone as stats.py; merged
    after its last line, it made every import of stats fail with NameError."""
    module = tmp_path / "stats.py"
    module.write_text(STATS)
    context = ToolContext(run_id="r", workspace=tmp_path)
    progress.task_message("Find the bug in stats.py and fix it. Don't change the tests.", context)
    [write] = [tool for tool in file_tools(PathJail(tmp_path)) if tool.name == "write_file"]
    refused = await call_tool(write, context, path="stats.py", content="median = len(ordered) // 2 - 1")
    assert refused.is_error and refused.text == (
        "stats.py was not changed: the line 'median = len(ordered) // 2 - 1' would run at the top of the module, "
        "where `ordered` is not defined (a function's own names exist only inside it), so every import of it "
        "would fail with NameError. To change a line inside a function, use edit_file with that line as it is "
        "now as old_text: the closest line is 'middle = len(ordered) // 2'."
    )
    assert module.read_text() == STATS
    # Top-level code that uses only what the module binds (or binds itself) is merged as before.
    extra = "import re\nWORD = re.compile('w')\nSIZES = [len(v) for v in ('a', 'bb')]\nTOTAL = mean(SIZES)\n"
    merged = await call_tool(write, context, path="stats.py", content=extra)
    assert not merged.is_error and module.read_text().endswith("TOTAL = mean(SIZES)\n")


async def test_an_input_the_task_reads_that_is_missing_is_not_made_up(tmp_path: Path) -> None:
    """The quick start's example on an empty workspace: the 1.5B wrote a sales.csv of its own, from the
    system prompt's example rows, and reported totals of it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel(
        [
            call("write_file", path="sales.csv", content="region,amount\nNorth,12.50\n"),
            call("terminate", status="failure", message="sales.csv is not in the workspace."),
            call("terminate", status="failure", message="sales.csv is not in the workspace."),  # the 2nd attempt
        ]
    )
    task = "Read sales.csv, compute the total amount per region, and write report.md with a table of them."
    result = await run_preset(workspace, model, task)
    briefing = next(m.text for m in result.messages if m.role == "user")
    assert "Not in the workspace: sales.csv, which the task reads. Do not make up its content" in briefing
    assert "- write_file: sales.csv was not changed: the task reads this file, and the workspace had no" in briefing
    assert not (workspace / "sales.csv").exists()
    assert [c.name for m in result.messages for c in m.tool_calls] == ["terminate"]  # the answer was not sent back
    assert result.state is RunState.ERROR and result.output == "sales.csv is not in the workspace."


def test_an_input_in_a_subfolder_or_an_output_is_not_missing() -> None:
    task = "Read sales.csv and write the totals to report.md."
    assert missing_sources(task, ["data/sales.csv"]) == []
    assert missing_sources(task, []) == ["sales.csv"]
    assert missing_sources("Write squares.py, run it, and save what it prints to squares.txt", []) == []

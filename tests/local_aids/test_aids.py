"""The aids' registry and switches, and the aids that are prompts and answer checks, in real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.agent_cases import assert_protocol
from helpers.preset_cases import settings_for
from pymanus import RunState
from pymanus.config import LocalAidsConfig, Settings
from pymanus.errors import ConfigError
from pymanus.local_aids import AIDS, equipped_agent, select
from pymanus.local_aids.example import EXAMPLE_RUN
from pymanus.local_aids.outputs import named_files
from pymanus.local_aids.previews import previews
from pymanus.models import ScriptedModel, call

LOCAL = "local:qwen2.5-coder-1.5b"


def test_every_aid_is_on_for_local_models_and_off_for_others() -> None:
    assert select(LocalAidsConfig(), LOCAL) == list(AIDS)
    assert select(LocalAidsConfig(), "local:/models/x.gguf") == list(AIDS)
    assert select(LocalAidsConfig(), "openai:gpt-4o-mini") == []


def test_switches_turn_aids_on_and_off() -> None:
    config = LocalAidsConfig(enabled=["output_check"], disabled=["worked_example"])
    assert select(config, "openai:x") == ["output_check"]
    assert "worked_example" not in select(config, LOCAL) and "output_check" in select(config, LOCAL)
    assert select(LocalAidsConfig(enabled=["all"], disabled=["output_check"]), "openai:x") == [
        name for name in AIDS if name != "output_check"
    ]
    assert select(LocalAidsConfig(disabled=["all"]), LOCAL) == []
    assert select(LocalAidsConfig(enabled=["output_check"], disabled=["output_check"]), "openai:x") == []


@pytest.mark.parametrize("key", ["enabled", "disabled"])
def test_an_unknown_aid_is_a_config_error(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"local_aids.{key}: unknown aid 'nope'; known: all, compact_tools"):
        select(LocalAidsConfig(**{key: ["nope"]}), LOCAL)


def test_the_aids_shape_the_preset_agent(tmp_path: Path) -> None:
    local = equipped_agent(settings_for(tmp_path / "a"), model=ScriptedModel([], name=LOCAL))
    assert local.toolset.names == ["read_file", "write_file", "edit_file", "list_dir", "python", "terminate"]
    assert local.settings.parallel_tool_calls is False
    assert local.extensions[0].name == "workspace_listing"
    assert {"code_repair", "error_hints"} <= {layer.name for layer in local.toolset.middleware}
    assert EXAMPLE_RUN in "\n\n".join(e.instructions for e in local.extensions)
    remote = equipped_agent(settings_for(tmp_path / "b"), model=ScriptedModel([], name="openai:x"))
    assert {"grep", "find_files", "web_search", "planning"} <= set(remote.toolset.names)
    aid_names = set(AIDS)
    assert not {layer.name for layer in remote.toolset.middleware} & aid_names
    assert not {e.name for e in remote.extensions} & aid_names
    assert remote.settings.parallel_tool_calls is None
    one = equipped_agent(settings_for(tmp_path / "c"), model=ScriptedModel([], name=LOCAL), aids=["compact_tools"])
    assert not {layer.name for layer in one.toolset.middleware} & aid_names and "grep" not in one.toolset
    settings = Settings.load(
        path=None,
        env={},
        overrides={"agent": {"workspace": str(tmp_path / "d")}, "web": {"allow_domains": ["docs.python.org"]}},
        cwd=tmp_path,
    )
    opened = equipped_agent(settings, model=ScriptedModel([], name=LOCAL))
    assert "web_fetch" in opened.toolset  # the user let it on the web
    with pytest.raises(ConfigError, match="unknown aid 'nope'"):
        equipped_agent(settings_for(tmp_path / "e"), model=ScriptedModel([], name=LOCAL), aids=["nope"])


def test_named_files_are_the_paths_a_task_mentions() -> None:
    task = "Read data/sales.csv and write report.md (see notes.txt, then report.md again); version 1.2 ships."
    assert named_files(task) == ["data/sales.csv", "report.md", "notes.txt"]
    assert named_files("Count the words. Then stop.") == []


def test_previews_show_named_files_first_and_data_heads(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "sales.csv").write_text("id,amount\n" + "".join(f"{i},{i * 10}\n" for i in range(20)))
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    shown = previews(tmp_path, "Sum sales.csv")
    assert shown is not None and shown.index("sales.csv") < shown.index("a.txt")
    assert "sales.csv (first 6 of 21 lines; read the rest with code):\n```\nid,amount\n0,0\n" in shown
    assert "4,40\n```" in shown and "5,50" not in shown and "blob.bin" not in shown
    assert previews(tmp_path / "missing", "x") is None


async def test_output_check_sends_back_missing_empty_and_broken_files(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    model = ScriptedModel(
        [
            call("terminate", status="success", message="done"),
            call("write_file", path="out/report.json", content="{'total': 3}"),
            call("terminate", status="success", message="done"),
            call("write_file", path="out/report.json", content='{"total": 3}'),
            call("terminate", status="success", message="done now"),
        ]
    )
    agent = equipped_agent(settings_for(workspace), model=model, aids=["output_check"])
    try:
        result = await agent.run("Write the totals to out/report.json")
    finally:
        await agent.aclose()
    assert (result.state, result.output, result.steps) == (RunState.FINISHED, "done now", 5)
    sent_back = [m.text for m in result.messages if m.role == "tool" and m.name == "terminate"]
    assert "the task names out/report.json, but the workspace has no such file" in sent_back[0]
    assert "out/report.json is not valid JSON" in sent_back[1]
    assert_protocol(result.messages)


async def test_output_check_accepts_files_the_run_did_not_touch(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "old.json").write_text("not json, and not the run's doing")
    model = ScriptedModel([call("terminate", status="success", message="old.json is odd")])
    agent = equipped_agent(settings_for(workspace), model=model, aids=["output_check"])
    result = await agent.run("Look at old.json")
    assert (result.state, result.steps) == (RunState.FINISHED, 1)


async def test_test_check_runs_the_workspace_tests_after_a_code_change(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def double(x):\n    return x * 3\n")
    (workspace / "test_calc.py").write_text(
        "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    )
    model = ScriptedModel(
        [
            call("write_file", path="calc.py", content="def double(x):\n    return x + 3\n"),
            call("terminate", status="success", message="fixed"),
            call("write_file", path="calc.py", content="def double(x):\n    return x * 2\n"),
            call("terminate", status="success", message="fixed now"),
        ]
    )
    agent = equipped_agent(settings_for(workspace, backend="none"), model=model, aids=["test_check"])
    try:
        result = await agent.run("Fix double in calc.py")
    finally:
        await agent.aclose()
    assert (result.state, result.output) == (RunState.FINISHED, "fixed now")
    sent_back = next(m.text for m in result.messages if m.role == "tool" and m.name == "terminate")
    assert "the workspace's tests fail" in sent_back and "assert" in sent_back


async def test_progress_note_counts_steps_and_names_changed_files(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    model = ScriptedModel(
        [
            call("write_file", path="a.txt", content="x"),
            call("list_dir"),
            call("terminate", status="success", message="ok"),
        ]
    )
    agent = equipped_agent(settings_for(workspace), model=model, aids=["progress_note"])
    result = await agent.run("Write a.txt")
    assert result.state is RunState.FINISHED
    reminder = model.requests[1][-1].text
    assert reminder.startswith("Step 2 of 30 (29 left, this one included).")
    assert "Files this run created or changed: a.txt." in reminder
    assert all(m.text != reminder for m in result.messages)  # sent, not kept


async def test_progress_note_names_the_files_the_task_names_that_do_not_exist_yet(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a\n1\n")
    model = ScriptedModel(
        [
            call("python", code="def f():\n    return 1\n"),
            call("write_file", path="lib/solution.py", content="def f():\n    return 1\n"),
            call("list_dir"),
            call("terminate", status="success", message="ok"),
        ]
    )
    agent = equipped_agent(settings_for(workspace), model=model, aids=["progress_note"])
    result = await agent.run("Read data.csv, then write solution.py and notes.md")
    assert result.state is RunState.FINISHED
    second, third = model.requests[1][-1].text, model.requests[2][-1].text
    assert "Files the task names that do not exist yet: solution.py, notes.md." in second
    assert "do not exist yet: notes.md." in third  # found in lib/, as the answer check finds it

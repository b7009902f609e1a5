"""The Manus preset end to end with scripted models: real tools, real sandbox, real files."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from helpers.preset_cases import run_preset, settings_for
from pymanus import RunState
from pymanus.agent.manus import build_manus_agent
from pymanus.models import ScriptedModel, call


async def test_a_csv_report_task_with_real_tools(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "sales.csv").write_text("region,amount\nnorth,10\nsouth,5\nnorth,2.5\n")
    code = (
        "import csv\n"
        "totals = {}\n"
        "for row in csv.DictReader(open('sales.csv')):\n"
        "    totals[row['region']] = totals.get(row['region'], 0) + float(row['amount'])\n"
        "lines = ['| region | total |', '|---|---|'] + [f'| {r} | {t} |' for r, t in sorted(totals.items())]\n"
        "open('report.md', 'w').write('\\n'.join(lines) + '\\n')\n"
        "print(totals)\n"
    )
    model = ScriptedModel(
        [
            call("read_file", path="sales.csv", preview=True),
            call("python", code=code),
            call("terminate", status="success", message="Wrote report.md"),
        ]
    )
    result = await run_preset(workspace, model, "Read sales.csv, compute the total amount per region, write report.md.")
    assert result.state is RunState.FINISHED, result.output
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert observations[0].startswith("sales.csv")  # the preview of the file
    assert "Files written: report.md" in observations[1]
    assert "{'north': 12.5, 'south': 5.0}" in observations[1]
    assert (workspace / "report.md").read_text().splitlines()[2] == "| north | 12.5 |"


async def test_escapes_are_observations_and_the_run_goes_on(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept() -> None:
        listener.settimeout(5)
        try:
            connection, _ = listener.accept()
            received.append(connection.recv(100))
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    model = ScriptedModel(
        [
            call("read_file", path="../secret.txt"),
            call("python", code=f"print(open({str(secret)!r}).read())"),
            call("python", code="open('/etc/pymanus-x', 'w').write('x')"),
            call("python", code=f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"),
            call("web_fetch", url=f"http://127.0.0.1:{port}/"),
            call("terminate", status="success", message="survived"),
        ]
    )
    agent = build_manus_agent(settings_for(workspace), model=model)
    try:
        result = await agent.run("Try to escape.")
    finally:
        await agent.aclose()
        listener.close()
    assert (result.state, result.output) == (RunState.FINISHED, "survived")
    observations = [m.text for m in result.messages if m.role == "tool"][:-1]
    assert all("TOP-SECRET" not in text for text in observations)
    assert "outside the workspace" in observations[0]
    assert "FileNotFoundError" in observations[1] or "No such file" in observations[1]
    assert "Read-only file system" in observations[2] or "Permission" in observations[2]
    assert "ConnectionRefusedError" in observations[3] or "Network is unreachable" in observations[3]
    assert "not allowed" in observations[4].lower() or "allow_domains" in observations[4]
    assert received == []
    assert not Path("/etc/pymanus-x").exists()


async def test_ask_human_is_offered_only_with_someone_to_answer(tmp_path: Path) -> None:
    from pymanus.tools.builtin.human import QueueAsker

    without = build_manus_agent(settings_for(tmp_path / "a"), model=ScriptedModel([]))
    with_asker = build_manus_agent(settings_for(tmp_path / "b"), model=ScriptedModel([]), asker=QueueAsker())
    assert "ask_human" not in without.toolset and "ask_human" in with_asker.toolset
    assert "- ask_human:" in with_asker.system_prompt and "- ask_human:" not in without.system_prompt


async def test_the_first_message_lists_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "data").mkdir(parents=True)
    (workspace / "data" / "scores.csv").write_text("player,score\nava,3\n")
    (workspace / "notes.txt").write_text("hello\n")
    model = ScriptedModel(["nothing to do"])
    await run_preset(workspace, model, "Look around.")
    first = model.requests[0][1].text
    assert first.startswith("Look around.\n\nFiles in the workspace:")
    assert "- notes.txt (1 line)" in first and "- data/scores.csv (2 lines)" in first


def test_the_preset_can_offer_fewer_tools_and_take_extensions(tmp_path: Path) -> None:
    from pymanus.agent.extensions import Extension

    class Rule(Extension):
        instructions = "Answer in French."

    narrow = build_manus_agent(
        settings_for(tmp_path / "a"), model=ScriptedModel([]), tools={"read_file", "edit_file"}, extensions=[Rule()]
    )
    assert narrow.toolset.names == ["read_file", "edit_file", "terminate"]
    edit = narrow.toolset.get("edit_file")
    assert edit is not None and edit.parameters["required"] == ["path", "old_text", "new_text"]
    assert [type(e).__name__ for e in narrow.extensions] == [
        "WorkspaceListing",
        "UnfinishedReplyNudge",
        "Rule",
        "WorkspaceJournal",
    ]
    full = build_manus_agent(settings_for(tmp_path / "b"), model=ScriptedModel([]))
    assert {"find_files", "grep", "web_fetch", "web_search", "planning", "python"} <= set(full.toolset.names)
    other = build_manus_agent(settings_for(tmp_path / "c"), model=ScriptedModel([]))
    assert full.system_prompt == other.system_prompt  # the same for every workspace

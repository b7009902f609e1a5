"""Runs of the Manus preset that change a workspace, for the journal's tests."""

from __future__ import annotations

from pathlib import Path

from helpers.preset_cases import settings_for
from pymanus import RunResult
from pymanus.agent.manus import build_manus_agent
from pymanus.config import Settings
from pymanus.models import ScriptedModel, call
from pymanus.models.base import Model

DATA = "name,city\r\nJosé,São Paulo\r\nZoë,Zürich\r\n".encode()
OLD = b"old notes \xe2\x9c\x93\n"
DELETE_AND_CREATE = "import os\nos.remove('old.txt')\nopen('report.csv', 'w').write('total\\n3\\n')\n"


def make_workspace(tmp_path: Path) -> Path:
    """A workspace holding ``data.csv`` (:data:`DATA`) and ``old.txt`` (:data:`OLD`)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "data.csv").write_bytes(DATA)
    (root / "old.txt").write_bytes(OLD)
    return root


async def run_script(
    workspace: Path, calls: list, settings: Settings | None = None, model: Model | None = None
) -> tuple[RunResult, list]:
    """One run of the preset making ``calls``; its result and events."""
    agent = build_manus_agent(settings or settings_for(workspace), model=model or ScriptedModel(calls))
    events = []
    try:
        run = agent.start("Change the files.")
        async for event in run.events():
            events.append(event)
        return run.result(), events
    finally:
        await agent.aclose()


async def three_changes(workspace: Path, settings: Settings | None = None) -> tuple[RunResult, list]:
    """``write_file`` overwrites data.csv, then python deletes old.txt and creates report.csv."""
    return await run_script(
        workspace,
        [
            call("write_file", path="data.csv", content="name,city\n"),
            call("python", code=DELETE_AND_CREATE),
            call("terminate", status="success", message="done"),
        ],
        settings,
    )

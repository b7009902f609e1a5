"""Runs of the Manus preset with a scripted model, shared by the preset's tests."""

from __future__ import annotations

from pathlib import Path

from pymanus import RunResult
from pymanus.agent.manus import build_manus_agent
from pymanus.config import Settings
from pymanus.models import Model


def settings_for(workspace: Path, **sandbox: object) -> Settings:
    return Settings.load(
        path=None,
        env={},
        overrides={"agent": {"workspace": str(workspace)}, "sandbox": dict(sandbox)},
        cwd=workspace.parent,
    )


async def run_preset(workspace: Path, model: Model, task: str) -> RunResult:
    """One run of the preset with ``model`` in ``workspace``, the agent closed after it."""
    agent = build_manus_agent(settings_for(workspace), model=model)
    try:
        return await agent.run(task)
    finally:
        await agent.aclose()

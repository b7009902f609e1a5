"""Fixtures of the aids' tests: the python tool (one-shot or session) behind the aids' middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from helpers.aid_cases import Aided
from pymanus.local_aids.code_repair import CodeRepair
from pymanus.local_aids.error_hints import ErrorHints
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools.builtin.files import file_tools
from pymanus.tools.builtin.python import PythonRunner, python_tool


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "ws", backend="none", timeout=10)


@pytest.fixture
def once(sandbox: Sandbox) -> Aided:
    """A one-shot python tool and the file tools, behind CodeRepair and ErrorHints."""
    tools = [python_tool(sandbox), *file_tools(PathJail(sandbox.workspace))]
    return Aided(tools, sandbox.workspace, [CodeRepair(), ErrorHints()])


@pytest.fixture
async def session(sandbox: Sandbox) -> AsyncIterator[Aided]:
    """A session python tool behind CodeRepair and ErrorHints."""
    runner = PythonRunner(sandbox, session=True)
    yield Aided([runner.tool], sandbox.workspace, [CodeRepair(), ErrorHints()])
    await runner.aclose()

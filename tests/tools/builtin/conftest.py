"""Fixtures of the python tool's tests: a sandbox per backend, a one-shot tool and a session runner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from helpers.python_cases import BACKENDS
from pymanus.sandbox import Sandbox
from pymanus.tools import Tool
from pymanus.tools.builtin.python import PythonRunner, python_tool


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "ws", backend=request.param, timeout=10)


@pytest.fixture
def once(sandbox: Sandbox) -> Tool:
    return python_tool(sandbox)


@pytest.fixture
async def runner(sandbox: Sandbox) -> AsyncIterator[PythonRunner]:
    runner = PythonRunner(sandbox, session=True)
    yield runner
    await runner.aclose()

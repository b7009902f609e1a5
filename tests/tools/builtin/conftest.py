"""Fixtures of the built-in tools' tests: a sandbox per backend, a one-shot python tool, a session runner,
and the file tools in a jail."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from helpers.python_cases import BACKENDS
from pymanus.sandbox import PathJail, Sandbox
from pymanus.tools import Tool
from pymanus.tools.builtin.files import file_tools
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


@pytest.fixture
def jail(tmp_path: Path) -> PathJail:
    return PathJail(tmp_path / "ws")


@pytest.fixture
def tools(jail: PathJail) -> dict[str, Tool]:
    return {t.name: t for t in file_tools(jail)}

"""Backends, worker-process probes and a call helper shared by the python tool's tests."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pymanus.sandbox import Sandbox
from pymanus.tools import Tool, ToolContext, ToolResult

HAVE_BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed")
BACKENDS = ["none", pytest.param("bwrap", marks=needs_bwrap)]
WORKER_MARK = "The worker that runs model-written Python"


def worker_processes() -> list[int]:
    """The python workers this test process started (others on the machine, a benchmark's, do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if WORKER_MARK.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() and _ours(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _ours(pid: int) -> bool:
    """Whether ``pid`` descends from this process."""
    me = os.getpid()
    while pid > 1:
        if pid == me:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the parent's pid
    return False


async def no_workers_left() -> bool:
    for _ in range(150):
        if not worker_processes():
            return True
        await asyncio.sleep(0.02)
    return False


async def call(tool: Tool, code: str, run_id: str = "run", **extra: Any) -> ToolResult:
    return await tool.run(tool.validate({"code": code, **extra}), ToolContext(run_id=run_id))


def quick(sandbox: Sandbox) -> Sandbox:
    """The same sandbox with a one-second time limit."""
    return Sandbox(sandbox.workspace, backend=sandbox.backend, timeout=1)

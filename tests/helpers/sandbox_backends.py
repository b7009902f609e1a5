"""Which sandbox backends this machine can run, for tests parametrized over them.

Each backend is probed for real once (the same probe ``Sandbox`` runs); a backend that
cannot run here is skipped with the probe's reason, never silently passed.
"""

from __future__ import annotations

import asyncio
import functools
import os
import stat
import tempfile
from pathlib import Path

import pytest

from pymanus.sandbox import Sandbox

FAKE_BWRAP = """#!/bin/sh
echo "bwrap: No permissions to creating new namespace" >&2
exit 1
"""
"""A ``bwrap`` that fails like one on a host that forbids it namespaces."""


@functools.cache
def unusable_reason(backend: str) -> str | None:
    """Why ``backend`` cannot confine code on this machine (``None`` when it can)."""
    with tempfile.TemporaryDirectory() as workspace:
        box = Sandbox(workspace, backend=backend)  # type: ignore[arg-type]
        return None if box.active_backend == backend else box.why


@functools.cache
def landlock_hide_problem() -> str | None:
    """Why the ``landlock`` backend cannot hide the journal's folder here (``None`` when it can)."""
    with tempfile.TemporaryDirectory() as workspace:
        box = Sandbox(workspace, backend="landlock")
        if box.active_backend != "landlock" or box.landlock is None:
            return box.why
        return None if box.landlock.hides else box.landlock.hide_problem or "the probe could not hide a folder"


def backend_param(backend: str) -> object:
    """``backend`` as a pytest parameter, skipped with the reason when it cannot run here."""
    reason = unusable_reason(backend) if backend in ("bwrap", "landlock") else None
    return pytest.param(backend, marks=pytest.mark.skipif(reason is not None, reason=f"{backend}: {reason}"))


CONFINED = [backend_param("bwrap"), backend_param("landlock")]
"""The confining backends, each skipped where it cannot run."""


def install_fake_bwrap(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a failing ``bwrap`` first on ``PATH``; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text(FAKE_BWRAP)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return script


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and int(entry) != os.getpid():
                found.append(int(entry))
    return found


async def no_processes_with(marker: str) -> bool:
    """Whether every process with ``marker`` in its command line is gone (within two seconds)."""
    for _ in range(100):
        if not processes_with(marker):
            return True
        await asyncio.sleep(0.02)
    return False

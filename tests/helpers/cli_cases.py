"""Running the real ``pymanus`` command line in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.chat_server import ChatServer

PYMANUS = [sys.executable, "-m", "pymanus"]


def run_cli(
    args: list[str], cwd: Path, server: ChatServer | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``pymanus ARGS`` in ``cwd``, with no user config or key leaking in (``server``: the endpoint)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYMANUS_"))}
    environment["HOME"] = str(cwd)  # no user config file leaks in
    if server is not None:
        environment["OPENAI_BASE_URL"] = server.url
    environment.update(env)
    return subprocess.run(
        [*PYMANUS, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )

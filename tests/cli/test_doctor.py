"""``pymanus doctor`` and the sandbox in ``pymanus run``: real subprocesses, real probes.

A ``bwrap`` that fails to create namespaces is put first on PATH to stand for a host
where bubblewrap cannot run.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from helpers.chat_server import ChatServer, completion, tool_call
from helpers.cli_cases import run_cli as pymanus
from helpers.sandbox_backends import FAKE_BWRAP, unusable_reason

NO_CONFINEMENT = unusable_reason("bwrap") is not None and unusable_reason("landlock") is not None


def fake_bwrap_path(folder: Path) -> str:
    """A PATH with a failing ``bwrap`` first."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "bwrap"
    script.write_text(FAKE_BWRAP)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def layers(stdout: str) -> dict[str, str]:
    """``{"file system": "yes", ...}`` from the report."""
    found = {}
    for line in stdout.splitlines():
        for name in ("file system", "network", "limits"):
            if line.strip().startswith(name):
                found[name] = line.strip()[len(name) :].split()[0]
    return found


@pytest.mark.skipif(NO_CONFINEMENT, reason="no sandbox backend can run on this machine")
def test_doctor_reports_the_backend_and_every_layer(tmp_path: Path) -> None:
    proc = pymanus(["doctor"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("sandbox backend: ") and "(configured: auto)" in first
    assert first.split()[2] in ("bwrap", "landlock")
    assert proc.stdout.splitlines()[1].startswith("why: ")
    assert layers(proc.stdout) == {"file system": "yes", "network": "yes", "limits": "yes"}
    assert not (tmp_path / "workspace").exists()  # a check creates nothing


@pytest.mark.skipif(unusable_reason("landlock") is not None, reason=f"landlock: {unusable_reason('landlock')}")
def test_doctor_with_a_broken_bwrap_uses_landlock_and_says_why(tmp_path: Path) -> None:
    proc = pymanus(["doctor"], tmp_path, PATH=fake_bwrap_path(tmp_path / "bin"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sandbox backend: landlock (configured: auto)")
    assert "No permissions to creating new namespace" in proc.stdout
    assert layers(proc.stdout) == {"file system": "yes", "network": "yes", "limits": "yes"}
    assert "Landlock ABI" in proc.stdout


def test_doctor_refuses_a_forced_backend_that_cannot_run(tmp_path: Path) -> None:
    proc = pymanus(["doctor", "--sandbox", "bwrap"], tmp_path, PATH=fake_bwrap_path(tmp_path / "bin"))
    assert proc.returncode == 1
    assert proc.stdout.startswith("sandbox backend: refused (configured: bwrap)")
    assert layers(proc.stdout) == {"file system": "no", "network": "no", "limits": "no"}
    assert "Refusing to run code" in proc.stdout and "apt-get install bubblewrap" in proc.stdout
    assert '[sandbox] backend = "none"' in proc.stdout


def test_doctor_with_none_says_nothing_is_confined(tmp_path: Path) -> None:
    proc = pymanus(["doctor", "--sandbox", "none"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sandbox backend: none (configured: none)")
    assert layers(proc.stdout) == {"file system": "no", "network": "no", "limits": "yes"}
    assert "WITHOUT isolation" in proc.stdout


def test_doctor_reads_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "pymanus.toml").write_text('[sandbox]\nbackend = "none"\n')
    assert pymanus(["doctor"], tmp_path).stdout.startswith("sandbox backend: none")


def test_an_unknown_backend_is_a_usage_error(tmp_path: Path) -> None:
    proc = pymanus(["doctor", "--sandbox", "docker"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "'auto', 'bwrap', 'landlock' or 'none'" in proc.stderr
    proc = pymanus(["run", "--sandbox", "docker", "--model", "openai:any", "x"], tmp_path)
    assert proc.returncode == 2 and "'landlock'" in proc.stderr


# -- pymanus run ---------------------------------------------------------------------------
def test_run_names_the_sandbox_first_and_warns_once_when_unconfined(
    chat_server_thread: ChatServer, tmp_path: Path
) -> None:
    chat_server_thread.push(completion("done"))
    proc = pymanus(["run", "--sandbox", "none", "--model", "openai:any", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("WITHOUT isolation") == 1
    assert "pymanus: warning: sandbox backend 'none'" in proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("run ") and "sandbox none" in first


@pytest.mark.skipif(NO_CONFINEMENT, reason="no sandbox backend can run on this machine")
def test_run_names_a_confining_backend_without_warning(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    chat_server_thread.push(completion("done"))
    proc = pymanus(["run", "--model", "openai:any", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "sandbox bwrap" in first or "sandbox landlock" in first


def test_a_refused_sandbox_is_an_observation_and_the_run_finishes(
    chat_server_thread: ChatServer, tmp_path: Path
) -> None:
    chat_server_thread.push(
        completion(tool_calls=[tool_call("python", {"code": "print(6 * 7)"})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "could not run code"})]),
    )
    proc = pymanus(
        ["run", "--sandbox", "bwrap", "--model", "openai:any", "--json", "Compute 6 * 7."],
        tmp_path,
        chat_server_thread,
        PATH=fake_bwrap_path(tmp_path / "bin"),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["state"] == "finished"
    assert proc.stderr.count("pymanus: warning: Refusing to run code") == 1  # said once at the start
    assert "sandbox refused" in proc.stderr  # the first progress line (on stderr with --json)
    answered = chat_server_thread.messages[1]
    observation = next(m["content"] for m in answered if m["role"] == "tool")
    assert "Refusing to run code" in observation and "apt-get install bubblewrap" in observation
    assert "--sandbox none" in observation

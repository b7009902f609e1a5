"""Sandbox.run on every backend: exit codes, limits, timeouts, capped output, cleanup, warnings."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from helpers.sandbox_backends import CONFINED, no_processes_with, processes_with
from pymanus.errors import SandboxError
from pymanus.sandbox import Limits, Sandbox
from pymanus.sandbox.limits import PidsCgroup, find_pids_parent
from pymanus.sandbox.streams import OutputBuffer

HAVE_BWRAP = shutil.which("bwrap") is not None
BACKENDS = ["none", *CONFINED]
PY = sys.executable


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "ws", backend=request.param, timeout=10)


async def test_runs_a_command_in_the_workspace(sandbox: Sandbox) -> None:
    result = await sandbox.run([PY, "-c", "import os; print(os.getcwd()); open('out.txt', 'w').write('x')"])
    assert result.ok and result.exit_code == 0
    assert result.stdout.strip() == str(sandbox.workspace)
    assert (sandbox.workspace / "out.txt").read_text() == "x"


async def test_exit_code_stdin_and_stderr(sandbox: Sandbox) -> None:
    code = "import sys; data = sys.stdin.read(); print(data.upper()); print('oops', file=sys.stderr); sys.exit(3)"
    result = await sandbox.run([PY, "-c", code], stdin="hello")
    assert result.exit_code == 3 and not result.ok
    assert result.stdout == "HELLO\n" and result.stderr == "oops\n"
    assert result.exit_description() == "exit code 3"


async def test_host_environment_does_not_leak(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    result = await sandbox.run([PY, "-c", "import os; print(sorted(os.environ))"], env={"EXTRA": "1"})
    assert "OPENAI_API_KEY" not in result.stdout and "EXTRA" in result.stdout


async def test_timeout_kills_the_whole_process_tree(sandbox: Sandbox) -> None:
    marker = f"97.{uuid.uuid4().int % 10**6}"
    result = await sandbox.run(["sh", "-c", f"sleep {marker} & sleep {marker}; echo never"], timeout=0.5)
    assert result.timed_out and result.exit_code is None
    assert "time limit" in result.exit_description()
    assert result.duration < 5
    assert await no_processes_with(marker)


async def test_background_processes_die_when_the_command_ends(sandbox: Sandbox) -> None:
    marker = f"98.{uuid.uuid4().int % 10**6}"
    result = await sandbox.run(["sh", "-c", f"sleep {marker} & echo started"])
    assert result.ok and result.stdout == "started\n"
    assert result.duration < 5
    assert await no_processes_with(marker)


async def test_a_process_that_left_the_session_still_dies(sandbox: Sandbox) -> None:
    marker = f"96.{uuid.uuid4().int % 10**6}"
    code = f"import os, subprocess; subprocess.Popen(['sleep', '{marker}'], start_new_session=True); print('ok')"
    result = await sandbox.run([PY, "-c", code])
    assert result.stdout == "ok\n"
    if sandbox.active_backend == "none" and find_pids_parent() is None:
        pytest.skip("without bwrap or a cgroup, a process that calls setsid() escapes the kill")
    assert await no_processes_with(marker)


async def test_cancelling_the_caller_kills_the_command(sandbox: Sandbox) -> None:
    marker = f"95.{uuid.uuid4().int % 10**6}"
    task = asyncio.ensure_future(sandbox.run(["sleep", marker]))
    for _ in range(100):
        if processes_with(marker):
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await no_processes_with(marker)


async def test_endless_output_is_cut_while_read(sandbox: Sandbox) -> None:
    result = await sandbox.run([PY, "-c", "while True: print('x' * 10000)"], timeout=1.0)
    assert result.timed_out and result.stdout_truncated
    assert result.stdout_bytes > 10 * sandbox.output_limit
    assert len(result.stdout) < sandbox.output_limit + 200
    assert "bytes of output cut" in result.stdout


async def test_long_output_keeps_head_and_tail(sandbox: Sandbox) -> None:
    code = "print('FIRST'); [print('line', i) for i in range(50000)]; print('LAST')"
    result = await sandbox.run([PY, "-c", code])
    assert result.ok and result.stdout_truncated
    assert result.stdout.startswith("FIRST") and result.stdout.rstrip().endswith("LAST")


async def test_memory_limit(sandbox: Sandbox) -> None:
    small = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(memory_mb=256))
    result = await small.run([PY, "-c", "x = bytearray(512 * 1024 * 1024)"])
    assert result.exit_code == 1 and "MemoryError" in result.stderr


async def test_cpu_limit(sandbox: Sandbox) -> None:
    quick = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(cpu_seconds=1), timeout=10)
    result = await quick.run([PY, "-c", "while True: pass"])
    assert not result.timed_out
    assert result.signal is not None
    assert "CPU" in result.exit_description(quick.limits)


async def test_file_size_limit(sandbox: Sandbox) -> None:
    tight = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(max_file_mb=1))
    result = await tight.run([PY, "-c", "open('big.bin', 'wb').write(b'0' * 3 * 1024 * 1024)"])
    assert not result.ok and "File too large" in result.stderr


FORK_COUNT = """
import os, time
made = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    made += 1
print(made)
"""


async def test_process_count_is_capped(sandbox: Sandbox) -> None:
    if os.geteuid() == 0 and find_pids_parent() is None:
        pytest.skip("root without a writable pids cgroup: only the wall timeout bounds a fork bomb")
    capped = Sandbox(sandbox.workspace, backend=sandbox.backend, limits=Limits(max_processes=20))
    result = await capped.run([PY, "-c", FORK_COUNT])
    assert result.ok
    assert int(result.stdout) < 20


async def test_cwd_must_stay_in_the_workspace(sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.workspace / "sub").mkdir()
    result = await sandbox.run(["pwd"], cwd="sub")
    assert result.stdout.strip() == str(sandbox.workspace / "sub")
    with pytest.raises(SandboxError, match="outside the workspace"):
        await sandbox.run(["pwd"], cwd=tmp_path)
    with pytest.raises(SandboxError, match="does not exist"):
        await sandbox.run(["pwd"], cwd="missing")


async def test_missing_program_is_a_clear_error(sandbox: Sandbox) -> None:
    if sandbox.active_backend == "bwrap":
        result = await sandbox.run(["no-such-program-xyz"])
        assert result.exit_code != 0 and "no-such-program-xyz" in result.stderr
    else:
        with pytest.raises(SandboxError, match="could not start"):
            await sandbox.run(["no-such-program-xyz"])


async def test_no_cgroup_is_left_behind(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    if find_pids_parent() is None:
        pytest.skip("no pids cgroup available")
    made: list[PidsCgroup] = []
    create = PidsCgroup.create

    def recording(parent: tuple[Path, int] | None, max_pids: int) -> PidsCgroup | None:
        cgroup = create(parent, max_pids)
        if cgroup is not None:
            made.append(cgroup)
        return cgroup

    # Only this sandbox's cgroups: other PyManus processes on the machine make their own.
    monkeypatch.setattr(PidsCgroup, "create", staticmethod(recording))
    await sandbox.run(["true"])
    await sandbox.run(["sleep", "5"], timeout=0.2)
    assert len(made) == 2
    assert not [cgroup.path for cgroup in made if cgroup.path.exists()]


# -- backends and warnings -----------------------------------------------------------------
def test_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        Sandbox(tmp_path, backend="docker")  # type: ignore[arg-type,unused-ignore]


async def test_auto_without_bwrap_confines_with_landlock_or_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    caplog.set_level(logging.WARNING, logger="pymanus.sandbox")
    box = Sandbox(tmp_path, backend="auto")
    assert "bwrap is not installed" in box.why
    if box.active_backend == "landlock":
        assert (await box.run(["true"])).ok
        assert "Landlock sandbox" in box.describe()
    else:  # a kernel without Landlock: never run unconfined
        assert box.active_backend == "refused"
        with pytest.raises(SandboxError, match="Refusing to run code"):
            await box.run(["true"])
    assert not caplog.records


async def test_explicit_none_is_silent(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pymanus.sandbox")
    box = Sandbox(tmp_path, backend="none")
    await box.run(["true"])
    assert not caplog.records
    assert not box.confined and "WITHOUT isolation" in box.describe()


async def test_explicit_bwrap_without_bwrap_refuses_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    box = Sandbox(tmp_path, backend="bwrap")
    assert box.active_backend == "refused"  # never raises: the agent can still be built
    with pytest.raises(SandboxError, match="backend 'bwrap'") as caught:
        await box.run(["true"])
    assert "apt-get install bubblewrap" in str(caught.value)
    assert 'backend = "none"' in str(caught.value) and "--sandbox none" in str(caught.value)


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed")
def test_describe_says_what_is_in_force(tmp_path: Path) -> None:
    text = Sandbox(tmp_path, backend="bwrap", timeout=12).describe()
    assert "bubblewrap" in text and "no network" in text and "12 s" in text
    assert "network access is allowed" in Sandbox(tmp_path, backend="bwrap", network=True).describe().lower()


def test_output_buffer_keeps_head_and_tail_within_the_limit() -> None:
    buffer = OutputBuffer(100)
    buffer.feed(b"a" * 50)
    assert not buffer.truncated and buffer.text() == "a" * 50
    for _ in range(1000):
        buffer.feed(b"b" * 1000)
    buffer.feed(b"END")
    assert buffer.truncated and buffer.total == 1_000_053
    text = buffer.text()
    assert text.startswith("a" * 50) and text.endswith("END") and "cut" in text
    assert len(text) < 200

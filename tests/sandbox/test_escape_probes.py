"""Escape probes against every backend that confines code here, each forced, and against ``auto``
when the ``bwrap`` found first on PATH fails.

Each probe is model-style code run in a real sandboxed subprocess that tries to get out:
files outside the workspace (the host's /tmp, a fake home with a secret, a symlink out),
the host's loopback and the cloud metadata address, PyManus's own process, and the
resource limits (fork bomb, memory, output flood, wall time). A backend this machine
cannot run is skipped with the probe's reason; nothing here mocks the isolation.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.sandbox_backends import CONFINED, install_fake_bwrap, no_processes_with, unusable_reason
from pymanus.sandbox import Limits, Sandbox
from pymanus.sandbox.limits import find_pids_parent

PY = sys.executable
AUTO_WITH_BROKEN_BWRAP = pytest.param(
    "auto",
    id="auto-broken-bwrap",
    marks=pytest.mark.skipif(
        unusable_reason("landlock") is not None, reason=f"landlock: {unusable_reason('landlock')}"
    ),
)


@pytest.fixture(params=[*CONFINED, AUTO_WITH_BROKEN_BWRAP])
def box(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    backend = request.param
    if backend == "auto":
        install_fake_bwrap(tmp_path / "bin", monkeypatch)
    sandbox = Sandbox(tmp_path / "ws", backend=backend, timeout=10)
    if backend == "auto":
        assert sandbox.active_backend == "landlock", sandbox.why
        assert "No permissions to creating new namespace" in sandbox.why
    else:
        assert sandbox.active_backend == backend
    return sandbox


async def attempt(box: Sandbox, code: str, *args: str, seconds: float | None = None) -> str:
    """Run ``code`` in the sandbox (at most ``seconds``); return what it printed, stdout and stderr."""
    result = await box.run([PY, "-c", code, *args], timeout=seconds)
    return result.stdout + result.stderr


# -- files -----------------------------------------------------------------------------------
WRITE = """
import sys
try:
    with open(sys.argv[1], "w") as handle:
        handle.write("pwned")
    print("WROTE")
except OSError as exc:
    print("refused:", exc)
"""

READ = """
import sys
try:
    print("READ:", open(sys.argv[1]).read())
except OSError as exc:
    print("refused:", exc)
"""

LIST = "import os, sys\ntry:\n    print(os.listdir(sys.argv[1]))\nexcept OSError as exc:\n    print('refused:', exc)"


async def test_the_hosts_tmp_is_not_writable(box: Sandbox) -> None:
    target = Path("/tmp") / f"pymanus-escape-{uuid.uuid4().hex}"
    try:
        await attempt(box, WRITE, str(target))
        assert not target.exists()  # bwrap writes to its private /tmp; landlock refuses
    finally:
        target.unlink(missing_ok=True)


async def test_a_secret_in_a_home_directory_is_unreadable(box: Sandbox, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine api password TOP-SECRET\n")
    said = await attempt(box, READ, str(home / ".netrc"))
    assert "TOP-SECRET" not in said and "refused" in said
    listing = await attempt(box, LIST, str(home))
    assert ".netrc" not in listing


async def test_a_secret_in_the_real_home_directory_is_unreadable(box: Sandbox) -> None:
    home = Path.home()
    if not home.is_dir() or box.workspace.is_relative_to(home):
        pytest.skip("no home directory apart from the workspace here")
    secret = home / f".pymanus-probe-{uuid.uuid4().hex[:8]}"
    secret.write_text("TOP-SECRET")
    try:
        said = await attempt(box, READ, str(secret))
        assert "TOP-SECRET" not in said and "refused" in said
        listing = await attempt(box, LIST, str(home))
        assert secret.name not in listing
    finally:
        secret.unlink()


async def test_a_symlink_out_of_the_workspace_leads_nowhere(box: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET")
    (box.workspace / "link.txt").symlink_to(outside / "secret.txt")
    (box.workspace / "door").symlink_to(outside)
    said = await attempt(box, READ, "link.txt")
    assert "TOP-SECRET" not in said
    await attempt(box, WRITE, "door/planted.txt")
    assert not (outside / "planted.txt").exists()
    # A link the code makes itself is no better.
    made = await attempt(
        box,
        "import os, sys\nos.symlink(sys.argv[1], 'mine')\n" + READ.replace("sys.argv[1]", "'mine'"),
        str(outside / "secret.txt"),
    )
    assert "TOP-SECRET" not in made


async def test_host_files_cannot_be_truncated_and_shadow_is_unreadable(box: Sandbox, tmp_path: Path) -> None:
    said = await attempt(box, READ, "/etc/shadow")
    assert "READ:" not in said
    # A file of the host (made here, not a system file: a broken sandbox must not cost anything).
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    code = "import os, sys\ntry:\n    os.truncate(sys.argv[1], 0); print('TRUNCATED')\nexcept OSError as e: print(e)"
    said = await attempt(box, code, str(victim))
    assert "TRUNCATED" not in said
    assert victim.read_text() == "precious"


async def test_the_workspace_and_scratch_space_work(box: Sandbox) -> None:
    code = (
        "import os, tempfile\n"
        "open('kept.txt', 'w').write('ok')\n"
        "with tempfile.NamedTemporaryFile('w', delete=False) as f: f.write('scratch')\n"
        "print(open(f.name).read())\n"
    )
    result = await box.run([PY, "-c", code])
    assert result.ok, result.stderr
    assert result.stdout.strip() == "scratch"
    assert (box.workspace / "kept.txt").read_text() == "ok"


# -- PyManus's own process ------------------------------------------------------------------
async def test_pymanus_environment_and_process_are_out_of_reach(box: Sandbox) -> None:
    code = """
import os, sys
pid = int(sys.argv[1])
for name in ("environ", "mem", "maps"):
    try:
        open(f"/proc/{pid}/{name}", "rb").read(10); print("READ", name)
    except OSError:
        pass
try:
    os.kill(pid, 0); print("SIGNALLED")
except OSError:
    pass
"""
    said = await attempt(box, code, str(os.getpid()))
    assert "READ" not in said
    probe = box.landlock
    if box.active_backend == "bwrap" or (probe is not None and probe.abi >= 6):
        assert "SIGNALLED" not in said  # Landlock scopes signals from ABI 6 on


# -- network ---------------------------------------------------------------------------------
@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A real TCP listener on the host's loopback; records what reaches it."""
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                received.append(connection.recv(100) or b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(2)
        server.close()


CONNECT = """
import socket, sys, time
started = time.monotonic()
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as s:
        s.sendall(b"hello")
    print("CONNECTED")
except OSError as exc:
    print(f"refused after {time.monotonic() - started:.2f}s:", exc)
"""


async def test_the_hosts_loopback_is_unreachable(box: Sandbox, listener: tuple[int, list[bytes]]) -> None:
    port, received = listener
    said = await attempt(box, CONNECT, "127.0.0.1", str(port))
    assert "CONNECTED" not in said and "refused" in said
    assert received == []


async def test_udp_to_the_hosts_loopback_never_arrives(box: Sandbox) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as host:
        host.bind(("127.0.0.1", 0))
        host.settimeout(0.5)
        code = (
            "import socket, sys\ntry:\n"
            "    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', int(sys.argv[1])))\n"
            "except OSError as exc:\n    print('refused:', exc)"
        )
        await attempt(box, code, str(host.getsockname()[1]))  # bwrap's own loopback may take it
        with pytest.raises(TimeoutError):
            host.recvfrom(10)


async def test_the_metadata_address_fails_at_once(box: Sandbox) -> None:
    # No route at all: the connect fails immediately, so nothing is sent anywhere.
    said = await attempt(box, CONNECT, "169.254.169.254", "80", seconds=8)
    assert "CONNECTED" not in said and "refused after" in said
    seconds = float(said.split("refused after ")[1].split("s:")[0])
    assert seconds < 1.0, said


# -- limits ----------------------------------------------------------------------------------
async def test_a_fork_bomb_is_contained(box: Sandbox) -> None:
    if os.geteuid() == 0 and find_pids_parent() is None:
        pytest.skip("root without a writable pids cgroup: only the wall timeout bounds a fork bomb")
    marker = f"bomb-{uuid.uuid4().hex[:8]}"
    capped = Sandbox(box.workspace, backend=box.backend, limits=Limits(max_processes=16), timeout=3)
    code = "import os, sys\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = await capped.run([PY, "-c", code, marker])
    assert result.timed_out and result.duration < 10
    assert await no_processes_with(marker)


async def test_memory_is_capped(box: Sandbox) -> None:
    small = Sandbox(box.workspace, backend=box.backend, limits=Limits(memory_mb=256), timeout=10)
    result = await small.run([PY, "-c", "b = bytearray(1024 * 1024 * 1024); print('ALLOCATED')"])
    assert "ALLOCATED" not in result.stdout
    assert not result.ok and "MemoryError" in result.stderr


async def test_an_output_flood_is_cut(box: Sandbox) -> None:
    result = await box.run([PY, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"], timeout=2)
    assert result.timed_out
    assert result.stdout_truncated and result.stdout_bytes > box.output_limit
    assert len(result.stdout) < box.output_limit + 200


async def test_wall_time_is_enforced(box: Sandbox) -> None:
    result = await box.run([PY, "-c", "import time; time.sleep(60)"], timeout=1)
    assert result.timed_out and result.duration < 5

"""The bubblewrap sandbox: what sandboxed code can see, write and reach. Nothing escapes."""

from __future__ import annotations

import asyncio
import shutil
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pymanus.sandbox import Sandbox

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
PY = sys.executable


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "ws", backend="bwrap", timeout=10)


@pytest.fixture
def home_secret() -> Iterator[Path]:
    """A secret file in the real home directory (removed afterwards)."""
    path = Path.home() / f".pymanus-test-secret-{uuid.uuid4().hex[:8]}"
    path.write_text("home secret")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def on_host(path: str, content: str | None = None) -> bool:
    """Whether ``path`` exists on the host (holding ``content``, if given)."""
    file = Path(path)
    return file.exists() and (content is None or file.read_text() == content)


async def probe(sandbox: Sandbox, code: str) -> str:
    result = await sandbox.run([PY, "-c", code])
    assert not result.timed_out, result
    return result.stdout + result.stderr


async def test_secrets_outside_the_workspace_are_invisible(sandbox: Sandbox, tmp_path: Path, home_secret: Path) -> None:
    beside = tmp_path / "secret.txt"
    beside.write_text("beside the workspace")
    for secret in (beside, home_secret, Path("/etc/shadow")):
        out = await probe(sandbox, f"print(open({str(secret)!r}).read())")
        assert "FileNotFoundError" in out, out
        assert secret.name == "shadow" or secret.read_text() not in out


async def test_home_and_host_directories_are_hidden(sandbox: Sandbox) -> None:
    out = await probe(
        sandbox,
        "import os\n"
        "for d in ['/home', '/root', '/run', '/var', '/etc/ssh', '/work', '/opt']:\n"
        "    print(d, os.path.exists(d) and sorted(os.listdir(d)))",
    )
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["/home"] == "False" and lines["/run"] == "False" and lines["/etc/ssh"] == "False"
    # /root exists only as the path to the Python installation, when that lives there.
    assert lines["/root"] in ("False", "['.pyenv']") or ".pyenv" in lines["/root"]


async def test_nothing_outside_the_workspace_is_writable(sandbox: Sandbox) -> None:
    code = (
        "import os\n"
        "for path in ['/etc/x', '/usr/x', '/x', os.path.dirname(os.__file__) + '/x']:\n"
        "    try:\n"
        "        open(path, 'w')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        "os.chdir('..')\n"
        "try:\n"
        "    open('escaped.txt', 'w').write('x')\n"
        "    print('WROTE parent')\n"
        "except OSError as exc:\n"
        "    print('refused parent', exc.errno)\n"
        "open('/tmp/scratch', 'w').write('ok')\n"
    )
    out = await probe(sandbox, code)
    assert "WROTE /" not in out, out
    # Above the workspace lies at most the sandbox's private scratch space: the host is untouched.
    assert not (sandbox.workspace.parent / "escaped.txt").exists()
    assert not on_host("/tmp/scratch", "ok")


async def test_tmp_is_private_and_emptied(sandbox: Sandbox) -> None:
    marker = f"pymanus-{uuid.uuid4().hex}"
    await probe(sandbox, f"open('/tmp/{marker}', 'w').write('x')")
    assert not on_host(f"/tmp/{marker}")
    out = await probe(sandbox, f"import os; print(os.path.exists('/tmp/{marker}'))")
    assert out.strip() == "False"


async def test_no_capabilities_and_no_remount(sandbox: Sandbox) -> None:
    out = await probe(sandbox, "print([l for l in open('/proc/self/status') if l.startswith('CapEff')][0])")
    assert out.split()[-1].strip("0") == ""
    result = await sandbox.run(["sh", "-c", "mount -o remount,rw /usr 2>&1; touch /usr/pymanus-x 2>&1"])
    assert not on_host("/usr/pymanus-x")
    assert result.exit_code != 0
    nested = await sandbox.run(["unshare", "--user", "--map-root-user", "true"])
    assert nested.exit_code != 0  # no nested user namespace to regain capabilities in


async def test_only_sandbox_processes_are_visible(sandbox: Sandbox) -> None:
    out = await probe(sandbox, "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    assert len(eval(out)) <= 2  # bwrap's init and this process


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A real TCP listener on the host's loopback, recording every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        server.close()


async def test_host_loopback_is_unreachable(sandbox: Sandbox, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    # The listener works from the host...
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    await asyncio.sleep(0.2)
    assert len(accepted) == 1
    code = (
        "import socket\n"
        "s = socket.socket(); s.settimeout(3)\n"
        f"try:\n    s.connect(('127.0.0.1', {port})); print('CONNECTED')\n"
        "except OSError as exc:\n    print('refused', exc)\n"
    )
    out = await probe(sandbox, code)
    assert "CONNECTED" not in out and "refused" in out
    await asyncio.sleep(0.2)
    assert len(accepted) == 1


async def test_public_internet_fails_fast(sandbox: Sandbox) -> None:
    code = (
        "import socket, time\n"
        "start = time.monotonic()\n"
        "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=5); print('CONNECTED')\n"
        "except OSError as exc:\n    print('failed', exc.errno, round(time.monotonic() - start, 2))\n"
        "print(sorted(n for _, n in socket.if_nameindex()))\n"
    )
    out = await probe(sandbox, code)
    assert "CONNECTED" not in out
    first, interfaces = out.splitlines()
    assert first.startswith("failed") and float(first.split()[-1]) < 1.0
    assert interfaces == "['lo']"


async def test_network_can_be_allowed(tmp_path: Path) -> None:
    open_box = Sandbox(tmp_path / "ws", backend="bwrap", network=True)
    out = await probe(open_box, "import socket; print(len(socket.if_nameindex()))")
    assert int(out) >= 1

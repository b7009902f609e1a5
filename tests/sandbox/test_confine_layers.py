"""The layers of the ``landlock`` backend, each on its own, in real child processes:
Landlock rules, the seccomp network filter, the user + network namespace, dropped privileges."""

from __future__ import annotations

import errno
import platform
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pymanus.sandbox import bwrap, confine, landlock, mountns, privileges, seccomp

PY = sys.executable
ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(
    landlock.unavailable_reason(ABI) is not None, reason=f"{landlock.unavailable_reason(ABI)}"
)
needs_seccomp = pytest.mark.skipif(seccomp.unavailable_reason() is not None, reason=f"{seccomp.unavailable_reason()}")


def run_child(code: str, setup: Callable[[], None], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter whose process ran ``setup`` just before ``exec``."""
    return subprocess.run(
        [PY, "-S", "-c", code, *args], preexec_fn=setup, capture_output=True, text=True, timeout=30, check=False
    )


def test_abi_version_and_reason_agree() -> None:
    assert ABI >= 0
    reason = landlock.unavailable_reason(ABI)
    assert (reason is None) == (ABI >= landlock.MIN_ABI)
    assert landlock.unavailable_reason(0) is not None
    assert "ABI 2" in (landlock.unavailable_reason(2) or "")


@needs_landlock
def test_rules_allow_only_what_they_name(tmp_path: Path) -> None:
    allowed, hidden = tmp_path / "allowed", tmp_path / "hidden"
    allowed.mkdir()
    hidden.mkdir()
    (hidden / "secret.txt").write_text("TOP-SECRET")
    single = tmp_path / "single.txt"
    single.write_text("one file")
    with landlock.Ruleset(ABI, deny_tcp=False) as rules:
        rules.allow_all(confine.read_roots(bwrap.python_dirs(allowed), []), landlock.READ)
        assert rules.allow(single, landlock.fs_rights(ABI))  # a file keeps only file rights: no EINVAL
        assert rules.allow(allowed, landlock.fs_rights(ABI))
        assert not rules.allow(tmp_path / "missing", landlock.READ)
        code = """
import sys
allowed, hidden, single = sys.argv[1:4]
open(allowed + "/new.txt", "w").write("ok")
print(open(single).read())
for attempt in (lambda: open(hidden + "/secret.txt").read(), lambda: open(hidden + "/new.txt", "w")):
    try:
        attempt(); print("ESCAPED")
    except PermissionError:
        print("denied")
"""
        done = run_child(code, lambda: landlock.restrict_self(rules.fd), str(allowed), str(hidden), str(single))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["one file", "denied", "denied"]
    assert (allowed / "new.txt").read_text() == "ok"


@needs_seccomp
def test_the_seccomp_filter_leaves_only_unix_sockets() -> None:
    code = """
import ctypes, socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("inet")
except PermissionError:
    print("inet denied")
try:
    socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); print("inet6")
except PermissionError:
    print("inet6 denied")
socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
a, b = socket.socketpair(); a.send(b"x"); print("pair", b.recv(1).decode())
libc = ctypes.CDLL(None, use_errno=True)
print("io_uring", libc.syscall(425, 1, None), ctypes.get_errno())
"""
    rules = seccomp.NoNetworkFilter()
    done = run_child(code, rules.install)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["inet denied", "inet6 denied", "pair x", "io_uring -1 13"]


def test_the_filter_knows_its_architectures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert "riscv64" in (seccomp.unavailable_reason() or "")


def test_the_network_namespace_has_no_way_out() -> None:
    probe = confine.probe(bwrap.python_dirs(Path("/nonexistent")), [], network=False)
    if probe.network != "netns":
        pytest.skip(probe.reason or "unprivileged user namespaces are not allowed here")
    with socket.create_server(("127.0.0.1", 0)) as server:
        code = """
import os, socket, sys
print(os.getuid())
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2); print("CONNECTED")
except OSError as exc:
    print(exc.errno)
"""
        # The child is forked from a fresh interpreter: this test process may hold state from other
        # tests (threads, libraries) that a fork inherits.
        driver = (
            "import subprocess, sys\n"
            "from pymanus.sandbox import netns\n"
            "done = subprocess.run([sys.executable, '-S', '-c', sys.argv[1], sys.argv[2]], "
            "preexec_fn=netns.unshare_network, capture_output=True, text=True, timeout=30)\n"
            "print(done.stdout, end=''); print(done.stderr, end='', file=sys.stderr); sys.exit(done.returncode)\n"
        )
        done = subprocess.run(
            [PY, "-c", driver, code, str(server.getsockname()[1])], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["65534", str(errno.ENETUNREACH)]  # unmapped: nobody, and no route


def test_dropped_capabilities_stay_dropped_across_exec() -> None:
    code = "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])"
    done = run_child(code, privileges.drop_capabilities)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout, 16) == 0


def test_scratch_env_moves_tmp_into_the_scratch_directory(tmp_path: Path) -> None:
    env = confine.scratch_env({"MPLCONFIGDIR": "/tmp/matplotlib", "TMPDIR": "/tmp", "OTHER": "/tmpx"}, tmp_path)
    assert env["MPLCONFIGDIR"] == f"{tmp_path}/matplotlib"
    assert env["TMPDIR"] == env["HOME"] == str(tmp_path)
    assert env["OTHER"] == "/tmpx"


HIDE_MODES = [
    pytest.param(
        True, id="as-root", marks=pytest.mark.skipif(not privileges.may_mount(), reason="not root with CAP_SYS_ADMIN")
    ),
    pytest.param(False, id="in-a-user-namespace"),
]


@pytest.mark.parametrize("privileged", HIDE_MODES)
def test_a_hidden_folder_is_empty_and_read_only_for_the_child_alone(tmp_path: Path, privileged: bool) -> None:
    folder = tmp_path / "journal"
    folder.mkdir()
    (folder / "index.jsonl").write_text("kept")
    code = """
import os, sys
print(os.listdir(sys.argv[1]))
try:
    open(sys.argv[1] + "/x", "w")
except OSError as exc:
    print(exc.errno)
"""

    def setup() -> None:
        mountns.hide([folder], privileged=privileged, in_new_user_namespace=False)

    try:
        done = run_child(code, setup, str(folder))
    except subprocess.SubprocessError:  # the setup failed in the child
        if privileged:
            raise
        pytest.skip("user namespaces are not allowed here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", str(errno.EROFS)]
    assert (folder / "index.jsonl").read_text() == "kept" and not (folder / "x").exists()
    assert "pymanus-hidden" not in Path("/proc/self/mounts").read_text()  # nothing reached the host's namespace

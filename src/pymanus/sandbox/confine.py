"""The ``landlock`` backend: confinement that needs no helper binary and no root.

Used when bubblewrap is missing or cannot create its namespaces. Each command is
confined, between ``fork`` and ``exec``, by three layers the process applies to itself:

* **file system** -- Landlock (ABI 3+, Linux 6.2+; see :mod:`pymanus.sandbox.landlock`):
  read-only access to the system directories (``/usr``, ``/bin``, ``/lib*``), an
  allowlist of ``/etc`` entries, ``/proc``, a few ``/dev`` nodes, the Python
  installation and the caller's extra read-only roots; read-write access only to the
  workspace and a private temporary directory made for the command (``TMPDIR``,
  ``HOME``; environment values under ``/tmp`` are pointed into it, as bubblewrap's
  private ``/tmp`` would have them). Home directories, other users' files and the
  host's ``/tmp`` are neither readable nor writable; a symbolic link pointing out of the
  workspace leads nowhere, because Landlock checks the file the link resolves to.
  ``/proc`` shows other processes' command lines (there is no PID namespace), but not
  their environment, memory or open files: Landlock forbids a confined process to
  inspect any process outside its domain. Where user namespaces work, the journal's
  ``.pymanus/`` is covered by an empty read-only folder in a mount namespace of the
  command's own (:mod:`pymanus.sandbox.mountns`); elsewhere code can reach it.
* **network** -- a new user and network namespace (:mod:`pymanus.sandbox.netns`);
  where unprivileged user namespaces are forbidden, a seccomp filter that allows only
  Unix sockets (:mod:`pymanus.sandbox.seccomp`). With Landlock ABI 4+ every TCP bind
  and connect is refused as well, and with ABI 6+ abstract Unix sockets and signals
  outside the sandbox.
* **limits** -- the same rlimits, pids cgroup, wall-clock timeout and output caps as
  every backend (:mod:`pymanus.sandbox.limits`, :mod:`pymanus.sandbox.process`).

What it does not give, unlike bubblewrap: a size cap on the temporary directory (only
the per-file size limit), and a private view of the file system (paths outside the
allowed roots exist and can be ``stat``-ed, only not opened).

:func:`probe` checks, with a real confined child, that the layers hold on this machine
before the backend is used: that a file outside is unreadable, the scratch directory
writable, a listener on the host's loopback unreachable and a hidden folder empty and
read-only (where it is not, the backend is used without hiding the journal's folder).
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pymanus.sandbox import landlock, mountns, netns, privileges, seccomp
from pymanus.sandbox.bwrap import ETC_ALLOWLIST, ROOT_LINKS

NetworkLayer = Literal["netns", "seccomp", "open"]
"""How a confined command is kept off the network (``open``: the network is allowed)."""

SYSTEM_ROOTS = ("/usr", *(f"/{name}" for name in ROOT_LINKS))
DEVICES_READ_WRITE = ("/dev/null", "/dev/zero", "/dev/full")
DEVICES_READ = ("/dev/random", "/dev/urandom")
PROC = "/proc"

NETWORK_LAYERS: dict[NetworkLayer, str] = {
    "netns": "a new user and network namespace (no interfaces, loopback down)",
    "seccomp": "a seccomp filter (sockets other than Unix sockets are refused)",
    "open": "allowed by the configuration",
}


def read_roots(python_dirs: Sequence[Path], extra: Sequence[Path]) -> list[Path]:
    """Every path a confined command may read (but not change)."""
    roots = [Path(p) for p in SYSTEM_ROOTS]
    roots += [Path("/etc") / entry for entry in ETC_ALLOWLIST]
    roots += [Path(p) for p in DEVICES_READ]
    roots.append(Path(PROC))
    return [*roots, *python_dirs, *extra]


class Confiner:
    """The layers for one command: built in the parent, applied by :meth:`apply` in the child.

    Args:
        abi: the kernel's Landlock ABI version.
        network: the network layer to use.
        readable: paths the command may read (see :func:`read_roots`).
        writable: paths the command may read and change (the workspace, its scratch directory).
        nproc: ``RLIMIT_NPROC`` to set once inside the new user namespace (non-root hosts):
            there the kernel counts only the sandbox's own processes.
        hidden: folders the command sees empty and read-only (the journal's ``.pymanus/``; see
            :mod:`pymanus.sandbox.mountns`), where the probe found that user namespaces work.
    """

    def __init__(
        self,
        abi: int,
        network: NetworkLayer,
        readable: Sequence[Path],
        writable: Sequence[Path],
        *,
        nproc: int | None = None,
        hidden: Sequence[Path] = (),
    ) -> None:
        self.network = network
        self.nproc = nproc
        self.hidden = tuple(hidden)
        self._mount_as_root = bool(hidden) and privileges.may_mount()
        privileges.libc()  # resolved here, in the parent
        self._filter = seccomp.NoNetworkFilter() if network == "seccomp" else None
        self._ruleset = landlock.Ruleset(abi, deny_tcp=network != "open")
        try:
            self._ruleset.allow_all(readable, landlock.READ)
            devices = landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
            self._ruleset.allow_all([Path(p) for p in DEVICES_READ_WRITE], devices)
            self._ruleset.allow_all(writable, landlock.fs_rights(abi))
        except BaseException:
            self._ruleset.close()
            raise

    def apply(self) -> None:
        """Confine the calling process: privileges, network, then the file system. Child only."""
        if self._mount_as_root:  # in the host's user namespace, before the network layer leaves it
            mountns.hide(self.hidden, privileged=True, in_new_user_namespace=False)
        privileges.drop_capabilities()
        if self.network == "netns":
            netns.unshare_network()
            if self.nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (self.nproc, self.nproc))
        if self.hidden and not self._mount_as_root:  # before Landlock, which forbids mounting
            mountns.hide(self.hidden, privileged=False, in_new_user_namespace=self.network == "netns")
        if self._filter is not None:
            self._filter.install()
        landlock.restrict_self(self._ruleset.fd)

    def close(self) -> None:
        """Release the ruleset once the child has started (or failed to)."""
        self._ruleset.close()


def scratch_env(env: dict[str, str], scratch: Path) -> dict[str, str]:
    """``env`` with ``HOME`` and ``TMPDIR`` in ``scratch`` and values under ``/tmp`` moved there."""
    moved = {}
    for name, value in env.items():
        if value == "/tmp" or value.startswith("/tmp/"):
            value = str(scratch) + value[len("/tmp") :]
        moved[name] = value
    moved["HOME"] = moved["TMPDIR"] = str(scratch)
    return moved


@dataclass(frozen=True)
class ProbeResult:
    """Whether the backend can confine code here, with which layers, or why not."""

    abi: int
    network: NetworkLayer | None
    """The network layer that held; ``None`` when none did (or Landlock itself failed)."""
    reason: str | None
    """Why the backend cannot be used; ``None`` when it can."""
    hides: bool = False
    """Whether a command can be given an empty read-only folder over the journal's (a mount namespace)."""
    hide_problem: str | None = None
    """Why the journal's folder cannot be hidden here (``None`` when it can, or Landlock failed)."""

    @property
    def ok(self) -> bool:
        return self.reason is None


_PROBE_SCRIPT = """
import os, socket, sys
secret, scratch, port, hidden = sys.argv[1:5]
outside = [(secret, "a file outside the allowed roots"), (f"/proc/{os.getppid()}/environ", "PyManus's environment")]
for path, what in outside:
    try:
        open(path, "rb").read()
        print(what, "was readable"); sys.exit(3)
    except PermissionError:
        pass
try:
    open(scratch + "/probe", "w").close()
except OSError as exc:
    print(f"the scratch directory was not writable ({exc})"); sys.exit(4)
if hidden != "-":
    if os.listdir(hidden):
        print("the hidden folder was visible"); sys.exit(6)
    try:
        open(hidden + "/probe", "w").close()
        print("the hidden folder was writable"); sys.exit(6)
    except OSError:
        pass
if port != "-":
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=3).close()
        print("a listener on the host's loopback was reachable"); sys.exit(5)
    except OSError:
        pass
"""


def probe(python_dirs: Sequence[Path], extra_read: Sequence[Path], *, network: bool) -> ProbeResult:
    """Run a confined child that tries to escape; report the first network layer that holds.

    Tries the network namespace, then the seccomp filter (or neither when ``network``
    is allowed). A layer that cannot be set up, or that lets the child out, is skipped.
    """
    abi = landlock.abi_version()
    if (reason := landlock.unavailable_reason(abi)) is not None:
        return ProbeResult(abi, None, f"Landlock is not usable: {reason}")
    layers: list[NetworkLayer] = ["open"] if network else ["netns", "seccomp"]
    failures = []
    for layer in layers:
        if layer == "seccomp" and (why := seccomp.unavailable_reason()) is not None:
            failures.append(why)
            continue
        hide_problem = _probe_layer(abi, layer, python_dirs, extra_read, hide=True)
        if hide_problem is None:
            return ProbeResult(abi, layer, None, hides=True)
        problem = _probe_layer(abi, layer, python_dirs, extra_read, hide=False)
        if problem is None:
            return ProbeResult(abi, layer, None, hide_problem=hide_problem)
        failures.append(f"{layer}: {problem}")
    return ProbeResult(abi, None, "no network layer works: " + "; ".join(failures))


def _probe_layer(
    abi: int, layer: NetworkLayer, python_dirs: Sequence[Path], extra_read: Sequence[Path], *, hide: bool
) -> str | None:
    with (
        tempfile.TemporaryDirectory(prefix="pymanus-probe-") as outside,
        tempfile.TemporaryDirectory(prefix="pymanus-probe-") as scratch,
        contextlib.ExitStack() as stack,
    ):
        secret = Path(outside) / "secret"
        secret.write_text("probe")
        port = "-"
        if layer != "open":
            listener = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
            port = str(listener.getsockname()[1])
        hidden = Path(scratch) / "hidden"
        if hide:
            hidden.mkdir()
            (hidden / "secret").write_text("probe")
        try:
            confiner = Confiner(
                abi, layer, read_roots(python_dirs, extra_read), [Path(scratch)], hidden=[hidden] if hide else []
            )
        except OSError as exc:
            return f"Landlock rules could not be made ({exc})"
        errors_read, errors_write = os.pipe()

        def child() -> None:
            try:
                confiner.apply()
            except BaseException as exc:
                os.write(errors_write, str(exc).encode()[:500])
                raise

        shown = str(hidden) if hide else "-"
        argv = [sys.executable, "-S", "-I", "-c", _PROBE_SCRIPT, str(secret), scratch, port, shown]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                timeout=15,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
                cwd=scratch,
                preexec_fn=child,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(errors_write)
            errors_write = -1
            detail = os.read(errors_read, 1000).decode(errors="replace").strip()
            return detail or f"the confined probe could not start ({exc})"
        finally:
            confiner.close()
            for fd in (errors_read, errors_write):
                if fd >= 0:
                    os.close(fd)
        if done.returncode != 0:
            said = (done.stdout + done.stderr).decode(errors="replace").strip()
            return said[-300:] or f"the confined probe failed with exit code {done.returncode}"
        return None

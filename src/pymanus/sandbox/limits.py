"""Resource limits of sandboxed processes: rlimits, and a cgroup that caps process count.

``RLIMIT_NPROC`` is the classic cap on processes, but the kernel never enforces it for
root, and for other users it counts *every* process of the user, not only the
sandbox's. So the process cap is, in order of preference:

1. a ``pids`` cgroup made for the one command (cgroup v2, or v1 as found on many
   container hosts) when this process may create one (root, or a delegated cgroup);
   it also lets the sandbox kill every process of the command, even those that left
   its session;
2. ``RLIMIT_NPROC`` set *inside* the user namespace of bubblewrap or of the ``landlock``
   backend (non-root hosts), where the kernel counts only the sandbox's own processes;
   else, for a non-root user, the user's current task count plus the cap;
3. nothing but the wall-clock timeout (root without a writable cgroup);
   ``pymanus doctor`` says so.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
import uuid
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

_MB = 1024 * 1024


class Limits(BaseModel):
    """Per-command resource limits. Each applies to every process the command starts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: int = Field(default=30, gt=0)
    """CPU time per process; the process gets SIGXCPU, then SIGKILL."""
    memory_mb: int = Field(default=1024, gt=0)
    """Address space per process (``RLIMIT_AS``); allocations beyond it fail (MemoryError)."""
    max_processes: int = Field(default=64, gt=0)
    """Processes and threads the command may run at once."""
    max_file_mb: int = Field(default=100, gt=0)
    """Largest file a process may write (``RLIMIT_FSIZE``)."""
    max_open_files: int = Field(default=256, gt=0)
    """Open file descriptors per process."""
    tmp_mb: int = Field(default=256, gt=0)
    """Size of the private ``/tmp`` of a bubblewrap sandbox."""

    def rlimits(self, *, cpu_hard_unlimited: bool = False) -> list[tuple[int, tuple[int, int]]]:
        """The ``(resource, (soft, hard))`` pairs to apply in a child process.

        ``RLIMIT_NPROC`` is not among them (see the module docstring).
        ``cpu_hard_unlimited`` leaves the CPU hard limit open so a long-lived worker can
        grant each task a fresh CPU budget.
        """
        cpu_hard = resource.RLIM_INFINITY if cpu_hard_unlimited else self.cpu_seconds + 1
        return [
            (resource.RLIMIT_CPU, (self.cpu_seconds, cpu_hard)),
            (resource.RLIMIT_AS, (self.memory_mb * _MB, self.memory_mb * _MB)),
            (resource.RLIMIT_FSIZE, (self.max_file_mb * _MB, self.max_file_mb * _MB)),
            (resource.RLIMIT_NOFILE, (self.max_open_files, self.max_open_files)),
            (resource.RLIMIT_CORE, (0, 0)),
        ]


def apply_rlimits(pairs: list[tuple[int, tuple[int, int]]]) -> None:
    """Set rlimits in the current process, never raising a hard limit above the current one."""
    for which, (soft, hard) in pairs:
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = current_hard if hard == resource.RLIM_INFINITY else min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))


def user_task_count(uid: int) -> int:
    """Tasks (processes and threads) the user ``uid`` runs now, as ``RLIMIT_NPROC`` counts them."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


class PidsCgroup:
    """A ``pids`` cgroup holding one sandboxed command and everything it starts."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version
        self._procs = str(path / "cgroup.procs")  # prepared before fork: the child only writes

    @classmethod
    def create(cls, parent: tuple[Path, int] | None, max_pids: int) -> PidsCgroup | None:
        """Make a cgroup under ``parent`` (see :func:`find_pids_parent`); ``None`` if that fails."""
        if parent is None:
            return None
        base, version = parent
        path = base / f"pymanus-{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path, version)

    def join_self(self) -> None:
        """Move the calling process into the cgroup (called in the child before exec)."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        """The processes now in the cgroup."""
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(line) for line in text.split()]

    def kill_all(self) -> None:
        """SIGKILL every process now in the cgroup, however it detached itself (one pass)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, patience: float = 5.0) -> None:
        """Kill what is left and delete the cgroup (blocking; at most ``patience`` seconds).

        On cgroup v1 processes are killed by pid, pass after pass; the pids cap bounds how
        many a fork bomb can make meanwhile.
        """
        deadline = time.monotonic() + patience
        while True:
            self.kill_all()
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.005)


def find_pids_parent() -> tuple[Path, int] | None:
    """Where this process may create ``pids`` cgroups, and the cgroup version; or ``None``."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in memberships:
        hier, controllers, rel = line.split(":", 2)
        if hier == "0" and controllers == "":
            mount = _mount_point(mounts, "cgroup2", None)
            if mount is None:
                continue
            base = mount / rel.lstrip("/")
            try:
                enabled = (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if "pids" in enabled and os.access(base, os.W_OK):
                return base, 2
        elif "pids" in controllers.split(","):
            mount = _mount_point(mounts, "cgroup", "pids")
            if mount is None:
                continue
            base = mount / rel.lstrip("/")
            if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
                return base, 1
    return None


def _mount_point(mountinfo: list[str], fstype: str, option: str | None) -> Path | None:
    for line in mountinfo:
        left, _, right = line.partition(" - ")
        fields = right.split()
        if len(fields) < 3 or fields[0] != fstype:
            continue
        if option is not None and option not in fields[2].split(","):
            continue
        return Path(left.split()[4])
    return None

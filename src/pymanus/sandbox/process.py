"""Running commands in the sandbox: isolation, limits, a wall-clock timeout, capped output.

``Sandbox`` is the configuration *and* the runner. Each instance resolves its backend
once, and holds no state shared with any other instance. The sandbox never fails open:

* ``auto`` probes bubblewrap (a real confined run); if it is missing or cannot create its
  namespaces, the ``landlock`` backend (:mod:`pymanus.sandbox.confine`: Landlock, plus a
  network namespace or a seccomp filter; no binary, no root), probed the same way;
* ``bwrap`` and ``landlock`` use only that backend;
* when the chosen backend cannot confine code here, the sandbox *refuses*: every command
  raises a :class:`SandboxError` that says what is missing, the command that fixes it
  and the explicit opt-out -- the agent goes on, its code tools answer with that message;
* ``none`` runs commands unconfined, with limits only, and only because the user said so.

Every command gets a clean environment (the host's variables, API keys included, never
reach it), the rlimits of :class:`Limits`, its own session (so the whole process group
can be killed) and, when available, a ``pids`` cgroup. When the command ends, times out
or its caller is cancelled, everything it started is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pymanus.errors import SandboxError
from pymanus.sandbox import bwrap as policy
from pymanus.sandbox import confine
from pymanus.sandbox.journal import STATE_DIR
from pymanus.sandbox.limits import Limits, PidsCgroup, apply_rlimits, find_pids_parent, user_task_count
from pymanus.sandbox.protected import ProtectedPaths
from pymanus.sandbox.streams import feed, read_capped, wait_exit

logger = logging.getLogger("pymanus.sandbox")

Backend = Literal["auto", "bwrap", "landlock", "none"]
"""What the user asks for."""
ActiveBackend = Literal["bwrap", "landlock", "none", "refused"]
"""What is in force: ``refused`` when the backend asked for cannot confine code here."""
BACKENDS: tuple[Backend, ...] = ("auto", "bwrap", "landlock", "none")
INSTALL_HINT = "apt-get install bubblewrap"
OPT_OUT_HINT = '[sandbox] backend = "none" in pymanus.toml, or pymanus run --sandbox none'
_PIPE_GRACE = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """How a sandboxed command ended, and what it printed (each stream cut to the limit)."""

    exit_code: int | None
    """The exit status; negative (``-N``) when killed by signal N; ``None`` if unknown."""
    stdout: str
    stderr: str
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    duration: float
    stdout_bytes: int = 0
    """Bytes the command wrote to stdout, including those cut."""
    stderr_bytes: int = 0

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0 in time."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def signal(self) -> int | None:
        """The signal that ended the command, if any."""
        if self.exit_code is not None and self.exit_code < 0:
            return -self.exit_code
        return None

    def exit_description(self, limits: Limits | None = None) -> str:
        """A sentence on how the command ended, naming the limit it likely hit."""
        if self.timed_out:
            return f"stopped: it ran longer than the time limit ({self.duration:.0f} s) and was killed"
        return describe_exit(self.exit_code, limits or Limits())


def describe_exit(exit_code: int | None, limits: Limits) -> str:
    """How a process ended (``-N``: killed by signal N), naming the limit a signal suggests."""
    if exit_code is None or exit_code >= 0:
        return f"exit code {exit_code}"
    sig = -exit_code
    name = _signal_name(sig)
    if sig == signal.SIGXCPU:
        return f"killed by {name}: it used more than {limits.cpu_seconds} s of CPU time"
    if sig == signal.SIGXFSZ:
        return f"killed by {name}: it wrote a file larger than {limits.max_file_mb} MB"
    if sig == signal.SIGKILL:
        return f"killed by {name} (a resource limit: CPU {limits.cpu_seconds} s or memory {limits.memory_mb} MB)"
    return f"killed by {name}"


class SandboxedProcess:
    """A running sandboxed command, with its pipes, and the means to kill all of it."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        cgroup: PidsCgroup | None,
        *,
        bwrap: bool,
        scratch: Path | None = None,
    ) -> None:
        self.process = process
        self.cgroup = cgroup
        self.bwrap = bwrap
        self.scratch = scratch
        """The command's private temporary directory (``landlock`` backend), removed at close."""
        self._closed = False

    @property
    def returncode(self) -> int | None:
        """The exit status, normalised like :attr:`ProcessResult.exit_code`."""
        code = self.process.returncode
        # bwrap reports a command killed by signal N as 128 + N.
        if self.bwrap and code is not None and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def kill_now(self) -> None:
        """SIGKILL the command, its process group and its cgroup, without waiting."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all()

    async def aclose(self) -> None:
        """Kill whatever is left of the command and release its cgroup."""
        if self._closed:
            return
        self._closed = True
        self.kill_now()
        try:
            await wait_exit(self.process, _PIPE_GRACE)
        finally:
            if self.cgroup is not None:
                await asyncio.to_thread(self.cgroup.remove)
            if self.scratch is not None:
                await asyncio.to_thread(shutil.rmtree, self.scratch, ignore_errors=True)


class Sandbox:
    """Runs commands isolated from the host, with resource limits.

    Args:
        workspace: the one host directory commands may write (created if missing).
        backend: ``"auto"`` (bubblewrap if it works here, else Landlock; if neither does,
            every command raises a :class:`SandboxError`), ``"bwrap"`` or ``"landlock"``
            (that backend, or the same refusal), ``"none"`` (no isolation, only limits:
            the user's explicit choice).
        limits: per-process resource limits.
        timeout: default wall-clock seconds per command.
        output_limit: characters kept per output stream; the rest is counted, not kept.
        network: whether commands may use the network (default off).
        read_only_binds: extra host paths commands may read.
        read_only_globs: workspace paths commands may read but not change (see
            :class:`~pymanus.sandbox.protected.ProtectedPaths`): bubblewrap mounts them
            read-only; Landlock cannot take rights back from part of the workspace, so
            under it (and ``none``) the journal puts back what code changed there.

    The journal folder ``.pymanus/`` is hidden from commands under bubblewrap. Landlock
    cannot exclude it from the workspace's rights: there, the saved copies are checked
    against their hashes before any undo uses them, so tampering is found, not trusted.
    """

    def __init__(
        self,
        workspace: Path | str,
        *,
        backend: Backend = "auto",
        limits: Limits | None = None,
        timeout: float = 60.0,
        output_limit: int = 20_000,
        network: bool = False,
        read_only_binds: Sequence[Path | str] = (),
        read_only_globs: Sequence[str] = (),
    ) -> None:
        if backend not in BACKENDS:
            raise SandboxError(f"unknown sandbox backend {backend!r}; use 'auto', 'bwrap', 'landlock' or 'none'")
        path = Path(workspace).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.workspace = Path(os.path.realpath(path))
        if self.workspace == Path("/"):
            raise SandboxError("the sandbox workspace cannot be the root directory")
        self.backend: Backend = backend
        self.limits = limits or Limits()
        self.timeout = timeout
        self.output_limit = output_limit
        self.network = network
        self.read_only_binds = tuple(Path(os.path.realpath(Path(p).expanduser())) for p in read_only_binds)
        self.protected = ProtectedPaths(read_only_globs)
        self._resolved: ActiveBackend | None = None
        self._why = ""
        self.landlock: confine.ProbeResult | None = None
        """The Landlock probe, when it ran."""
        self._cgroup_parent = find_pids_parent()
        self._python_dirs = policy.python_dirs(self.workspace)
        self._cleanups: set[asyncio.Future[None]] = set()

    # -- backend -----------------------------------------------------------------------
    @property
    def active_backend(self) -> ActiveBackend:
        """The backend in force, probed on first use; ``refused`` when nothing can confine code.

        Never raises: a refusal shows when a command is run (see :meth:`spawn`).
        """
        if self._resolved is None:
            self._resolved = self._resolve_backend()
        return self._resolved

    @property
    def why(self) -> str:
        """Why the backend in force was chosen (or why code is refused), in a sentence."""
        _ = self.active_backend
        return self._why

    @property
    def cgroups_available(self) -> bool:
        """Whether each command gets a ``pids`` cgroup (a process cap that also holds for root)."""
        return self._cgroup_parent is not None

    @property
    def confined(self) -> bool:
        """Whether commands run isolated from the host (file system and, unless allowed, network)."""
        return self.active_backend in ("bwrap", "landlock")

    def _resolve_backend(self) -> ActiveBackend:
        if self.backend == "none":
            self._why = "chosen in the configuration: commands run without isolation"
            return "none"
        failures = []
        if self.backend in ("auto", "bwrap"):
            reason = self._probe_bwrap()
            if reason is None:
                self._why = "bubblewrap works here"
                return "bwrap"
            failures.append(f"bubblewrap: {reason}")
        if self.backend in ("auto", "landlock"):
            self.landlock = confine.probe(self._python_dirs, self.read_only_binds, network=self.network)
            if self.landlock.reason is None:
                first = f"{failures[0]}; " if failures else ""
                self._why = f"{first}Landlock ABI {self.landlock.abi} and the network layer work here"
                return "landlock"
            failures.append(f"landlock: {self.landlock.reason}")
        self._why = "; ".join(failures)
        return "refused"

    def refusal(self) -> str | None:
        """Why no command can run here, what fixes it and how to opt out; ``None`` when commands can run."""
        if self.active_backend != "refused":
            return None
        which = {
            "auto": "no sandbox backend can confine code on this machine",
            "bwrap": "the bubblewrap sandbox (backend 'bwrap') cannot confine code on this machine",
            "landlock": "the Landlock sandbox (backend 'landlock') cannot confine code on this machine",
        }[self.backend]
        found = shutil.which("bwrap")
        fix = f"To fix this, install bubblewrap: `{INSTALL_HINT}`"
        if self.backend == "landlock":
            fix += ', and set [sandbox] backend = "auto"'
        elif found is not None:
            fix = (
                f"To fix this, let bubblewrap create user namespaces (the bwrap at {found} failed; e.g. "
                f"`sysctl -w kernel.unprivileged_userns_clone=1`), or install a working one: `{INSTALL_HINT}`"
            )
        return (
            f"Refusing to run code: {which} ({self.why}). {fix}. "
            f"To run code WITHOUT isolation instead, at your own risk, set {OPT_OUT_HINT}."
        )

    def _probe_bwrap(self) -> str | None:
        exe = shutil.which("bwrap")
        if exe is None:
            return f"bwrap is not installed ({INSTALL_HINT})"
        argv = [*self._bwrap_prefix(exe, self.workspace), "/bin/sh", "-c", "exit 0"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10, env=self._base_env(), check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not start ({exc})"
        if done.returncode != 0:
            return f"bwrap failed: {done.stderr.decode(errors='replace').strip()[:300]}"
        return None

    def describe(self) -> str:
        """What isolation is in force, in words for the system prompt."""
        lim = self.limits
        limits = (
            f"Limits per command: {self.timeout:g} s wall time, {lim.cpu_seconds} s CPU, "
            f"{lim.memory_mb} MB memory per process, {lim.max_processes} processes, "
            f"files up to {lim.max_file_mb} MB; output beyond {self.output_limit:,} characters per stream is cut."
        )
        net = "Network access is allowed." if self.network else "There is no network access."
        if self.active_backend == "bwrap":
            return (
                f"Commands run in a bubblewrap sandbox. The working directory is the workspace {self.workspace}, "
                f"the only place files persist; /tmp is private scratch space, emptied when the command ends. "
                f"System and Python files are read-only; home directories and other host files are not visible. "
                f"{net} {limits}"
            )
        if self.active_backend == "landlock":
            return (
                f"Commands run in a Landlock sandbox. The working directory is the workspace {self.workspace}, "
                f"the only place files persist; $TMPDIR is private scratch space, emptied when the command ends. "
                f"System and Python files are read-only; home directories and other host files cannot be read. "
                f"{net} {limits}"
            )
        if self.active_backend == "refused":
            return f"Commands cannot run: {self.refusal()}"
        return (
            f"Commands run WITHOUT isolation, as the host user, in the workspace {self.workspace}: "
            f"keep every file inside the workspace and do not touch anything else. {limits}"
        )

    # -- running -----------------------------------------------------------------------
    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str | None = None,
        stdin: bytes | str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a per-command limit, enforced with the kill
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ProcessResult:
        """Run ``argv`` to completion (or the timeout) and return what happened.

        Args:
            argv: the program and its arguments.
            cwd: the working directory, inside the workspace (default: the workspace).
            stdin: data for the command's standard input (default: none, like /dev/null).
            timeout: wall-clock seconds (default: the sandbox's ``timeout``).
            env: extra environment variables.
            output_limit: characters kept per stream, if fewer than the sandbox's ``output_limit``.
        """
        limit = self.timeout if timeout is None else timeout
        keep = self.output_limit if output_limit is None else min(output_limit, self.output_limit)
        started = time.monotonic()
        proc = await self.spawn(argv, cwd=cwd, env=env, stdin=stdin is not None)
        out = asyncio.ensure_future(read_capped(proc.process.stdout, keep))
        err = asyncio.ensure_future(read_capped(proc.process.stderr, keep))
        feeder = asyncio.ensure_future(feed(proc.process.stdin, stdin))
        timed_out = False
        try:
            timed_out = not await wait_exit(proc.process, limit)
        finally:
            feeder.cancel()
            # Background processes die with the command: nothing outlives a call.
            await proc.aclose()
        done, pending = await asyncio.wait({out, err}, timeout=_PIPE_GRACE)
        for task in pending:
            task.cancel()
        (out_text, out_cut, out_bytes) = out.result() if out in done else ("", True, 0)
        (err_text, err_cut, err_bytes) = err.result() if err in done else ("", True, 0)
        return ProcessResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out_text,
            stderr=err_text,
            timed_out=timed_out,
            stdout_truncated=out_cut,
            stderr_truncated=err_cut,
            duration=time.monotonic() - started,
            stdout_bytes=out_bytes,
            stderr_bytes=err_bytes,
        )

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bool = True,
        cpu_hard_unlimited: bool = False,
    ) -> SandboxedProcess:
        """Start ``argv`` in the sandbox with piped stdout/stderr (and stdin); the caller closes it.

        ``cpu_hard_unlimited`` lets a long-lived worker raise its own CPU soft limit
        per task (see :meth:`Limits.rlimits`).
        """
        if not argv:
            raise SandboxError("no command to run")
        workdir = self._workdir(cwd)
        backend = self.active_backend
        if (refused := self.refusal()) is not None:
            raise SandboxError(refused)
        full_env = {**self._base_env(), **(env or {})}
        nproc: int | None = None
        command = list(argv)
        scratch: Path | None = None
        confiner: confine.Confiner | None = None
        if backend == "bwrap":
            exe = shutil.which("bwrap") or "bwrap"
            inner = command
            if os.geteuid() != 0:
                # Inside bwrap's user namespace the kernel counts only the sandbox's processes.
                inner = [sys.executable, "-S", "-E", "-c", policy.NPROC_LAUNCHER, str(self.limits.max_processes)]
                inner += command
            command = self._bwrap_prefix(exe, workdir) + inner
        elif backend == "landlock":
            scratch, confiner = self._landlock_launch()
            full_env = confine.scratch_env(full_env, scratch)
            if os.geteuid() != 0 and confiner.network != "netns":
                nproc = user_task_count(os.geteuid()) + self.limits.max_processes
        elif os.geteuid() != 0:
            # RLIMIT_NPROC counts all the user's tasks; allow the sandbox this many more.
            nproc = user_task_count(os.geteuid()) + self.limits.max_processes
        extra = 2 if backend == "bwrap" else 0  # bwrap's monitor and its pid 1 (the launcher execs)
        cgroup = PidsCgroup.create(self._cgroup_parent, self.limits.max_processes + extra)
        rlimits = self.limits.rlimits(cpu_hard_unlimited=cpu_hard_unlimited)

        def setup_child() -> None:
            if cgroup is not None:
                cgroup.join_self()
            apply_rlimits(rlimits)
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            if confiner is not None:
                confiner.apply()

        creating = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *command,
                cwd=workdir,
                env=full_env,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=setup_child,
            )
        )
        if confiner is not None:
            creating.add_done_callback(lambda _: confiner.close())
        is_bwrap = backend == "bwrap"
        try:
            process = await asyncio.shield(creating)
        except asyncio.CancelledError:
            # Cancelled midway, asyncio's process creation can wait forever for pipes the
            # sandbox still holds: let it finish, then kill whatever it started.
            creating.add_done_callback(lambda done: self._discard(done, cgroup, bwrap=is_bwrap, scratch=scratch))
            raise
        except BaseException as exc:
            if cgroup is not None:
                cgroup.remove()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            if isinstance(exc, OSError):
                raise SandboxError(f"could not start {argv[0]!r}: {exc.strerror or exc}") from exc
            if isinstance(exc, subprocess.SubprocessError):  # the confinement failed in the child
                raise SandboxError(f"could not confine {argv[0]!r} in the {backend} sandbox: {exc}") from exc
            raise
        return SandboxedProcess(process, cgroup, bwrap=is_bwrap, scratch=scratch)

    def _landlock_launch(self) -> tuple[Path, confine.Confiner]:
        """A private scratch directory for one command, and the layers that confine it."""
        probe = self.landlock
        assert probe is not None and probe.network is not None
        scratch = Path(tempfile.mkdtemp(prefix="pymanus-tmp-"))
        nproc = self.limits.max_processes if os.geteuid() != 0 and probe.network == "netns" else None
        hidden = [self.workspace / STATE_DIR] if probe.hides else []
        try:
            for folder in hidden:
                folder.mkdir(exist_ok=True)  # the mount point of the empty folder that hides it
            confiner = confine.Confiner(
                probe.abi,
                probe.network,
                confine.read_roots(self._python_dirs, self.read_only_binds),
                [self.workspace, scratch],
                nproc=nproc,
                hidden=hidden,
            )
        except OSError as exc:
            shutil.rmtree(scratch, ignore_errors=True)
            raise SandboxError(f"could not set up the Landlock sandbox: {exc}") from exc
        return scratch, confiner

    def _discard(
        self,
        done: asyncio.Future[asyncio.subprocess.Process],
        cgroup: PidsCgroup | None,
        *,
        bwrap: bool,
        scratch: Path | None,
    ) -> None:
        """Kill a process whose caller was cancelled while it started."""
        if done.cancelled() or done.exception() is not None:
            if cgroup is not None:
                cgroup.remove()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            return
        orphan = SandboxedProcess(done.result(), cgroup, bwrap=bwrap, scratch=scratch)
        orphan.kill_now()
        cleanup = asyncio.ensure_future(orphan.aclose())
        self._cleanups.add(cleanup)
        cleanup.add_done_callback(self._cleanups.discard)

    # -- helpers -----------------------------------------------------------------------
    def _workdir(self, cwd: Path | str | None) -> Path:
        if cwd is None:
            return self.workspace
        path = Path(cwd)
        real = Path(os.path.realpath(path if path.is_absolute() else self.workspace / path))
        if real != self.workspace and self.workspace not in real.parents:
            raise SandboxError(f"the working directory {cwd} is outside the workspace {self.workspace}")
        if not real.is_dir():
            raise SandboxError(f"the working directory {cwd} does not exist")
        return real

    def _bwrap_prefix(self, exe: str, cwd: Path) -> list[str]:
        read_only = [*self._python_dirs, *self.read_only_binds]
        (self.workspace / STATE_DIR).mkdir(exist_ok=True)  # the mount point of the tmpfs that hides it
        return policy.bwrap_args(
            protected=self.protected.existing(self.workspace),
            bwrap=exe,
            workspace=self.workspace,
            cwd=cwd,
            read_only=read_only,
            network=self.network,
            tmp_bytes=self.limits.tmp_mb * 1024 * 1024,
        )

    def _base_env(self) -> dict[str, str]:
        home = "/tmp" if self._resolved in ("bwrap", "landlock") else str(self.workspace)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "dumb",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        # Numeric libraries start a thread per core; keep their pools well inside the process cap.
        threads = str(max(1, min(os.cpu_count() or 1, self.limits.max_processes // 8)))
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
            env[name] = threads
        if site.getusersitepackages() in sys.path:
            env["PYTHONUSERBASE"] = site.getuserbase()
        return env


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"

"""What protects the user: the backend in force, why, and each layer with yes or no.

``pymanus doctor`` prints a :class:`SandboxReport`; ``pymanus run`` names its
:attr:`~SandboxReport.headline` in its first line of progress. Building one probes the
backends (see :attr:`Sandbox.active_backend`), as running a command would.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pymanus.sandbox.confine import NETWORK_LAYERS
from pymanus.sandbox.process import ActiveBackend, Backend, Sandbox


@dataclass(frozen=True)
class Layer:
    """One kind of protection and whether it is in force."""

    name: str
    protected: bool
    detail: str


@dataclass(frozen=True)
class SandboxReport:
    """The sandbox as it will run commands here."""

    requested: Backend
    active: ActiveBackend
    why: str
    layers: tuple[Layer, ...]
    refusal: str | None
    """Why no command can run, what fixes it and how to opt out (``None`` when commands can run)."""

    headline: str
    """A few words for a progress line, e.g. ``sandbox landlock (Landlock ABI 7, network namespace)``."""


_SHORT_NETWORK = {"netns": "network namespace", "seccomp": "seccomp network filter", "open": "network allowed"}


def sandbox_report(sandbox: Sandbox) -> SandboxReport:
    """Probe ``sandbox`` (if not done yet) and describe what it protects."""
    active = sandbox.active_backend
    return SandboxReport(
        requested=sandbox.backend,
        active=active,
        why=sandbox.why,
        layers=(_file_system(sandbox, active), _network(sandbox, active), _limits(sandbox, active)),
        refusal=sandbox.refusal(),
        headline=_headline(sandbox, active),
    )


def _headline(sandbox: Sandbox, active: ActiveBackend) -> str:
    match active:
        case "bwrap":
            return "sandbox bwrap (bubblewrap" + (", network allowed)" if sandbox.network else ")")
        case "landlock":
            probe = sandbox.landlock
            abi = probe.abi if probe is not None else 0
            layer = probe.network if probe is not None and probe.network is not None else "open"
            return f"sandbox landlock (Landlock ABI {abi}, {_SHORT_NETWORK[layer]})"
        case "none":
            return "sandbox none (code runs WITHOUT isolation)"
        case _:
            return "sandbox refused (no backend can confine code here: code will not run)"


def _file_system(sandbox: Sandbox, active: ActiveBackend) -> Layer:
    name = "file system"
    if active == "bwrap":
        return Layer(
            name,
            True,
            "bubblewrap mount namespace: system and Python directories read-only, the workspace the only "
            f"writable host directory, a private /tmp of {sandbox.limits.tmp_mb} MB; home directories not visible",
        )
    if active == "landlock" and sandbox.landlock is not None:
        journal = (
            "the journal's .pymanus/ shown empty and read-only (a mount namespace)"
            if sandbox.landlock.hides
            else (
                f"the journal's .pymanus/ reachable ({sandbox.landlock.hide_problem}): "
                "tampering is detected, not prevented"
            )
        )
        return Layer(
            name,
            True,
            f"Landlock ABI {sandbox.landlock.abi}: system and Python directories read-only, read-write only the "
            f"workspace and a private temporary directory; home directories and the host's /tmp unreadable; {journal}",
        )
    if active == "none":
        return Layer(name, False, "commands run as this user, with all of its file access")
    return Layer(name, False, "no backend can confine code here, so no code runs")


def _network(sandbox: Sandbox, active: ActiveBackend) -> Layer:
    name = "network"
    if active == "refused":
        return Layer(name, False, "no backend can confine code here, so no code runs")
    if active == "none":
        return Layer(name, False, "commands reach the network like any program of this user")
    if sandbox.network:
        return Layer(name, False, "allowed by the configuration")
    if active == "bwrap":
        return Layer(name, True, "bubblewrap network namespace (no interfaces)")
    probe = sandbox.landlock
    layer = probe.network if probe is not None else None
    if layer is None or layer == "open":
        return Layer(name, False, "allowed")
    detail = NETWORK_LAYERS[layer]
    if probe is not None and probe.abi >= 4:
        detail += "; Landlock also refuses every TCP connect and bind"
    return Layer(name, True, detail)


def _limits(sandbox: Sandbox, active: ActiveBackend) -> Layer:
    lim = sandbox.limits
    if sandbox.cgroups_available:
        processes = f"a pids cgroup caps processes at {lim.max_processes}"
    elif os.geteuid() != 0:
        processes = f"RLIMIT_NPROC caps processes at about {lim.max_processes}"
    else:
        processes = "processes are not capped (root without a writable pids cgroup; the wall time still applies)"
    detail = (
        f"CPU {lim.cpu_seconds} s, memory {lim.memory_mb} MB and files {lim.max_file_mb} MB per process, "
        f"{lim.max_open_files} open files; {processes}; wall time {sandbox.timeout:g} s per command; "
        f"output cut at {sandbox.output_limit:,} characters per stream"
    )
    if active == "refused":
        detail = "would apply, but no code runs"
    return Layer("limits", active != "refused", detail)

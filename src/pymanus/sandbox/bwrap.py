"""What a bubblewrap sandbox can see: the mount and namespace policy, as bwrap arguments.

The sandbox does not bind the host's ``/`` wholesale: that would expose home
directories, SSH keys, cloud credentials, ``/run`` sockets and more. It starts from an
empty root and binds, read-only, only what programs need to run:

* ``/usr`` (and ``/bin``, ``/sbin``, ``/lib*`` as the links or directories they are);
* an allowlist of ``/etc`` entries (dynamic linker, users and groups, name service,
  time zone, TLS certificates, MIME types, fonts) -- never ``shadow``, ``ssh``,
  ``sudoers`` or whatever else a host keeps in ``/etc``;
* the Python installation running PyManus (prefixes and site-packages, which may live
  under ``/root/.pyenv`` or a virtualenv: exactly those directories, not their parents);
* the caller's extra read-only binds.

The workspace is the one writable host directory, except its journal folder
``.pymanus/`` (hidden under an empty read-only tmpfs) and its read-only paths
(``[workspace] read_only``: each existing match bound read-only, as it was when the
command started). ``/tmp`` is a private, size-capped
tmpfs; ``/proc`` and ``/dev`` are fresh and minimal; the root itself is read-only.
Namespaces: user (mapping the sandbox's user to the caller's, so workspace files keep
their owner; nested user namespaces are disabled), PID (a process tree the kernel
tears down when the sandbox ends), network (unless allowed: only a loopback device
that is down), IPC, UTS and, where possible, cgroup. Every capability is dropped, so
the sandboxed process cannot remount or escape the mounts.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Sequence
from pathlib import Path

from pymanus.sandbox.journal import STATE_DIR

ETC_ALLOWLIST = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "resolv.conf",
    "gai.conf",
    "localtime",
    "timezone",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "locale.alias",
    "fonts",
    "magic",
    "magic.mime",
    "matplotlibrc",
    "papersize",
)
"""The ``/etc`` entries a sandbox sees (when they exist on the host)."""

ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

NPROC_LAUNCHER = (
    "import os,resource,sys;n=int(sys.argv[1]);"
    "resource.setrlimit(resource.RLIMIT_NPROC,(n,n));os.execvp(sys.argv[2],sys.argv[2:])"
)
"""Sets ``RLIMIT_NPROC`` inside the sandbox's user namespace, then runs the command."""


def python_dirs(workspace: Path) -> list[Path]:
    """The directories of the running Python installation a sandbox must see, read-only.

    Directories that would expose more than an installation -- ``/``, a home
    directory, or anything holding the workspace -- are left out.
    """
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
        *site.getsitepackages(),
    ]
    user_site = site.getusersitepackages()
    if user_site in sys.path:
        candidates.append(user_site)
    home = Path(os.path.realpath(Path.home()))
    too_broad = {Path("/"), Path("/home"), Path("/root"), home}
    found: list[Path] = []
    for text in candidates:
        path = Path(os.path.realpath(text))
        if not path.is_dir() or path in too_broad:
            continue
        if path == workspace or path in workspace.parents or path in home.parents:
            continue
        found.append(path)
    return _outermost(found)


def bwrap_args(
    *,
    bwrap: str,
    workspace: Path,
    cwd: Path,
    read_only: Sequence[Path],
    network: bool,
    tmp_bytes: int,
    protected: Sequence[Path] = (),
) -> list[str]:
    """The bwrap command line up to (not including) the sandboxed command."""
    args = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    if not network:
        args.append("--unshare-net")
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for entry in ETC_ALLOWLIST:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    # After /tmp, so a Python installation or extra bind that lives under /tmp stays visible.
    for path in _outermost([p for p in read_only if not _within(p, Path("/usr"))]):
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workspace), str(workspace)]
    # The journal's folder: an empty read-only tmpfs over it, so code can neither read nor change it.
    state = str(workspace / STATE_DIR)
    args += ["--size", str(64 * 1024), "--tmpfs", state, "--remount-ro", state]
    for path in protected:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--remount-ro", "/", "--chdir", str(cwd), "--"]
    return args


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """``paths`` without duplicates and without those inside another one, in order."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(_within(path, outer) for outer in kept):
            kept.append(path)
    return kept


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents

"""Landlock, the Linux security module that lets an unprivileged process confine itself.

A thin ctypes layer over three system calls (numbers 444, 445 and 446 on every Linux
architecture): ``landlock_create_ruleset``, ``landlock_add_rule`` and
``landlock_restrict_self``. The PyPI packages for it were not a fit: ``landlock``
(1.0.0.dev5) is a pre-release that handles only file-system rights (no TCP rules, no
scoping) and pads its rule structure differently from the kernel's packed one.

How it is used: the parent builds a :class:`Ruleset` (it opens the allowed paths, so a
child has nothing to resolve); the child calls :func:`restrict_self` just before
``exec``. From then on that process and everything it starts may only touch what the
rules allow, and nothing can lift the restriction.

What each ABI version adds, and what PyManus does with it:

* 1 (Linux 5.13): file-system rights; a confined process cannot ptrace (or read the
  ``/proc/<pid>/environ``, ``mem``, ``fd`` of) a process outside its domain, nor mount.
* 2 (5.19): ``REFER``, renaming and linking between directories under control.
* 3 (6.2): ``TRUNCATE``. **The minimum PyManus accepts**: before it a confined process
  could still truncate any host file its user may write (as root: any file).
* 4 (6.7): TCP ``bind`` and ``connect`` rights: all TCP is refused when the network is off
  (a second layer under the network namespace or seccomp filter).
* 5 (6.10): ``IOCTL_DEV``, ioctl on devices.
* 6 (6.12): scoping: no connecting to abstract Unix sockets and no signals outside
  the domain (sandboxed code cannot kill PyManus itself).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from pymanus.sandbox.privileges import PrivilegeError, libc, set_no_new_privs

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1

MIN_ABI = 3
"""The lowest ABI version the sandbox relies on (see the module docstring)."""

# File-system rights (``LANDLOCK_ACCESS_FS_*``).
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

# Network rights (``LANDLOCK_ACCESS_NET_*``, ABI 4) and scopes (``LANDLOCK_SCOPE_*``, ABI 6).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
"""What a read-only root allows: list, read and run."""
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on a file (not a directory) may carry."""


class LandlockError(PrivilegeError):
    """A Landlock call failed; the message says which and why."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct landlock_path_beneath_attr is packed: 12 bytes
    _fields_ = [
        ("allowed_access", ctypes.c_uint64),
        ("parent_fd", ctypes.c_int32),
    ]


def _call(number: int, *args: object) -> int:
    result: int = libc().syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, os.strerror(code))
    return result


def abi_version() -> int:
    """The Landlock ABI version of the running kernel; 0 when Landlock is unavailable."""
    try:
        return _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0


def unavailable_reason(abi: int) -> str | None:
    """Why Landlock cannot confine code on this kernel (``None`` when it can)."""
    if abi >= MIN_ABI:
        return None
    if abi == 0:
        if not hasattr(os, "uname") or os.uname().sysname != "Linux":
            return "Landlock exists only on Linux"
        code = _probe_errno()
        if code == errno.EOPNOTSUPP:
            return "Landlock is built into this kernel but disabled at boot (add 'landlock' to the lsm= kernel option)"
        return "this kernel has no Landlock (it needs Linux 6.2 or later built with CONFIG_SECURITY_LANDLOCK)"
    return f"this kernel's Landlock is ABI {abi}; the sandbox needs ABI {MIN_ABI} or later (Linux 6.2+)"


def _probe_errno() -> int:
    try:
        _call(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except LandlockError as exc:
        return exc.errno or 0
    except AttributeError:
        return errno.ENOSYS
    return 0


def fs_rights(abi: int) -> int:
    """Every file-system right this ABI version can control."""
    rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM (ABI 1)
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class Ruleset:
    """A Landlock ruleset being built in the parent: what a confined child may touch.

    Args:
        abi: the kernel's ABI version (see :func:`abi_version`).
        deny_tcp: refuse every TCP bind and connect (ABI 4+; ignored before).
        scope: refuse abstract Unix sockets and signals outside the domain (ABI 6+).

    Use as a context manager: the ruleset's file descriptor is closed on exit.
    """

    def __init__(self, abi: int, *, deny_tcp: bool, scope: bool = True) -> None:
        self.abi = abi
        self.handled = fs_rights(abi)
        attr = _RulesetAttr(handled_access_fs=self.handled)
        size = 8
        if deny_tcp and abi >= 4:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
            size = 16
        if scope and abi >= 6:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            size = 24
        self.fd = _call(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))

    def allow(self, path: Path, rights: int) -> bool:
        """Allow ``rights`` on ``path`` and everything beneath it; ``False`` if it does not exist.

        A file gets only the rights a file can have (reading, writing, running).
        """
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= _FILE_ONLY
            rule = _PathBeneathAttr(allowed_access=rights & self.handled, parent_fd=fd)
            if rule.allowed_access:
                _call(SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0)
        finally:
            os.close(fd)
        return True

    def allow_all(self, paths: Iterable[Path], rights: int) -> None:
        """:meth:`allow` each of ``paths`` (missing ones are skipped)."""
        for path in paths:
            self.allow(path, rights)

    def close(self) -> None:
        """Release the ruleset (a child that already restricted itself keeps its rules)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Ruleset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def restrict_self(ruleset_fd: int) -> None:
    """Confine the calling process (and all it starts) to the ruleset, for good.

    Sets ``no_new_privs`` first, as Landlock requires of unprivileged callers.
    Called in the child between ``fork`` and ``exec``.
    """
    set_no_new_privs()
    _call(SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))

"""Privileges a confined child gives up before ``exec``: no new privileges, no capabilities.

* ``no_new_privs`` (``prctl(PR_SET_NO_NEW_PRIVS)``, Linux 3.5+): no ``exec`` may gain
  privileges through setuid bits or file capabilities. Landlock and seccomp demand it of
  unprivileged callers, and it holds for every process the command starts.
* Capabilities, when PyManus runs as root: with the ``SECBIT_NOROOT`` secure bit (locked)
  and no ambient capabilities, an ``exec`` by user 0 no longer grants every capability.
  Without this, a root command keeps ``CAP_SYS_PTRACE`` and may read the environment (API
  keys) of the PyManus process through ``/proc/<pid>/environ``, Landlock or not, and
  ``CAP_DAC_OVERRIDE`` would let it past file permissions. It stays user 0 for file
  ownership, with only the permissions an ordinary owner has.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from pathlib import Path
from typing import Any

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECBIT_NOROOT = 1 << 0
SECBIT_NOROOT_LOCKED = 1 << 1


class PrivilegeError(OSError):
    """A system call that confines a process failed; the message names it."""


@functools.cache
def libc() -> Any:
    """The C library, loaded once per process, with every function a child calls already resolved.

    A child between ``fork`` and ``exec`` must not take locks another thread of the parent
    may have held at the fork (the dynamic loader's, the import lock): it only calls these.
    """
    library = ctypes.CDLL(None, use_errno=True)
    library.syscall.restype = ctypes.c_long
    for name in ("prctl", "unshare", "mount"):
        getattr(library, name)  # ctypes caches the resolved symbol on the library object
    return library


CAP_SYS_ADMIN = 21


def may_mount() -> bool:
    """Whether this process is root with ``CAP_SYS_ADMIN`` in effect (it may make mount namespaces)."""
    if os.geteuid() != 0:
        return False
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    effective = next((line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), "0")
    return bool(int(effective, 16) >> CAP_SYS_ADMIN & 1)


def _prctl(option: int, arg: int, what: str, *, optional: bool = False) -> None:
    if libc().prctl(option, arg, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        if optional and code == errno.EINVAL:  # an older kernel without this option
            return
        raise PrivilegeError(code, f"{what}: {os.strerror(code)}")


def set_no_new_privs() -> None:
    """No ``exec`` of this process or its children may gain privileges."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "prctl(PR_SET_NO_NEW_PRIVS)")


def drop_capabilities() -> None:
    """Make the next ``exec`` start with no capabilities, even as root (child only)."""
    if libc().prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
        code = ctypes.get_errno()
        raise PrivilegeError(code, f"prctl(PR_CAP_AMBIENT_CLEAR_ALL): {os.strerror(code)}")
    if os.geteuid() == 0:
        _prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, "prctl(PR_SET_SECUREBITS, NOROOT)")

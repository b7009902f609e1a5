"""A seccomp filter that leaves a process no network: ``socket()`` only for Unix sockets.

The fallback network layer of the Landlock backend, for hosts that forbid unprivileged
user namespaces (so :mod:`pymanus.sandbox.netns` cannot work). It needs a kernel with
``CONFIG_SECCOMP_FILTER`` (every mainstream distribution) and nothing else: no root,
no libseccomp. The filter is a dozen classic-BPF instructions, written here rather than
taken from ``pyseccomp`` (which needs the libseccomp shared library on the host).

What it refuses, with ``EACCES`` (Python: ``PermissionError``):

* ``socket()`` of any family but ``AF_UNIX`` -- so no TCP, UDP, raw or netlink socket;
  ``socketpair()`` (Unix only) keeps working, and with it asyncio and multiprocessing;
* ``io_uring_setup()``, because io_uring can open sockets without calling ``socket()``;
* on x86-64, the x32 system-call numbers (``socket`` has a second number there).

A system call made with another architecture's convention (``int 0x80`` on x86-64)
kills the process: such calls are numbered differently and would slip past the filter.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

from pymanus.sandbox.privileges import PrivilegeError, libc, set_no_new_privs

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_OFFSET_NR = 0  # struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_OFFSET_ARCH = 4
_OFFSET_ARG0 = 16  # the low 32 bits of args[0] (little-endian machines only)

AF_UNIX = 1
_X32_BIT = 0x40000000
_IO_URING_SETUP = 425  # the same number on every architecture

ARCHES = {
    # machine: (AUDIT_ARCH_*, the number of socket())
    "x86_64": (0xC000003E, 41),
    "aarch64": (0xC00000B7, 198),
}
"""The architectures the filter knows; elsewhere :func:`unavailable_reason` says so."""


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [
        ("len", ctypes.c_ushort),
        ("filter", ctypes.POINTER(_SockFilter)),
    ]


def unavailable_reason() -> str | None:
    """Why the filter cannot be used on this machine (``None`` when it can)."""
    machine = platform.machine()
    if machine not in ARCHES:
        return f"the seccomp network filter knows no system-call numbers for {machine}"
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            if not any(line.startswith("Seccomp:") for line in status):
                return "this kernel has no seccomp (CONFIG_SECCOMP)"
    except OSError:
        pass  # no /proc: let the probe tell
    return None


class NoNetworkFilter:
    """The compiled filter, built in the parent; :meth:`install` runs in the child."""

    def __init__(self, machine: str | None = None) -> None:
        arch, socket_nr = ARCHES[machine or platform.machine()]
        deny = _RET_ERRNO | errno.EACCES
        program = [
            (_LD_W_ABS, 0, 0, _OFFSET_ARCH),
            (_JEQ_K, 1, 0, arch),  # 1
            (_RET_K, 0, 0, _RET_KILL_PROCESS),  # 2: a foreign calling convention
            (_LD_W_ABS, 0, 0, _OFFSET_NR),  # 3
            (_JGE_K, 0, 1, _X32_BIT),  # 4
            (_RET_K, 0, 0, deny),  # 5: an x32 system call
            (_JEQ_K, 0, 1, _IO_URING_SETUP),  # 6
            (_RET_K, 0, 0, deny),  # 7
            (_JEQ_K, 1, 0, socket_nr),  # 8
            (_RET_K, 0, 0, _RET_ALLOW),  # 9: any other system call
            (_LD_W_ABS, 0, 0, _OFFSET_ARG0),  # 10: socket(domain, ...)
            (_JEQ_K, 0, 1, AF_UNIX),  # 11
            (_RET_K, 0, 0, _RET_ALLOW),  # 12
            (_RET_K, 0, 0, deny),  # 13
        ]
        self._filters = (_SockFilter * len(program))(*[_SockFilter(*line) for line in program])
        self._program = _SockFprog(len(program), self._filters)
        libc()  # loaded now, in the parent

    def install(self) -> None:
        """Apply the filter to the calling process and all it starts (sets ``no_new_privs``)."""
        set_no_new_privs()
        if libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0) != 0:
            code = ctypes.get_errno()
            raise PrivilegeError(code, f"prctl(PR_SET_SECCOMP): {os.strerror(code)}")

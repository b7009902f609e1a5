"""No network through namespaces: a new, empty network namespace, owned by a new user namespace.

``unshare(CLONE_NEWUSER | CLONE_NEWNET)`` needs no root: the kernel must allow
unprivileged user namespaces (``user.max_user_namespaces`` > 0; on Debian before 11
``kernel.unprivileged_userns_clone=1``; on Ubuntu 24.04+ AppArmor may forbid it, and
then the seccomp filter of :mod:`pymanus.sandbox.seccomp` stands in).

The new network namespace has only a loopback device, and it is down: every ``connect``
fails at once with "network is unreachable" (the host's loopback services, the cloud
metadata address, the internet alike), and nothing leaves the machine. Abstract Unix
sockets are per network namespace, so the host's are out of reach too.

The user namespace gets no ID mapping: the process appears as ``nobody`` and, at its
``exec``, loses every capability, even those root had -- so the confined command can
use no privilege of the user who started it beyond the plain file permissions of its
own user id. Its files are still created as that user on the host.
"""

from __future__ import annotations

import ctypes
import os

from pymanus.sandbox.privileges import PrivilegeError, libc

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000


def unshare_network() -> None:
    """Move the calling process into a new user and network namespace (called in the child)."""
    if libc().unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise PrivilegeError(code, f"unshare(CLONE_NEWUSER | CLONE_NEWNET): {os.strerror(code)}")

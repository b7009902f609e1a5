"""Folders a confined command must not see: an empty, read-only tmpfs over each, in a mount namespace of its own.

Landlock only grants rights, and a right on the workspace holds for everything in it, so
the ``landlock`` backend cannot keep code out of the journal's ``.pymanus/`` by its rules
(granting the workspace's entries one by one instead would leave the workspace itself
without the rights to create, delete or rename what is at its top). Where the kernel lets
a process make a mount namespace, the confined child makes one and mounts an empty
read-only tmpfs over each such folder before Landlock confines it, as bubblewrap does: the
command sees an empty folder it cannot write, and the real one is untouched.

Root with ``CAP_SYS_ADMIN`` makes the mount namespace directly, and first turns every
mount in it into a slave, so that nothing mounted there reaches the host's namespace; it
needs no user namespace, which some hosts forbid even to root. Any other user makes a user
namespace for it (as the ``netns`` network layer does), and a mount namespace owned by a
new user namespace sends no mount back to the host's. Nothing can remove the mount
afterwards: the command runs with no capability, and Landlock forbids a confined process
to change the file system's mounts.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path

from pymanus.sandbox.netns import CLONE_NEWUSER
from pymanus.sandbox.privileges import PrivilegeError, libc

CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REC, _MS_SLAVE = 0x4000, 0x80000
_FLAGS = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC


def hide(paths: Sequence[Path], *, privileged: bool, in_new_user_namespace: bool) -> None:
    """Mount an empty read-only tmpfs over each of ``paths`` in a new mount namespace (child only).

    ``privileged``: the process has ``CAP_SYS_ADMIN`` in the host's user namespace (root),
    so it needs no user namespace. ``in_new_user_namespace``: the process has just made a
    user namespace of its own (the network layer did), whose capabilities allow the mounts.
    Otherwise a user namespace is made here.
    """
    flags = CLONE_NEWNS if privileged or in_new_user_namespace else CLONE_NEWUSER | CLONE_NEWNS
    if libc().unshare(flags) != 0:
        code = ctypes.get_errno()
        raise PrivilegeError(code, f"unshare(CLONE_NEWNS) to hide the journal's folder: {os.strerror(code)}")
    # A privileged namespace starts with the host's propagation: shared mounts would carry ours back.
    if privileged and libc().mount(b"none", b"/", None, _MS_REC | _MS_SLAVE, None) != 0:
        code = ctypes.get_errno()
        raise PrivilegeError(code, f"making the mounts slaves before hiding the journal's folder: {os.strerror(code)}")
    for path in paths:
        if libc().mount(b"pymanus-hidden", os.fsencode(path), b"tmpfs", _FLAGS, b"size=4k,mode=0555") != 0:
            code = ctypes.get_errno()
            raise PrivilegeError(code, f"mounting an empty folder over {path}: {os.strerror(code)}")

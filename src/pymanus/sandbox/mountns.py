"""Folders a confined command must not see: an empty, read-only tmpfs over each, in a mount namespace of its own.

Landlock only grants rights, and a right on the workspace holds for everything in it, so
the ``landlock`` backend cannot keep code out of the journal's ``.pymanus/`` by its rules
(granting the workspace's entries one by one instead would leave the workspace itself
without the rights to create, delete or rename what is at its top). Where the kernel lets
an unprivileged process make a user namespace (as the ``netns`` network layer does), the
confined child also makes a mount namespace and mounts an empty read-only tmpfs over each
such folder before Landlock confines it, as bubblewrap does: the command sees an empty
folder it cannot write, and the real one is untouched.

The mount is the child's alone: a mount namespace owned by a new user namespace sends no
mount back to the host's. Nothing can remove it afterwards: the command runs with no
capability, and Landlock forbids a confined process to change the file system's mounts.
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
_FLAGS = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC


def hide(paths: Sequence[Path], *, in_new_user_namespace: bool) -> None:
    """Mount an empty read-only tmpfs over each of ``paths`` in a new mount namespace (child only).

    ``in_new_user_namespace``: the process has just made a user namespace of its own (the
    network layer did), whose capabilities allow the mounts; otherwise one is made here.
    """
    flags = CLONE_NEWNS if in_new_user_namespace else CLONE_NEWUSER | CLONE_NEWNS
    if libc().unshare(flags) != 0:
        code = ctypes.get_errno()
        raise PrivilegeError(code, f"unshare(CLONE_NEWNS) to hide the journal's folder: {os.strerror(code)}")
    for path in paths:
        if libc().mount(b"pymanus-hidden", os.fsencode(path), b"tmpfs", _FLAGS, b"size=4k,mode=0555") != 0:
            code = ctypes.get_errno()
            raise PrivilegeError(code, f"mounting an empty folder over {path}: {os.strerror(code)}")

"""The sandbox: the path jail and process isolation shared by the built-in tools.

* :class:`PathJail` -- every path a file tool touches is resolved inside one workspace.
* :class:`Sandbox` -- commands run under bubblewrap or, without it, Landlock (never
  unconfined unless the user chose ``none``), with resource limits, a wall-clock
  timeout and capped output. ``pymanus doctor`` prints what is in force.
"""

from pymanus.sandbox.limits import Limits
from pymanus.sandbox.paths import PathJail
from pymanus.sandbox.process import Backend, ProcessResult, Sandbox, SandboxedProcess

__all__ = ["Backend", "Limits", "PathJail", "ProcessResult", "Sandbox", "SandboxedProcess"]

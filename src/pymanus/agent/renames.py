"""Renames the task asks for, and where the old name still is.

"Rename the function calc_tot to compute_total everywhere", "renamed from Skylark to
Nimbus", "replace foo with bar": a small model changes one file of several and calls
the task done, or renames nothing and re-runs the code. A rename's progress is a
fact of the workspace, so the reminder and the completion check state it: which files
(inside the folder the task names, if it names one) still use the old name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pymanus.agent.task_scope import scoped_folder
from pymanus.sandbox import PathJail
from pymanus.tools.builtin.file_search import WORD, word_files

_NAME = r"`?([A-Za-z_][\w.-]*?)`?"
# (pattern, which group is the old name): "rename [the function] A to B", "renamed from A to B",
# "replace A with B", "say B instead of A".
_PATTERNS = tuple(
    (re.compile(pattern, re.IGNORECASE), old_group)
    for pattern, old_group in (
        (rf"\brenam\w*\s+(?:(?:the|a|an|our)\s+)?(?:[a-z]+\s+)?{_NAME}\s+(?:to|as|into)\s+{_NAME}(?!\w)", 1),
        (rf"\brenamed\s+from\s+{_NAME}\s+to\s+{_NAME}(?!\w)", 1),
        (rf"\breplace\s+(?:every\s+|all\s+)?{_NAME}\s+(?:with|by)\s+{_NAME}(?!\w)", 1),
        (rf"\bsays?\s+{_NAME}\s+instead\s+of\s+{_NAME}(?!\w)", 2),
    )
)


@dataclass(frozen=True)
class Rename:
    """An old name to replace by a new one, in the files under ``folder`` (the workspace if ``""``)."""

    old: str
    new: str
    folder: str = ""

    def describe(self, workspace: Path) -> str:
        """``"calc_tot is still used in main.py (1), shop/cart.py (2): ..."`` with the edit that renames it
        in the first of them, or ``""`` once renamed everywhere.

        The call is spelled out: told only where the old name is, the 1.5B "renamed" with the
        new name as old_text (``compute_total`` → ``compute_total``) and gave up on the error.
        """
        jail = PathJail(workspace)
        files = word_files(jail, self.old, skip=None, under=jail.root / self.folder if self.folder else None)
        if not files:
            return ""
        listed = ", ".join(f"{path} ({count})" for path, count in files)
        edit = {"path": files[0][0], "old_text": self.old, "new_text": self.new, "replace_all": True}
        return f"{self.old} is still used in {listed}: replace it by {self.new} there (edit_file {json.dumps(edit)})"


def requested_renames(task: str, workspace: Path) -> list[Rename]:
    """The renames ``task`` asks for whose old name is a word; folder-scoped when the task names one."""
    folder = scoped_folder(task, workspace)
    found: dict[str, Rename] = {}
    for pattern, old_group in _PATTERNS:
        for match in pattern.finditer(task):
            old, new = match.group(old_group), match.group(3 - old_group)
            if old != new and WORD.fullmatch(old) and old not in found:
                found[old] = Rename(old, new, folder)
    return list(found.values())


def rename_notes(task: str, workspace: Path) -> list[str]:
    """One note per requested rename that is not done everywhere yet."""
    return [note for rename in requested_renames(task, workspace) if (note := rename.describe(workspace))]

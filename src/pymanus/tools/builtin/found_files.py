"""Lists of workspace files a task picks by what is in them, typed instead of found.

Asked for "every file under src/ that contains TODO", the 1.5B read one file and wrote a list of
four to six paths from their names, in every stored run: only code that opens every file can say
which ones hold the word. ``write_file`` and ``edit_file`` refuse such a list while the run's code
has not printed its paths, or while it names files outside the folder the task gives (the 1.5B's
``os.walk('.')`` found README.md too).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)*")
_SCANNED_CHARS = 20_000


def listed_files(text: str, workspace: Path) -> list[str]:
    """The workspace files ``text`` names by their path ("src/app/main.py", "./README.md")."""
    names: list[str] = []
    for token in dict.fromkeys(_PATH.findall(text[:_SCANNED_CHARS])):
        name = PurePosixPath(token.removeprefix("./"))
        if "." in name.name and ".." not in name.parts and (workspace / name).is_file():
            names.append(name.as_posix())
    return names


def guessed_listing(file: str, text: str, workspace: Path, *, folder: str, printed: str) -> str | None:
    """Why ``file`` may not hold ``text`` in a task that picks files under ``folder`` ("" for the whole
    workspace) by their content, or ``None``: every file it lists is in that folder and was in
    ``printed``, what the run's code printed."""
    if PurePosixPath(file).suffix == ".py":
        return None
    listed = listed_files(text, workspace)
    prefix = f"{folder.rstrip('/')}/" if folder else ""
    if outside := [name for name in listed if not name.startswith(prefix)]:
        them = "it" if len(outside) == 1 else "them"
        return (
            f"{file} was not written: the task asks only for files under {prefix}, and {', '.join(outside[:3])} "
            f"{'is' if len(outside) == 1 else 'are'} not under it. Leave {them} out (in code, os.walk('{prefix}') "
            "visits only that folder)."
        )
    # Counted, not named: told which paths no code showed, the 1.5B wrote exactly those.
    unshown = sum(name not in printed for name in listed)
    if not unshown:
        return None
    shown = (
        "no code has printed any of them yet"
        if unshown == len(listed)
        else f"no code's output shows {unshown} of the {len(listed)} paths it would list"
    )
    return (
        f"{file} was not written: the task picks files by what is in them, so the list must come from code "
        f"that reads every file, and {shown} (a list typed from file names misses some and adds others). "
        f"Call python: walk {prefix or 'the workspace'} with os.walk('{prefix or '.'}'), open and read each "
        f"file, and write the paths found in that code with write_file('{file}', '\\n'.join(found))."
    )

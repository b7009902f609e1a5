"""``pymanus diff | undo | gc``: what a run changed in the workspace, putting it back, pruning old journals.

Exit codes: 0 done; 1 nothing to undo, some files left alone, or a saved copy that cannot
be used; 2 a usage error (an unknown run id, a bad config), with one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pymanus.config import Settings
from pymanus.errors import ConfigError

WorkspaceOption = Annotated[
    Path | None, typer.Option("--workspace", "-w", help="The workspace (default: from the config).")
]
RunIdArgument = Annotated[str, typer.Argument(help="The run id (`pymanus run` prints it).")]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"pymanus: error: {message}", err=True)
    return typer.Exit(code)


def _settings(workspace: Path | None) -> Settings:
    try:
        return Settings.load(overrides={"agent": {"workspace": str(workspace) if workspace else None}})
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None


def _workspace(workspace: Path | None) -> Path:
    folder = Path(_settings(workspace).agent.workspace).expanduser()
    if not folder.is_dir():
        raise _fail(f"the workspace {folder} does not exist", 2)
    return folder


def diff(run_id: RunIdArgument, workspace: WorkspaceOption = None) -> None:
    """Show what RUN_ID changed: unified diffs of text files, sizes of binary ones."""
    from pymanus.sandbox.history import diff_run
    from pymanus.sandbox.journal import JournalError, UnknownRunError

    try:
        text = diff_run(_workspace(workspace), run_id)
    except UnknownRunError as exc:
        raise _fail(str(exc), 2) from None
    except JournalError as exc:
        raise _fail(str(exc), 1) from None
    typer.echo(text.rstrip("\n") if text else f"Run {run_id} changed no files.")


def undo(
    run_id: RunIdArgument,
    workspace: WorkspaceOption = None,
    step: Annotated[int | None, typer.Option("--step", min=1, help="Undo only steps N and later.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Also restore files changed since the run.")] = False,
) -> None:
    """Put back every file RUN_ID changed (created files are removed). The undo can itself be undone."""
    from pymanus.sandbox.history import undo_run
    from pymanus.sandbox.journal import JournalError, UnknownRunError

    try:
        report = undo_run(_workspace(workspace), run_id, from_step=step, force=force)
    except UnknownRunError as exc:
        raise _fail(str(exc), 2) from None
    except JournalError as exc:
        raise _fail(str(exc), 1) from None
    if report.done:
        parts = []
        if report.restored:
            parts.append(f"restored {', '.join(report.restored)}")
        if report.removed:
            parts.append(f"removed {', '.join(report.removed)}")
        typer.echo(f"Undid run {run_id}: {'; '.join(parts)}. (Undo this with: pymanus undo {report.undo_id})")
    if report.refused:
        typer.echo(f"Left alone, changed since the run (--force restores them): {', '.join(report.refused)}", err=True)
    if not report.done and not report.refused:
        typer.echo(f"Nothing to undo: every file run {run_id} changed is as it was before it.", err=True)
    raise typer.Exit(0 if report.done and not report.refused else 1)


def gc(
    workspace: WorkspaceOption = None,
    keep: Annotated[int | None, typer.Option("--keep", min=0, help="Journals to keep (default: keep_runs).")] = None,
) -> None:
    """Delete all but the newest run journals, and the saved copies nothing needs any more."""
    from pymanus.sandbox.history import collect_garbage

    settings = _settings(workspace)
    folder = Path(settings.agent.workspace).expanduser()
    if not folder.is_dir():
        raise _fail(f"the workspace {folder} does not exist", 2)
    report = collect_garbage(folder, settings.workspace.keep_runs if keep is None else keep)
    typer.echo(
        f"Removed {len(report.journals)} journal{'s' * (len(report.journals) != 1)} and {report.blobs} saved "
        f"cop{'ies' if report.blobs != 1 else 'y'} ({report.freed / 1024 / 1024:.1f} MB)."
    )

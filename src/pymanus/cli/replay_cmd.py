"""``pymanus replay``: run a recorded task again on the recorded model answers, and say whether it reproduced.

``pymanus run --record FILE`` writes the cassette; ``pymanus replay FILE`` runs the same task,
with the recorded settings, from the recorded starting files, its tools for real, and the
model's answers taken from the cassette in order (no model is asked). The run reproduced
when it used every recorded answer and ended as recorded (state, reason, steps, output).
With ``--strict`` each request must also be the recorded one (messages, tools and their
descriptions, settings): the first difference ends the replay and is named, so a changed
prompt or toolset shows up as a failing regression test.

Exit codes: 0 reproduced; 1 not reproduced (a difference, answers left over or run out, a
different ending); 2 a usage error: a missing, unreadable or corrupt cassette, one without
a recorded run, a workspace that cannot be used (one line on stderr).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pymanus.errors import ConfigError, PyManusError

if TYPE_CHECKING:
    from pymanus.cli.recording import RecordedRun
    from pymanus.models.cassette import Cassette


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"pymanus: error: {message}", err=True)
    return typer.Exit(code)


def replay(
    cassette: Annotated[Path, typer.Argument(help="The cassette file (`pymanus run --record FILE` writes it).")],
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Replay in this folder: a missing or empty one gets the recorded starting files, "
            "one with files is used as it is (default: a temporary folder).",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Require every request to be the recorded one; name the first difference.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the verdict.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show full model input and output.")] = False,
) -> None:
    """Run the task recorded in CASSETTE again on its recorded model answers; exit 0 when it reproduced."""
    from pymanus.cli.recording import RecordedRun
    from pymanus.models.cassette import Cassette

    try:
        tape = Cassette.load(cassette)
        recorded = RecordedRun.of(tape, cassette)
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    if workspace is not None and workspace.exists() and not workspace.is_dir():
        raise _fail(f"the workspace {workspace} is not a folder", 2)
    if workspace is None and recorded.files_left_out:
        raise _fail(
            f"{cassette} holds no starting files ({recorded.files_left_out}); "
            "replay it with --workspace DIR, a copy of the workspace the run started from",
            2,
        )
    if verbose:
        from pymanus.cli.logs import enable_verbose_logging

        enable_verbose_logging()
    if workspace is not None:
        _replay_in(tape, recorded, workspace.resolve(), strict=strict, as_json=as_json, verbose=verbose, kept=True)
    else:
        with tempfile.TemporaryDirectory(prefix="pymanus-replay-", ignore_cleanup_errors=True) as folder:
            _replay_in(tape, recorded, Path(folder), strict=strict, as_json=as_json, verbose=verbose, kept=False)


def _replay_in(
    tape: Cassette, recorded: RecordedRun, workspace: Path, *, strict: bool, as_json: bool, verbose: bool, kept: bool
) -> None:
    """Replay in ``workspace`` (``kept``: the user's folder, named in the verdict); exits with the verdict."""
    from pymanus.cli.doctor import run_banner
    from pymanus.cli.recording import RecordedAnswers, is_empty_folder, replay_settings, reproduction, seed_workspace
    from pymanus.cli.render import run_with_progress
    from pymanus.local_aids import equipped_agent
    from pymanus.models.cassette import ReplayModel

    try:
        if is_empty_folder(workspace):
            seed_workspace(workspace, recorded)
        settings = replay_settings(recorded, workspace)
        sandbox_line, sandbox_warning = run_banner(settings)
        model = ReplayModel(tape, strict=strict)
        asker = RecordedAnswers(tape) if recorded.ask_human else None
        agent = equipped_agent(settings, model=model, asker=asker)
    except PyManusError as exc:
        raise _fail(str(exc), 2) from None
    if sandbox_warning:
        typer.echo(f"pymanus: warning: {sandbox_warning}", err=True)
    console = Console(stderr=as_json, highlight=False)
    try:
        result = asyncio.run(run_with_progress(agent, recorded.task, console, verbose=verbose, sandbox=sandbox_line))
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    except PyManusError as exc:
        raise _fail(str(exc), 1) from None
    except KeyboardInterrupt:
        typer.echo("pymanus: interrupted", err=True)
        raise typer.Exit(130) from None
    difference = reproduction(recorded, model, result)
    if as_json:
        outcome = recorded.outcome
        report = {
            "reproduced": difference is None,
            "difference": difference,
            "strict": strict,
            "answers": {"recorded": len(tape.exchanges), "replayed": model.position},
            **result.summary(),
            "workspace": str(workspace) if kept else None,
            "recorded": outcome.model_dump(mode="json") if outcome is not None else None,
        }
        typer.echo(json.dumps(report, ensure_ascii=False))
    elif difference is None:
        compared = "as recorded" if recorded.outcome is not None else "(the recording holds no ending to compare)"
        console.print(
            f"[bold green]reproduced[/]: {model.position} recorded answers replayed, "
            f"ended {result.state.value} ({result.reason}) {compared}"
        )
    else:
        console.print(f"[bold red]not reproduced[/]: {escape(difference)}")
    raise typer.Exit(0 if difference is None else 1)

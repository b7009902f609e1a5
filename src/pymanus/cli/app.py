"""``pymanus``: run a task from the command line.

Exit codes: 0 the run finished; 1 it ended in error or hit a limit; 2 a usage or
configuration error, or a model that cannot be loaded (one line on stderr).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from pymanus.agent.events import RunState
from pymanus.cli import journal_cmd, replay_cmd
from pymanus.cli.doctor import SANDBOX_HELP, doctor, run_banner
from pymanus.cli.logs import enable_verbose_logging
from pymanus.config import Settings
from pymanus.errors import ConfigError, PyManusError

if TYPE_CHECKING:
    from pymanus.cli.recording import Recording

app = typer.Typer(
    name="pymanus",
    help="PyManus: an autonomous agent that plans, calls tools and loops until the task is done.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fail_usage(message: str) -> typer.Exit:
    typer.echo(f"pymanus: error: {message}", err=True)
    return typer.Exit(2)


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="The task, in plain language.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help="openai:<model> or local:<pack|path.gguf>")] = None,
    workspace: Annotated[Path | None, typer.Option("--workspace", "-w", help="Folder the agent works in.")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", min=1, help="Step limit.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with the result.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show full model input and output.")] = False,
    config: Annotated[Path | None, typer.Option("--config", help="Config file (default: ./pymanus.toml).")] = None,
    sandbox: Annotated[str | None, typer.Option("--sandbox", help=SANDBOX_HELP)] = None,
    record: Annotated[
        Path | None, typer.Option("--record", help="Write the run's model exchanges to this cassette file.")
    ] = None,
) -> None:
    """Run TASK to the end, showing live progress (`--record FILE`: for `pymanus replay FILE`)."""
    try:
        settings = Settings.load(
            path=config,
            overrides={
                "model": {"name": model},
                "agent": {"workspace": str(workspace) if workspace else None, "max_steps": max_steps},
                "sandbox": {"backend": sandbox},
            },
        )
        sandbox_line, sandbox_warning = run_banner(settings)
        from pymanus.local_aids import equipped_agent
        from pymanus.tools.builtin.human import ConsoleAsker

        asker = ConsoleAsker() if sys.stdin.isatty() else None
        recording = _start_recording(settings, record, task, ask_human=asker is not None) if record else None
        agent = equipped_agent(settings, model=recording.model if recording else None, asker=asker)
    except PyManusError as exc:  # a bad setting, or a model pack that is unknown, missing or corrupt
        raise _fail_usage(str(exc)) from None

    if verbose:
        enable_verbose_logging()
    if sandbox_warning:
        typer.echo(f"pymanus: warning: {sandbox_warning}", err=True)
    console = Console(stderr=as_json, highlight=False)
    from pymanus.cli.render import run_with_progress

    try:
        result = asyncio.run(run_with_progress(agent, task, console, verbose=verbose, sandbox=sandbox_line))
    except ConfigError as exc:
        raise _fail_usage(str(exc)) from None
    except PyManusError as exc:
        typer.echo(f"pymanus: error: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        typer.echo("pymanus: interrupted", err=True)
        raise typer.Exit(130) from None
    if recording is not None:
        try:
            recording.finish(result)
        except ConfigError as exc:  # the file went away or the disk filled during the run
            typer.echo(f"pymanus: error: {exc}", err=True)
            raise typer.Exit(1) from None

    if as_json:
        typer.echo(json.dumps(result.summary(), ensure_ascii=False))
    elif result.output:
        console.print()
        console.print(result.output, markup=False, highlight=False)
    if result.changes:
        from pymanus.cli.render import changes_line

        console.print(changes_line(result.changes), markup=False, highlight=False)
    raise typer.Exit(0 if result.state is RunState.FINISHED else 1)


def _start_recording(settings: Settings, path: Path, task: str, *, ask_human: bool) -> Recording:
    """The preset's model, recorded to the cassette ``path`` with what a replay of ``task`` needs."""
    from pymanus.agent.manus import preset_model
    from pymanus.cli.recording import Recording

    recording = Recording.start(preset_model(settings), path, task, settings, ask_human=ask_human)
    if recording.run.files_left_out:
        typer.echo(
            f"pymanus: warning: the cassette holds no starting files ({recording.run.files_left_out}); "
            "replay it with --workspace on a copy of the workspace as it is now",
            err=True,
        )
    return recording


def _add_models_commands() -> None:
    from pymanus.cli.models_cmd import models_app

    app.add_typer(models_app, name="models", help="List, install and locate the embedded model packs.")


_add_models_commands()
app.command()(replay_cmd.replay)
app.command()(doctor)
app.command()(journal_cmd.diff)
app.command()(journal_cmd.undo)
app.command()(journal_cmd.gc)


def main() -> None:
    """Console-script entry point."""
    app()

"""``pymanus doctor``: what protects the user when the agent runs code, checked for real.

It probes the sandbox backends exactly as a run would (a confined test command for
each) and prints the backend that will be used, why, and each layer -- file system,
network, limits -- with yes or no. Exit code 0 when code can run (confined, or
unconfined because the user chose ``none``), 1 when the sandbox refuses to run code,
2 on a configuration error.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from pymanus.config import Settings
from pymanus.errors import PyManusError
from pymanus.sandbox.report import SandboxReport, sandbox_report

SANDBOX_HELP = "Sandbox backend: auto, bwrap, landlock or none (overrides [sandbox] backend)."


def doctor(
    sandbox: Annotated[str | None, typer.Option("--sandbox", help=SANDBOX_HELP)] = None,
    workspace: Annotated[Path | None, typer.Option("--workspace", "-w", help="Folder the agent works in.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Config file (default: ./pymanus.toml).")] = None,
) -> None:
    """Check what isolates the code the agent runs: backend, file system, network, limits."""
    try:
        settings = Settings.load(
            path=config,
            overrides={
                "sandbox": {"backend": sandbox},
                "agent": {"workspace": str(workspace) if workspace else None},
            },
        )
        report = _report(settings)
    except PyManusError as exc:
        typer.echo(f"pymanus: error: {exc}", err=True)
        raise typer.Exit(2) from None
    print_report(report, Console(highlight=False, soft_wrap=True))
    raise typer.Exit(1 if report.refusal is not None else 0)


def _report(settings: Settings) -> SandboxReport:
    """Probe in the configured workspace if it exists; else in a scratch folder (doctor creates nothing)."""
    from pymanus.sandbox import Sandbox

    folder = Path(settings.agent.workspace).expanduser().resolve()
    with tempfile.TemporaryDirectory(prefix="pymanus-doctor-") as scratch:
        where = folder if folder.is_dir() else Path(scratch)
        box = Sandbox(where, backend=settings.sandbox.backend, read_only_binds=settings.sandbox.read_only_roots)
        return sandbox_report(box)


def print_report(report: SandboxReport, console: Console) -> None:
    """The report, one line per layer."""
    style = {"bwrap": "green", "landlock": "green", "none": "yellow"}.get(report.active, "red")
    console.print(f"sandbox backend: [bold {style}]{report.active}[/] (configured: {report.requested})")
    console.print(f"why: {escape(report.why)}")
    for layer in report.layers:
        mark = "[green]yes[/]" if layer.protected else "[red]no[/] "
        console.print(f"  {layer.name:<12} {mark}  {escape(layer.detail)}")
    if report.refusal is not None:
        console.print(f"[red]{escape(report.refusal)}[/]")
    elif report.active == "none":
        console.print(
            "[yellow]Model-written code runs WITHOUT isolation, with your user's access to files and network, "
            + escape('because [sandbox] backend = "none" (or --sandbox none) says so.')
            + "[/]"
        )


def run_banner(settings: Settings) -> tuple[str, str | None]:
    """For ``pymanus run``: the sandbox's headline, and a warning to show once when code is not confined."""
    from pymanus.sandbox import Sandbox

    workspace = Path(settings.agent.workspace).expanduser().resolve()
    box = Sandbox(workspace, backend=settings.sandbox.backend, read_only_binds=settings.sandbox.read_only_roots)
    report = sandbox_report(box)
    warning = report.refusal
    if report.active == "none":
        warning = (
            "sandbox backend 'none': model-written code runs WITHOUT isolation, "
            "with your user's access to every file and to the network"
        )
    return report.headline, warning

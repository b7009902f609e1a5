"""PathJail: every way out of the workspace is refused, with a message that says what to do."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pymanus.errors import PathEscapeError, SandboxError
from pymanus.sandbox import PathJail


@pytest.fixture
def jail(tmp_path: Path) -> PathJail:
    return PathJail(tmp_path / "ws")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret")
    return folder


def test_creates_the_workspace_and_resolves_relative_paths(tmp_path: Path) -> None:
    jail = PathJail(tmp_path / "new" / "ws")
    assert jail.root.is_dir()
    assert jail.resolve("a/b.txt", write=True) == jail.root / "a" / "b.txt"
    assert jail.resolve(".", write=False) == jail.root
    assert jail.resolve("a/../c.txt", write=False) == jail.root / "c.txt"


def test_absolute_path_inside_the_workspace_is_accepted(jail: PathJail) -> None:
    assert jail.resolve(str(jail.root / "x.txt"), write=True) == jail.root / "x.txt"


@pytest.mark.parametrize("path", ["../secret.txt", "a/../../x", "..", "./../../../etc/passwd", "/etc/passwd", "/"])
@pytest.mark.parametrize("write", [False, True])
def test_escapes_are_refused_with_a_clear_message(jail: PathJail, path: str, write: bool) -> None:
    with pytest.raises(PathEscapeError) as info:
        jail.resolve(path, write=write)
    message = str(info.value)
    assert repr(path) in message
    assert str(jail.root) in message
    assert "relative to the workspace" in message


def test_path_escape_error_is_a_sandbox_error(jail: PathJail) -> None:
    with pytest.raises(SandboxError):
        jail.resolve("../x", write=False)


def test_symlink_to_a_file_outside_is_refused(jail: PathJail, outside: Path) -> None:
    (jail.root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathEscapeError, match="symbolic link"):
        jail.resolve("link.txt", write=False)
    with pytest.raises(PathEscapeError):
        jail.resolve("link.txt", write=True)


def test_symlinked_parent_directory_pointing_out_is_refused(jail: PathJail, outside: Path) -> None:
    (jail.root / "data").symlink_to(outside)
    for path in ("data/secret.txt", "data/new.txt", "data"):
        with pytest.raises(PathEscapeError, match="symbolic link"):
            jail.resolve(path, write=True)


def test_symlink_staying_inside_is_fine(jail: PathJail) -> None:
    (jail.root / "real.txt").write_text("ok")
    (jail.root / "alias.txt").symlink_to("real.txt")
    assert jail.resolve("alias.txt", write=False) == jail.root / "real.txt"


def test_read_only_roots_are_readable_not_writable(tmp_path: Path, outside: Path) -> None:
    jail = PathJail(tmp_path / "ws", read_only_roots=[outside])
    assert jail.resolve(str(outside / "secret.txt"), write=False) == outside / "secret.txt"
    with pytest.raises(PathEscapeError, match="read-only"):
        jail.resolve(str(outside / "secret.txt"), write=True)


def test_nul_empty_and_home_paths_are_refused(jail: PathJail) -> None:
    with pytest.raises(PathEscapeError, match="NUL"):
        jail.resolve("a\x00b", write=False)
    with pytest.raises(PathEscapeError, match="empty"):
        jail.resolve("  ", write=False)
    with pytest.raises(PathEscapeError, match="home directory"):
        jail.resolve("~/notes.txt", write=False)


def test_fifo_and_socket_are_refused(jail: PathJail) -> None:
    os.mkfifo(jail.root / "pipe")
    with pytest.raises(PathEscapeError, match="FIFO"):
        jail.resolve("pipe", write=False)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(jail.root / "sock"))
        with pytest.raises(PathEscapeError, match="socket"):
            jail.resolve("sock", write=False)
    finally:
        server.close()


def test_device_file_is_refused_even_in_a_readable_root(tmp_path: Path) -> None:
    jail = PathJail(tmp_path / "ws", read_only_roots=["/dev"])
    with pytest.raises(PathEscapeError, match="device"):
        jail.resolve("/dev/null", write=False)


def test_relative_is_for_display(jail: PathJail, outside: Path) -> None:
    assert jail.relative(jail.root / "a" / "b.txt") == "a/b.txt"
    assert jail.relative(jail.root) == "."
    assert jail.relative(outside) == str(outside)


def test_open_write_creates_parents_and_reports_existence(jail: PathJail) -> None:
    handle, real, existed = jail.open_write("deep/er/file.txt")
    with handle:
        handle.write(b"hello")
    assert real.read_bytes() == b"hello" and not existed
    handle, _, existed = jail.open_write("deep/er/file.txt")
    handle.close()
    assert existed and real.read_bytes() == b""


def test_open_write_refuses_the_workspace_itself(jail: PathJail) -> None:
    with pytest.raises(PathEscapeError, match="workspace directory itself"):
        jail.open_write(".")


@pytest.mark.parametrize("path", ["tests/.", "tests/", "tests/sub/.."])
def test_open_write_refuses_a_path_that_names_a_folder(jail: PathJail, path: str) -> None:
    with pytest.raises(PathEscapeError, match="names a folder, not a file; give a file name inside it"):
        jail.open_write(path)
    assert not (jail.root / "tests").is_file()


def test_open_read_catches_a_symlink_swapped_in_after_the_check(
    jail: PathJail, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the path was checked, then a parent became a link to outside before open()."""
    (jail.root / "swapped").symlink_to(outside)
    monkeypatch.setattr(jail, "resolve", lambda path, *, write: jail.root / "swapped" / "secret.txt")
    with pytest.raises(PathEscapeError, match="changed while it was being opened"):
        jail.open_read("swapped/secret.txt")
    monkeypatch.setattr(jail, "resolve", lambda path, *, write: jail.root / "swapped" / "secret.txt")
    with pytest.raises(PathEscapeError):
        jail.open_write("swapped/secret.txt", create_parents=False)
    assert (outside / "secret.txt").read_text() == "top secret"


def test_open_read_does_not_follow_a_final_symlink_swapped_in(
    jail: PathJail, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (jail.root / "f.txt").symlink_to(outside / "secret.txt")
    monkeypatch.setattr(jail, "resolve", lambda path, *, write: jail.root / "f.txt")
    with pytest.raises(OSError):
        jail.open_read("f.txt")

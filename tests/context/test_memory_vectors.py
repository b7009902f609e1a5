"""Long-term memory by meaning: vectors in the same file, hybrid ranking, the keyword-only fallback, bad files."""

from __future__ import annotations

import importlib.util
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from pymanus.context import embeddings
from pymanus.context.memory import MemoryStore, open_memory
from pymanus.context.ranking import fuse
from pymanus.errors import ConfigError

np = pytest.importorskip("numpy")


class ConceptEncoder:
    """Vectors over a few concepts, each named by several word stems: a paraphrase shares the concept, not the word."""

    name = "concepts"
    CONCEPTS = (
        ("invoic", "bill", "payment"),
        ("pictur", "photo", "image"),
        ("car", "vehicle", "automobile"),
        ("script", "program", "code"),
    )

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), len(self.CONCEPTS) + 1), dtype=np.float32)
        for row, text in enumerate(texts):
            words = text.lower().replace(".", " ").split()
            for column, names in enumerate(self.CONCEPTS):
                out[row, column] = sum(word.startswith(names) for word in words)
            out[row, -1] = 0.01  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_fusion_puts_what_both_rankings_found_first() -> None:
    assert fuse([[1, 2, 3], [4, 2, 5]])[0] == 2
    assert fuse([[1, 2], []]) == [1, 2]  # one ranking alone keeps its order
    assert fuse([[], []]) == []


def test_a_paraphrase_is_found_by_meaning_when_no_keyword_matches(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.db", encoder=ConceptEncoder())
    store.record(run_id="r1", task="Total the invoices of March", outcome="answered", answer="1,200 EUR")
    store.record(run_id="r2", task="Resize the photos for the blog", outcome="answered")
    assert store.vector_search
    assert MemoryStore(":memory:").search("how much was billed") == []  # keywords alone miss it
    assert [m.run_id for m in store.search("how much was billed", limit=1)] == ["r1"]
    assert [m.run_id for m in store.search("shrink every picture", limit=1)] == ["r2"]
    # Unrelated queries find nothing: a run found only by meaning must be similar enough.
    assert store.search("weather in Oslo") == []


def test_hybrid_ranking_puts_a_run_found_both_ways_first() -> None:
    by_keyword, hybrid = MemoryStore(":memory:"), MemoryStore(":memory:", encoder=ConceptEncoder())
    for run_id, task in (
        ("keyword", "Sort the March reports"),
        ("meaning", "Pay the supplier bills"),
        ("both", "Total the invoices of March"),
        ("neither", "Wash the car"),
    ):
        by_keyword.record(run_id=run_id, task=task, outcome="answered")
        hybrid.record(run_id=run_id, task=task, outcome="answered")
    assert [m.run_id for m in by_keyword.search("March payments", limit=4)] == ["keyword", "both"]
    # "both" is first in neither ranking but in both; the tie of the other two goes to meaning.
    assert [m.run_id for m in hybrid.search("March payments", limit=4)] == ["both", "meaning", "keyword"]


def test_vectors_live_in_the_same_file_and_missing_ones_are_computed_once(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    plain = MemoryStore(path)  # recorded without an encoder: no vectors
    plain.record(run_id="old", task="Sum the bills of 2023", outcome="answered")
    plain.close()
    encoder = ConceptEncoder()
    store = MemoryStore(path, encoder=encoder)
    assert [m.run_id for m in store.search("invoice totals")] == ["old"]
    store.record(run_id="new", task="Crop the photos", outcome="answered")
    calls = encoder.calls
    assert [m.run_id for m in store.search("pictures", limit=1)] == ["new"]
    assert encoder.calls == calls + 1  # only the query: the index is kept in memory
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*), MIN(model) FROM run_vectors").fetchone() == (2, "concepts")


def test_a_failing_encoder_loses_no_run_and_search_goes_on_by_keyword(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        name = "broken"

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("weights unreadable")

    store = MemoryStore(":memory:", encoder=Broken())
    with caplog.at_level(logging.WARNING, logger="pymanus.context"):
        store.record(run_id="r", task="Plot the sales", outcome="answered")
    assert "searching by keyword only" in caplog.text and not store.vector_search
    assert store.search("sales")[0].run_id == "r"


def test_without_the_extra_memory_says_so_once_and_searches_by_keyword(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(embeddings.importlib.util, "find_spec", lambda name: None if name == "numpy" else real(name))
    with caplog.at_level(logging.WARNING, logger="pymanus.context"):
        store = open_memory(":memory:")
        store.record(run_id="r", task="Plot the sales", outcome="answered")
        assert store.search("sales")[0].run_id == "r"
    [line] = caplog.records
    assert "keyword only" in line.getMessage() and "pymanus[memory]" in line.getMessage()
    assert "numpy not installed" in line.getMessage() and not store.vector_search


def test_vectors_can_be_turned_off(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pymanus.context"):
        assert not open_memory(":memory:", vectors=False).vector_search
    assert caplog.records == []


def test_a_corrupt_database_is_a_clear_error_and_stays_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    garbage = b"these are not the droids\x00\xff" * 100
    path.write_bytes(garbage)
    with pytest.raises(ConfigError, match=r"memory database .*memory\.db: file is not a database; the file was left"):
        MemoryStore(path)
    assert path.read_bytes() == garbage


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, distance REAL)")
        db.execute("INSERT INTO runs (distance) VALUES (42.195)")
    db.close()
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="not PyManus's"):
        MemoryStore(path)
    assert path.read_bytes() == before


def test_the_preset_reports_a_corrupt_memory_file_as_a_config_error(tmp_path: Path) -> None:
    from pymanus.agent.manus import build_manus_agent
    from pymanus.config import Settings
    from pymanus.models.testing import ScriptedModel

    path = tmp_path / "memory.db"
    path.write_bytes(b"\x00" * 4096 + b"junk")
    settings = Settings.model_validate(
        {
            "agent": {"workspace": str(tmp_path / "ws")},
            "sandbox": {"backend": "none"},
            "context": {"memory": str(path), "memory_vectors": False},
        }
    )
    with pytest.raises(ConfigError, match="memory database"):
        build_manus_agent(settings, model=ScriptedModel(["done"]))
    assert path.read_bytes() == b"\x00" * 4096 + b"junk"


def test_a_configured_embedding_model_that_is_not_one_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(ConfigError, match=r"embedding model .*: missing model\.safetensors, tokenizer\.json"):
        open_memory(":memory:", embedding_model=str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match="only BERT models"):
        open_memory(":memory:", embedding_model=str(tmp_path))
    (tmp_path / "config.json").write_text('{"model_type": "bert", "hidden_size": 384}')
    with pytest.raises(ConfigError, match="unreadable config: KeyError"):
        open_memory(":memory:", embedding_model=str(tmp_path))

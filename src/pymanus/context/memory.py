"""Long-term memory (opt-in): what past runs were asked, how they ended, and what they answered.

A :class:`MemoryStore` is one SQLite file. Search is hybrid:

* by keyword: SQLite's FTS5 full-text index ranked by BM25 when the ``sqlite3`` module has
  it (it usually does), else every query word must appear (``LIKE``);
* by meaning, with an encoder (:mod:`pymanus.context.embeddings`, the ``[memory]`` extra):
  each run's task and notes as a unit vector, kept in the same file, compared by cosine
  with the query's (runs recorded without one get theirs on the first vector search);

and the two rankings are merged by reciprocal-rank fusion (a run scores the sum of
``1 / (60 + rank)`` over the rankings that hold it; ties go to the vector ranking): a run
both find comes first, a paraphrase that shares no keyword with the task is still found,
and an identifier (a ticket number, a file name) that only keywords match is found too. :func:`open_memory` picks
the encoder; without the extra it says so in one log line and search is by keyword only.

:class:`LongTermMemory` brings it to an agent (``memory.install(agent)``):

* the briefing of each run (the first message) lists the memories most relevant to its task;
* a ``search_memory`` tool lets the model look further;
* each run is recorded when it ends, through :meth:`Agent.on_run_end
  <pymanus.agent.agent.Agent.on_run_end>`: an extension cannot see a run's end, and
  recording from the answer check would miss every run that ends without an answer. The
  hook is given only the run id, so the extension keeps, per run, the task (from the
  briefing) and the last answer proposed (from its answer check, which sees every final
  answer before it is accepted). A run is recorded ``answered`` when an answer was
  proposed last, else ``unfinished``: an answer another check sent back, after which the
  run failed, is recorded as answered — the record says what was answered, not that it
  was right.

``[context] memory = "path/to/memory.db"`` turns it on in the Manus preset.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pymanus.agent.extensions import Extension
from pymanus.context.ranking import STOP_WORDS, fuse
from pymanus.errors import ConfigError
from pymanus.tools.tool import Tool, ToolContext, tool

if TYPE_CHECKING:
    import numpy as np

    from pymanus.agent.agent import Agent
    from pymanus.context.embeddings import Encoder

logger = logging.getLogger("pymanus.context")

_WORD = re.compile(r"\w+", re.UNICODE)
_COLUMNS = ("run_id", "task", "outcome", "answer", "notes", "created")
_Index = tuple[list[int], "np.ndarray"]
"""The runs' ids and their vectors, row for row."""


@dataclass(frozen=True)
class Memory:
    """One past run as remembered."""

    run_id: str
    task: str
    outcome: str
    answer: str
    notes: str
    created: float

    def render(self, chars: int = 400) -> str:
        """A few lines for the model."""
        when = time.strftime("%Y-%m-%d", time.localtime(self.created))
        lines = [f"- [{when}, {self.outcome}] task: {self.task[:chars]}"]
        if self.answer:
            lines.append(f"  answer: {self.answer[:chars]}")
        if self.notes:
            lines.append(f"  notes: {self.notes[:chars]}")
        return "\n".join(lines)


class MemoryStore:
    """Past runs in a SQLite file, searchable by keyword and, with an encoder, by meaning.

    Args:
        path: the database file (created with its folder), or ``":memory:"``.
        encoder: makes the vectors of runs and queries (see :func:`open_memory`); without
            one, search is by keyword only.
        min_similarity: a run found only by meaning is returned when its cosine with the
            query is at least this (all-MiniLM-L6-v2 puts unrelated tasks below about 0.3).

    Raises :class:`~pymanus.errors.ConfigError` when the file is not a memory database
    (corrupt, or another program's); the file is left as it is.
    """

    def __init__(self, path: str | Path, *, encoder: Encoder | None = None, min_similarity: float = 0.3) -> None:
        in_memory = str(path) == ":memory:"
        self.path = ":memory:" if in_memory else str(Path(path).expanduser())
        self.encoder = encoder
        self.min_similarity = min_similarity
        # Sync tools run in worker threads: one connection shared under a lock. The vectors
        # held in memory have a lock of their own, taken first, so a search that reads them
        # and a run recorded meanwhile cannot leave that run out.
        self._lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._vectors: _Index | None = None
        try:
            if not in_memory:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"memory database {self.path}: cannot be opened: {exc}") from None
        try:
            self.full_text = self._create_tables()
        except (sqlite3.Error, ConfigError) as exc:
            self._db.close()
            raise ConfigError(
                f"memory database {self.path}: {exc}; the file was left as it is (move it away to start a new memory)"
            ) from None

    def _create_tables(self) -> bool:
        db = self._db
        db.execute(
            "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, run_id TEXT, task TEXT, outcome TEXT, "
            "answer TEXT, notes TEXT, created REAL)"
        )
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        if not set(_COLUMNS) <= columns:
            raise ConfigError("its table 'runs' is not PyManus's (another program's database?)")
        db.execute("CREATE TABLE IF NOT EXISTS run_vectors (run INTEGER PRIMARY KEY, model TEXT, vector BLOB)")
        full_text = _has_fts5(db)
        if full_text:
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS runs_text USING fts5(task, answer, notes, "
                "content='runs', content_rowid='id')"
            )
        db.commit()
        return full_text

    @property
    def vector_search(self) -> bool:
        """Whether search is by meaning too."""
        return self.encoder is not None

    def record(self, *, run_id: str, task: str, outcome: str, answer: str = "", notes: str = "") -> None:
        """Remember one run (its vector too, when there is an encoder)."""
        vectors = self._encode([_vector_text(task, notes)])
        with self._index_lock, self._lock, self._db:
            cursor = self._db.execute(
                "INSERT INTO runs (run_id, task, outcome, answer, notes, created) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, task, outcome, answer, notes, time.time()),
            )
            row = int(cursor.lastrowid or 0)
            if self.full_text:
                self._db.execute(
                    "INSERT INTO runs_text (rowid, task, answer, notes) VALUES (?, ?, ?, ?)", (row, task, answer, notes)
                )
            if vectors is not None and self.encoder is not None:
                self._store_vectors(self.encoder.name, [row], vectors)
                if self._vectors is not None:
                    self._vectors = _appended(self._vectors, [row], vectors)

    def search(self, query: str, limit: int = 3) -> list[Memory]:
        """The runs that best match ``query`` by keyword or meaning (best first; none when nothing matches)."""
        depth = max(4 * limit, 20)
        rankings = [self._keyword_search(query, depth)]
        if self.encoder is not None and query.strip():
            # First, so that ties go to meaning: a shared common word is weaker evidence than a close meaning.
            rankings.insert(0, self._vector_search(query, depth))
        return self._memories(fuse(rankings)[:limit])

    def _keyword_search(self, query: str, limit: int) -> list[int]:
        # Stop words match nearly every run: their hits would crowd the ranking of the fusion.
        words = (word.lower() for word in _WORD.findall(query))
        terms = list(dict.fromkeys(word for word in words if len(word) > 2 and word not in STOP_WORDS))[:32]
        if not terms:
            return []
        if self.full_text:
            match = " OR ".join('"' + term.replace('"', "") + '"' for term in terms)
            sql = "SELECT rowid FROM runs_text WHERE runs_text MATCH ? ORDER BY bm25(runs_text) LIMIT ?"
            args: tuple[object, ...] = (match, limit)
        else:  # pragma: no cover - sqlite3 builds without FTS5 are rare
            where = " AND ".join("(task || ' ' || answer || ' ' || notes) LIKE ?" for _ in terms)
            sql = f"SELECT id FROM runs WHERE {where} ORDER BY created DESC LIMIT ?"
            args = (*(f"%{term}%" for term in terms), limit)
        with self._lock:
            return [row[0] for row in self._db.execute(sql, args)]

    def _vector_search(self, query: str, limit: int) -> list[int]:
        import numpy as np

        found = self._encode([query])
        index = self._index(found.shape[1]) if found is not None else None
        if index is None or found is None or not index[0]:
            return []
        ids, matrix = index
        similarity = matrix @ found[0]
        best = np.argsort(-similarity, kind="stable")[:limit]
        return [ids[i] for i in best if similarity[i] >= self.min_similarity]

    def _index(self, width: int) -> _Index | None:
        """Every run's vector of ``width`` numbers, read once (runs without one get theirs now)."""
        import numpy as np

        with self._index_lock:
            if self._vectors is not None or self.encoder is None:
                return self._vectors
            name = self.encoder.name
            with self._lock:
                stored = self._db.execute("SELECT run, vector FROM run_vectors WHERE model = ?", (name,)).fetchall()
                runs = self._db.execute("SELECT id, task, notes FROM runs ORDER BY id").fetchall()
            have = {run: np.frombuffer(blob, dtype="<f4") for run, blob in stored if len(blob) == 4 * width}
            missing = [(run, task, notes) for run, task, notes in runs if run not in have]
            if missing:
                logger.info("memory: computing the vectors of %d earlier runs", len(missing))
                vectors = self._encode([_vector_text(task, notes) for _, task, notes in missing])
                if vectors is None:
                    return None
                with self._lock, self._db:
                    self._store_vectors(name, [run for run, _, _ in missing], vectors)
                have.update(zip((run for run, _, _ in missing), vectors, strict=True))
            ids = [run for run, _, _ in runs]
            rows = [have[run] for run in ids]
            matrix = np.vstack(rows).astype(np.float32) if rows else np.zeros((0, width), dtype=np.float32)
            self._vectors = (ids, matrix)
            return self._vectors

    def _store_vectors(self, name: str, runs: Sequence[int], vectors: np.ndarray) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO run_vectors (run, model, vector) VALUES (?, ?, ?)",
            [(run, name, vector.astype("<f4").tobytes()) for run, vector in zip(runs, vectors, strict=True)],
        )

    def _encode(self, texts: list[str]) -> np.ndarray | None:
        """The texts' vectors; ``None`` without an encoder, or when it fails (search goes on by keyword)."""
        encoder = self.encoder
        if encoder is None:
            return None
        try:
            return encoder.encode(texts)
        except Exception as exc:  # a broken model must not cost the run its memory
            logger.warning("memory: the encoder failed (%s); searching by keyword only from now on", exc)
            self.encoder = None
            return None

    def _memories(self, ids: list[int]) -> list[Memory]:
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        with self._lock:
            rows = self._db.execute(f"SELECT id, {', '.join(_COLUMNS)} FROM runs WHERE id IN ({marks})", ids)
            found = {row[0]: Memory(*row[1:]) for row in rows}
        return [found[i] for i in ids if i in found]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._db.close()


def open_memory(path: str | Path, *, vectors: bool = True, embedding_model: str = "") -> MemoryStore:
    """A :class:`MemoryStore` with the encoder the settings ask for (``[context]`` memory keys).

    ``vectors``: search by meaning too, with ``embedding_model`` (a model directory) or the
    packaged all-MiniLM-L6-v2. When the packaged model or the ``[memory]`` extra is not
    installed, one warning says so and the store searches by keyword only; a configured
    ``embedding_model`` that cannot be used is a :class:`~pymanus.errors.ConfigError`.
    """
    encoder: Encoder | None = None
    if vectors:
        from pymanus.context.embeddings import INSTALL_COMMAND, EncoderUnavailable, SentenceEncoder

        try:
            encoder = SentenceEncoder(embedding_model or None)
        except EncoderUnavailable as exc:
            logger.warning(
                "memory: searching by keyword only: vector search needs the [memory] extra and its model (%s); "
                "install with: %s",
                exc,
                INSTALL_COMMAND,
            )
    return MemoryStore(path, encoder=encoder)


def _vector_text(task: str, notes: str) -> str:
    # The task says what a run was about; an answer would drown it in its details.
    return f"{task}\n{notes}" if notes else task


def _appended(index: _Index, runs: list[int], vectors: np.ndarray) -> _Index:
    import numpy as np

    ids, matrix = index
    return [*ids, *runs], np.vstack([matrix, vectors]).astype(np.float32)


def _has_fts5(db: sqlite3.Connection) -> bool:
    try:
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp._fts5_probe USING fts5(x)")
        db.execute("DROP TABLE temp._fts5_probe")
    except sqlite3.OperationalError:
        return False
    return True


class LongTermMemory(Extension):
    """Brings a :class:`MemoryStore` to an agent: memories in the briefing, ``search_memory``, runs recorded.

    Use :meth:`install` (it adds the tool, the extension and the end-of-run hook).
    """

    name = "memory"

    def __init__(self, store: MemoryStore, *, limit: int = 3) -> None:
        self.store = store
        self.limit = limit
        self._runs: dict[str, tuple[str, str | None]] = {}
        self.tool = self._search_tool()

    def install(self, agent: Agent) -> None:
        """Add the tool, this extension and the recording hook to ``agent``."""
        agent.toolset.add(self.tool)
        agent.extensions.append(self)
        agent.on_run_end(self.record)

    async def briefing(self, task: str, context: ToolContext) -> str | None:
        self._runs[context.run_id] = (task, None)
        # In a thread: the first vector search reads the encoder's weights.
        found = await asyncio.to_thread(self.store.search, task, self.limit)
        if not found:
            return None
        listed = "\n".join(memory.render() for memory in found)
        return f"Earlier runs on related tasks (from memory; `search_memory` finds more):\n{listed}"

    def check_answer(self, task: str, answer: str, context: ToolContext) -> None:
        self._runs[context.run_id] = (task, answer)
        return None

    async def record(self, run_id: str) -> None:
        """Record the run ``run_id`` (the end-of-run hook)."""
        seen = self._runs.pop(run_id, None)
        if seen is None:
            return
        task, answer = seen
        outcome = "answered" if answer is not None else "unfinished"
        await asyncio.to_thread(self.store.record, run_id=run_id, task=task, outcome=outcome, answer=answer or "")

    def _search_tool(self) -> Tool:
        store, limit = self.store, self.limit

        @tool
        def search_memory(query: str) -> str:
            """Search the memory of earlier runs (their tasks, answers and notes).

            Args:
                query: what to look for: keywords, or a few words saying what the earlier task was about
            """
            found = store.search(query, limit * 2)
            if not found:
                return "No earlier run matches."
            return "\n".join(memory.render() for memory in found)

        return search_memory

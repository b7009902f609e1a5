"""Long-term memory (opt-in): what past runs were asked, how they ended, and what they answered.

A :class:`MemoryStore` is one SQLite file. Search is by keyword: SQLite's FTS5 full-text
index ranked by BM25 when the ``sqlite3`` module has it (it usually does), else every
query word must appear (``LIKE``). Vector search is not offered: no embedding package with
its own weights is a dependency of PyManus.

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

import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pymanus.agent.extensions import Extension
from pymanus.tools.tool import Tool, ToolContext, tool

if TYPE_CHECKING:
    from pymanus.agent.agent import Agent

_WORD = re.compile(r"\w+", re.UNICODE)


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
    """Past runs in a SQLite file, searchable by keyword.

    Args:
        path: the database file (created with its folder), or ``":memory:"``.
    """

    def __init__(self, path: str | Path) -> None:
        if str(path) != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.path = str(Path(path).expanduser()) if str(path) != ":memory:" else ":memory:"
        # Sync tools run in worker threads: one connection shared under a lock.
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, run_id TEXT, task TEXT, outcome TEXT, "
            "answer TEXT, notes TEXT, created REAL)"
        )
        self.full_text = _has_fts5(self._db)
        if self.full_text:
            self._db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS runs_text USING fts5(task, answer, notes, "
                "content='runs', content_rowid='id')"
            )
        self._db.commit()

    def record(self, *, run_id: str, task: str, outcome: str, answer: str = "", notes: str = "") -> None:
        """Remember one run."""
        with self._lock, self._db:
            cursor = self._db.execute(
                "INSERT INTO runs (run_id, task, outcome, answer, notes, created) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, task, outcome, answer, notes, time.time()),
            )
            if self.full_text:
                self._db.execute(
                    "INSERT INTO runs_text (rowid, task, answer, notes) VALUES (?, ?, ?, ?)",
                    (cursor.lastrowid, task, answer, notes),
                )

    def search(self, query: str, limit: int = 3) -> list[Memory]:
        """The runs that best match ``query`` (best first; none when no word matches)."""
        terms = list(dict.fromkeys(word.lower() for word in _WORD.findall(query) if len(word) > 2))[:32]
        if not terms:
            return []
        columns = "runs.run_id, runs.task, runs.outcome, runs.answer, runs.notes, runs.created"
        if self.full_text:
            match = " OR ".join('"' + term.replace('"', "") + '"' for term in terms)
            with self._lock:
                rows = self._db.execute(
                    f"SELECT {columns} FROM runs_text JOIN runs ON runs.id = runs_text.rowid "
                    "WHERE runs_text MATCH ? ORDER BY bm25(runs_text) LIMIT ?",
                    (match, limit),
                ).fetchall()
        else:  # pragma: no cover - sqlite3 builds without FTS5 are rare
            where = " AND ".join("(task || ' ' || answer || ' ' || notes) LIKE ?" for _ in terms)
            with self._lock:
                rows = self._db.execute(
                    f"SELECT {columns} FROM runs WHERE {where} ORDER BY created DESC LIMIT ?",
                    (*(f"%{term}%" for term in terms), limit),
                ).fetchall()
        return [Memory(*row) for row in rows]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._db.close()


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

    def briefing(self, task: str, context: ToolContext) -> str | None:
        self._runs[context.run_id] = (task, None)
        found = self.store.search(task, self.limit)
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
        self.store.record(
            run_id=run_id, task=task, outcome="answered" if answer is not None else "unfinished", answer=answer or ""
        )

    def _search_tool(self) -> Tool:
        store, limit = self.store, self.limit

        @tool
        def search_memory(query: str) -> str:
            """Search the memory of earlier runs (their tasks, answers and notes) by keywords.

            Args:
                query: words to look for
            """
            found = store.search(query, limit * 2)
            if not found:
                return "No earlier run matches."
            return "\n".join(memory.render() for memory in found)

        return search_memory

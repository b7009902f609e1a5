"""Search backends for ``web_search``: DDGS, Tavily, SearXNG, and offline local documents.

A backend answers a query with :class:`SearchHit` s, or raises: any exception (or an
empty answer) makes ``web_search`` fall back to the next backend.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import aiohttp
import html2text
from pydantic import BaseModel

from pymanus.errors import PyManusError


class SearchHit(BaseModel):
    """One search result."""

    title: str
    url: str
    """A web address, or a file path for local documents."""
    snippet: str = ""


class BackendUnavailable(PyManusError):
    """The backend cannot run here (package missing, no key configured)."""


@runtime_checkable
class SearchBackend(Protocol):
    """Something that answers a search query."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Up to ``max_results`` hits for ``query``, best first."""
        ...


class DdgsBackend:
    """Web search through the ``ddgs`` metasearch package (the ``[search]`` extra)."""

    name = "ddgs"

    def __init__(self, *, timeout: int = 10, region: str = "wt-wt") -> None:
        self.timeout = timeout
        self.region = region

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Search in a worker thread: ``ddgs`` is synchronous."""
        try:
            ddgs = importlib.import_module("ddgs")
        except ImportError:
            raise BackendUnavailable("the ddgs package is not installed (pip install 'pymanus[search]')") from None

        def run() -> list[dict[str, Any]]:
            client = ddgs.DDGS(timeout=self.timeout)
            return list(client.text(query, region=self.region, max_results=max_results))

        rows = await asyncio.to_thread(run)
        return [
            SearchHit(title=str(r.get("title", "")), url=str(r.get("href", "")), snippet=str(r.get("body", "")))
            for r in rows[:max_results]
        ]


class TavilyBackend:
    """Web search through the Tavily API (``POST {base_url}/search``)."""

    name = "tavily"

    def __init__(self, api_key: str, *, base_url: str = "https://api.tavily.com", timeout: float = 15) -> None:
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Ask Tavily; a missing or rejected key is reported as such."""
        if not self.api_key:
            raise BackendUnavailable("no Tavily API key (set TAVILY_API_KEY)")
        payload = {"query": query, "max_results": max_results, "search_depth": "basic"}
        headers = {"Authorization": f"Bearer {self.api_key}"}
        data = await _request_json(
            "POST",
            f"{self.base_url}/search",
            aiohttp.ClientTimeout(total=self.timeout),
            json_body=payload,
            headers=headers,
        )
        return [
            SearchHit(title=str(r.get("title", "")), url=str(r.get("url", "")), snippet=str(r.get("content", "")))
            for r in _results(data)[:max_results]
        ]


class SearxngBackend:
    """Web search through a SearXNG instance (``GET {url}/search?format=json``).

    The instance must allow the JSON format (``search.formats`` in its settings).
    """

    name = "searxng"

    def __init__(self, url: str, *, timeout: float = 15) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Ask the SearXNG instance for JSON results."""
        params = {"q": query, "format": "json"}
        data = await _request_json(
            "GET", f"{self.url}/search", aiohttp.ClientTimeout(total=self.timeout), params=params
        )
        return [
            SearchHit(title=str(r.get("title", "")), url=str(r.get("url", "")), snippet=str(r.get("content", "")))
            for r in _results(data)[:max_results]
        ]


async def _request_json(
    method: str,
    url: str,
    limits: aiohttp.ClientTimeout,
    *,
    json_body: Any = None,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    async with (
        aiohttp.ClientSession(timeout=limits) as session,
        session.request(method, url, json=json_body, params=params, headers=headers) as response,
    ):
        text = await response.text(errors="replace")
        if response.status in (401, 403):
            raise RuntimeError(f"HTTP {response.status}: the service rejected the request (API key or access)")
        if response.status >= 400:
            raise RuntimeError(f"HTTP {response.status}: {text.strip()[:200]}")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise RuntimeError(f"the answer is not JSON: {text.strip()[:100]!r}") from None


def _results(data: Any) -> list[dict[str, Any]]:
    rows = data.get("results") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise RuntimeError("the answer has no 'results' list")
    return [r for r in rows if isinstance(r, dict)]


# -- offline: BM25 over a folder ----------------------------------------------------------
LOCAL_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".json", ".csv"})
# CJK characters are words of their own; other scripts split on non-word characters.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (each CJK character is one token)."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class _Doc:
    path: Path
    text: str
    terms: Counter[str]
    length: int


class LocalDocsBackend:
    """Offline search over a folder of documents, ranked with Okapi BM25.

    Reads ``.md``, ``.txt``, ``.rst``, ``.html``, ``.json`` and ``.csv`` files (hidden
    folders and files over ``max_file_bytes`` are skipped). The index is rebuilt when a
    file is added, removed or changed.
    """

    name = "local_docs"
    k1 = 1.5
    b = 0.75

    def __init__(self, folder: str | Path, *, max_file_bytes: int = 1_000_000, max_files: int = 10_000) -> None:
        self.folder = Path(folder)
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._docs: list[_Doc] = []
        self._df: Counter[str] = Counter()

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Rank the folder's documents for ``query``; hits carry the path and a snippet."""
        return await asyncio.to_thread(self._search, query, max_results)

    def _search(self, query: str, max_results: int) -> list[SearchHit]:
        if not self.folder.is_dir():
            raise BackendUnavailable(f"the local docs folder {self.folder} does not exist")
        self._refresh()
        terms = list(dict.fromkeys(tokenize(query)))
        if not self._docs or not terms:
            return []
        count = len(self._docs)
        average = sum(d.length for d in self._docs) / count or 1.0
        scored: list[tuple[float, _Doc]] = []
        for doc in self._docs:
            score = 0.0
            for term in terms:
                tf = doc.terms.get(term, 0)
                if tf:
                    idf = math.log((count - self._df[term] + 0.5) / (self._df[term] + 0.5) + 1)
                    score += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * doc.length / average))
            if score > 0:
                scored.append((score, doc))
        scored.sort(key=lambda item: -item[0])
        return [
            SearchHit(title=_doc_title(doc), url=str(doc.path), snippet=_snippet(doc.text, terms))
            for _, doc in scored[:max_results]
        ]

    def _refresh(self) -> None:
        files = self._files()
        signature = tuple((str(path), mtime, size) for path, mtime, size in files)
        if signature == self._signature:
            return
        docs = []
        for path, _, _ in files:
            try:
                text = _read_doc(path)
            except OSError:  # removed or unreadable since it was listed
                continue
            terms = Counter(tokenize(text))
            docs.append(_Doc(path=path, text=text, terms=terms, length=sum(terms.values())))
        self._docs = docs
        self._df = Counter(term for doc in docs for term in doc.terms)
        self._signature = signature

    def _files(self) -> list[tuple[Path, int, int]]:
        """The documents to index, with their modification time and size."""
        found: list[tuple[Path, int, int]] = []
        for path in sorted(self.folder.rglob("*")):
            relative = path.relative_to(self.folder).parts
            if any(part.startswith(".") for part in relative) or path.suffix.lower() not in LOCAL_SUFFIXES:
                continue
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.is_file() and stat.st_size <= self.max_file_bytes:
                found.append((path, stat.st_mtime_ns, stat.st_size))
                if len(found) >= self.max_files:
                    break
        return found


def _read_doc(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        converter = html2text.HTML2Text()
        converter.body_width = 0
        converter.ignore_images = True
        text = converter.handle(text)
    return text


def _doc_title(doc: _Doc) -> str:
    for line in doc.text.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped[:100]
    return doc.path.name


def _snippet(text: str, terms: list[str], width: int = 300) -> str:
    """The paragraph (or line) with the most query terms, cut to ``width`` characters."""
    wanted = set(terms)
    best, best_score = "", -1
    for block in re.split(r"\n\s*\n|\n(?=#)", text):
        score = sum(1 for token in set(tokenize(block)) if token in wanted)
        if score > best_score and block.strip():
            best, best_score = block, score
    flat = " ".join(best.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"

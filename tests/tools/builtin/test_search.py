"""web_search: the backends (against local servers and folders) and the fallback chain."""

from __future__ import annotations

import asyncio
import json
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from pymanus.messages import ToolCall
from pymanus.tools.builtin.search import (
    BackendUnavailable,
    DdgsBackend,
    LocalDocsBackend,
    SearchConfig,
    SearchHit,
    SearxngBackend,
    TavilyBackend,
    build_search_backends,
    web_search_tool,
)
from pymanus.tools.builtin.search_backends import tokenize
from pymanus.tools.tool import ToolContext, ToolResult
from pymanus.tools.toolset import Toolset

CONTEXT = ToolContext(run_id="test")


class Broken:
    """A backend that always raises."""

    name = "broken"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        raise RuntimeError("boom")


class Empty:
    """A backend that never finds anything."""

    name = "empty"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        return []


class Slow:
    """A backend that never answers in time."""

    name = "slow"

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        await asyncio.sleep(10)
        return []


class Fixed:
    """A backend with canned hits."""

    name = "fixed"

    def __init__(self, count: int = 3) -> None:
        self.count = count
        self.calls: list[tuple[str, int]] = []

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        self.calls.append((query, max_results))
        return [
            SearchHit(title=f"Hit {i}", url=f"https://example.com/{i}", snippet="a\n  snippet")
            for i in range(self.count)
        ]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    (folder / "guides").mkdir(parents=True)
    (folder / "cats.md").write_text("# Cats\n\nCats are small furry pets. They sleep a lot and chase mice.\n")
    (folder / "guides" / "asyncio.txt").write_text(
        "Python asyncio guide\n\nThe event loop runs coroutines. An asyncio event loop schedules tasks.\n\n"
        "Use asyncio.run to start the event loop.\n"
    )
    (folder / "garden.html").write_text(
        "<html><body><h1>Gardening</h1><p>Tomatoes need sun and water.</p><script>loop()</script></body></html>"
    )
    (folder / "data.json").write_text(json.dumps({"city": "Lisbon", "population": 545000}))
    (folder / "table.csv").write_text("fruit,colour\nbanana,yellow\n")
    (folder / "loops.md").write_text("# Loops\n\nA for loop repeats. Python has for and while loops.\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "secret.md").write_text("asyncio event loop secret")
    (folder / "image.png").write_bytes(b"\x89PNG asyncio")
    return folder


async def run(tool_backends: list[Any], query: str, **kwargs: Any) -> ToolResult:
    tool = web_search_tool(tool_backends, **kwargs)
    return await tool.run({"query": query, "max_results": 5}, CONTEXT)


# -- local documents ---------------------------------------------------------------------
async def test_local_docs_ranks_the_right_document_first(docs: Path) -> None:
    hits = await LocalDocsBackend(docs).search("asyncio event loop", 5)
    assert hits[0].url == str(docs / "guides" / "asyncio.txt")
    assert hits[0].title == "Python asyncio guide"
    assert "event loop" in hits[0].snippet
    assert all(".hidden" not in hit.url and not hit.url.endswith(".png") for hit in hits)


async def test_local_docs_reads_html_json_and_csv(docs: Path) -> None:
    backend = LocalDocsBackend(docs)
    garden = await backend.search("tomatoes sun", 3)
    assert garden[0].url.endswith("garden.html") and garden[0].title == "Gardening"
    assert "loop()" not in garden[0].snippet
    assert (await backend.search("Lisbon", 3))[0].url.endswith("data.json")
    assert (await backend.search("banana", 3))[0].url.endswith("table.csv")
    assert await backend.search("zebra", 3) == []


async def test_local_docs_reindexes_changed_folder(docs: Path) -> None:
    backend = LocalDocsBackend(docs)
    assert await backend.search("zebra", 3) == []
    (docs / "zoo.md").write_text("# Zoo\n\nA zebra has stripes.")
    hits = await backend.search("zebra", 3)
    assert [hit.url for hit in hits] == [str(docs / "zoo.md")]


async def test_local_docs_missing_folder_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="does not exist"):
        await LocalDocsBackend(tmp_path / "nope").search("x", 3)


def test_tokenize_splits_words_and_cjk() -> None:
    assert tokenize("Hello, World_2 asyncio.run") == ["hello", "world", "2", "asyncio", "run"]
    assert tokenize("事件循环 loop") == ["事", "件", "循", "环", "loop"]


# -- the fallback chain ------------------------------------------------------------------
async def test_failing_backend_falls_back_to_local_docs(docs: Path) -> None:
    result = await run([Broken(), LocalDocsBackend(docs)], "asyncio event loop")
    assert not result.is_error
    assert result.text.startswith('Results for "asyncio event loop" (from local_docs):')
    assert f"1. Python asyncio guide\n   {docs / 'guides' / 'asyncio.txt'}" in result.text
    assert "(tried first: broken: RuntimeError: boom)" in result.text


async def test_empty_and_slow_backends_fall_back(docs: Path) -> None:
    result = await run([Empty(), Slow(), LocalDocsBackend(docs)], "cats mice", timeout=0.2)
    assert "(from local_docs)" in result.text
    assert "empty: no results; slow: timed out after 0.2 s" in result.text


async def test_first_working_backend_answers_and_others_are_not_called() -> None:
    first, second = Fixed(), Fixed()
    result = await run([first, second], "  many   spaces  ")
    assert first.calls == [("many spaces", 5)] and second.calls == []
    assert "(from fixed)" in result.text and "tried first" not in result.text
    assert "   a snippet" in result.text


async def test_all_backends_failing_lists_each_failure(tmp_path: Path) -> None:
    result = await run([Broken(), Empty(), LocalDocsBackend(tmp_path / "missing")], "anything")
    assert result.is_error
    assert result.text.splitlines() == [
        'Every search backend failed for "anything":',
        "- broken: RuntimeError: boom",
        "- empty: no results",
        f"- local_docs: unavailable (the local docs folder {tmp_path / 'missing'} does not exist)",
    ]


async def test_no_backends_and_empty_query_are_clear_errors() -> None:
    none = await run([], "x")
    assert none.is_error and "No search backend is configured" in none.text
    blank = await run([Fixed()], "   ")
    assert blank.is_error and "query is empty" in blank.text


async def test_max_results_is_bounded() -> None:
    toolset = Toolset([web_search_tool([Fixed(count=30)])])
    bad = await toolset.run_call(
        ToolCall(id="1", name="web_search", arguments='{"query": "x", "max_results": 50}'), CONTEXT
    )
    assert bad.failure == "bad_arguments" and "max_results" in bad.result.text
    ok = await toolset.run_call(
        ToolCall(id="2", name="web_search", arguments='{"query": "x", "max_results": 2}'), CONTEXT
    )
    assert "2. Hit 1" in ok.result.text and "3." not in ok.result.text


# -- HTTP backends against local servers -------------------------------------------------
async def serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


@pytest.fixture
async def tavily() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    async def search(request: web.Request) -> web.Response:
        body = await request.json()
        received.append({"auth": request.headers.get("Authorization"), "body": body})
        if request.headers.get("Authorization") != "Bearer tvly-good":
            return web.json_response({"detail": {"error": "Unauthorized"}}, status=401)
        results = [
            {"title": f"T{i}", "url": f"https://t.example/{i}", "content": f"about {body['query']}"} for i in range(9)
        ]
        return web.json_response({"query": body["query"], "results": results})

    app = web.Application()
    app.router.add_post("/search", search)
    async for base in serve(app):
        yield base, received


async def test_tavily_backend_against_local_server(tavily: tuple[str, list[dict[str, Any]]]) -> None:
    base, received = tavily
    hits = await TavilyBackend("tvly-good", base_url=base + "/").search("rust async", 3)
    assert [h.title for h in hits] == ["T0", "T1", "T2"]
    assert hits[0].url == "https://t.example/0" and hits[0].snippet == "about rust async"
    assert received[0]["body"]["query"] == "rust async" and received[0]["body"]["max_results"] == 3
    assert received[0]["auth"] == "Bearer tvly-good"


async def test_tavily_bad_key_and_missing_key(tavily: tuple[str, list[dict[str, Any]]]) -> None:
    base, _ = tavily
    result = await run([TavilyBackend("tvly-bad", base_url=base), TavilyBackend("", base_url=base)], "q")
    assert result.is_error
    assert "- tavily: RuntimeError: HTTP 401: the service rejected the request (API key or access)" in result.text
    assert "- tavily: unavailable (no Tavily API key (set TAVILY_API_KEY))" in result.text


@pytest.fixture
async def searxng() -> AsyncIterator[str]:
    async def search(request: web.Request) -> web.Response:
        if request.query.get("format") != "json":
            return web.Response(status=403, text="Forbidden")
        query = request.query["q"]
        if query == "not json":
            return web.Response(text="<html>oops</html>", content_type="text/html")
        if query == "nothing":
            return web.json_response({"query": query, "results": []})
        results = [{"title": "SearX hit", "url": "https://s.example/", "content": f"on {query}", "engine": "x"}]
        return web.json_response({"query": query, "results": results})

    app = web.Application()
    app.router.add_get("/search", search)
    async for base in serve(app):
        yield base


async def test_searxng_backend_against_local_server(searxng: str) -> None:
    hits = await SearxngBackend(searxng).search("llamas", 5)
    assert hits == [SearchHit(title="SearX hit", url="https://s.example/", snippet="on llamas")]
    result = await run([SearxngBackend(searxng)], "llamas")
    assert "(from searxng)" in result.text and "1. SearX hit\n   https://s.example/\n   on llamas" in result.text


async def test_searxng_failures_are_described(searxng: str, docs: Path) -> None:
    result = await run([SearxngBackend(searxng), LocalDocsBackend(docs)], "nothing")
    assert result.is_error  # nothing local either
    assert "- searxng: no results" in result.text
    bad = await run([SearxngBackend(searxng)], "not json")
    assert "searxng: RuntimeError: the answer is not JSON" in bad.text
    down = await run([SearxngBackend("http://127.0.0.1:1")], "x")
    assert down.is_error and "searxng: ClientConnectorError" in down.text


# -- ddgs (never reaching the internet in tests) -----------------------------------------
async def test_ddgs_missing_package_is_unavailable(monkeypatch: pytest.MonkeyPatch, docs: Path) -> None:
    monkeypatch.setitem(sys.modules, "ddgs", None)  # makes `import ddgs` raise ImportError
    result = await run([DdgsBackend(), LocalDocsBackend(docs)], "cats")
    assert "(from local_docs)" in result.text
    assert "ddgs: unavailable (the ddgs package is not installed (pip install 'pymanus[search]'))" in result.text


async def test_ddgs_results_are_mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    class FakeDDGS:
        def __init__(self, timeout: int) -> None:
            seen["timeout"] = timeout

        def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
            seen.update(query=query, **kwargs)
            return [{"title": "Duck", "href": "https://d.example/", "body": "quack"}]

    fake = types.ModuleType("ddgs")
    fake.DDGS = FakeDDGS  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ddgs", fake)
    hits = await DdgsBackend(timeout=7).search("ducks", 4)
    assert hits == [SearchHit(title="Duck", url="https://d.example/", snippet="quack")]
    assert seen == {"timeout": 7, "query": "ducks", "region": "wt-wt", "max_results": 4}


# -- configuration -----------------------------------------------------------------------
def test_build_search_backends_order_and_env(tmp_path: Path) -> None:
    config = SearchConfig(searxng_url="http://searx.local", local_folder=tmp_path)
    backends = build_search_backends(config, env={"TAVILY_API_KEY": "tvly-env"})
    assert [b.name for b in backends] == ["tavily", "searxng", "ddgs", "local_docs"]
    assert isinstance(backends[0], TavilyBackend) and backends[0].api_key == "tvly-env"
    explicit = build_search_backends(SearchConfig(tavily_api_key="tvly-cfg", ddgs=False), env={})
    assert [b.name for b in explicit] == ["tavily"]
    assert isinstance(explicit[0], TavilyBackend) and explicit[0].api_key == "tvly-cfg"
    assert [b.name for b in build_search_backends(SearchConfig(), env={})] == ["ddgs"]
    assert build_search_backends(SearchConfig(ddgs=False), env={}) == []

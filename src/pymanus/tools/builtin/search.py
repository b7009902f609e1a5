"""``web_search``: ask a chain of search backends, falling back from one to the next.

The first backend that answers with results wins; the observation names it. A backend
that raises, times out or finds nothing hands over to the next one; when all fail, the
error lists what went wrong with each.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from pymanus.errors import ToolError
from pymanus.tools.builtin.search_backends import (
    BackendUnavailable,
    DdgsBackend,
    LocalDocsBackend,
    SearchBackend,
    SearchHit,
    SearxngBackend,
    TavilyBackend,
)
from pymanus.tools.tool import Tool, tool

__all__ = [
    "BackendUnavailable",
    "DdgsBackend",
    "LocalDocsBackend",
    "SearchBackend",
    "SearchConfig",
    "SearchHit",
    "SearxngBackend",
    "TavilyBackend",
    "build_search_backends",
    "web_search_tool",
]

MAX_RESULTS_LIMIT = 20


class SearchConfig(BaseModel):
    """Which search backends to use; they are tried in the order Tavily, SearXNG, DDGS, local docs."""

    ddgs: bool = True
    """Use the ``ddgs`` package (the ``[search]`` extra) for keyless web search."""
    tavily_api_key: str | None = None
    """Tavily key; when unset, the ``TAVILY_API_KEY`` environment variable is used."""
    searxng_url: str | None = None
    """Base URL of a SearXNG instance with the JSON format enabled."""
    local_folder: Path | None = None
    """A folder of documents searched offline (BM25), as the last resort."""
    timeout: float = Field(default=15.0, gt=0)
    """Seconds each backend may take."""


def build_search_backends(config: SearchConfig, env: Mapping[str, str] | None = None) -> list[SearchBackend]:
    """The backends ``config`` asks for, in fallback order.

    Args:
        config: the search settings.
        env: where to read ``TAVILY_API_KEY`` (defaults to the process environment).
    """
    environ = os.environ if env is None else env
    backends: list[SearchBackend] = []
    tavily_key = config.tavily_api_key or environ.get("TAVILY_API_KEY", "")
    if tavily_key:
        backends.append(TavilyBackend(tavily_key, timeout=config.timeout))
    if config.searxng_url:
        backends.append(SearxngBackend(config.searxng_url, timeout=config.timeout))
    if config.ddgs:
        backends.append(DdgsBackend(timeout=max(1, round(config.timeout))))
    if config.local_folder is not None:
        backends.append(LocalDocsBackend(config.local_folder))
    return backends


def web_search_tool(backends: Sequence[SearchBackend], *, timeout: float = 15.0) -> Tool:
    """Build the ``web_search`` tool over ``backends``, tried in order.

    Args:
        backends: the fallback chain; the first to return results answers.
        timeout: seconds each backend may take before the next is tried.
    """
    chain = tuple(backends)

    @tool(name="web_search", timeout=timeout * max(1, len(chain)) + 5)
    async def web_search(query: str, max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS_LIMIT)] = 5) -> str:
        """Search the web and return a list of results (title, URL, snippet).

        Read a result in full with web_fetch.

        Args:
            query: what to search for, in a few keywords.
            max_results: how many results to return (1 to 20).
        """
        query = " ".join(query.split())
        if not query:
            raise ToolError("The search query is empty; give a few keywords.")
        if not chain:
            raise ToolError("No search backend is configured, so web_search cannot run.")
        failures: list[str] = []
        for backend in chain:
            try:
                hits = await asyncio.wait_for(backend.search(query, max_results), timeout)
            except BackendUnavailable as exc:
                failures.append(f"{backend.name}: unavailable ({exc})")
            except TimeoutError:
                failures.append(f"{backend.name}: timed out after {timeout:g} s")
            except Exception as exc:
                failures.append(f"{backend.name}: {type(exc).__name__}: {exc}")
            else:
                if hits:
                    return render_hits(query, backend.name, hits[:max_results], failures)
                failures.append(f"{backend.name}: no results")
        raise ToolError(f'Every search backend failed for "{query}":\n' + "\n".join(f"- {f}" for f in failures))

    return web_search


def render_hits(query: str, backend: str, hits: Sequence[SearchHit], failures: Sequence[str] = ()) -> str:
    """The observation for a successful search."""
    lines = [f'Results for "{query}" (from {backend}):', ""]
    for number, hit in enumerate(hits, 1):
        lines.append(f"{number}. {hit.title or '(no title)'}")
        lines.append(f"   {hit.url}")
        if hit.snippet:
            lines.append(f"   {' '.join(hit.snippet.split())}")
    if failures:
        lines += ["", "(tried first: " + "; ".join(failures) + ")"]
    return "\n".join(lines)

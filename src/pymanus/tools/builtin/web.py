"""``web_fetch``: read one web page, with a domain allowlist and SSRF defences.

Every hop of a fetch (the first URL and each redirect, followed by hand) is checked:
the scheme is http or https, the host is on the allowlist, and *every* address its name
resolves to is public. The connection then goes to the vetted address itself (a pinned
resolver), so a DNS answer that changes between the check and the connect (DNS
rebinding) cannot steer the request to an internal service.
"""

from __future__ import annotations

import asyncio
import html
import ipaddress
import json
import re
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import html2text
from aiohttp.abc import AbstractResolver, ResolveResult
from pydantic import BaseModel, Field
from yarl import URL

from pymanus.errors import ToolError
from pymanus.tools.tool import Tool, tool

Resolve = Callable[[str, int], Awaitable[list[str]]]
"""Resolves a host name and port to IP address strings (the default uses getaddrinfo)."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "169.254.170.2")
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
_TEXT_TYPES = frozenset(
    {"application/xml", "application/javascript", "application/x-yaml", "application/yaml", "application/toml"}
)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
CONFIG_HINT = (
    'Add the hosts to allow under [web] in pymanus.toml, e.g. allow_domains = ["example.com"] '
    '(subdomains are included), or allow_domains = ["*"] for any public host.'
)


class WebPolicy(BaseModel):
    """What ``web_fetch`` may reach, and how much it may read."""

    allow_domains: list[str] = Field(default_factory=list)
    """Hosts that may be fetched; each entry also allows its subdomains. Empty: nothing
    (the model is told how to configure ``[web] allow_domains``). ``"*"``: any public host."""
    max_bytes: int = Field(default=2 * 1024 * 1024, gt=0)
    """Bytes of body read at most; a longer body is cut and the result says so."""
    timeout: float = Field(default=20.0, gt=0)
    """Seconds for the whole fetch, redirects included."""
    max_redirects: int = Field(default=5, ge=0)
    """Redirects followed at most."""
    max_chars: int = Field(default=20_000, gt=0)
    """Characters of page text returned at most."""
    user_agent: str = "PyManus/0.1 (+https://pypi.org/project/pymanus/)"
    allow_private_hosts: list[str] = Field(default_factory=list)
    """DANGEROUS, for tests only: exact host names (or IP literals) whose private or
    loopback addresses are accepted. Anything listed here can reach services on this
    machine or its network. Cloud metadata addresses stay refused regardless."""

    def host_allowed(self, host: str) -> bool:
        """Whether ``host`` (lower case, no trailing dot) is on the allowlist."""
        for entry in self.allow_domains:
            domain = _normalize_entry(entry)
            if domain == "*" or host == domain or host.endswith("." + domain):
                return True
        return False


def web_fetch_tool(policy: WebPolicy, *, resolve: Resolve | None = None) -> Tool:
    """Build the ``web_fetch`` tool for ``policy``.

    Args:
        policy: the allowlist and limits; held by the tool, shared with nothing else.
        resolve: name resolution (defaults to the system's getaddrinfo); tests inject one.
    """
    resolver = resolve or _system_resolve

    # The page text is cut to ``policy.max_chars`` here, so the generic cut never hides our note.
    @tool(name="web_fetch", timeout=policy.timeout + 5, max_result_chars=policy.max_chars + 2_000)
    async def web_fetch(url: str) -> str:
        """Fetch a web page (HTTP GET) and return its text as markdown, with its title and final URL.

        HTML becomes markdown; JSON, plain text and markdown come back as text. Binary
        files (images, PDFs, archives) are refused. Only allowed public hosts can be reached.

        Args:
            url: the http:// or https:// address to read.
        """
        try:
            async with asyncio.timeout(policy.timeout):
                return await _fetch(url.strip(), policy, resolver)
        except TimeoutError:
            raise ToolError(f"Fetching {url} timed out after {policy.timeout:g} s.") from None
        except aiohttp.ClientError as exc:
            raise ToolError(f"Fetching {url} failed: {type(exc).__name__}: {exc}") from None

    return web_fetch


# -- one fetch, hop by hop ----------------------------------------------------------------
async def _fetch(raw_url: str, policy: WebPolicy, resolve: Resolve) -> str:
    pinned: dict[str, list[str]] = {}
    connector = aiohttp.TCPConnector(resolver=_PinnedResolver(pinned), use_dns_cache=False)
    headers = {
        "User-Agent": policy.user_agent,
        "Accept": "text/html,text/plain,application/json,text/markdown,*/*;q=0.5",
    }
    async with aiohttp.ClientSession(connector=connector, headers=headers, trust_env=False) as session:
        url = _parse_url(raw_url)
        for hop in range(policy.max_redirects + 1):
            host, addresses = await _vet(url, policy, resolve)
            pinned[host] = addresses
            async with session.get(url, allow_redirects=False) as response:
                location = response.headers.get("Location")
                if response.status in _REDIRECTS and location:
                    url = _parse_url(_join(url, location))
                    continue
                return await _read(response, url, hop, policy)
    raise ToolError(f"Too many redirects (more than {policy.max_redirects}) starting from {raw_url}.")


def _join(base: URL, location: str) -> str:
    try:
        return str(base.join(URL(location)))
    except ValueError as exc:
        raise ToolError(f"{base} redirected to an invalid address {location!r}: {exc}") from None


def _parse_url(raw: str) -> URL:
    try:
        url = URL(raw)
    except (ValueError, TypeError) as exc:
        raise ToolError(f"{raw!r} is not a valid URL: {exc}") from None
    if url.scheme not in ("http", "https"):
        shown = f"{url.scheme}://" if url.scheme else "no scheme"
        raise ToolError(f"Refused {raw}: only http:// and https:// URLs can be fetched (got {shown}).")
    if not url.raw_host:
        raise ToolError(f"Refused {raw}: the URL has no host.")
    return url


async def _vet(url: URL, policy: WebPolicy, resolve: Resolve) -> tuple[str, list[str]]:
    """Check one hop's host and addresses; return the host and the addresses to pin."""
    host = (url.raw_host or "").lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not policy.allow_domains:
        raise ToolError(f"Refused {url}: web access is not configured (no allowed domains). {CONFIG_HINT}")
    if not policy.host_allowed(host):
        raise ToolError(
            f"Refused {url}: the host {host} is not in the allowed domains "
            f"({', '.join(policy.allow_domains)}). {CONFIG_HINT}"
        )
    if host in METADATA_HOSTS:
        raise ToolError(f"Refused {url}: {host} is a cloud metadata service.")
    port = url.port or (443 if url.scheme == "https" else 80)
    literal = True
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        literal = False
        try:
            addresses = await resolve(host, port)
        except OSError as exc:
            raise ToolError(f"Cannot resolve {host}: {exc}") from None
    if not addresses:
        raise ToolError(f"Cannot resolve {host}: no addresses.")
    private_ok = host in {h.lower().rstrip(".") for h in policy.allow_private_hosts}
    for address in addresses:
        problem = address_problem(address)
        if problem == "cloud metadata" or (problem and not private_ok):
            where = f"{host} is" if literal else f"{host} resolves to {address},"
            raise ToolError(f"Refused {url}: {where} a {problem} address; only public internet hosts can be fetched.")
    return host, addresses


def address_problem(address: str) -> str | None:
    """Why ``address`` must not be reached (e.g. ``"loopback"``), or ``None`` if it is public.

    IPv6 forms that embed an IPv4 address (IPv4-mapped, 6to4, NAT64) are judged by
    the embedded address.
    """
    try:
        ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "malformed"
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return address_problem(str(embedded))
    for problem, flag in (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("carrier-grade NAT", isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("non-public", not ip.is_global),
    ):
        if flag:
            return problem
    return None


async def _system_resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)  # runs in a thread
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _PinnedResolver(AbstractResolver):
    """Answers only with addresses already vetted for this fetch; never asks DNS."""

    def __init__(self, pinned: dict[str, list[str]]) -> None:
        self._pinned = pinned

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = self._pinned.get(host.lower().rstrip("."))
        if not addresses:
            raise OSError(f"{host} was not vetted for this fetch")
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        """Nothing to release."""


# -- the body -----------------------------------------------------------------------------
async def _read(response: aiohttp.ClientResponse, url: URL, hops: int, policy: WebPolicy) -> str:
    kind = _kind(response)
    if response.status >= 400:
        body, _ = await _read_capped(response, 2000)
        detail = _decode(body, response.charset).strip()[:300]
        raise ToolError(
            f"HTTP {response.status} {response.reason or ''} for {url}." + (f"\n{detail}" if detail else "")
        )
    if kind is None:
        raise ToolError(
            f"Refused {url}: its content type is {response.content_type}, which is not text. "
            "web_fetch reads HTML, text, markdown and JSON only."
        )
    body, cut = await _read_capped(response, policy.max_bytes)
    text = _decode(body, response.charset)
    if kind == "unknown":
        if "\x00" in text[:4096]:
            raise ToolError(f"Refused {url}: it has no content type and looks binary.")
        kind = "html" if text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")) else "text"
    title = ""
    if kind == "html":
        title, text = _html_to_markdown(text, str(url))
    elif kind == "json":
        text = _pretty_json(text) if not cut else text
    header = [f"# {title or url}", f"URL: {url}"]
    if hops:
        header.append(f"(reached after {hops} redirect{'s' if hops > 1 else ''})")
    notes = []
    if cut:
        notes.append(f"[the page is larger than {policy.max_bytes:,} bytes; only the first part was read]")
    if len(text) > policy.max_chars:
        notes.append(f"[text cut: showing the first {policy.max_chars:,} of {len(text):,} characters]")
        text = text[: policy.max_chars]
    return "\n".join(header) + "\n\n" + text.strip() + ("\n\n" + "\n".join(notes) if notes else "")


def _kind(response: aiohttp.ClientResponse) -> str | None:
    """html, json, markdown, text, unknown (no content type), or None for binary types."""
    if "Content-Type" not in response.headers:
        return "unknown"
    ctype = response.content_type.lower()
    if ctype in _HTML_TYPES:
        return "html"
    if ctype == "application/json" or ctype.endswith("+json"):
        return "json"
    if ctype in _MARKDOWN_TYPES:
        return "markdown"
    if ctype.startswith("text/") or ctype in _TEXT_TYPES or ctype.endswith("+xml"):
        return "text"
    return None


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes while streaming; say whether the body was longer."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[:limit], True
    return b"".join(chunks), False


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _html_to_markdown(page: str, base_url: str) -> tuple[str, str]:
    match = _TITLE.search(page)
    title = " ".join(html.unescape(match.group(1)).split())[:300] if match else ""
    converter = html2text.HTML2Text(baseurl=base_url)
    converter.body_width = 0  # no hard wrapping: it wastes tokens and breaks links
    converter.ignore_images = True
    converter.ignore_emphasis = False
    return title, converter.handle(page)


def _pretty_json(text: str) -> str:
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        return text
    return json.dumps(value, indent=2, ensure_ascii=False)


def _normalize_entry(entry: str) -> str:
    """An allowlist entry as a bare ASCII host: ``*.Example.com.`` → ``example.com``."""
    domain = entry.strip().lower()
    if domain == "*":
        return domain
    if "://" in domain:
        domain = URL(domain).raw_host or ""
    domain = domain.removeprefix("*.").strip(".")
    try:
        return domain.encode("idna").decode("ascii")
    except UnicodeError:
        return domain

"""web_fetch against a real aiohttp server on 127.0.0.1, and its SSRF defences."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from pymanus.messages import ToolCall
from pymanus.tools.builtin.web import Resolve, WebPolicy, address_problem, web_fetch_tool
from pymanus.tools.tool import Tool, ToolContext, ToolResult
from pymanus.tools.toolset import Toolset

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PAGE = """<!doctype html><html><head><title>The  Test &amp; Page</title>
<style>body { color: red }</style><script>var secret = 1;</script></head>
<body><h1>Welcome</h1><p>Some <b>bold</b> text and a <a href="/other">relative link</a>.</p></body></html>"""


@dataclass
class Server:
    """The test server: its base URL and the requests it received."""

    port: int
    seen: list[tuple[str, str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server(port=0)

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        state.seen.append((request.method, request.path))
        return await handler(request)

    async def redirect(request: web.Request) -> web.Response:
        # A raw header: HTTPFound would refuse the malformed targets some tests send.
        return web.Response(status=302, headers={"Location": request.query["to"]})

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def slow(request: web.Request) -> web.Response:
        await state.release.wait()
        return web.Response(text="late")

    async def big(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(100):
            await response.write(b"x" * 1000 + b"\n")
        return response

    def fixed(body: bytes | str, content_type: str, status: int = 200) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            data = body.encode() if isinstance(body, str) else body
            return web.Response(body=data, status=status, headers={"Content-Type": content_type})

        return handler

    app = web.Application(middlewares=[record])
    app.router.add_get("/page", fixed(PAGE, "text/html; charset=utf-8"))
    app.router.add_get("/other", fixed("other page", "text/plain"))
    app.router.add_get("/data.json", fixed('{"b": [1, 2], "a": "é"}', "application/json"))
    app.router.add_get("/plain.txt", fixed("just text\nline two", "text/plain; charset=utf-8"))
    app.router.add_get("/readme.md", fixed("# Title\n\n- item *one*", "text/markdown"))
    app.router.add_get("/image.png", fixed(b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"))
    app.router.add_get("/doc.pdf", fixed(b"%PDF-1.4\x00", "application/pdf"))
    app.router.add_get("/files.zip", fixed(b"PK\x03\x04\x00", "application/zip"))
    app.router.add_get("/missing", fixed("nothing here", "text/plain", status=404))
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/loop", loop)
    app.router.add_get("/slow", slow)
    app.router.add_get("/big", big)
    app.router.add_route("*", "/echo", fixed("echo", "text/plain"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.port = runner.addresses[0][1]
    yield state
    state.release.set()
    await runner.cleanup()


def local_policy(**overrides: object) -> WebPolicy:
    """A policy that lets the tests reach their own 127.0.0.1 server."""
    values: dict[str, object] = {"allow_domains": ["127.0.0.1"], "allow_private_hosts": ["127.0.0.1"]}
    values.update(overrides)
    return WebPolicy.model_validate(values)


def fake_dns(table: dict[str, list[str]], calls: list[str] | None = None) -> Resolve:
    async def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


async def fetch(tool: Tool, url: str) -> ToolResult:
    return await tool.run({"url": url}, ToolContext(run_id="test"))


# -- content -----------------------------------------------------------------------------
async def test_html_becomes_markdown_with_title_and_url(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy()), server.url("/page"))
    assert not result.is_error, result.text
    lines = result.text.splitlines()
    assert lines[0] == "# The Test & Page"
    assert lines[1] == f"URL: {server.url('/page')}"
    assert "# Welcome" in result.text
    assert "**bold**" in result.text
    assert f"[relative link]({server.url('/other')})" in result.text
    assert "secret" not in result.text and "color" not in result.text


async def test_json_is_pretty_printed(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy()), server.url("/data.json"))
    assert not result.is_error
    body = result.text.split("\n\n", 1)[1]
    assert body == json.dumps({"b": [1, 2], "a": "é"}, indent=2, ensure_ascii=False)


async def test_plain_text_and_markdown_pass_through(server: Server) -> None:
    tool = web_fetch_tool(local_policy())
    text = await fetch(tool, server.url("/plain.txt"))
    assert text.text.endswith("just text\nline two")
    markdown = await fetch(tool, server.url("/readme.md"))
    assert markdown.text.endswith("# Title\n\n- item *one*")


@pytest.mark.parametrize(
    ("path", "ctype"), [("/image.png", "image/png"), ("/doc.pdf", "application/pdf"), ("/files.zip", "application/zip")]
)
async def test_binary_types_are_refused_by_name(server: Server, path: str, ctype: str) -> None:
    result = await fetch(web_fetch_tool(local_policy()), server.url(path))
    assert result.is_error
    assert ctype in result.text and "not text" in result.text


async def test_body_is_cut_at_max_bytes(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy(max_bytes=10_000)), server.url("/big"))
    assert not result.is_error
    body = result.text.split("\n\n")[1]
    assert body.count("x") == 10_000 - 10_000 // 1001
    assert "larger than 10,000 bytes" in result.text


async def test_text_is_cut_at_max_chars(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy(max_chars=500)), server.url("/big"))
    body = result.text.split("\n\n")[1]
    assert body.count("x") == 500 - 500 // 1001
    assert "showing the first 500 of" in result.text


async def test_timeout_gives_a_clear_error(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy(timeout=0.3)), server.url("/slow"))
    assert result.is_error
    assert "timed out after 0.3 s" in result.text


async def test_http_error_status_is_reported(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy()), server.url("/missing"))
    assert result.is_error
    assert "HTTP 404" in result.text and "nothing here" in result.text


async def test_only_get_is_possible(server: Server) -> None:
    tool = web_fetch_tool(local_policy())
    assert set(tool.parameters["properties"]) == {"url"}
    toolset = Toolset([tool])
    call = ToolCall(id="1", name="web_fetch", arguments=json.dumps({"url": server.url("/echo"), "method": "POST"}))
    outcome = await toolset.run_call(call, ToolContext(run_id="t"))
    assert outcome.failure == "bad_arguments"
    ok = await toolset.run_call(
        ToolCall(id="2", name="web_fetch", arguments=json.dumps({"url": server.url("/echo")})), ToolContext(run_id="t")
    )
    assert ok.failure is None
    assert server.seen == [("GET", "/echo")]


async def test_redirects_are_followed_and_reported(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy()), server.url("/redirect?to=/other"))
    assert not result.is_error, result.text
    assert f"URL: {server.url('/other')}" in result.text
    assert "after 1 redirect" in result.text
    assert result.text.endswith("other page")


async def test_too_many_redirects(server: Server) -> None:
    result = await fetch(web_fetch_tool(local_policy(max_redirects=3)), server.url("/loop"))
    assert result.is_error and "Too many redirects (more than 3)" in result.text
    assert len(server.seen) == 4


# -- configuration and allowlist ---------------------------------------------------------
async def test_empty_allowlist_refuses_with_config_hint(server: Server) -> None:
    result = await fetch(web_fetch_tool(WebPolicy()), server.url("/page"))
    assert result.is_error
    assert "not configured" in result.text and "[web]" in result.text and "allow_domains" in result.text
    assert "pymanus.toml" in result.text
    assert server.seen == []


async def test_domain_not_in_list_is_refused() -> None:
    tool = web_fetch_tool(WebPolicy(allow_domains=["example.com"]), resolve=fake_dns({}))
    result = await fetch(tool, "https://example.org/")
    assert result.is_error and "example.org is not in the allowed domains (example.com)" in result.text


def test_allowlist_matches_host_and_subdomains() -> None:
    policy = WebPolicy(allow_domains=["Example.com", "*.docs.io", "https://python.org/", "bücher.de"])
    assert policy.host_allowed("example.com")
    assert policy.host_allowed("www.example.com")
    assert not policy.host_allowed("badexample.com")
    assert not policy.host_allowed("example.com.evil.net")
    assert policy.host_allowed("api.docs.io") and policy.host_allowed("docs.io")
    assert policy.host_allowed("python.org")
    assert policy.host_allowed("xn--bcher-kva.de")
    assert WebPolicy(allow_domains=["*"]).host_allowed("anything.net")


async def test_subdomain_is_fetched_through_pinned_address(server: Server) -> None:
    calls: list[str] = []
    policy = WebPolicy(allow_domains=["example.test"], allow_private_hosts=["docs.example.test"])
    tool = web_fetch_tool(policy, resolve=fake_dns({"docs.example.test": ["127.0.0.1"]}, calls))
    result = await fetch(tool, server.url("/plain.txt", host="docs.example.test"))
    # The system cannot resolve this name: success proves the vetted address was used.
    assert not result.is_error, result.text
    assert calls == ["docs.example.test"]


# -- SSRF --------------------------------------------------------------------------------
async def test_loopback_is_refused_unless_explicitly_allowed(server: Server) -> None:
    result = await fetch(web_fetch_tool(WebPolicy(allow_domains=["*"])), server.url("/page"))
    assert result.is_error and "loopback" in result.text
    assert server.seen == []


async def test_localhost_name_is_refused(server: Server) -> None:
    result = await fetch(web_fetch_tool(WebPolicy(allow_domains=["*"])), server.url("/page", host="localhost"))
    assert result.is_error and "loopback" in result.text and "localhost" in result.text
    assert server.seen == []


async def test_name_resolving_to_any_private_address_is_refused(server: Server) -> None:
    dns = fake_dns({"evil.example": ["93.184.216.34", "127.0.0.1"], "lan.example": ["10.1.2.3"]})
    tool = web_fetch_tool(WebPolicy(allow_domains=["*"]), resolve=dns)
    result = await fetch(tool, server.url("/page", host="evil.example"))
    assert result.is_error and "127.0.0.1" in result.text and "loopback" in result.text
    lan = await fetch(tool, "http://lan.example/")
    assert lan.is_error and "private" in lan.text
    assert server.seen == []


@pytest.mark.parametrize("target_host", ["127.0.0.1", "internal.test"])
async def test_redirect_to_internal_host_is_refused(server: Server, target_host: str) -> None:
    dns = fake_dns({"public.test": ["127.0.0.1"], "internal.test": ["127.0.0.1"]})
    # Only the first hop's host is let through to loopback (simulating a public site).
    policy = WebPolicy(allow_domains=["*"], allow_private_hosts=["public.test"])
    target = server.url("/page", host=target_host)
    result = await fetch(web_fetch_tool(policy, resolve=dns), server.url(f"/redirect?to={target}", host="public.test"))
    assert result.is_error and "loopback" in result.text and target_host in result.text
    assert server.seen == [("GET", "/redirect")]


async def test_redirect_to_other_scheme_or_domain_is_refused(server: Server) -> None:
    tool = web_fetch_tool(local_policy())
    to_file = await fetch(tool, server.url("/redirect?to=file:///etc/passwd"))
    assert to_file.is_error and "only http:// and https://" in to_file.text
    to_other = await fetch(tool, server.url("/redirect?to=http://example.com/"))
    assert to_other.is_error and "example.com is not in the allowed domains" in to_other.text


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/"],
)
async def test_cloud_metadata_is_always_refused(url: str) -> None:
    hosts = ["169.254.169.254", "fd00:ec2::254", "metadata.google.internal"]
    tool = web_fetch_tool(WebPolicy(allow_domains=["*"], allow_private_hosts=hosts), resolve=fake_dns({}))
    result = await fetch(tool, url)
    assert result.is_error and "metadata" in result.text


async def test_ipv4_mapped_ipv6_is_refused(server: Server) -> None:
    tool = web_fetch_tool(WebPolicy(allow_domains=["*"]), resolve=fake_dns({"mapped.test": ["::ffff:127.0.0.1"]}))
    literal = await fetch(tool, f"http://[::ffff:127.0.0.1]:{server.port}/page")
    assert literal.is_error and "loopback" in literal.text
    named = await fetch(tool, "http://mapped.test/")
    assert named.is_error and "loopback" in named.text
    assert server.seen == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/file", "javascript:alert(1)", "example.com/page", "http:///nohost"]
)
async def test_non_http_urls_are_refused(url: str) -> None:
    result = await fetch(web_fetch_tool(WebPolicy(allow_domains=["*"])), url)
    assert result.is_error
    assert "only http:// and https://" in result.text or "no host" in result.text


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("192.168.1.1", "private"),
        ("172.16.0.1", "private"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("240.0.0.1", "reserved"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("2002:7f00:1::", "loopback"),
        ("64:ff9b::7f00:1", "loopback"),
        ("fc00::1", "private"),
        ("not-an-ip", "malformed"),
        ("8.8.8.8", None),
        ("::ffff:8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_problem(address: str, problem: str | None) -> None:
    assert address_problem(address) == problem


def test_two_tools_share_nothing() -> None:
    a = web_fetch_tool(WebPolicy(allow_domains=["a.com"]))
    b = web_fetch_tool(WebPolicy(allow_domains=["b.com"]))
    assert a is not b and a.function is not b.function


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<!DOCTYPE html><html><title>Untyped</title><p>hello</p></html>", "# Untyped"),
        (b"plain words", "plain words"),
        (b"\x00\x01\x02binary", "looks binary"),
    ],
)
async def test_missing_content_type_is_sniffed(body: bytes, expected: str) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    raw = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = raw.sockets[0].getsockname()[1]
    async with raw:
        result = await fetch(web_fetch_tool(local_policy()), f"http://127.0.0.1:{port}/")
    assert expected in result.text


async def test_bad_or_protocol_relative_redirects_are_checked(server: Server) -> None:
    tool = web_fetch_tool(local_policy())
    invalid = await fetch(tool, server.url("/redirect?to=http://[::1"))
    assert invalid.is_error and "redirected to an invalid address" in invalid.text
    relative = await fetch(tool, server.url("/redirect?to=//evil.example/x"))
    assert relative.is_error and "evil.example is not in the allowed domains" in relative.text

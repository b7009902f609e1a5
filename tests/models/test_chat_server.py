"""The test chat server itself: other test suites rely on what it accepts and rejects."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from helpers.chat_server import ChatServer, completion, stream_chunks, tool_call, validate_request


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages)}


USER = {"role": "user", "content": "hi"}


def calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [tool_call("add", {}, id=i) for i in ids]}


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def test_valid_histories_pass() -> None:
    assert validate_request(body(USER)) is None
    assert validate_request(body(USER, calls("a", "b"), answer("b"), answer("a"), USER)) is None
    assert validate_request(body(USER, calls("a"), answer("a"), calls("b"), answer("b"))) is None


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ((), "at least one message"),
        ((USER, calls("a")), "did not have response messages: a"),
        ((USER, calls("a", "b"), answer("a"), USER), "did not have response messages: b"),
        ((USER, answer("a")), "must be a response to a preceeding message"),
        ((USER, calls("a"), answer("a"), answer("a")), "must be a response"),
        ((USER, calls("a"), USER, answer("a")), "did not have response messages"),
        (({"role": "robot", "content": "x"},), "role"),
        (({"role": "assistant", "content": None},), "expected a string, got null"),
        (
            (USER, calls("a"), {"role": "tool", "tool_call_id": "a", "content": [{"type": "image_url"}]}),
            "only allowed for messages with role 'user'",
        ),
    ],
)
def test_invalid_histories_are_rejected(messages: tuple[dict[str, Any], ...], words: str) -> None:
    problem = validate_request(body(*messages))
    assert problem is not None and problem.status == 400
    assert words in problem.message


def test_stream_chunks_carry_everything_once() -> None:
    whole = completion("hello there", tool_calls=[tool_call("add", {"a": 123456}, id="c1")], reasoning="hm")
    chunks = stream_chunks(whole, include_usage=True, piece=3)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "hello there"
    call_deltas = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [d.get("id") for d in call_deltas] == ["c1"] + [None] * (len(call_deltas) - 1)
    assert "".join(d["function"]["arguments"] for d in call_deltas) == '{"a": 123456}'
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 15


def post(url: str, payload: dict[str, Any], key: str = "k") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_background_thread_server_scripts_and_records() -> None:
    with ChatServer(validate=True, api_key="k") as server:
        server.push(completion("first"))
        server.respond_with(lambda b: completion(f"echo {b['messages'][-1]['content']}"))
        assert post(server.url, body(USER))[1]["choices"][0]["message"]["content"] == "first"
        assert post(server.url, body(USER))[1]["choices"][0]["message"]["content"] == "echo hi"
        status, error = post(server.url, body(USER), key="wrong")
        assert status == 401 and error["error"]["code"] == "invalid_api_key"
        status, error = post(server.url, body(USER, answer("zz")))
        assert status == 400 and error["error"]["type"] == "invalid_request_error"
        assert len(server.requests) == 4 and server.pending == 0


def test_unscripted_request_is_a_clear_500() -> None:
    with ChatServer() as server:
        status, error = post(server.url, body(USER))
    assert status == 500 and "no reply scripted" in error["error"]["message"]


def test_context_limit() -> None:
    with ChatServer(context_tokens=50) as server:
        server.push(completion("fits"))
        assert post(server.url, body(USER))[0] == 200
        status, error = post(server.url, body({"role": "user", "content": "x" * 400}))
    assert status == 400 and error["error"]["code"] == "context_length_exceeded"

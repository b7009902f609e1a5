"""Tool calls written as text: what is taken, and what is left alone."""

from __future__ import annotations

import json
import re

import pytest

from pymanus.messages import ToolCall
from pymanus.models.textcalls import extract_text_tool_calls, recover_json_object

NAMES = {"add", "search"}
CALL_ID = re.compile(r"^call_[0-9a-f]{12}$")


def calls_of(text: str, names: set[str] = NAMES) -> tuple[str, list[tuple[str, object]]]:
    remaining, calls = extract_text_tool_calls(text, names)
    for call in calls:
        assert CALL_ID.match(call.id) or call.id.startswith("given")
    return remaining, [(c.name, json.loads(c.arguments)) for c in calls]


def test_hermes_tag() -> None:
    text = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>'
    assert calls_of(text) == ("", [("add", {"a": 2, "b": 40})])


def test_several_tags_with_text_around() -> None:
    text = (
        "First I add, then I search.\n"
        '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>\n'
        "Done."
    )
    remaining, calls = calls_of(text)
    assert calls == [("add", {"a": 1}), ("search", {"query": "x"})]
    assert remaining == "First I add, then I search.\n\n\nDone."


def test_tag_with_string_arguments_keeps_them_raw() -> None:
    _, calls = extract_text_tool_calls('<tool_call>{"name": "add", "arguments": "{\\"a\\": 1}"}</tool_call>', NAMES)
    assert calls[0].arguments == '{"a": 1}'


def test_tag_without_closing_tag_at_end() -> None:
    assert calls_of('Sure.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}') == ("Sure.", [("add", {"a": 1})])


def test_unclosed_tag_followed_by_another_tag() -> None:
    text = '<tool_call>{"name": "add", "arguments": {}}\n<tool_call>{"name": "search", "arguments": {}}</tool_call>'
    assert calls_of(text)[1] == [("add", {}), ("search", {})]


def test_tag_with_parameters_and_no_arguments() -> None:
    text = '<tool_call>{"name": "add", "parameters": {"a": 3}}</tool_call><tool_call>{"name": "search"}</tool_call>'
    assert calls_of(text)[1] == [("add", {"a": 3}), ("search", {})]


def test_unknown_tool_name_is_left_as_text() -> None:
    text = '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>'
    assert extract_text_tool_calls(text, NAMES) == (text, [])


def test_unknown_tag_left_known_tag_taken() -> None:
    text = (
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>'
    )
    remaining, calls = calls_of(text)
    assert calls == [("add", {"a": 1})]
    assert remaining == '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'


def test_malformed_json_in_tag_is_left_as_text() -> None:
    text = '<tool_call>{"name": "add", "arguments": {"a": 1</tool_call>'
    assert extract_text_tool_calls(text, NAMES) == (text, [])


def test_fenced_json_call() -> None:
    text = 'Calling:\n```json\n{"name": "search", "arguments": {"query": "weather"}}\n```\nThanks.'
    assert calls_of(text) == ("Calling:\n\nThanks.", [("search", {"query": "weather"})])


def test_fenced_json_list_of_calls() -> None:
    text = '```json\n[{"name": "add", "arguments": {"a": 1}}, {"name": "search", "parameters": {"q": "y"}}]\n```'
    assert calls_of(text) == ("", [("add", {"a": 1}), ("search", {"q": "y"})])


def test_bare_json_call() -> None:
    assert calls_of('{"name": "add", "arguments": {"a": 2, "b": 40}}') == ("", [("add", {"a": 2, "b": 40})])


def test_bare_json_call_inside_prose() -> None:
    text = 'I will call {"name": "search", "arguments": {"query": "pymanus"}} now.'
    assert calls_of(text) == ("I will call  now.", [("search", {"query": "pymanus"})])


def test_bare_json_list() -> None:
    text = '[{"name": "add", "arguments": {"a": 1}}, {"name": "add", "arguments": {"a": 2}}]'
    assert calls_of(text)[1] == [("add", {"a": 1}), ("add", {"a": 2})]


def test_list_with_an_unknown_name_is_left_whole() -> None:
    text = '[{"name": "add", "arguments": {"a": 1}}, {"name": "other", "arguments": {}}]'
    assert extract_text_tool_calls(text, NAMES) == (text, [])


def test_openai_shaped_object() -> None:
    text = '{"id": "given_1", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 5}"}}'
    _, calls = extract_text_tool_calls(text, NAMES)
    assert calls == [ToolCall(id="given_1", name="add", arguments='{"a": 5}')]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "add", "description": "a tool that adds", "arguments": {}}',  # extra keys: an ordinary answer
        '{"name": "add"}',  # no arguments outside a tag
        '{"name": "Alice", "age": 30}',
        '{"result": {"name": "add", "value": 3}}',
        '{"result": {"name": "add", "arguments": {}}}',  # a call-like object nested in an answer
        "The answer is 42.",
        '{"name": "add", "arguments": {"a": 1}',  # malformed
        "```json\n{not json}\n```",
        "```python\nprint({'name': 'add'})\n```",
    ],
)
def test_ordinary_text_and_json_are_left_alone(text: str) -> None:
    assert extract_text_tool_calls(text, NAMES) == (text, [])


def test_no_tools_offered_means_no_calls() -> None:
    text = '<tool_call>{"name": "add", "arguments": {}}</tool_call>'
    assert extract_text_tool_calls(text, []) == (text, [])


def test_empty_text() -> None:
    assert extract_text_tool_calls("", NAMES) == ("", [])


def test_non_ascii_arguments_kept() -> None:
    _, calls = extract_text_tool_calls(
        '<tool_call>{"name": "search", "arguments": {"q": "北京天气"}}</tool_call>', NAMES
    )
    assert json.loads(calls[0].arguments) == {"q": "北京天气"}
    assert "北京" in calls[0].arguments


def test_tags_win_over_bare_json() -> None:
    text = 'Example: {"name": "add", "arguments": {"a": 0}}\n<tool_call>{"name": "add", "arguments": {"a": 9}}'
    remaining, calls = calls_of(text)
    assert calls == [("add", {"a": 9})]
    assert remaining.startswith("Example:")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),  # already an object: untouched, unparsed
        ('  {"a": 1}\n', '{"a": 1}'),
        ('```json\n{"a": 1, "b": "x"}\n```', '{"a": 1, "b": "x"}'),
        ('Calling add with {"a": [1, 2]} now.', '{"a": [1, 2]}'),
        ('{"a": 1}<|im_end|>', '{"a": 1}'),
        ('Try {oops}, then {"b": "é"}.', '{"b": "é"}'),
        ("a=1, b=2", "a=1, b=2"),  # nothing to recover: the tool layer reports it
        ('{"a": 1', '{"a": 1'),
        ('[{"a": 1}]', '{"a": 1}'),
        ("", ""),
    ],
)
def test_tool_arguments_wrapped_in_text_are_recovered(arguments: str, expected: str) -> None:
    assert recover_json_object(arguments) == expected


def test_text_calls_with_wrapped_string_arguments_are_recovered() -> None:
    text = '<tool_call>{"name": "add", "arguments": "```json\\n{\\"a\\": 2}\\n```"}</tool_call>'
    assert calls_of(text) == ("", [("add", {"a": 2})])

"""How the local model's native tool-call output is read while it is still being generated."""

from __future__ import annotations

from pymanus.models.local_format import closed_inside_call


def test_a_closing_tag_the_grammar_did_not_close_with() -> None:
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert not closed_inside_call(call)  # the grammar's own end
    assert not closed_inside_call(call + '\n<tool_call>\n{"name": "add", "arguments": {"a": "x')  # still writing
    assert closed_inside_call(call + '\n<tool_call>\n{"name": "add", "arguments": {"a": "print(1\\"}}</tool_call>')
    assert closed_inside_call('<tool_call>\n{"name": "add", "arguments": {"a": "x</tool_call>')

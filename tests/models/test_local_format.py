"""How the local model's native tool-call output is read while it is still being generated, and the
text of the grammar for Python source (what it accepts is run in test_code_grammar.py)."""

from __future__ import annotations

import re

from pymanus.models.local_format import _CODE_GRAMMAR, closed_inside_call


def test_a_closing_tag_the_grammar_did_not_close_with() -> None:
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    assert not closed_inside_call(call)  # the grammar's own end
    assert not closed_inside_call(call + '\n<tool_call>\n{"name": "add", "arguments": {"a": "x')  # still writing
    assert closed_inside_call(call + '\n<tool_call>\n{"name": "add", "arguments": {"a": "print(1\\"}}</tool_call>')
    assert closed_inside_call('<tool_call>\n{"name": "add", "arguments": {"a": "x</tool_call>')


def _excluded(body: str) -> set[str]:
    """The characters the negated class (``[^...]``) of a GBNF rule body leaves out."""
    match = re.search(r"\[\^((?:\\.|[^\]\\])*)\]", body)
    assert match, body
    pieces = [
        chr(int(piece[2:], 16)) if piece.startswith("\\x") else piece[-1]
        for piece in re.findall(r"\\x[0-9A-Fa-f]{2}|\\.|.", match.group(1))
    ]
    chars: set[str] = set()
    while pieces:
        if len(pieces) >= 3 and pieces[1] == "-":
            chars.update(chr(code) for code in range(ord(pieces[0]), ord(pieces[2]) + 1))
            del pieces[:3]
        else:
            chars.add(pieces.pop(0))
    return chars


def test_the_code_rules_leave_out_only_characters_other_rules_read() -> None:
    rules = dict(rule.split(" ::= ", 1) for rule in _CODE_GRAMMAR)
    controls = {chr(code) for code in range(0x20)}  # JSON escapes them: \n, \t, \u001b...
    # outside strings: quotes open strings, brackets nest, # starts a comment, a backslash
    # continues a line; every other character, ``;`` included, is plain code
    assert _excluded(rules["pm-plain"]) - controls == set("\"'\\#()[]{}")
    assert "pm-cont" in rules["pm-item"].split(" | ")
    assert rules["pm-cont"] == r'"\\\\" pm-nl'
    # inside strings and comments: only the quotes and the backslash have rules of their own
    assert _excluded(rules["pm-sch"]) - controls == set("\"'\\")
    assert {"pm-uni", "pm-ctl"} <= set(rules["pm-sch"].split(" | "))

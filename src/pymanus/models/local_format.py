"""How tool calls are presented to a local model and read back from its output.

Constrained decoding. Small models call tools reliably only when decoding is constrained, so
when tools are offered every token is checked against a GBNF grammar built from the tools'
JSON Schemas (llama.cpp's converter). No output can be unparseable or call an unknown tool.

* ``native`` (templates that render ``tools`` and ``<tool_call>``: Qwen 2.5, Hermes): up to
  ``max_calls`` ``<tool_call>\n{"name": "<tool>", "arguments": {...}}\n</tool_call>`` blocks, or
  one block calling the pseudo-tool ``final_answer`` (``{"answer": "..."}``), offered next to the
  real tools. When the last message is a tool result, plain text (not starting with ``<``,
  ``{``, ``[`` or a backtick) is allowed too: that is how Qwen answers after reading results.
* ``json`` (any other template): one object, ``{"tool_calls": [{"name": ..., "arguments":
  ...}]}`` or ``{"final_answer": "..."}``, explained in the system prompt.

Why native, measured with ``benchmarks/local_model.py PACK --formats`` (agent situations where
the right action is the right tool call, or an answer once the result is in): with the JSON
envelope, small models answer with made-up results instead of calling tools; native with a
free-text branch everywhere, they narrate a plan around a fenced JSON pseudo-call and stop;
native with calls only, after a tool result they "print" the answer through a code tool.
Native with plain text allowed only after a tool result avoids all three and scored best on
every pack measured, so ``auto`` picks native whenever the template supports it.

JSON separators are forced to ``", "`` / ``": "`` so a call the template renders back into
the history is token-identical to what the model wrote and the prompt cache keeps matching.
The grammar enforces types, required keys, enums, consts, patterns, string lengths and
array sizes; numeric bounds are not expressible in it and are left to the tool layer.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pymanus.errors import ModelOutputError
from pymanus.messages import Message, ToolCall
from pymanus.models.base import PYTHON_SOURCE, ToolDefinition

logger = logging.getLogger("pymanus.models.local")  # one logger for the local-model modules


# Used when a GGUF carries no chat template.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
JSON_FORMAT_INSTRUCTIONS = """# Tools

You can call these tools:
{tools}

Reply with exactly one JSON object and nothing else:
- to call tools: {{"tool_calls": [{{"name": "<tool name>", "arguments": {{<arguments>}}}}]}}
- when the task is done: {{"final_answer": "<your answer to the user>"}}"""
FINAL_TOOL = ToolDefinition(
    name="final_answer",
    description="Give the final answer to the user. Call it only when the task is done.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "minLength": 1, "description": "the complete answer"}},
        "required": ["answer"],
    },
)
"""The pseudo-tool that carries a final answer in the ``native`` format."""


# -- prompt rendering ---------------------------------------------------------------------
def _text_of(message: Message) -> str:
    return message.text + "\n[image omitted]" * len(message.images)  # local packs have no vision


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _envelope(message: Message) -> str:
    if message.tool_calls:
        calls = [{"name": c.name, "arguments": _arguments(c)} for c in message.tool_calls]
        return json.dumps({"tool_calls": calls}, ensure_ascii=False)
    return json.dumps({"final_answer": message.text}, ensure_ascii=False)


def template_messages(messages: Sequence[Message], style: str, tool_role: bool) -> list[dict[str, Any]]:
    """``messages`` as the chat template's dicts; ``tool_role=False`` turns tool results into user turns."""
    rendered: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant" and style == "json":
            rendered.append({"role": "assistant", "content": _envelope(message)})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"type": "function", "function": {"name": c.name, "arguments": _arguments(c)}}
                    for c in message.tool_calls
                ]
            rendered.append(entry)
        elif message.role == "tool" and not tool_role:
            rendered.append({"role": "user", "content": f"Result of tool {message.name}:\n{_text_of(message)}"})
        else:
            rendered.append({"role": message.role, "content": _text_of(message), "name": message.name})
    return rendered


# -- grammar ------------------------------------------------------------------------------
def _relocate_refs(node: Any, prefix: str) -> Any:
    """Copy a schema, pointing local ``$ref``s at its ``$defs`` hoisted under ``prefix``."""
    if isinstance(node, list):
        return [_relocate_refs(item, prefix) for item in node]
    if not isinstance(node, dict):
        return node
    copy = {k: _relocate_refs(v, prefix) for k, v in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str):
        for local in ("#/$defs/", "#/definitions/"):
            if ref.startswith(local):
                copy["$ref"] = f"#/$defs/{prefix}{ref[len(local) :]}"
                break
        else:
            raise ValueError(f"unsupported $ref {ref!r}")
    return copy


def _mark_python_source(node: Any) -> Any:
    """Copy a schema, pointing strings of Python source at the ``pm-code`` rule (see below)."""
    if isinstance(node, list):
        return [_mark_python_source(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "string" and node.get("contentMediaType") == PYTHON_SOURCE:
        return {"$ref": f"#/$defs/{_CODE_RULE}"}
    return {k: _mark_python_source(v) for k, v in node.items()}


# Strings of Python source (``PYTHON_SOURCE``: the ``python`` tool's code) get their own rule:
# a JSON string whose content is Python as far as a context-free grammar can tell. It rules out
# only what Python itself rejects, so those slips cannot be sampled and valid code always can:
# * brackets close in order and by kind (``print(dict(totals)}`` cannot be written);
# * a quoted string is closed; backslash escapes inside it are kept whole, a backslash before a
#   line break included (a continuation inside the string, as in ``"""\``);
# * outside strings and comments a backslash only ends a line (an explicit line continuation):
#   Python accepts no other character after it there.
# So the code cannot end inside a string or a bracket either: a model that forgot to escape a
# ``"`` in ``print(f'{"mean": ...}')`` cannot end the JSON string there.
# No character Python accepts is banned: ``;`` separates statements as in any Python. Small
# models also chain compound statements with it (``import csv; with open(f) as h: ...``), a
# SyntaxError; splitting such lines is a repair of the code (the python tool's code_repair),
# not a rule of the grammar.
# The rules read the JSON text: a line break in the code is ``\n`` there, a ``"`` is ``\"``, a
# backslash ``\\``. A ``\u`` escape spells a character with no plainer spelling there: a
# non-ASCII one, or in strings and comments a control character other than a line break
# (``'\u001b[1m'``). ASCII written as ``\u0022``, ``\u0028``... would carry a quote or a bracket
# past the rules above, and has a plain spelling. JSON's ``\b`` and ``\f`` are left out: in code
# they are a Python escape typed with one backslash too few (``r'\bword'``); the characters
# themselves are ``\u0008`` and ``\u000c``.
_CODE_RULE = "pm-code"
_CODE_PLACEHOLDER = {"const": "pm-code"}
_Q = "'"  # a single quote, spliced in to keep the rules below readable
_CODE_GRAMMAR = (
    r'pm-code ::= "\"" pm-item* pm-comment? "\""',
    r"pm-item ::= pm-plain | pm-nl | pm-cont | pm-sq | pm-dq | pm-tsq | pm-tdq | pm-comment pm-nl"
    r' | "(" pm-item* ")" | "[" pm-item* "]" | "{" pm-item* "}"',
    rf'pm-plain ::= [^"\\#()\[\]{{}}{_Q}\x00-\x1F] | "\\t" | "\\/" | pm-uni',
    # a CR LF is two of them, as Python reads it: one line break
    r'pm-nl ::= "\\n" | "\\r"',
    r'pm-cont ::= "\\\\" pm-nl',
    r"pm-hex ::= [0-9a-fA-F]",
    # a non-ASCII character (U+0080 and above)
    r'pm-uni ::= "\\u" ([1-9a-fA-F] pm-hex pm-hex pm-hex | "0" [1-9a-fA-F] pm-hex pm-hex | "00" [89a-fA-F] pm-hex)',
    # a control character other than NUL and the line breaks (U+000A, U+000D)
    r'pm-ctl ::= "\\u00" ("0" [1-9bcefBCEF] | "1" pm-hex | "7" [fF])',
    # a character of a string other than a quote, a backslash or a line break
    rf'pm-sch ::= [^"\\{_Q}\x00-\x1F] | "\\t" | "\\/" | pm-uni | pm-ctl',
    # an escape inside a string: the backslash and the character it escapes
    rf'pm-sesc ::= "\\\\" (pm-sch | "{_Q}" | "\\\"" | "\\\\" | pm-nl)',
    # A line break inside a one-line string is allowed: it is JSON's \n meant as Python's, which
    # code_repair writes back as an escape. Forbidden, small models drop the \n they meant
    # ("''.join(lines)" for "'\\n'.join(lines)").
    rf'pm-sq ::= "{_Q}" (pm-sch | "\\\"" | pm-sesc | pm-nl)* "{_Q}"',
    rf'pm-dq ::= "\\\"" (pm-sch | "{_Q}" | pm-sesc | pm-nl)* "\\\""',
    r'pm-tsany ::= pm-sch | "\\\"" | pm-sesc | pm-nl',
    rf'pm-tsq ::= "{_Q * 3}" (pm-tsany | "{_Q}" pm-tsany | "{_Q * 2}" pm-tsany)* "{_Q * 3}"',
    rf'pm-tdany ::= pm-sch | "{_Q}" | pm-sesc | pm-nl',
    r'pm-tdq ::= "\\\"\\\"\\\"" (pm-tdany | "\\\"" pm-tdany | "\\\"\\\"" pm-tdany)* "\\\"\\\"\\\""',
    # a comment runs to the end of its line
    rf'pm-comment ::= "#" (pm-sch | "{_Q}" | "\\\"" | "\\\\")*',
)


def _with_code_rule(rules: list[str]) -> list[str]:
    """Replace the placeholder rule of Python source strings by the real one."""
    kept = [rule for rule in rules if not rule.startswith(f"{_CODE_RULE} ::= ")]
    return kept + list(_CODE_GRAMMAR) if len(kept) < len(rules) else kept


def _arguments_schema(tool: ToolDefinition, index: int, defs: dict[str, Any]) -> dict[str, Any]:
    """The tool's parameter schema, made embeddable; a generic object if the grammar can't express it."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    prefix = f"t{index}-"
    try:
        own = {**tool.parameters.get("definitions", {}), **tool.parameters.get("$defs", {})}
        hoisted = {prefix + name: _mark_python_source(_relocate_refs(sub, prefix)) for name, sub in own.items()}
        top = {k: v for k, v in tool.parameters.items() if k not in ("$defs", "definitions")}
        schema = _mark_python_source(_relocate_refs(top, prefix))
        hoisted[_CODE_RULE] = _CODE_PLACEHOLDER
        json_schema_to_gbnf(json.dumps({**schema, "$defs": hoisted}))  # fails on what it cannot express
    except Exception as exc:
        logger.warning(
            "tool %s: schema not expressible as a grammar (%s); constraining to a JSON object", tool.name, exc
        )
        return {"type": "object"}
    defs.update(hoisted)
    return schema


def _canonical_spacing(gbnf: str) -> str:
    """Force json.dumps separators (``", "``, ``": "``) and no other whitespace."""
    gbnf = gbnf.replace('":" space', '": "').replace('"," space', '", "')
    return gbnf.replace('space ::= " "?', 'space ::= ""')


def build_grammar(
    tools: Sequence[ToolDefinition], style: Literal["native", "json"], max_calls: int, text_answer: bool = False
) -> str:
    """The GBNF grammar whose sentences are the valid outputs for ``tools`` in ``style``.

    ``text_answer`` (native only) also allows a plain-text answer that cannot start like a call.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    defs: dict[str, Any] = {}
    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": _arguments_schema(tool, i, defs)},
            "required": ["name", "arguments"],
        }
        for i, tool in enumerate(tools)
    ]
    if style == "json":
        envelope = {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "tool_calls": {"type": "array", "items": {"oneOf": calls}, "minItems": 1, "maxItems": max_calls}
                    },
                    "required": ["tool_calls"],
                },
                {
                    "type": "object",
                    "properties": {"final_answer": {"type": "string", "minLength": 1}},
                    "required": ["final_answer"],
                },
            ],
            "$defs": defs,
        }
        return "\n".join(_with_code_rule(_canonical_spacing(json_schema_to_gbnf(json.dumps(envelope))).splitlines()))
    final = {
        "type": "object",
        "properties": {"name": {"const": FINAL_TOOL.name}, "arguments": FINAL_TOOL.parameters},
        "required": ["name", "arguments"],
    }
    pseudo = FINAL_TOOL.name not in {tool.name for tool in tools}
    alternatives = {**defs, "pm-tool": {"oneOf": calls}, "pm-final": final}
    schema = {"oneOf": [{"$ref": "#/$defs/pm-tool"}, {"$ref": "#/$defs/pm-final"}], "$defs": alternatives}
    rules = _with_code_rule(_canonical_spacing(json_schema_to_gbnf(json.dumps(schema))).splitlines())
    block = r'"<tool_call>\n" pm-tool "\n</tool_call>"'
    repeated = "".join(rf' ("\n" {block}' for _ in range(max_calls - 1)) + ")?" * (max_calls - 1)
    return "\n".join(
        [
            "root ::= pm-calls"
            + (r' | "<tool_call>\n" pm-final "\n</tool_call>"' if pseudo else "")
            + (" | pm-answer" if text_answer else ""),
            *([r"pm-answer ::= [^<{[`\x00-\x20] [^\x00]*"] if text_answer else []),
            f"pm-calls ::= {block}{repeated}",
            *(rule for rule in rules if not rule.startswith("root ::= ")),
        ]
    )


# -- output parsing -----------------------------------------------------------------------
_DECODER = json.JSONDecoder(strict=False)  # the grammar's strings may hold raw control characters
_CALL_OPEN, _CALL_CLOSE = "<tool_call>\n", "\n</tool_call>"
ANSWER_PREFIX = {
    "json": '{"final_answer": "',
    "native": _CALL_OPEN + '{"name": "final_answer", "arguments": {"answer": "',
}
"""What each style's output starts with when it is a final answer; the answer text follows."""


def _new_call(name: str, arguments: Any, known: set[str]) -> ToolCall:
    if name not in known:  # unreachable under the grammar; checked so a bug never reaches a tool
        raise ModelOutputError(f"local model called unknown tool {name!r}")
    arguments = _without_result_tags(arguments)
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=json.dumps(arguments, ensure_ascii=False))


_RESULT_TAGS = re.compile(r"</?tool_response>\n?")


def _without_result_tags(value: Any) -> Any:
    """Drop the template's ``<tool_response>`` tags from argument strings.

    Qwen's template wraps every tool result in them, and the small models copy them, tags
    and all, into the files they write. A real argument never holds a chat template's tags.
    """
    if isinstance(value, str):
        return _RESULT_TAGS.sub("", value)
    if isinstance(value, list):
        return [_without_result_tags(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_result_tags(item) for key, item in value.items()}
    return value


def _native_calls(text: str) -> list[dict[str, Any]]:
    """The complete ``<tool_call>`` blocks of ``text``; one cut off by max_tokens is dropped."""
    return _complete_blocks(text)[0]


def _complete_blocks(text: str) -> tuple[list[dict[str, Any]], int]:
    """The complete ``<tool_call>`` blocks at the start of ``text``, and where the rest begins."""
    calls: list[dict[str, Any]] = []
    pos = end = 0
    while text.startswith(_CALL_OPEN, pos):
        try:
            obj, pos = _DECODER.raw_decode(text, pos + len(_CALL_OPEN))
        except ValueError:
            break
        if not text.startswith(_CALL_CLOSE, pos):
            break
        calls.append(obj)
        pos = end = pos + len(_CALL_CLOSE) + 1  # the "\n" between blocks
    return calls, end


def closed_inside_call(text: str) -> bool:
    """Whether ``text`` (native style) has a call's closing tag where the grammar still held the call
    open: the model meant to end it, and all it can write until max_tokens is filler.

    A model that leaves a bracket open in its code (a ``print(`` never closed) and then writes
    the call's end (``\\"}}</tool_call>``) writes it into the code string, which the grammar keeps
    open until its brackets match: what follows is filler up to max_tokens.
    """
    closing = _CALL_CLOSE.strip()
    return closing in text and text.find(closing, _complete_blocks(text)[1]) >= 0


def json_string_prefix(raw: str) -> str:
    """Decode the complete part of a JSON string body (after its opening quote) that may be cut off."""
    end, i = len(raw), 0
    while i < len(raw):
        if raw[i] == "\\":
            step = 6 if raw[i + 1 : i + 2] == "u" else 2
            if i + step > len(raw):
                end = i
                break
            i += step
        elif raw[i] == '"':
            end = i
            break
        else:
            i += 1
    try:
        return str(_DECODER.decode('"' + raw[:end] + '"'))
    except ValueError:
        return ""


def parse_output(text: str, style: Literal["native", "json"] | None, tools: Sequence[ToolDefinition]) -> Message:
    """Turn the generated text into an assistant message (tool calls or a final answer)."""
    if style is None:
        return Message.assistant(text.strip())
    known = {tool.name for tool in tools}
    try:
        if style == "json":
            envelope = _DECODER.decode(text)
            if "final_answer" in envelope:
                return Message.assistant(str(envelope["final_answer"]).strip())
            objects = envelope["tool_calls"]
        elif not text.startswith(_CALL_OPEN):
            return Message.assistant(text.strip())  # the grammar's plain-text answer
        else:
            objects = _native_calls(text)
            if len(objects) == 1 and objects[0]["name"] == FINAL_TOOL.name and FINAL_TOOL.name not in known:
                return Message.assistant(str(objects[0]["arguments"]["answer"]).strip())
    except ValueError:
        objects = []
    if objects:
        return Message.assistant(tool_calls=[_new_call(obj["name"], obj["arguments"], known) for obj in objects])
    prefix = ANSWER_PREFIX[style]
    if text.startswith(prefix):  # an answer cut off by max_tokens
        return Message.assistant(json_string_prefix(text[len(prefix) :]).strip())
    raise ModelOutputError(f"local model output ended inside a tool call; raise max_tokens (it ended: {text[-160:]!r})")

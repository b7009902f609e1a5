"""The grammar of Python source in tool calls, run by llama.cpp's own grammar engine.

Each text is fed token by token (the smallest pack's vocabulary) to a grammar sampler; it is
accepted when every token is allowed and the grammar may end after the last one. The grammar
rules out only code Python itself rejects: every valid program is accepted, ``;`` included.
"""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from helpers.local_models import SMALL, requires_model
from pymanus.local_aids.code_repair import repair
from pymanus.messages import Message
from pymanus.models import packs
from pymanus.models.base import PYTHON_SOURCE, ModelSettings, ToolDefinition
from pymanus.models.local import LocalModel
from pymanus.models.local_format import _CODE_GRAMMAR, build_grammar

pytestmark = requires_model


class GrammarProbe:
    """Whether llama.cpp's grammar sampler accepts a whole text."""

    def __init__(self, llm: Any, grammar: str) -> None:
        import llama_cpp

        self.c, self.llm = llama_cpp, llm
        self.vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self.grammar = grammar

    def accepts(self, text: str) -> bool:
        c = self.c
        sampler = c.llama_sampler_init_grammar(self.vocab, self.grammar.encode(), b"root")
        assert sampler, "llama.cpp rejected the grammar"
        try:
            for token in [*self.llm.tokenize(text.encode(), add_bos=False, special=False), self.llm.token_eos()]:
                cell = (c.llama_token_data * 1)(c.llama_token_data(id=token, logit=0.0, p=0.0))
                array = c.llama_token_data_array(data=cell, size=1, selected=-1, sorted=False)
                c.llama_sampler_apply(sampler, ctypes.byref(array))
                if math.isinf(cell[0].logit):
                    return False
                if token != self.llm.token_eos():
                    c.llama_sampler_accept(sampler, token)
            return True
        finally:
            c.llama_sampler_free(sampler)


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    import llama_cpp

    llm = llama_cpp.Llama(str(packs.pack_path(SMALL)), vocab_only=True, verbose=False)
    yield llm
    llm.close()


@pytest.fixture(scope="module")
def probe(vocab: Any) -> GrammarProbe:
    return GrammarProbe(vocab, "\n".join(["root ::= pm-code", *_CODE_GRAMMAR]))


VALID = [
    "",
    "print('hi')",
    "import os, re\nrows = []\nfor folder, _, names in os.walk('.'):\n    for name in sorted(names):\n"
    "        rows.append(os.path.join(folder, name))\nprint('\\n'.join(rows))",
    'def slugify(title: str) -> str:\n    """Don\'t keep (brackets] or quotes"."""\n'
    "    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')",
    "totals = {r: round(t, 2) for r, t in sums.items()}  # per region (rounded\nprint(f'{totals[\"x\"]:.2f}')",
    "text = '''first line\nit's the second\n'''\nprint(text)",
    "data = [\n    1,\n    2,\n]\nx = (1 +\n     2)",
    'print("a;b", \'c"d\', "it\'s", "tab\\there", "back\\\\slash")',
    "python -m unittest test_stats",
    "# only a comment",
    "s = 'caf\u00e9 \\u00e9'",
    # statements separated by semicolons
    "x = 1; y = 2; print(x + y)",
    "import os; print(os.getcwd());",
    "for n in range(3): total = n; print(total)",
    "x = 1  # set x; then (maybe) more",
    # explicit line continuations, outside strings and inside them
    "for name in names:\\\n    print(name)",
    "total = 1 + \\\n    2\nif total > 2 and \\\n        total < 5:\n    print(total)",
    "row = [1,\\\n       2]",
    "s = 'one \\\ntwo'",
    'text = textwrap.dedent("""\\\n    body\n""")',
    # every line break Python reads: LF, CR LF and a lone CR
    "print(1)\r\nprint(2)\rprint(3)\n",
    # characters JSON spells only as \u escapes: non-ASCII ones, and control characters in strings
    "caf\u00e9 = 1\nprint(caf\u00e9, '\U0001f600')",
    "print('\x1b[1mbold\x1b[0m')  # \x1b in a comment too",
]

INVALID = [
    ("print(dict(totals)}", "a bracket closed by the wrong kind"),
    ("f.write('from . import cli\n", "a quoted string never closed"),
    ("print(f'{", "code ending inside a string and a bracket"),
    ("rows = [1, 2", "an unclosed bracket"),
    ("x = 1)", "a closing bracket with nothing open"),
    ("x = 1 \\ + 2", "a backslash outside a string that does not end its line"),
    ("print('a')\\nprint('b')", "a line break escaped twice between statements"),
    ("x = 1 \\", "a line continuation with no line after it"),
    ("print('\\')", "a string whose closing quote is escaped"),
]


# JSON's \n typed for Python's inside a one-line string: sampled, and run as meant (see code_repair).
REPAIRED = [
    ("print('\n'.join(str(n * n) for n in range(1, 4)))", "1\n4\n9\n"),
    ('f = "a\nb"\nprint(f)', "a\nb\n"),
]


@pytest.mark.parametrize(("code", "printed"), REPAIRED)
def test_a_line_break_meant_as_an_escape_is_sampled_and_repaired(
    probe: GrammarProbe, code: str, printed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert probe.accepts(json.dumps(code)), code
    repaired, note = repair(code)
    assert note is not None and "line breaks inside string literals" in note
    exec(compile(repaired, "<code>", "exec"), {})
    assert capsys.readouterr().out == printed


@pytest.mark.parametrize("code", VALID)
def test_valid_python_is_accepted(probe: GrammarProbe, code: str) -> None:
    if not code.startswith("python -m"):  # a terminal command the python tool runs as one
        compile(code, "<code>", "exec")
    assert probe.accepts(json.dumps(code)), code


@pytest.mark.parametrize(("code", "why"), INVALID)
def test_only_code_python_rejects_cannot_be_sampled(probe: GrammarProbe, code: str, why: str) -> None:
    with pytest.raises(SyntaxError):
        compile(code, "<code>", "exec")
    assert probe.accepts(json.dumps("print(1)"))
    assert not probe.accepts(json.dumps(code)), why


# JSON texts the rules could not see through: an ASCII quote, bracket or line break written as a
# \u escape, a NUL, and JSON's \b (a regex's \b typed with one backslash too few).
REFUSED_SPELLINGS = [
    ('"print(\\u0022hi)"', "a quote spelled as an escape would open a string the rules do not see"),
    ('"print\\u0028 1"', "a bracket spelled as an escape would never be closed"),
    ('"x = 1  # note\\u000aprint((("', "a line break spelled as an escape would end a comment unseen"),
    ("\"s = 'a\\u0000b'\"", "a NUL, which Python refuses anywhere in source"),
    ("\"re.findall(r'\\bword', text)\"", "JSON's backspace where a regex's \\b was meant"),
]


@pytest.mark.parametrize(("text", "why"), REFUSED_SPELLINGS)
def test_escapes_that_would_slip_past_the_rules_are_refused(probe: GrammarProbe, text: str, why: str) -> None:
    assert not probe.accepts(text), why


@pytest.mark.parametrize(
    ("refused", "accepted"),
    [
        ('"print\\u0028 1)"', '"print( 1)"'),
        ('"x = \\u0027a\\u0027"', "\"x = 'a'\""),
        ("\"s = '\\b'\"", "\"s = '\\u0008'\""),
        ("\"s = '\\f'\"", "\"s = '\\u000c'\""),
    ],
)
def test_every_character_keeps_a_spelling(probe: GrammarProbe, refused: str, accepted: str) -> None:
    assert json.loads(refused) == json.loads(accepted)  # the same code, spelled two ways
    assert not probe.accepts(refused)
    assert probe.accepts(accepted)


PYTHON = ToolDefinition(
    name="python",
    description="Run Python code.",
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "contentMediaType": PYTHON_SOURCE}},
        "required": ["code"],
    },
)


def _call_text(style: str, code: str) -> str:
    call = {"name": PYTHON.name, "arguments": {"code": code}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>" if style == "native" else json.dumps({"tool_calls": [call]})


@pytest.mark.parametrize("style", ["native", "json"])
def test_a_whole_tool_call_grammar_uses_the_code_rule(vocab: Any, style: Literal["native", "json"]) -> None:
    whole = GrammarProbe(vocab, build_grammar([PYTHON], style, 1))
    assert whole.accepts(_call_text(style, "x = 1; y = 2; print(x + y)"))
    assert whole.accepts(_call_text(style, "for name in names:\\\n    print(name)"))
    assert not whole.accepts(_call_text(style, "print(dict(totals)}"))
    assert not whole.accepts(_call_text(style, "rows = [1, 2"))


@pytest.mark.local_model
async def test_a_real_model_writes_the_semicolons_it_is_asked_for(probe: GrammarProbe) -> None:
    model = LocalModel.from_spec(SMALL)
    prompt = "Call python with this exact code: x = 1; y = 2; print(x + y)"
    codes = []
    for seed, temperature in ((1, 0.0), (2, 0.8), (3, 0.8)):
        settings = ModelSettings(seed=seed, temperature=temperature, max_tokens=200)
        response = await model.request([Message.user(prompt)], [PYTHON], settings)
        codes += [json.loads(call.arguments)["code"] for call in response.message.tool_calls]
    assert all(probe.accepts(json.dumps(code)) for code in codes), codes  # sampled within the rule
    assert any(";" in code for code in codes), codes  # copied as asked (the greedy draw does)

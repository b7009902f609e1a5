"""The grammar of Python source in tool calls, run by llama.cpp's own grammar engine.

Each text is fed token by token (the smallest pack's vocabulary) to a grammar sampler; it is
accepted when every token is allowed and the grammar may end after the last one.
"""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from helpers.local_models import SMALL, requires_model
from pymanus.models import packs
from pymanus.tools.builtin.code_repair import repair

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
def probe() -> Iterator[GrammarProbe]:
    import llama_cpp

    from pymanus.models.local_format import _CODE_GRAMMAR

    llm = llama_cpp.Llama(str(packs.pack_path(SMALL)), vocab_only=True, verbose=False)
    yield GrammarProbe(llm, "\n".join(["root ::= pm-code", *_CODE_GRAMMAR]))
    llm.close()


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
]

INVALID = [
    ("print(dict(totals)}", "a bracket closed by the wrong kind"),
    ("f.write('from . import cli\n", "a quoted string never closed"),
    ("import os; print(os.getcwd())", "a semicolon chaining statements"),
    ("print(f'{", "code ending inside a string and a bracket"),
    ("rows = [1, 2", "an unclosed bracket"),
    ("x = 1)", "a closing bracket with nothing open"),
    ('print("hi")\r', "a bare carriage return"),
    ("for name in names:\\\n    print(name)", "a backslash continuing a line (meant as a line break)"),
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
def test_slips_small_models_make_cannot_be_sampled(probe: GrammarProbe, code: str, why: str) -> None:
    assert probe.accepts(json.dumps("print(1)"))
    assert not probe.accepts(json.dumps(code)), why

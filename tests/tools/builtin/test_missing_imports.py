"""Standard-library modules a module uses and never imports: the file tools add the imports, and
code that writes such a file itself gets a warning naming them."""

from __future__ import annotations

from typing import Any

import pytest

from helpers.file_cases import call
from pymanus.sandbox import PathJail
from pymanus.tools import Tool
from pymanus.tools.builtin.file_formats import format_warning, unimported_modules
from pymanus.tools.builtin.missing_imports import with_missing_imports

SLUGIFY = "def slugify(title: str) -> str:\n    title = title.lower()\n    return re.sub(r'[^a-z0-9]+', '-', title)\n"
TEXTUTILS = '"""Text helpers."""\n\n\ndef word_count(text: str) -> int:\n    return len(text.split())\n'


async def test_write_file_and_edit_file_add_the_import_a_module_lacks(tools: dict[str, Tool], jail: PathJail) -> None:
    # add_function, runs 222, 224 and 225: slugify called re.sub, textutils.py never imported re, and
    # the 1.5B's edits that tried to add the import were refused as invalid Python.
    written = await call(tools["write_file"], path="slug.py", content=SLUGIFY)
    assert (jail.root / "slug.py").read_text() == f"import re\n\n\n{SLUGIFY}"
    assert written.text.endswith(
        "Note: slug.py uses re but did not import it, which would raise NameError, so `import re` was added at "
        "the top (the file's lines after it moved down by 3)."
    )
    assert "Warning" not in written.text
    (jail.root / "textutils.py").write_text(TEXTUTILS)
    edited = await call(tools["edit_file"], path="textutils.py", old_text="", new_text=f"\n\n{SLUGIFY}")
    assert (jail.root / "textutils.py").read_text() == (
        '"""Text helpers."""\n\n\nimport re\n\n\ndef word_count(text: str) -> int:\n    return len(text.split())\n'
        f"\n\n{SLUGIFY}"
    )
    assert "`import re` was added at the top (the file's lines after it moved down by 3)" in edited.text
    namespace: dict[str, Any] = {}
    exec((jail.root / "textutils.py").read_text(), namespace)
    assert namespace["slugify"]("Hello, World!") == "hello-world-"  # no NameError


def test_the_imports_go_after_the_docstring_and_the_imports_a_module_has() -> None:
    code = '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\nx = json.dumps(os.sep) + re.escape("a")'
    assert with_missing_imports(code) == (
        '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nimport json\nimport re\n\n'
        'x = json.dumps(os.sep) + re.escape("a")',
        ["json", "re"],
    )
    assert with_missing_imports("#!/usr/bin/env python\nx = re.compile('a')\n") == (
        "#!/usr/bin/env python\nimport re\n\n\nx = re.compile('a')\n",
        ["re"],
    )
    assert with_missing_imports("x = re.compile('a'\n") == ("x = re.compile('a'\n", [])  # does not parse


def test_a_file_that_code_wrote_without_the_import_gets_a_warning() -> None:
    # The python tool's code writes files as they are: its notes on the workspace warn instead.
    assert format_warning("textutils.py", SLUGIFY) == (
        "Warning: textutils.py uses re (line 3) but never imports it, so calling that code raises NameError: "
        "add `import re` at the top of the file. Fix it before using the file."
    )


@pytest.mark.parametrize(
    "code",
    [
        "import re\n\ndef f(x):\n    return re.sub('a', 'b', x)\n",
        "from os import path as os\nprint(os.sep)\n",  # bound by an import under that name
        "import os.path\nprint(os.path.join('a', 'b'))\n",
        "def load(json):\n    return json.loads('1')\n",  # a parameter
        "for time in range(3):\n    print(time.real)\n",  # a loop variable
        "try:\n    pass\nexcept ValueError as types:\n    print(types.args)\n",
        "class string:\n    x = 1\n\nprint(string.x)\n",  # a definition
        "print(config.value)\n",  # not a standard-library module: some other name error, not this one
        "from tkinter import *\nprint(tkinter.TkVersion, os.sep)\n",  # a star import may bind any name
    ],
)
def test_names_the_module_binds_or_that_are_no_module_are_left_alone(code: str) -> None:
    assert unimported_modules("m.py", code) is None
    assert with_missing_imports(code) == (code, [])


def test_every_unimported_module_is_named_from_its_first_use() -> None:
    problem = unimported_modules("m.py", "x = 1\nprint(os.sep)\nprint(math.pi, os.name)\n")
    assert problem is not None and problem.startswith("m.py uses os, math (line 2) but never imports them")
    assert "add `import os; import math`" in problem


async def test_a_test_that_imports_its_module_from_the_wrong_folder_gets_the_full_import(
    tools: dict[str, Tool], jail: PathJail
) -> None:
    # project_layout run 230: `from .cli import main` in weather/tests/test_cli.py; the note said to write
    # weather/tests/cli.py, when the module was weather/cli.py.
    await call(tools["write_file"], path="weather/cli.py", content="def main():\n    print('ready')\n")
    test = "from .cli import main\n\n\ndef test_main():\n    main()\n"
    written = await call(tools["write_file"], path="weather/tests/test_cli.py", content=test)
    assert written.text.endswith(
        "Note: weather/tests/test_cli.py imports main from weather/tests/cli.py, which is not there; the module "
        "is weather/cli.py, so import it by its full name: `from weather.cli import main`."
    )
    whole = await call(tools["write_file"], path="weather/tests/test_all.py", content="from . import cli\n")
    assert whole.text.endswith("so import it by its full name: `import weather.cli`.")

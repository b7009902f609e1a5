"""A module written with a standard-library module it uses and never imports gets a warning naming the import."""

from __future__ import annotations

import pytest

from helpers.file_cases import call
from pymanus.sandbox import PathJail
from pymanus.tools import Tool
from pymanus.tools.builtin.file_formats import unimported_modules

SLUGIFY = "def slugify(title: str) -> str:\n    title = title.lower()\n    return re.sub(r'[^a-z0-9]+', '-', title)\n"


async def test_a_module_using_re_without_importing_it_gets_a_warning(tools: dict[str, Tool], jail: PathJail) -> None:
    # add_function, runs 222 and 224: slugify called re.sub, and textutils.py never imported re.
    written = await call(tools["write_file"], path="textutils.py", content=SLUGIFY)
    assert written.text.endswith(
        "Warning: textutils.py uses re (line 3) but never imports it, so calling that code raises NameError: "
        "add `import re` at the top of the file. Fix it before using the file."
    )
    fixed = await call(tools["edit_file"], path="textutils.py", old_text="", new_text="import re\n", insert_line=0)
    assert "Warning" not in fixed.text, fixed.text


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


def test_every_unimported_module_is_named_from_its_first_use() -> None:
    problem = unimported_modules("m.py", "x = 1\nprint(os.sep)\nprint(math.pi, os.name)\n")
    assert problem is not None and problem.startswith("m.py uses os, math (line 2) but never imports them")
    assert "add `import os; import math`" in problem

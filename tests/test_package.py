"""The package's public names, and what importing them loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pymanus

HEAVY = ("openai", "aiohttp", "httpx2", "rich", "typer", "html2text", "llama_cpp")


def loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``statement``."""
    source = str(Path(pymanus.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    probe = f"{statement}\nimport json, sys\nprint(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))"
    output = subprocess.check_output([sys.executable, "-c", probe], env=env, text=True)
    return json.loads(output)


def test_bare_import_loads_neither_asyncio_nor_pydantic() -> None:
    assert loaded_after("import pymanus", ("asyncio", "pydantic", *HEAVY)) == []


def test_importing_the_agent_api_leaves_the_http_and_cli_stacks_alone() -> None:
    statement = "from pymanus import Agent, tool, Toolset"
    assert loaded_after(statement, ("asyncio", "pydantic")) == ["asyncio", "pydantic"]
    assert loaded_after(statement, HEAVY) == []


@pytest.mark.parametrize("name", pymanus.__all__)
def test_every_public_name_is_importable(name: str) -> None:
    value = getattr(pymanus, name)
    assert value is not None
    assert name in dir(pymanus)


def test_star_import_and_unknown_names() -> None:
    namespace: dict[str, object] = {}
    exec("from pymanus import *", namespace)
    assert set(pymanus.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        pymanus.Agnet  # noqa: B018
    with pytest.raises(ImportError):
        exec("from pymanus import Agnet", {})

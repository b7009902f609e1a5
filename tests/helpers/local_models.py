"""The smallest pack for tests that run real llama.cpp, and the mark that skips them without it."""

from __future__ import annotations

import pytest

from pymanus.models import packs
from pymanus.models.base import ToolDefinition

SMALL = "smollm2-135m"

ADD = ToolDefinition(  # the simplest tool a small model can call
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def llama_ready() -> bool:
    """Whether llama-cpp-python and the smallest pack are installed."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return not packs.pack_status(SMALL).missing


requires_model = pytest.mark.skipif(not llama_ready(), reason="needs llama-cpp-python and the smollm2-135m pack")

"""JSON Schema from type hints and docstrings, and lenient argument validation."""

from __future__ import annotations

import dataclasses
import enum
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from pymanus import ToolContext, tool
from pymanus.errors import ToolDefinitionError
from pymanus.tools.tool import ArgumentsError


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    height: float


class Person(TypedDict):
    name: str
    age: int


def test_scalars_defaults_optional_and_google_docstring() -> None:
    @tool
    def search(query: str, limit: int = 10, exact: bool = False, score: float | None = None) -> str:
        """Search the notes.

        Longer explanation.

        Args:
            query: words to look for
            limit: most results to return
            exact: match whole words only
            score: minimum score
        """
        return query

    schema = search.parameters
    assert search.description == "Search the notes.\n\nLonger explanation."
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for"}
    assert props["limit"] == {"type": "integer", "default": 10, "description": "most results to return"}
    assert props["exact"]["type"] == "boolean"
    assert props["score"]["anyOf"] == [{"type": "number"}, {"type": "null"}]
    assert schema["additionalProperties"] is False
    assert "title" not in schema and "title" not in props["query"]


def test_numpy_and_sphinx_docstrings() -> None:
    @tool
    def numpy_style(a: int) -> int:
        """Double a number.

        Parameters
        ----------
        a : int
            the number
        """
        return 2 * a

    @tool
    def sphinx_style(a: int) -> int:
        """Triple a number.

        :param a: the number to triple
        """
        return 3 * a

    assert numpy_style.parameters["properties"]["a"]["description"] == "the number"
    assert sphinx_style.parameters["properties"]["a"]["description"] == "the number to triple"
    assert sphinx_style.description == "Triple a number."


def test_literal_enum_containers_and_nested_types() -> None:
    @tool
    def paint(
        mode: Literal["fast", "slow"],
        color: Color,
        tags: list[str],
        weights: dict[str, float],
        pair: tuple[int, str],
        point: Point,
        box: Box,
        person: Person,
    ) -> str:
        """Paint."""
        return "ok"

    props = paint.parameters["properties"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"]["additionalProperties"] == {"type": "number"}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    defs = paint.parameters["$defs"]
    assert defs["Color"]["enum"] == ["red", "blue"]
    assert set(defs["Point"]["properties"]) == {"x", "y"}
    assert set(defs["Box"]["required"]) == {"width", "height"}
    assert set(defs["Person"]["required"]) == {"name", "age"}

    args = paint.validate(
        {
            "mode": "fast",
            "color": "red",
            "tags": ["a"],
            "weights": {"k": "1.5"},
            "pair": [1, "x"],
            "point": {"x": "3"},
            "box": {"width": 1, "height": 2},
            "person": {"name": "Ann", "age": "40"},
        }
    )
    assert args["color"] is Color.RED
    assert args["point"] == Point(x=3, y=0)
    assert args["box"] == Box(width=1.0, height=2.0)
    assert args["person"] == {"name": "Ann", "age": 40}
    assert args["weights"] == {"k": 1.5}


def test_argument_named_title_is_kept() -> None:
    @tool
    def note(title: str) -> str:
        """Make a note."""
        return title

    assert note.parameters["properties"]["title"]["type"] == "string"


def test_context_parameter_is_not_in_schema() -> None:
    @tool
    def whoami(ctx: ToolContext, prefix: str) -> str:
        """Say the run id."""
        return prefix + ctx.run_id

    assert list(whoami.parameters["properties"]) == ["prefix"]


def test_var_args_are_refused() -> None:
    def bad(*args: int) -> int:
        return 0

    with pytest.raises(ToolDefinitionError, match=r"\*args"):
        tool(bad)


class Opaque:
    pass


def test_unsupported_type_is_a_definition_error() -> None:
    def bad(x: Opaque) -> None:
        return None

    with pytest.raises(ToolDefinitionError, match="unsupported argument type"):
        tool(bad)


def test_lenient_coercion_and_clear_errors() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.validate('{"a": "123", "b": 1}') == {"a": 123, "b": 1}
    with pytest.raises(ArgumentsError) as missing:
        add.validate("")
    assert "b: Field required" in str(missing.value)

    with pytest.raises(ArgumentsError) as wrong:
        add.validate('{"a": "abc", "b": 1}')
    text = str(wrong.value)
    assert "Invalid arguments for `add`" in text
    assert "- a: Input should be a valid integer" in text
    assert '"abc"' in text
    assert "Expected keys: a (required), b (required)" in text

    with pytest.raises(ArgumentsError, match="not valid JSON"):
        add.validate('{"a": 1, "b": ')
    with pytest.raises(ArgumentsError, match="must be a JSON object, not list"):
        add.validate("[1, 2]")
    with pytest.raises(ArgumentsError, match="c: Extra inputs are not permitted"):
        add.validate({"a": 1, "b": 2, "c": 3})

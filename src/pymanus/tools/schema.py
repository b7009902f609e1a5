"""JSON Schema and argument validation from a Python function's signature.

Type hints become a pydantic model (so Optional, Literal, Enum, containers, nested
models, dataclasses and TypedDicts all work as pydantic knows them); the docstring
(Google, NumPy or Sphinx style) gives the tool description and one description per
argument.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from pymanus.errors import ToolDefinitionError


@dataclass(frozen=True)
class FunctionSignature:
    """What a tool needs to know about the function it wraps."""

    description: str
    arguments_model: type[BaseModel]
    parameters: dict[str, Any]
    context_param: str | None


def describe_function(function: Callable[..., Any], context_type: type, description: str | None) -> FunctionSignature:
    """Build the description, argument model and JSON Schema of ``function``.

    A parameter annotated with ``context_type`` receives the run context and is left
    out of the schema.
    """
    try:
        hints = get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"cannot resolve the type hints of {function.__qualname__}: {exc}") from exc
    doc = docstring_parser.parse(inspect.getdoc(function) or "")
    param_docs = {p.arg_name: p.description or "" for p in doc.params}

    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param in inspect.signature(function).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{function.__qualname__}: *args and **kwargs cannot be described to a model; name each argument"
            )
        annotation = hints.get(param.name, Any)
        if annotation is context_type:
            context_param = param.name
            continue
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name) or None))

    try:
        model = create_model(
            f"{function.__name__}_arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        schema = model.model_json_schema()
    except Exception as exc:
        raise ToolDefinitionError(f"{function.__qualname__}: unsupported argument type: {exc}") from exc

    text = description or "\n\n".join(part for part in (doc.short_description, doc.long_description) if part)
    return FunctionSignature(
        description=text.strip(),
        arguments_model=model,
        parameters=_without_titles(schema),
        context_param=context_param,
    )


def _without_titles(schema: Any, *, is_property_map: bool = False) -> Any:
    """Drop the auto-generated ``title`` keys: they cost prompt tokens and say nothing.

    Keys of a ``properties`` map are argument names, so an argument called ``title``
    survives.
    """
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and not is_property_map and isinstance(value, str):
            continue
        child_is_map = key in ("properties", "$defs", "definitions") and not is_property_map
        cleaned[key] = _without_titles(value, is_property_map=child_is_map)
    return cleaned

"""Tools declared from plain Python functions.

``@tool`` turns a function (sync or async) into a :class:`Tool`: its JSON Schema comes
from the type hints and docstring, its arguments are validated leniently ("123" → 123),
and whatever it returns or raises becomes a :class:`ToolResult` the model can read.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import pydantic_core
from pydantic import BaseModel, Field, ValidationError

from pymanus.errors import ToolError
from pymanus.messages import ContentPart, ImagePart, TextPart
from pymanus.models.base import ToolDefinition
from pymanus.tools.schema import describe_function

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RESULT_CHARS = 20_000
EMPTY_RESULT_NOTE = "(the tool ran and returned no output)"
S = TypeVar("S")


@dataclass
class ToolContext:
    """What a tool may know about the run calling it.

    Declare a parameter of this type in a tool function to receive it; it never
    appears in the tool's schema.
    """

    run_id: str
    step: int = 0
    workspace: Path = field(default_factory=lambda: Path("workspace"))
    deps: Any = None
    """Whatever the application passed as ``Agent(deps=...)``."""
    _stores: dict[type, Any] = field(default_factory=dict, repr=False)
    notify: Callable[[str, dict[str, Any]], None] = field(default=lambda kind, payload: None)
    """Tell the run something happened (``"plan"`` becomes a ``PlanUpdated`` event)."""
    finish_reason: str | None = None
    """Why the model's latest reply ended (``"stop"``, ``"tool_calls"``, ``"length"``...): an answer
    check can tell a reply cut off at the length limit."""

    def store(self, kind: type[S]) -> S:
        """This run's instance of ``kind``, made with ``kind()`` on first use.

        Typed per-run state shared by the tools and extensions of one run (a plan, what
        code has written): each holder defines its own dataclass, so no string keys are
        shared between modules. Two runs never see each other's instances. A store with a
        ``close()`` method is closed when the run ends (:meth:`close_stores`).
        """
        found = self._stores.get(kind)
        if found is None:
            found = self._stores[kind] = kind()
        return found

    def reset_stores(self) -> None:
        """Forget every per-run store (a run that starts its conversation over)."""
        self.close_stores()
        self._stores.clear()

    def close_stores(self) -> None:
        """Close and forget the per-run stores that hold resources (files, watches): those with a ``close()``."""
        for kind, found in list(self._stores.items()):
            close = getattr(found, "close", None)
            if callable(close):
                del self._stores[kind]
                close()


class ToolResult(BaseModel):
    """The observation a tool call produces.

    ``end_run`` lets a tool (such as ``terminate``) end the run once its result is
    recorded; the run's output is then this result's text.
    """

    content: str | list[ContentPart]
    is_error: bool = False
    end_run: Literal["success", "failure"] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, exclude=True)
    """Facts about the call for middleware and logs (never sent to the model): the python
    tool puts the worker's report of an exception here."""

    @property
    def text(self) -> str:
        """The textual part of the result."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed call, described for the model."""
        return cls(content=message, is_error=True)


class ArgumentsError(ToolError):
    """The model's arguments for a tool were not valid JSON or did not fit the schema."""


class _ToolTimeout(BaseException):
    """Raised inside a worker thread to stop a sync tool that ran past its timeout.

    A BaseException so a tool's ``except Exception`` does not swallow it.
    """


class Tool:
    """A function the model can call.

    Calling the ``Tool`` object itself calls the original function, so decorated
    functions stay usable as plain Python.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parallel_safe: bool = True,
        exclusive: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        signature = describe_function(function, ToolContext, description)
        self.function = function
        self.name = name or function.__name__
        self.description = signature.description
        self.parameters = signature.parameters
        self.parallel_safe = parallel_safe
        self.exclusive = exclusive
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_result_chars = max_result_chars
        self._arguments_model = signature.arguments_model
        self._context_param = signature.context_param
        self._is_async = inspect.iscoroutinefunction(function)
        self.definition = ToolDefinition(name=self.name, description=self.description, parameters=self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    # -- arguments ----------------------------------------------------------------------
    def validate(self, arguments: str | dict[str, Any]) -> dict[str, Any]:
        """Parse and validate the model's arguments; raise :class:`ArgumentsError` if bad."""
        if isinstance(arguments, str):
            text = arguments.strip() or "{}"
            try:
                arguments = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ArgumentsError(
                    f"The arguments for `{self.name}` are not valid JSON ({exc.msg} at position {exc.pos}). "
                    f"Send a JSON object with the keys: {self._keys_hint()}."
                ) from None
        if not isinstance(arguments, dict):
            raise ArgumentsError(
                f"The arguments for `{self.name}` must be a JSON object, not {type(arguments).__name__}. "
                f"Expected keys: {self._keys_hint()}."
            )
        try:
            model = self._arguments_model.model_validate(arguments)
        except ValidationError as exc:
            raise ArgumentsError(self._describe_validation_error(exc)) from None
        # Keep nested models as objects (not dicts): the function's hints ask for them.
        return {name: getattr(model, name) for name in type(model).model_fields}

    def _keys_hint(self) -> str:
        properties = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        keys = [f"{k} (required)" if k in required else k for k in properties]
        return ", ".join(keys) or "none"

    def _describe_validation_error(self, exc: ValidationError) -> str:
        lines = [f"Invalid arguments for `{self.name}`:"]
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
            got = error.get("input")
            detail = "" if error["type"] == "missing" else f" (got {json.dumps(got, default=str)[:80]})"
            lines.append(f"- {where}: {error['msg']}{detail}")
        lines.append(f"Call `{self.name}` again with corrected arguments. Expected keys: {self._keys_hint()}.")
        return "\n".join(lines)

    # -- running ------------------------------------------------------------------------
    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Call the function with validated ``arguments``; failures become error results."""
        kwargs = dict(arguments)
        if self._context_param is not None:
            kwargs[self._context_param] = context
        try:
            if self._is_async:
                # Inline in the caller's task: ``wait_for`` would wrap each call in a new task.
                async with asyncio.timeout(self.timeout):
                    value = await self.function(**kwargs)
            else:
                value = await self._run_in_thread(kwargs)
        except TimeoutError:
            return ToolResult.error(
                f"`{self.name}` timed out after {self.timeout:g} s and was stopped. Try a smaller or faster operation."
            )
        except ToolError as exc:
            return ToolResult.error(str(exc) or f"`{self.name}` failed")
        except Exception as exc:
            return ToolResult.error(f"`{self.name}` raised {type(exc).__name__}: {exc}")
        return self._finish(to_tool_result(value))

    async def _run_in_thread(self, kwargs: dict[str, Any]) -> Any:
        """Run a sync tool in its own thread; on timeout raise inside that thread.

        Python cannot kill a thread, but it can raise an exception in one: a tool busy
        in Python code stops at its next bytecode, one blocked in C code when that call
        returns. A dedicated thread (not a pool's) means a late exception can only hit
        a thread that is ending anyway.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if not future.done():
                future.set_result(value) if ok else future.set_exception(value)

        def call() -> None:
            try:
                value = self.function(**kwargs)
            except _ToolTimeout:
                return
            except BaseException as exc:
                loop.call_soon_threadsafe(settle, False, exc)
            else:
                loop.call_soon_threadsafe(settle, True, value)

        worker = threading.Thread(target=call, name=f"tool-{self.name}", daemon=True)
        worker.start()
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            if worker.ident is not None and worker.is_alive():
                import ctypes  # only here: most processes never stop a thread, and ctypes costs memory

                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_ToolTimeout))
            raise

    def _finish(self, result: ToolResult) -> ToolResult:
        """Cut a long text result to the limit (keeping the head) and mark empty ones."""
        if isinstance(result.content, str):
            text = result.content
            if not text.strip():
                return result.model_copy(update={"content": EMPTY_RESULT_NOTE})
            if len(text) > self.max_result_chars:
                kept = text[: self.max_result_chars]
                marker = (
                    f"\n\n[... output truncated: showing the first {self.max_result_chars:,} of "
                    f"{len(text):,} characters ...]"
                )
                return result.model_copy(update={"content": kept + marker})
        return result


def to_tool_result(value: Any) -> ToolResult:
    """Turn a tool function's return value into a :class:`ToolResult`."""
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult(content="")
    if isinstance(value, str):
        return ToolResult(content=value)
    if isinstance(value, TextPart | ImagePart):
        return ToolResult(content=[value])
    if isinstance(value, list) and value and all(isinstance(v, TextPart | ImagePart) for v in value):
        return ToolResult(content=list(value))
    try:
        return ToolResult(content=pydantic_core.to_json(value).decode())
    except pydantic_core.PydanticSerializationError:
        return ToolResult(content=str(value))


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]


@overload
def tool(function: ToolFunction, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    exclusive: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    exclusive: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Declare a tool from a function: ``@tool`` or ``@tool(timeout=10, parallel_safe=False)``.

    Args:
        function: the function to wrap (when used without parentheses).
        name: the tool's name for the model; defaults to the function's name.
        description: overrides the docstring's description.
        parallel_safe: whether calls may run concurrently with other calls of one response.
        exclusive: the tool must be the only call of its response (``terminate``: a run
            must not end before the model has seen the results of its other calls).
        timeout: seconds before a call is stopped (``None``: no limit).
        max_retries: failed calls in a row the run tolerates before it ends in error.
        max_result_chars: text results longer than this are cut, keeping the head.
    """

    def wrap(func: ToolFunction) -> Tool:
        return Tool(
            func,
            name=name,
            description=description,
            parallel_safe=parallel_safe,
            exclusive=exclusive,
            timeout=timeout,
            max_retries=max_retries,
            max_result_chars=max_result_chars,
        )

    return wrap(function) if function is not None else wrap

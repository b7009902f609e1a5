"""Models for tests: answers from a script or from a Python function, no network.

>>> model = ScriptedModel([call("add", a=2, b=40), "The answer is 42."])

Each answer may be a ``str`` (final text), an assistant :class:`Message`, a
:class:`ModelResponse`, a :class:`ToolCall`, a list of tool calls, or an exception
instance, which is raised instead of answering. Usage is estimated from the text, with
one request per call.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from pymanus.errors import ModelError
from pymanus.messages import Message, ToolCall, Usage
from pymanus.models.base import (
    Model,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ToolDefinition,
    callable_tools,
)
from pymanus.models.textcalls import new_call_id

Answer: TypeAlias = str | Message | ModelResponse | ToolCall | list[ToolCall] | BaseException
"""What a test model may answer with."""

FunctionResult: TypeAlias = Answer | Awaitable[Answer] | AsyncIterator[str | ToolCall]
AnswerFunction: TypeAlias = Callable[[list[Message], list[ToolDefinition]], FunctionResult]


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call of ``name`` with ``arguments`` encoded as JSON and a fresh id."""
    return ToolCall(id=new_call_id(), name=name, arguments=json.dumps(arguments))


def to_response(answer: Answer, model: Model, messages: Sequence[Message]) -> ModelResponse:
    """Turn a scripted answer into a :class:`ModelResponse` with estimated usage.

    Raises the answer when it is an exception; a :class:`ModelResponse` keeps its usage
    when it has any.
    """
    if isinstance(answer, BaseException):
        raise answer
    if isinstance(answer, ModelResponse):
        response = answer
    else:
        response = ModelResponse(message=_to_message(answer), model_name=model.name)
    if response.finish_reason is None:
        response.finish_reason = "tool_calls" if response.message.tool_calls else "stop"
    if response.usage == Usage():
        response.usage = _estimate_usage(model, messages, response.message)
    return response


def _to_message(answer: Answer) -> Message:
    if isinstance(answer, str):
        return Message.assistant(answer)
    if isinstance(answer, ToolCall):
        return Message.assistant(tool_calls=[answer])
    if isinstance(answer, Message):
        if answer.role != "assistant":
            raise TypeError(f"a test model can only answer with an assistant message, not {answer.role!r}")
        return answer
    if isinstance(answer, list) and all(isinstance(item, ToolCall) for item in answer):
        return Message.assistant(tool_calls=list(answer))
    raise TypeError(f"unsupported test model answer: {answer!r}")


def _estimate_usage(model: Model, messages: Sequence[Message], answer: Message) -> Usage:
    from pymanus.context.tokens import MESSAGE_OVERHEAD_TOKENS, estimate_message_tokens

    return Usage(
        prompt_tokens=model.count_tokens(messages),
        completion_tokens=max(estimate_message_tokens(answer) - MESSAGE_OVERHEAD_TOKENS, 0),
        requests=1,
    )


class ScriptedModel(Model):
    """Answers each request with the next answer of a script.

    ``requests`` records the messages of every request (``request_tools`` the tools offered
    and ``request_settings`` the settings) for assertions. Running past the end of the script raises
    :class:`~pymanus.errors.ModelError`: the run ends (a new draw or attempt could only run out again).
    """

    def __init__(self, answers: Iterable[Answer], *, name: str = "scripted", context_window: int | None = None) -> None:
        self.script: list[Answer] = list(answers)
        self.name = name
        self.context_window = context_window
        self.requests: list[list[Message]] = []
        self.request_tools: list[list[ToolDefinition]] = []
        self.request_settings: list[ModelSettings] = []

    @property
    def remaining(self) -> int:
        """Answers not used yet."""
        return len(self.script) - len(self.requests)

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """Record the request and return the next scripted answer."""
        index = len(self.requests)
        self.requests.append(list(messages))
        self.request_tools.append(callable_tools(tools, settings))
        self.request_settings.append(settings)
        if index >= len(self.script):
            raise ModelError(f"ScriptedModel ran out of responses after {len(self.script)}")
        return to_response(self.script[index], self, messages)


class FunctionModel(Model):
    """Answers each request with ``fn(messages, tools)``.

    ``fn`` may be sync or async and returns any answer a :class:`ScriptedModel` accepts; it
    may also be an async generator yielding text pieces (streamed one by one) and tool
    calls. ``requests`` records the messages of every request.
    """

    def __init__(self, fn: AnswerFunction, *, name: str | None = None, context_window: int | None = None) -> None:
        self.fn = fn
        self.name = name or f"function:{getattr(fn, '__name__', 'fn')}"
        self.context_window = context_window
        self.requests: list[list[Message]] = []

    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """Call the function and return its answer."""
        response: ModelResponse | None = None
        async for item in self.stream(messages, tools, settings):
            if isinstance(item, ModelResponse):
                response = item
        assert response is not None  # stream() always ends with the response
        return response

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """Yield the function's text (piece by piece for a generator), then the response."""
        history = list(messages)
        self.requests.append(history)
        result = self.fn(history, callable_tools(tools, settings))
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, AsyncIterator):
            pieces: list[str] = []
            calls: list[ToolCall] = []
            async for item in result:
                if isinstance(item, ToolCall):
                    calls.append(item)
                elif item:
                    pieces.append(item)
                    yield TextChunk(text=item)
            text = "".join(pieces)
            answer: Answer = Message.assistant(text if text or not calls else None, tool_calls=calls)
            yield to_response(answer, self, messages)
            return
        response = to_response(result, self, messages)
        if response.message.text:
            yield TextChunk(text=response.message.text)
        yield response

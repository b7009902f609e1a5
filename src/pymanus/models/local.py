"""Local models: GGUF weights run in-process by llama.cpp (``llama-cpp-python``).

``LocalModel.from_spec("qwen2.5-coder-1.5b")`` (a pack, see :mod:`pymanus.models.packs`) or
``LocalModel.from_spec("/path/model.gguf")``.

Prompt. The conversation is rendered with the model's own chat template (GGUF metadata
``tokenizer.chat_template``, Jinja2), so each model sees the format it was trained on.

Prompt cache. The llama context keeps its KV cache between calls; each call evaluates only the
tokens after the longest common prefix with what the context already holds, so step k of an
agent run evaluates only what step k-1 added. ``last_prompt_eval_tokens`` records the count.
The evaluated head of the prompt (system prompt and tools) is also kept on disk for later
processes (:mod:`pymanus.models.prefix_store`), and generation can draft ahead by prompt lookup
(:mod:`pymanus.models.lookup`; off by default).

Sharing. Weights take hundreds of MB and a context's KV cache as much again, so loaded models
are the one process-wide cache in PyManus: keyed by (file, context size), shared by every
``LocalModel`` on them. A ``threading.Lock`` taken in the worker thread serialises
generations on one context; blocking calls run in ``asyncio.to_thread`` so the event loop
never waits, and the lock is not tied to one event loop (``run_sync`` makes a new loop per run).

Tool-call formats, grammars and output parsing are in :mod:`pymanus.models.local_format`;
loading and decoding with llama.cpp in :mod:`pymanus.models.local_runtime`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pymanus.errors import ConfigError, ContextOverflowError, ModelError, ModelOutputError, ModelPackError
from pymanus.messages import Message, Usage
from pymanus.models import packs
from pymanus.models.base import (
    Model,
    ModelResponse,
    ModelSettings,
    StreamItem,
    TextChunk,
    ToolDefinition,
    callable_tools,
)
from pymanus.models.local_format import (
    FINAL_TOOL,
    JSON_FORMAT_INSTRUCTIONS,
    build_grammar,
    json_string_prefix,
    parse_output,
    template_messages,
)
from pymanus.models.local_runtime import (
    Generation,
    Request,
    Sampling,
    available_cores,
    compared_text,
    generate,
    load_runtime,
)
from pymanus.models.prefix_store import PrefixStore
from pymanus.models.prompt_cache import common_prefix

__all__ = [
    "DEFAULT_CONTEXT_CAP",
    "GGUF_MAGIC",
    "LocalModel",
    "Sampling",
    "ToolFormat",
    "available_cores",
    "build_grammar",
    "json_string_prefix",
    "parse_output",
    "resolve_spec",
]

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
DEFAULT_CONTEXT_CAP = 8192
MAX_PARALLEL_CALLS = 6
"""Calls one answer may hold where several are allowed: a small project's files in one answer."""
RETRY_TEMPERATURE = 0.7
"""Temperature of the one new draw after an output that does not parse."""
ToolFormat = Literal["auto", "native", "json"]


# -- resolution ---------------------------------------------------------------------------
def resolve_spec(spec: str | os.PathLike[str]) -> Path:
    """The GGUF file for ``spec``: a pack name (assembled on first use) or a path."""
    text = os.fspath(spec)
    if text in packs.pack_names():
        return packs.pack_path(text)
    path = Path(text).expanduser()
    if not path.exists():
        if path.suffix.lower() != ".gguf" and "/" not in text and os.sep not in text:
            raise ModelPackError(
                f"unknown model pack {text!r}; known packs: {', '.join(packs.pack_names())} (or a path to a .gguf file)"
            )
        raise ConfigError(f"model file not found: {path}")
    if not path.is_file():
        raise ConfigError(f"model path is not a file: {path}")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ConfigError(f"cannot read model file {path}: {exc}") from exc
    if magic != GGUF_MAGIC:
        raise ConfigError(f"not a GGUF model file (starts with {magic!r}, expected b'GGUF'): {path}")
    return path.resolve()


def prompt_store_dir() -> Path:
    """Where evaluated prompt heads are kept: ``<cache root>/prompts`` (next to the packs)."""
    return packs.models_dir().parent / "prompts"


# -- the model ----------------------------------------------------------------------------
class LocalModel(Model):
    """A GGUF model run in-process by llama.cpp, with grammar-constrained tool calls.

    ``ModelSettings`` apply per call: ``temperature``, ``top_p``, ``max_tokens`` and ``seed``
    override :class:`Sampling`; ``parallel_tool_calls=False`` allows one call per answer;
    ``stop`` applies when no tools are offered; ``timeout`` is left to the caller (cancelling
    the awaiting task stops generation at the next token).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        context_window: int | None = None,
        sampling: Sampling | None = None,
        tool_format: ToolFormat = "auto",
        keep_prompt_heads: bool = True,
    ) -> None:
        """Load ``path`` (a GGUF file) or reuse it if already loaded in this process.

        ``context_window`` caps the context (default 8192, never above the trained length).
        ``keep_prompt_heads``: save the evaluated system prompt and tools on disk for later
        processes (see :mod:`pymanus.models.prefix_store`, directory :func:`prompt_store_dir`).
        """
        self._runtime = load_runtime(resolve_spec(path), context_window or DEFAULT_CONTEXT_CAP)
        self.name = name or f"local:{Path(path).name}"
        self.context_window = self._runtime.n_ctx
        self.sampling = sampling or Sampling()
        self.keep_prompt_heads = keep_prompt_heads
        template = self._runtime.template_text
        native = "tools" in template and "<tool_call>" in template
        self.tool_format: Literal["native", "json"] = (
            ("native" if native else "json") if tool_format == "auto" else tool_format
        )
        self._tool_role = self.tool_format == "native" or "'tool'" in template or '"tool"' in template
        self._grammars: dict[tuple[str, int, bool], str] = {}
        self.last_prompt_eval_tokens: int | None = None
        """Prompt tokens the last call actually evaluated (the rest came from the KV cache)."""

    @classmethod
    def from_spec(
        cls, spec: str | os.PathLike[str], *, context_window: int | None = None, tool_format: ToolFormat = "auto"
    ) -> LocalModel:
        """A model from a pack name (``qwen2.5-coder-1.5b``) or a path to a ``.gguf`` file."""
        return cls(spec, name=f"local:{os.fspath(spec)}", context_window=context_window, tool_format=tool_format)

    @property
    def load_seconds(self) -> float:
        """Seconds the shared weights took to load (once per process, whichever instance loaded them)."""
        return self._runtime.load_seconds

    # -- prompt -------------------------------------------------------------------------
    def render(self, messages: Sequence[Message], tools: Sequence[ToolDefinition] = ()) -> str:
        """The prompt text the model sees for ``messages`` and ``tools``."""
        wire = template_messages(messages, self.tool_format, self._tool_role)
        extra: dict[str, Any] = {}
        if tools and self.tool_format == "native":
            offered = [*tools, FINAL_TOOL] if FINAL_TOOL.name not in {t.name for t in tools} else tools
            extra["tools"] = [tool.to_wire() for tool in offered]
        elif tools:
            listing = "\n".join(
                json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools
            )
            instructions = JSON_FORMAT_INSTRUCTIONS.format(tools=listing)
            if wire and wire[0]["role"] == "system":
                wire[0] = {**wire[0], "content": f"{wire[0]['content']}\n\n{instructions}"}
            else:
                wire.insert(0, {"role": "system", "content": instructions})
        try:
            return str(self._runtime.template(messages=wire, **extra).prompt)
        except Exception as exc:
            raise ModelError(f"{self.name}: chat template cannot render this conversation: {exc}") from exc

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Exact prompt tokens of ``messages`` (without tools) with the model's tokenizer."""
        return len(self._runtime.tokenize(self.render(messages)))

    def count_text(self, text: str) -> int:
        """Exact tokens of ``text`` inside a prompt, with the model's tokenizer."""
        return self._runtime.count(text)

    def _grammar(self, tools: Sequence[ToolDefinition], max_calls: int, text_answer: bool) -> str:
        key = (json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True), max_calls, text_answer)
        if key not in self._grammars:
            if len(self._grammars) >= 32:
                self._grammars.pop(next(iter(self._grammars)))
            self._grammars[key] = build_grammar(tools, self.tool_format, max_calls, text_answer)
        return self._grammars[key]

    def _prepare(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> Request:
        prompt = self._runtime.prompt_tokens(self.render(messages, tools))
        if len(prompt) >= self._runtime.n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt is {len(prompt)} tokens but the context window is {self._runtime.n_ctx} tokens"
            )
        if not prompt:
            raise ModelError(f"{self.name}: empty prompt")
        max_calls = 1 if settings.parallel_tool_calls is False else MAX_PARALLEL_CALLS
        base = self.sampling
        sampling = replace(
            base,
            temperature=base.temperature if settings.temperature is None else settings.temperature,
            top_p=base.top_p if settings.top_p is None else settings.top_p,
            max_tokens=settings.max_tokens or base.max_tokens,
        )
        seed = settings.seed if settings.seed is not None else int.from_bytes(os.urandom(4), "little")
        # Qwen answers in plain text after reading tool results (forcing a call there makes it
        # "print" the answer with a tool); on a fresh task, plain text lets it narrate fenced
        # pseudo-calls instead of calling, so there it must call or use final_answer.
        text_answer = self.tool_format == "native" and bool(messages) and messages[-1].role == "tool"
        callable_ = callable_tools(tools, settings)  # all tools stay in the prompt (its cache holds)
        shared, instructions = 0, ""
        if messages and messages[0].role == "system":
            head = self.render(messages[:1], tools)
            instructions = compared_text(head)
            if self.keep_prompt_heads:
                shared = common_prefix(self._runtime.tokenize(head), prompt)
        return Request(
            prompt=prompt,
            grammar=self._grammar(callable_, max_calls, text_answer) if callable_ else None,
            style=self.tool_format if callable_ else None,
            sampling=sampling,
            seed=seed,
            stop=list(settings.stop or []),
            shared=shared,
            store=PrefixStore(prompt_store_dir()) if shared else None,
            instructions=instructions,
        )

    def _respond(self, req: Request, gen: Generation, tools: Sequence[ToolDefinition]) -> ModelResponse:
        self.last_prompt_eval_tokens = gen.evaluated
        logger.info(  # shown by --verbose: what the prompt cache saved, step by step
            "%s: prompt %d tokens (%d evaluated, %.2fs), completion %d tokens (%.2fs, %d of %d drafted kept), "
            "finish=%s",
            self.name,
            gen.prompt_tokens,
            gen.evaluated,
            gen.prompt_seconds,
            gen.completion_tokens,
            gen.generate_seconds,
            gen.accepted,
            gen.drafted,
            gen.finish,
            extra={
                "model": self.name,
                "prompt_tokens": gen.prompt_tokens,
                "prompt_eval_tokens": gen.evaluated,
                "completion_tokens": gen.completion_tokens,
                "prompt_seconds": gen.prompt_seconds,
                "generate_seconds": gen.generate_seconds,
                "drafted_tokens": gen.drafted,
                "accepted_tokens": gen.accepted,
            },
        )
        message = parse_output(gen.text, req.style, tools)
        if not message.tool_calls and not message.text:
            raise ModelOutputError(f"{self.name} produced no output (finish={gen.finish})")
        finish = "tool_calls" if message.tool_calls else gen.finish
        usage = Usage(prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens, requests=1)
        return ModelResponse(message=message, finish_reason=finish, usage=usage, model_name=self.name)

    # -- Model protocol -----------------------------------------------------------------
    async def request(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> ModelResponse:
        """Generate the next assistant message (tool calls or a final answer)."""
        response: ModelResponse | None = None
        async for item in self._run(messages, tools, settings, stream=False):
            if isinstance(item, ModelResponse):
                response = item
        assert response is not None
        return response

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> AsyncIterator[StreamItem]:
        """Yield final-answer text as it is generated, then the :class:`ModelResponse`."""
        async for item in self._run(messages, tools, settings, stream=True):
            yield item

    async def _run(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings, *, stream: bool
    ) -> AsyncIterator[StreamItem]:
        req = await asyncio.to_thread(self._prepare, messages, tools, settings)
        streamed = False
        for attempt in range(2):
            gen: Generation | None = None
            async for item in self._generate(req, stream):
                if isinstance(item, Generation):
                    gen = item
                else:
                    streamed = True
                    yield TextChunk(text=item)
            assert gen is not None
            try:
                response = self._respond(req, gen, callable_tools(tools, settings))
            except ModelOutputError as exc:
                # A small model sometimes never closes a string (a call cut off by max_tokens):
                # one more draw with another seed usually parses; a second failure is an error.
                if attempt or streamed:
                    raise
                logger.warning("%s: %s; sampling again", self.name, exc)
                sampling = replace(req.sampling, temperature=max(req.sampling.temperature, RETRY_TEMPERATURE))
                req = replace(req, seed=req.seed + 1, sampling=sampling)
                continue
            yield response
            return

    async def _generate(self, req: Request, stream: bool) -> AsyncIterator[str | Generation]:
        """Run one generation in a worker thread: its streamed text, then the :class:`Generation`."""
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        cancel = threading.Event()

        def on_text(text: str) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, text)

        work = asyncio.ensure_future(
            asyncio.to_thread(generate, self._runtime, req, on_text if stream else None, cancel)
        )
        work.add_done_callback(lambda _: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                yield chunk
            yield await work
        finally:
            cancel.set()  # stops the worker at its next token if we were cancelled

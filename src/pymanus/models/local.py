"""Local models: GGUF weights run in-process by llama.cpp (``llama-cpp-python``).

``LocalModel.from_spec("qwen2.5-coder-1.5b")`` (a pack, see :mod:`pymanus.models.packs`) or
``LocalModel.from_spec("/path/model.gguf")``.

Prompt. The conversation is rendered with the model's own chat template (GGUF metadata
``tokenizer.chat_template``, Jinja2), so each model sees the format it was trained on.

Constrained decoding. Small models call tools reliably only when decoding is constrained, so
when tools are offered every token is checked against a GBNF grammar built from the tools'
JSON Schemas (llama.cpp's converter). No output can be unparseable or call an unknown tool.

* ``native`` (templates that render ``tools`` and ``<tool_call>``: Qwen 2.5, Hermes): one to
  four ``<tool_call>\n{"name": "<tool>", "arguments": {...}}\n</tool_call>`` blocks, or one
  block calling the pseudo-tool ``final_answer`` (``{"answer": "..."}``), offered next to the
  real tools. When the last message is a tool result, plain text (not starting with ``<``,
  ``{``, ``[`` or a backtick) is allowed too: that is how Qwen answers after reading results.
* ``json`` (any other template): one object, ``{"tool_calls": [{"name": ..., "arguments":
  ...}]}`` or ``{"final_answer": "..."}``, explained in the system prompt.

Why, measured (``benchmarks/local_model.py PACK --formats``: 12 agent situations x 2 seeds,
right action = the right tool, or an answer once the result is in; 1.5B / 0.5B packs):
JSON envelope 19/24, 12/24 (answers made-up results instead of calling tools); native with
a free-text branch 14/24, 16/24 (the 1.5B narrates "To solve this..." with a fenced JSON
pseudo-call and stops); native with calls only 16/24, 14/24 (after a tool result it "prints"
the answer through python_execute); native as above 24/24, 22/24. ``auto`` therefore picks
native whenever the template supports it.

JSON separators are forced to ``", "`` / ``": "`` so a call the template renders back into
the history is token-identical to what the model wrote and the prompt cache keeps matching.
The grammar enforces types, required keys, enums, consts, patterns, string lengths and
array sizes; numeric bounds are not expressible in it and are left to the tool layer.

Sampling checks the sampled token against the grammar first and masks the whole vocabulary
only when it is rejected (as llama.cpp's own sampler does): masking 150k Qwen tokens on every
step would halve generation speed.

Prompt cache. The llama context keeps its KV cache between calls; each call evaluates only the
tokens after the longest common prefix with what the context already holds, so step k of an
agent run evaluates only what step k-1 added. ``last_prompt_eval_tokens`` records the count.

Sharing. Weights take hundreds of MB and a context's KV cache as much again, so loaded models
are the one process-wide cache in PyManus: keyed by (file, context size), shared by every
``LocalModel`` on them. A ``threading.Lock`` taken in the worker thread serialises
generations on one context; blocking calls run in ``asyncio.to_thread`` so the event loop
never waits, and the lock is not tied to one event loop (``run_sync`` makes a new loop per run).
"""

from __future__ import annotations

import asyncio
import codecs
import ctypes
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pymanus.errors import ConfigError, ContextOverflowError, ModelError, ModelOutputError, ModelPackError
from pymanus.messages import Message, ToolCall, Usage
from pymanus.models import packs
from pymanus.models.base import Model, ModelResponse, ModelSettings, StreamItem, TextChunk, ToolDefinition

if TYPE_CHECKING:
    import llama_cpp
    import numpy as np

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
DEFAULT_CONTEXT_CAP = 8192
MAX_PARALLEL_CALLS = 4
ToolFormat = Literal["auto", "native", "json"]

# Used when a GGUF carries no chat template.
CHATML_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
JSON_FORMAT_INSTRUCTIONS = """# Tools

You can call these tools:
{tools}

Reply with exactly one JSON object and nothing else:
- to call tools: {{"tool_calls": [{{"name": "<tool name>", "arguments": {{<arguments>}}}}]}}
- when the task is done: {{"final_answer": "<your answer to the user>"}}"""
FINAL_TOOL = ToolDefinition(
    name="final_answer",
    description="Give the final answer to the user. Call it only when the task is done.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "minLength": 1, "description": "the complete answer"}},
        "required": ["answer"],
    },
)
"""The pseudo-tool that carries a final answer in the ``native`` format."""


@dataclass(frozen=True)
class Sampling:
    """Sampling defaults for tool use; ``ModelSettings`` fields override them per call."""

    temperature: float = 0.2
    top_p: float = 0.9
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.05
    repeat_last_n: int = 64
    max_tokens: int = 1024


# -- resolution and loading ---------------------------------------------------------------
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


def available_cores() -> int:
    """CPU cores this process may run on (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class _Runtime:
    """A loaded model and its context, shared by every LocalModel on the same (file, n_ctx)."""

    llm: llama_cpp.Llama
    path: Path
    n_ctx: int
    template: Any  # llama_cpp Jinja2ChatFormatter
    template_text: str
    vocab: Any  # llama_vocab pointer
    add_bos_text: str | None
    load_seconds: float
    lock: threading.Lock = field(default_factory=threading.Lock)

    def tokenize(self, prompt: str) -> list[int]:
        add_bos = self.add_bos_text is not None and not prompt.startswith(self.add_bos_text)
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True)


# The one process-wide cache (see module docstring): loaded weights keyed by (path, n_ctx).
_RUNTIMES: dict[tuple[str, int], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError("local models need llama-cpp-python; install with: pip install 'pymanus[local]'") from exc
    return llama_cpp


def _load_runtime(path: Path, cap: int) -> _Runtime:
    with _RUNTIMES_LOCK:
        key = (str(path), cap)
        if key in _RUNTIMES:
            return _RUNTIMES[key]
        lib = _import_llama()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        threads = available_cores()
        start = time.perf_counter()

        def open_context(n_ctx: int) -> llama_cpp.Llama:
            return lib.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads, verbose=False
            )

        try:
            llm = open_context(cap)
            arch = llm.metadata.get("general.architecture", "")
            trained = int(llm.metadata.get(f"{arch}.context_length", 0) or 0)
            if 0 < trained < cap:
                llm.close()
                llm = open_context(trained)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"llama.cpp cannot load {path}: {exc}") from exc
        meta = llm.metadata
        template_text = meta.get("tokenizer.chat_template") or CHATML_TEMPLATE
        bos = _token_text(llm, llm.token_bos())
        eos = _token_text(llm, llm.token_eos())
        runtime = _Runtime(
            llm=llm,
            path=path,
            n_ctx=llm.n_ctx(),
            template=Jinja2ChatFormatter(template_text, eos_token=eos, bos_token=bos),
            template_text=template_text,
            vocab=lib.llama_model_get_vocab(llm.model),
            add_bos_text=bos if meta.get("tokenizer.ggml.add_bos_token") == "true" else None,
            load_seconds=time.perf_counter() - start,
        )
        _RUNTIMES[key] = runtime
        logger.info("loaded %s: n_ctx=%d threads=%d in %.2fs", path.name, runtime.n_ctx, threads, runtime.load_seconds)
        return runtime


def _token_text(llm: llama_cpp.Llama, token: int) -> str:
    return llm.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""


# -- prompt rendering ---------------------------------------------------------------------
def _text_of(message: Message) -> str:
    return message.text + "\n[image omitted]" * len(message.images)  # local packs have no vision


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _envelope(message: Message) -> str:
    if message.tool_calls:
        calls = [{"name": c.name, "arguments": _arguments(c)} for c in message.tool_calls]
        return json.dumps({"tool_calls": calls}, ensure_ascii=False)
    return json.dumps({"final_answer": message.text}, ensure_ascii=False)


def _template_messages(messages: Sequence[Message], style: str, tool_role: bool) -> list[dict[str, Any]]:
    rendered: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant" and style == "json":
            rendered.append({"role": "assistant", "content": _envelope(message)})
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"type": "function", "function": {"name": c.name, "arguments": _arguments(c)}}
                    for c in message.tool_calls
                ]
            rendered.append(entry)
        elif message.role == "tool" and not tool_role:
            rendered.append({"role": "user", "content": f"Result of tool {message.name}:\n{_text_of(message)}"})
        else:
            rendered.append({"role": message.role, "content": _text_of(message), "name": message.name})
    return rendered


# -- grammar ------------------------------------------------------------------------------
def _relocate_refs(node: Any, prefix: str) -> Any:
    """Copy a schema, pointing local ``$ref``s at its ``$defs`` hoisted under ``prefix``."""
    if isinstance(node, list):
        return [_relocate_refs(item, prefix) for item in node]
    if not isinstance(node, dict):
        return node
    copy = {k: _relocate_refs(v, prefix) for k, v in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str):
        for local in ("#/$defs/", "#/definitions/"):
            if ref.startswith(local):
                copy["$ref"] = f"#/$defs/{prefix}{ref[len(local) :]}"
                break
        else:
            raise ValueError(f"unsupported $ref {ref!r}")
    return copy


def _arguments_schema(tool: ToolDefinition, index: int, defs: dict[str, Any]) -> dict[str, Any]:
    """The tool's parameter schema, made embeddable; a generic object if the grammar can't express it."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    prefix = f"t{index}-"
    try:
        own = {**tool.parameters.get("definitions", {}), **tool.parameters.get("$defs", {})}
        hoisted = {prefix + name: _relocate_refs(sub, prefix) for name, sub in own.items()}
        top = {k: v for k, v in tool.parameters.items() if k not in ("$defs", "definitions")}
        schema = _relocate_refs(top, prefix)
        json_schema_to_gbnf(json.dumps({**schema, "$defs": hoisted}))  # fails on what it cannot express
    except Exception as exc:
        logger.warning(
            "tool %s: schema not expressible as a grammar (%s); constraining to a JSON object", tool.name, exc
        )
        return {"type": "object"}
    defs.update(hoisted)
    return schema


def _canonical_spacing(gbnf: str) -> str:
    """Force json.dumps separators (``", "``, ``": "``) and no other whitespace."""
    gbnf = gbnf.replace('":" space', '": "').replace('"," space', '", "')
    return gbnf.replace('space ::= " "?', 'space ::= ""')


def build_grammar(
    tools: Sequence[ToolDefinition], style: Literal["native", "json"], max_calls: int, text_answer: bool = False
) -> str:
    """The GBNF grammar whose sentences are the valid outputs for ``tools`` in ``style``.

    ``text_answer`` (native only) also allows a plain-text answer that cannot start like a call.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    defs: dict[str, Any] = {}
    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": _arguments_schema(tool, i, defs)},
            "required": ["name", "arguments"],
        }
        for i, tool in enumerate(tools)
    ]
    if style == "json":
        envelope = {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "tool_calls": {"type": "array", "items": {"oneOf": calls}, "minItems": 1, "maxItems": max_calls}
                    },
                    "required": ["tool_calls"],
                },
                {
                    "type": "object",
                    "properties": {"final_answer": {"type": "string", "minLength": 1}},
                    "required": ["final_answer"],
                },
            ],
            "$defs": defs,
        }
        return _canonical_spacing(json_schema_to_gbnf(json.dumps(envelope)))
    final = {
        "type": "object",
        "properties": {"name": {"const": FINAL_TOOL.name}, "arguments": FINAL_TOOL.parameters},
        "required": ["name", "arguments"],
    }
    pseudo = FINAL_TOOL.name not in {tool.name for tool in tools}
    alternatives = {**defs, "pm-tool": {"oneOf": calls}, "pm-final": final}
    schema = {"oneOf": [{"$ref": "#/$defs/pm-tool"}, {"$ref": "#/$defs/pm-final"}], "$defs": alternatives}
    rules = _canonical_spacing(json_schema_to_gbnf(json.dumps(schema))).splitlines()
    block = r'"<tool_call>\n" pm-tool "\n</tool_call>"'
    repeated = "".join(rf' ("\n" {block}' for _ in range(max_calls - 1)) + ")?" * (max_calls - 1)
    return "\n".join(
        [
            "root ::= pm-calls"
            + (r' | "<tool_call>\n" pm-final "\n</tool_call>"' if pseudo else "")
            + (" | pm-answer" if text_answer else ""),
            *([r"pm-answer ::= [^<{[`\x00-\x20] [^\x00]*"] if text_answer else []),
            f"pm-calls ::= {block}{repeated}",
            *(rule for rule in rules if not rule.startswith("root ::= ")),
        ]
    )


# -- output parsing -----------------------------------------------------------------------
_DECODER = json.JSONDecoder(strict=False)  # the grammar's strings may hold raw control characters
_CALL_OPEN, _CALL_CLOSE = "<tool_call>\n", "\n</tool_call>"
_ANSWER_PREFIX = {
    "json": '{"final_answer": "',
    "native": _CALL_OPEN + '{"name": "final_answer", "arguments": {"answer": "',
}


def _new_call(name: str, arguments: Any, known: set[str]) -> ToolCall:
    if name not in known:  # unreachable under the grammar; checked so a bug never reaches a tool
        raise ModelOutputError(f"local model called unknown tool {name!r}")
    return ToolCall(id=f"call_{uuid.uuid4().hex[:24]}", name=name, arguments=json.dumps(arguments, ensure_ascii=False))


def _native_calls(text: str) -> list[dict[str, Any]]:
    """The complete ``<tool_call>`` blocks of ``text``; one cut off by max_tokens is dropped."""
    calls: list[dict[str, Any]] = []
    pos = 0
    while text.startswith(_CALL_OPEN, pos):
        try:
            obj, pos = _DECODER.raw_decode(text, pos + len(_CALL_OPEN))
        except ValueError:
            break
        if not text.startswith(_CALL_CLOSE, pos):
            break
        calls.append(obj)
        pos += len(_CALL_CLOSE) + 1  # the "\n" between blocks
    return calls


def json_string_prefix(raw: str) -> str:
    """Decode the complete part of a JSON string body (after its opening quote) that may be cut off."""
    end, i = len(raw), 0
    while i < len(raw):
        if raw[i] == "\\":
            step = 6 if raw[i + 1 : i + 2] == "u" else 2
            if i + step > len(raw):
                end = i
                break
            i += step
        elif raw[i] == '"':
            end = i
            break
        else:
            i += 1
    try:
        return str(_DECODER.decode('"' + raw[:end] + '"'))
    except ValueError:
        return ""


def parse_output(text: str, style: Literal["native", "json"] | None, tools: Sequence[ToolDefinition]) -> Message:
    """Turn the generated text into an assistant message (tool calls or a final answer)."""
    if style is None:
        return Message.assistant(text.strip())
    known = {tool.name for tool in tools}
    try:
        if style == "json":
            envelope = _DECODER.decode(text)
            if "final_answer" in envelope:
                return Message.assistant(str(envelope["final_answer"]).strip())
            objects = envelope["tool_calls"]
        elif not text.startswith(_CALL_OPEN):
            return Message.assistant(text.strip())  # the grammar's plain-text answer
        else:
            objects = _native_calls(text)
            if len(objects) == 1 and objects[0]["name"] == FINAL_TOOL.name and FINAL_TOOL.name not in known:
                return Message.assistant(str(objects[0]["arguments"]["answer"]).strip())
    except ValueError:
        objects = []
    if objects:
        return Message.assistant(tool_calls=[_new_call(obj["name"], obj["arguments"], known) for obj in objects])
    prefix = _ANSWER_PREFIX[style]
    if text.startswith(prefix):  # an answer cut off by max_tokens
        return Message.assistant(json_string_prefix(text[len(prefix) :]).strip())
    raise ModelOutputError("local model output ended inside a tool call; raise max_tokens")


# -- generation ---------------------------------------------------------------------------
@dataclass
class _Generation:
    text: str
    prompt_tokens: int
    evaluated: int
    completion_tokens: int
    finish: Literal["stop", "length"]
    prompt_seconds: float
    generate_seconds: float


class _Sampler:
    """Sampler chain plus an optional grammar, checked lazily (see module docstring)."""

    def __init__(self, runtime: _Runtime, params: Sampling, seed: int, grammar: str | None) -> None:
        import numpy as np  # a llama-cpp-python dependency, like everything in this class

        self._c = c = _import_llama()
        self.n_vocab = runtime.llm.n_vocab()
        self.chain = c.llama_sampler_chain_init(c.llama_sampler_chain_default_params())
        stages = [c.llama_sampler_init_top_k(params.top_k)]
        stages.append(c.llama_sampler_init_penalties(self.n_vocab, params.repeat_last_n, params.repeat_penalty, 0, 0))
        if params.temperature <= 0:
            stages.append(c.llama_sampler_init_greedy())
        else:
            stages += [
                c.llama_sampler_init_top_p(params.top_p, 1),
                c.llama_sampler_init_min_p(params.min_p, 1),
                c.llama_sampler_init_temp(params.temperature),
                c.llama_sampler_init_dist(seed),
            ]
        for stage in stages:
            c.llama_sampler_chain_add(self.chain, stage)
        self.grammar = None
        if grammar is not None:
            self.grammar = c.llama_sampler_init_grammar(runtime.vocab, grammar.encode("utf-8"), b"root")
            if not self.grammar:
                self.close()
                raise ModelError("llama.cpp rejected the tool grammar")
        dtype = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)
        self._as_array = np.ctypeslib.as_array
        self.ids = np.arange(self.n_vocab, dtype=np.intc)
        self.cells = np.zeros(self.n_vocab, dtype=dtype)
        self.array = c.llama_token_data_array(
            data=self.cells.ctypes.data_as(c.llama_token_data_p), size=self.n_vocab, selected=-1, sorted=False
        )
        self.one = np.zeros(1, dtype=dtype)
        self.one_array = c.llama_token_data_array(
            data=self.one.ctypes.data_as(c.llama_token_data_p), size=1, selected=-1, sorted=False
        )

    def _select(self, logits: np.ndarray[Any, Any], masked: bool) -> int:
        c = self._c
        self.cells["id"] = self.ids  # samplers sort and shrink the array in place
        self.cells["logit"] = logits
        self.array.size, self.array.selected, self.array.sorted = self.n_vocab, -1, False
        if masked:
            c.llama_sampler_apply(self.grammar, ctypes.byref(self.array))
        c.llama_sampler_apply(self.chain, ctypes.byref(self.array))
        return int(self.cells["id"][self.array.selected])

    def sample(self, ctx: Any) -> int:
        c = self._c
        logits = self._as_array(c.llama_get_logits_ith(ctx, -1), shape=(self.n_vocab,))
        token = self._select(logits, masked=False)
        if self.grammar is not None:
            self.one["id"], self.one["logit"] = token, 0.0
            self.one_array.size, self.one_array.selected = 1, -1
            c.llama_sampler_apply(self.grammar, ctypes.byref(self.one_array))
            if math.isinf(float(self.one["logit"][0])):  # rejected: mask the whole vocabulary, sample again
                token = self._select(logits, masked=True)
            c.llama_sampler_accept(self.grammar, token)
        c.llama_sampler_accept(self.chain, token)
        return token

    def close(self) -> None:
        self._c.llama_sampler_free(self.chain)
        if self.grammar is not None:
            self._c.llama_sampler_free(self.grammar)


def _common_prefix(cached: np.ndarray[Any, Any], prompt: list[int]) -> int:
    import numpy as np

    n = min(len(cached), len(prompt))
    if n == 0:
        return 0
    differ = np.nonzero(cached[:n] != np.asarray(prompt[:n], dtype=cached.dtype))[0]
    return int(differ[0]) if len(differ) else n


@dataclass
class _Request:
    prompt: list[int]
    grammar: str | None
    style: Literal["native", "json"] | None
    sampling: Sampling
    seed: int
    stop: list[str]


def _generate(
    runtime: _Runtime, req: _Request, on_text: Callable[[str], None] | None, cancel: threading.Event
) -> _Generation:
    """Evaluate the new prompt tokens and sample until end of generation (worker thread)."""
    llm, prompt = runtime.llm, req.prompt
    budget = min(req.sampling.max_tokens, runtime.n_ctx - len(prompt))
    with runtime.lock:
        # Reuse the KV cache for the common prefix; the last prompt token is always re-evaluated
        # so its logits are fresh. Llama.eval drops cache cells past n_tokens before decoding.
        reuse = min(_common_prefix(llm.input_ids[: llm.n_tokens], prompt), len(prompt) - 1)
        llm.n_tokens = reuse
        start = time.perf_counter()
        batch = max(1, llm.n_batch)
        try:
            for i in range(reuse, len(prompt), batch):
                if cancel.is_set():
                    raise asyncio.CancelledError
                llm.eval(prompt[i : i + batch])
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed to evaluate the prompt: {exc}") from exc
        prompt_done = time.perf_counter()
        sampler = _Sampler(runtime, req.sampling, req.seed, req.grammar)
        is_eog = _import_llama().llama_vocab_is_eog
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text, streamed, generated, cut = "", 0, 0, False
        finish: Literal["stop", "length"] = "length"
        try:
            for _ in range(budget):
                if cancel.is_set():
                    raise asyncio.CancelledError
                token = sampler.sample(llm.ctx)
                if is_eog(runtime.vocab, token):
                    finish = "stop"
                    break
                generated += 1
                text += decoder.decode(llm.detokenize([token]))
                if req.style is None and req.stop and any(s in text for s in req.stop):
                    text = text[: min(text.find(s) for s in req.stop if s in text)]
                    finish, cut = "stop", True
                    break
                if on_text is not None:
                    visible = _visible_text(text, req)
                    if len(visible) > streamed:
                        on_text(visible[streamed:])
                        streamed = len(visible)
                llm.eval([token])
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        finally:
            sampler.close()
        if not cut:
            text += decoder.decode(b"", final=True)
        return _Generation(
            text=text,
            prompt_tokens=len(prompt),
            evaluated=len(prompt) - reuse,
            completion_tokens=generated,
            finish=finish,
            prompt_seconds=prompt_done - start,
            generate_seconds=time.perf_counter() - prompt_done,
        )


def _visible_text(text: str, req: _Request) -> str:
    """The part of the output that is final-answer text, safe to stream now."""
    if req.style is not None:
        prefix = _ANSWER_PREFIX[req.style]
        if text.startswith(prefix):
            return json_string_prefix(text[len(prefix) :])
        return "" if req.style == "json" or text.startswith("<") else text
    hold = max((len(s) - 1 for s in req.stop), default=0)  # never stream the start of a stop string
    return text[: len(text) - hold]


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
    ) -> None:
        """Load ``path`` (a GGUF file) or reuse it if already loaded in this process.

        ``context_window`` caps the context (default 8192, never above the trained length).
        """
        self._runtime = _load_runtime(resolve_spec(path), context_window or DEFAULT_CONTEXT_CAP)
        self.name = name or f"local:{Path(path).name}"
        self.context_window = self._runtime.n_ctx
        self.sampling = sampling or Sampling()
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
        wire = _template_messages(messages, self.tool_format, self._tool_role)
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

    def _grammar(self, tools: Sequence[ToolDefinition], max_calls: int, text_answer: bool) -> str:
        key = (json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True), max_calls, text_answer)
        if key not in self._grammars:
            if len(self._grammars) >= 32:
                self._grammars.pop(next(iter(self._grammars)))
            self._grammars[key] = build_grammar(tools, self.tool_format, max_calls, text_answer)
        return self._grammars[key]

    def _prepare(
        self, messages: Sequence[Message], tools: Sequence[ToolDefinition], settings: ModelSettings
    ) -> _Request:
        prompt = self._runtime.tokenize(self.render(messages, tools))
        if len(prompt) >= self._runtime.n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt is {len(prompt)} tokens but the context window is {self._runtime.n_ctx} tokens"
            )
        if not prompt:
            raise ModelError(f"{self.name}: empty prompt")
        max_calls = 1 if settings.parallel_tool_calls is False else MAX_PARALLEL_CALLS
        base = self.sampling
        sampling = Sampling(
            temperature=base.temperature if settings.temperature is None else settings.temperature,
            top_p=base.top_p if settings.top_p is None else settings.top_p,
            top_k=base.top_k,
            min_p=base.min_p,
            repeat_penalty=base.repeat_penalty,
            repeat_last_n=base.repeat_last_n,
            max_tokens=settings.max_tokens or base.max_tokens,
        )
        seed = settings.seed if settings.seed is not None else int.from_bytes(os.urandom(4), "little")
        # Qwen answers in plain text after reading tool results (forcing a call there makes it
        # "print" the answer with a tool); on a fresh task, plain text lets it narrate fenced
        # pseudo-calls instead of calling, so there it must call or use final_answer.
        text_answer = self.tool_format == "native" and bool(messages) and messages[-1].role == "tool"
        return _Request(
            prompt=prompt,
            grammar=self._grammar(tools, max_calls, text_answer) if tools else None,
            style=self.tool_format if tools else None,
            sampling=sampling,
            seed=seed,
            stop=list(settings.stop or []),
        )

    def _respond(self, req: _Request, gen: _Generation, tools: Sequence[ToolDefinition]) -> ModelResponse:
        self.last_prompt_eval_tokens = gen.evaluated
        logger.debug(
            "%s: prompt %d tokens (%d evaluated, %.2fs), completion %d tokens (%.2fs), finish=%s",
            self.name,
            gen.prompt_tokens,
            gen.evaluated,
            gen.prompt_seconds,
            gen.completion_tokens,
            gen.generate_seconds,
            gen.finish,
            extra={
                "model": self.name,
                "prompt_tokens": gen.prompt_tokens,
                "prompt_eval_tokens": gen.evaluated,
                "completion_tokens": gen.completion_tokens,
                "prompt_seconds": gen.prompt_seconds,
                "generate_seconds": gen.generate_seconds,
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
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        cancel = threading.Event()

        def on_text(text: str) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, text)

        work = asyncio.ensure_future(
            asyncio.to_thread(_generate, self._runtime, req, on_text if stream else None, cancel)
        )
        work.add_done_callback(lambda _: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                yield TextChunk(text=chunk)
            gen = await work
        finally:
            cancel.set()  # stops the worker at its next token if we were cancelled
        yield self._respond(req, gen, tools)

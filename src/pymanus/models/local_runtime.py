"""Loading GGUF weights and decoding with llama.cpp, for :class:`~pymanus.models.local.LocalModel`.

Loaded weights are cached process-wide, keyed by (file, context size); see
:mod:`pymanus.models.local` for why.

Sampling checks the sampled token against the grammar first and masks the whole vocabulary
only when it is rejected (as llama.cpp's own sampler does): masking 150k Qwen tokens on every
step would halve generation speed.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import ctypes
import itertools
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pymanus.errors import ConfigError, ModelError
from pymanus.models.local_format import ANSWER_PREFIX, CHATML_TEMPLATE, closed_inside_call, json_string_prefix
from pymanus.models.lookup import Drafter
from pymanus.models.prefix_store import MIN_TOKENS, PrefixStore
from pymanus.models.prompt_cache import ReplyTokens, common_prefix, skipped_span

if TYPE_CHECKING:
    import llama_cpp
    import numpy as np

logger = logging.getLogger("pymanus.models.local")  # one logger for the local-model modules


@dataclass(frozen=True)
class Sampling:
    """Sampling defaults for tool use; ``ModelSettings`` fields override them per call."""

    temperature: float = 0.2
    top_p: float = 0.9
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    """Off: code and JSON repeat brackets and quotes, and a repetition penalty makes small models drop them."""
    repeat_last_n: int = 64
    max_tokens: int = 1024
    draft_tokens: int = 0
    """Most tokens guessed ahead from earlier text and checked in one batch (see
    :mod:`pymanus.models.lookup`); 0, the default, is off. On 2 CPU cores a batch costs nearly
    what its tokens cost one by one, so drafting 16 made generation slower on the default
    pack: 7.6 against 9.1 tokens/s on replayed agent steps, 13.1 against 16.2 on prose. It pays
    where a batch is cheap (a GPU build, many cores): measure with ``benchmarks/local_model.py``."""


MAX_BLANK_TOKENS = 64
"""Whitespace-only tokens in a row that end a generation: the model is looping, not writing."""
LOOP_CHARS = 200
"""Output whose last this many characters (or four periods, if longer) repeat one piece ends:
the model is looping (the same dict entry, the same line, again and again) and would run to
max_tokens, a minute and more on 2 cores, for an output that is then cut off anyway."""
LOOP_PERIOD = 300
"""The longest repeating piece looked for."""
LOOP_CHECK_TOKENS = 16
"""Tokens between two looks for a loop."""
COUNTING_LOOP_CHARS = 120
"""Output whose last this many characters (and at least eight periods) repeat one piece once
its numbers are masked, with a word in the piece and every number either the same in each
copy or one more than in the last, also ends: the model is counting (``\\u20CE|\\u20CF|…``,
``read_file(path, start_line=56)``, ``…57)``) and would go on for minutes. Typed data
(``1, 4, 9``; a date and a value per row) changes in other ways and goes on. Fewer characters
than :data:`LOOP_CHARS`: a counting piece is short (``\\u20CE|``), and the rule is stricter."""
ECHO_CHARS = 300
"""Output whose last this many letters and digits (escapes, punctuation and spaces aside) are a
piece of the instructions (the system prompt and the tool list) ends: the model is copying them
(small models copy the chat template's tool section into a code argument, hundreds of tokens).
Tasks never need that much of the instructions back (file contents come in later messages); a
worked example's code in a system prompt may be imitated, so the piece is longer than the
preset's (217)."""
_ESCAPED_BREAK = re.compile(r"\\+[nt]")
"""An escaped line break or tab, as a copy inside a JSON string (or a string in code in one) has them."""
_NOT_COMPARED = re.compile(r"\W+")
_NUMBER = re.compile(r"[0-9A-Fa-f]+")
"""Decimal or hexadecimal digits (hex letters inside words are masked alike, the same in every copy)."""
_WORD_LETTER = re.compile(r"[G-Zg-z_]")


def looping(text: str) -> bool:
    """Whether ``text`` ends in a loop: one piece over :data:`LOOP_CHARS` characters (and at
    least four times), or a counting loop (see :data:`COUNTING_LOOP_CHARS`)."""
    return bool(_period(text, LOOP_CHARS, 4)) or _counting(text)


def compared_text(text: str) -> str:
    """``text`` as :func:`echoing` compares it: letters and digits only, escaped line breaks dropped."""
    return _NOT_COMPARED.sub("", _ESCAPED_BREAK.sub(" ", text))


def echoing(text: str, instructions: str) -> bool:
    """Whether ``text`` ends in a copy of :data:`ECHO_CHARS` letters and digits of ``instructions``,
    given as :func:`compared_text` made it."""
    if not instructions:
        return False
    tail = compared_text(text[-8 * ECHO_CHARS :])
    return len(tail) >= ECHO_CHARS and tail[-ECHO_CHARS:] in instructions


def _counting(text: str) -> bool:
    tail = text[-8 * LOOP_PERIOD :].rstrip("0123456789ABCDEFabcdef")  # a number may be cut off at the end
    masked = _NUMBER.sub("0", tail)
    period = _period(masked, COUNTING_LOOP_CHARS, 8)
    width = masked[-period:].count("0") if period else 0
    if not width or not _WORD_LETTER.search(masked[-period:]):
        return False
    numbers = _NUMBER.findall(tail)[-8 * width :]
    copies = [numbers[start : start + width] for start in range(0, len(numbers), width)]
    steps = {_step(old, new) for last, this in itertools.pairwise(copies) for old, new in zip(last, this, strict=True)}
    return 1 in steps and steps <= {0, 1}


def _step(old: str, new: str) -> int:
    """How much ``new`` is above ``old``: in decimal when both are, else in hexadecimal."""
    if old == new:
        return 0
    base = 10 if old.isdigit() and new.isdigit() else 16
    return int(new, base) - int(old, base)


def _period(text: str, chars: int, times: int) -> int:
    """The shortest piece that ``text`` ends with ``times`` copies of, over ``chars`` characters at least (0: none)."""
    for period in range(1, min(LOOP_PERIOD, len(text) // times) + 1):
        span = max(chars, times * period)
        if span <= len(text) and text[-span + period :] == text[-span:-period]:
            return period
    return 0


# -- loading ------------------------------------------------------------------------------
def available_cores() -> int:
    """CPU cores this process may run on (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU reports Intel AMX tiles (Linux; ``False`` where that cannot be read)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    return any(line.startswith("flags") and " amx_tile" in line for line in text.splitlines())


@contextlib.contextmanager
def without_extra_buffer_types(lib: Any) -> Iterator[None]:
    """Load models with llama.cpp's extra (weight-repacking) buffer types off.

    On a Xeon that reports AMX, llama-cpp-python 0.3.36 built for the native CPU crashed the
    process (SIGSEGV at ``ldtilecfg`` in ``ggml_backend_amx_mul_mat``) on the first prompt of
    two tokens or more. The AMX kernels only run on weights placed in the AMX buffer type, so
    loading without extra buffer types avoids them. ``Llama`` has no argument for it: its
    model defaults are swapped while the model loads (under ``_RUNTIMES_LOCK``).
    """
    module = lib.llama_cpp
    defaults = module.llama_model_default_params

    def plain_buffers() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    module.llama_model_default_params = plain_buffers
    try:
        yield
    finally:
        module.llama_model_default_params = defaults


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
    replies: ReplyTokens = field(default_factory=ReplyTokens)
    """The tokens of the model's replies, for :meth:`prompt_tokens`."""

    def tokenize(self, prompt: str) -> list[int]:
        """``prompt``'s tokens as the tokenizer splits it."""
        return self._piece(prompt, bos=True)

    def count(self, text: str) -> int:
        """How many tokens ``text`` takes inside a prompt (no beginning-of-sequence token)."""
        return len(self._piece(text, bos=False))

    def prompt_tokens(self, prompt: str) -> list[int]:
        """``prompt``'s tokens, with each reply the model generated as the tokens it generated."""
        return self.replies.splice(prompt, self._piece)

    def _piece(self, text: str, bos: bool) -> list[int]:
        add_bos = bos and self.add_bos_text is not None and not text.startswith(self.add_bos_text)
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True) if text or add_bos else []


# The one process-wide cache (see module docstring): loaded weights keyed by (path, n_ctx).
_RUNTIMES: dict[tuple[str, int], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ConfigError("local models need llama-cpp-python; install with: pip install 'pymanus[local]'") from exc
    return llama_cpp


def load_runtime(path: Path, cap: int) -> _Runtime:
    """The runtime for ``path`` with a context of ``cap`` tokens (at most the trained length), loaded once."""
    with _RUNTIMES_LOCK:
        key = (str(path), cap)
        if key in _RUNTIMES:
            return _RUNTIMES[key]
        lib = _import_llama()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        threads = available_cores()
        start = time.perf_counter()

        def open_context(n_ctx: int) -> llama_cpp.Llama:
            loading = without_extra_buffer_types(lib) if cpu_has_amx() else contextlib.nullcontext()
            with loading:
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
        if not _RUNTIMES:
            atexit.register(_close_runtimes)
        _RUNTIMES[key] = runtime
        logger.info("loaded %s: n_ctx=%d threads=%d in %.2fs", path.name, runtime.n_ctx, threads, runtime.load_seconds)
        return runtime


def _close_runtimes() -> None:
    """Free the loaded models at exit, while llama.cpp's bindings still exist.

    Left to ``Llama.__del__`` at interpreter shutdown, freeing fails on half-torn-down
    modules and prints a traceback after every process that used a local model.
    """
    with _RUNTIMES_LOCK:
        for runtime in _RUNTIMES.values():
            runtime.llm.close()
        _RUNTIMES.clear()


def _token_text(llm: llama_cpp.Llama, token: int) -> str:
    return llm.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""


# -- generation ---------------------------------------------------------------------------
@dataclass
class Generation:
    """What one generation produced, with token counts and timings."""

    text: str
    prompt_tokens: int
    evaluated: int
    completion_tokens: int
    finish: Literal["stop", "length"]
    prompt_seconds: float
    generate_seconds: float
    drafted: int = 0
    """Tokens guessed ahead (prompt lookup) and checked in batches."""
    accepted: int = 0
    """Of those, tokens the model's own samples confirmed."""


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

    def sample(self, ctx: Any, row: int) -> int:
        """The next token from the logits of batch position ``row`` (-1: the last)."""
        c = self._c
        logits = self._as_array(c.llama_get_logits_ith(ctx, row), shape=(self.n_vocab,))
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


class _Decoder:
    """Appends tokens to the context with logits for every one of them (a token and its draft)."""

    def __init__(self, llm: llama_cpp.Llama, capacity: int) -> None:
        self._c = _import_llama()
        self.llm = llm
        self.batch = self._c.llama_batch_init(capacity, 0, 1)

    def decode(self, tokens: list[int]) -> None:
        c, llm, batch = self._c, self.llm, self.batch
        start = llm.n_tokens
        c.llama_memory_seq_rm(c.llama_get_memory(llm.ctx), -1, start, -1)  # cells of a rejected draft
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.logits[i] = token, start + i, True
            batch.n_seq_id[i], batch.seq_id[i][0] = 1, 0
        if (status := c.llama_decode(llm.ctx, batch)) != 0:
            raise RuntimeError(f"llama_decode returned {status}")
        llm.input_ids[start : start + len(tokens)] = tokens
        llm.n_tokens = start + len(tokens)

    def close(self) -> None:
        self._c.llama_batch_free(self.batch)


def _reusable(llm: llama_cpp.Llama, prompt: list[int]) -> int:
    """How many leading prompt tokens the context holds, once a span the prompt lost is dropped
    (see :mod:`pymanus.models.prompt_cache`)."""
    c = _import_llama()
    cached = llm.input_ids[: llm.n_tokens]
    start = common_prefix(cached, prompt)
    gap, kept = skipped_span(cached, prompt, start)
    memory = c.llama_get_memory(llm.ctx)
    if not kept or not c.llama_memory_can_shift(memory):
        return start
    end = llm.n_tokens
    c.llama_memory_seq_rm(memory, -1, start, start + gap)
    c.llama_memory_seq_add(memory, 0, start + gap, -1, -gap)
    llm.input_ids[start : end - gap] = cached[start + gap : end].copy()
    llm.n_tokens = end - gap
    return start + kept


@dataclass
class Request:
    """One generation to run: prompt tokens, optional grammar, and how to sample and stop."""

    prompt: list[int]
    grammar: str | None
    style: Literal["native", "json"] | None
    sampling: Sampling
    seed: int
    stop: list[str]
    shared: int = 0
    """Leading prompt tokens every run with this system prompt and tools starts with."""
    store: PrefixStore | None = None
    """Where the evaluated shared head is kept between processes (``None``: nowhere)."""
    instructions: str = ""
    """The system prompt and tool list as rendered, through :func:`compared_text`: never to be copied back."""


def generate(
    runtime: _Runtime, req: Request, on_text: Callable[[str], None] | None, cancel: threading.Event
) -> Generation:
    """Evaluate the new prompt tokens and sample until end of generation (worker thread)."""
    llm, prompt = runtime.llm, req.prompt
    budget = min(req.sampling.max_tokens, runtime.n_ctx - len(prompt))
    with runtime.lock:
        # Reuse the KV cache for the common prefix (and what follows a dropped reminder); the last
        # prompt token is always re-evaluated so its logits are fresh. Llama.eval drops cache
        # cells past n_tokens before decoding.
        reuse = min(_reusable(llm, prompt), len(prompt) - 1)
        llm.n_tokens = reuse
        start = time.perf_counter()
        store, head = req.store, req.shared
        try:
            if store is not None and max(reuse + 1, MIN_TOKENS) <= head < len(prompt):
                loaded = store.load(runtime, prompt[:head])  # evaluated by an earlier process
                reuse = llm.n_tokens  # the head, or what is left after a file that did not load
                if not loaded:
                    _evaluate(llm, prompt[reuse:head], cancel)
                    store.save(runtime, prompt[:head])
            _evaluate(llm, prompt[llm.n_tokens :], cancel)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed to evaluate the prompt: {exc}") from exc
        prompt_done = time.perf_counter()
        sampler = _Sampler(runtime, req.sampling, req.seed, req.grammar)
        longest = max(0, req.sampling.draft_tokens)
        drafter = Drafter(prompt, longest) if longest else None
        decoding = _Decoder(llm, longest + 1)
        is_eog = _import_llama().llama_vocab_is_eog
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text, streamed, generated, cut, blank_run = "", 0, 0, False, 0
        sampled: list[int] = []
        finish: Literal["stop", "length"] = "length"
        draft: list[int] = []  # decoded after the last token; their logits rows follow `row`
        row, proposed, drafted, accepted = -1, 0, 0, 0
        try:
            for _ in range(budget):
                if cancel.is_set():
                    raise asyncio.CancelledError
                token = sampler.sample(llm.ctx, row)
                if is_eog(runtime.vocab, token):
                    finish = "stop"
                    break
                generated += 1
                sampled.append(token)
                piece = decoder.decode(llm.detokenize([token]))
                text += piece
                blank_run = blank_run + 1 if piece.isspace() else 0
                if blank_run >= MAX_BLANK_TOKENS:  # degenerate: a string that is never closed
                    break
                if generated % LOOP_CHECK_TOKENS == 0 and looping(text):
                    logger.warning("local model is repeating itself; generation stopped: %r", text[-120:])
                    break
                if generated % LOOP_CHECK_TOKENS == 0 and echoing(text, req.instructions):
                    logger.warning("local model is copying its instructions; generation stopped: %r", text[-120:])
                    break
                if req.style == "native" and ">" in piece and closed_inside_call(text):
                    logger.warning("local model closed a tool call inside it; generation stopped: %r", text[-120:])
                    break
                if req.style is None and req.stop and any(s in text for s in req.stop):
                    text = text[: min(text.find(s) for s in req.stop if s in text)]
                    finish, cut = "stop", True
                    break
                if on_text is not None:
                    visible = _visible_text(text, req)
                    if len(visible) > streamed:
                        on_text(visible[streamed:])
                        streamed = len(visible)
                if drafter is not None:
                    drafter.add(token)
                if draft and token == draft[0]:  # the model chose the drafted token: it is decoded already
                    draft.pop(0)
                    row += 1
                    accepted += 1
                    continue
                llm.n_tokens -= len(draft)  # the rest of a rejected draft
                if drafter is not None:
                    drafter.verified(proposed, proposed - len(draft))
                    draft = drafter.draft(runtime.n_ctx - llm.n_tokens - 1)
                decoding.decode([token, *draft])
                row, proposed, drafted = 0, len(draft), drafted + len(draft)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed while generating: {exc}") from exc
        finally:
            sampler.close()
            decoding.close()
        if not cut:
            text += decoder.decode(b"", final=True)
            runtime.replies.remember(text, sampled)
        return Generation(
            text=text,
            prompt_tokens=len(prompt),
            evaluated=len(prompt) - reuse,
            completion_tokens=generated,
            finish=finish,
            prompt_seconds=prompt_done - start,
            generate_seconds=time.perf_counter() - prompt_done,
            drafted=drafted,
            accepted=accepted,
        )


def _evaluate(llm: llama_cpp.Llama, tokens: list[int], cancel: threading.Event) -> None:
    """Append ``tokens`` to the context in batches, stopping between batches when cancelled."""
    batch = max(1, llm.n_batch)
    for i in range(0, len(tokens), batch):
        if cancel.is_set():
            raise asyncio.CancelledError
        llm.eval(tokens[i : i + batch])


def _visible_text(text: str, req: Request) -> str:
    """The part of the output that is final-answer text, safe to stream now."""
    if req.style is not None:
        prefix = ANSWER_PREFIX[req.style]
        if text.startswith(prefix):
            return json_string_prefix(text[len(prefix) :])
        return "" if req.style == "json" or text.startswith("<") else text
    hold = max((len(s) - 1 for s in req.stop), default=0)  # never stream the start of a stop string
    return text[: len(text) - hold]

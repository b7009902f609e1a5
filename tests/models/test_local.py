"""LocalModel: real llama.cpp on the smallest pack (smollm2-135m), plus its pure parts.

The ``local_model`` tests load a real GGUF; they are skipped when llama-cpp-python or the
pack's part package is not installed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import string
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from helpers.local_models import ADD, SMALL, llama_ready, requires_model
from pymanus.errors import ConfigError, ContextOverflowError, ModelOutputError, ModelPackError
from pymanus.messages import Message, ToolCall
from pymanus.models import packs
from pymanus.models.base import PYTHON_SOURCE, ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.models.local import LocalModel, json_string_prefix, parse_output, resolve_spec
from pymanus.models.local_runtime import _Runtime, cpu_has_amx, without_extra_buffer_types
from pymanus.models.prompt_cache import MIN_SHIFTED, common_prefix, skipped_span


class Priority(StrEnum):
    low = "low"
    high = "high"


class Item(BaseModel):
    title: str
    priority: Priority = Priority.low


class TodoArgs(BaseModel):
    items: list[Item]
    note: str | None = None


SEARCH = ToolDefinition(
    name="web_search",
    description="Search the web.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
        "required": ["query"],
    },
)
TODO = ToolDefinition(
    name="add_todos", description="Add items to the todo list.", parameters=TodoArgs.model_json_schema()
)
NOTHING = ToolDefinition(
    name="terminate", description="Finish the task.", parameters={"type": "object", "properties": {}}
)


@pytest.fixture(scope="module")
def small() -> LocalModel:
    return LocalModel.from_spec(SMALL)


def _check_response(response: ModelResponse, tools: list[ToolDefinition]) -> None:
    """Either calls of offered tools with schema-valid arguments, or a non-empty answer."""
    jsonschema = pytest.importorskip("jsonschema")
    by_name = {tool.name: tool for tool in tools}
    message = response.message
    if message.tool_calls:
        assert response.finish_reason == "tool_calls"
        assert len({call.id for call in message.tool_calls}) == len(message.tool_calls)
        for call in message.tool_calls:
            assert call.name in by_name
            jsonschema.validate(json.loads(call.arguments), by_name[call.name].parameters)
    else:
        assert message.text.strip()
        assert response.finish_reason in ("stop", "length")


# -- spec resolution: no model needed -----------------------------------------------------
def test_unknown_pack_name() -> None:
    with pytest.raises(ModelPackError, match=r"unknown model pack 'qwen-9000'.*smollm2-135m"):
        resolve_spec("qwen-9000")


def test_nonexistent_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model file not found: .*missing\.gguf"):
        resolve_spec(tmp_path / "missing.gguf")


def test_non_gguf_file(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ConfigError, match=r"not a GGUF model file .*b'PK\\x03\\x04'"):
        LocalModel.from_spec(fake)


def test_directory_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a file"):
        resolve_spec(tmp_path)


# -- loading on CPUs whose AMX kernels crash: no model needed -------------------------------
def test_cpu_has_amx_reads_the_flags_line(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Xeon amx_tile\nflags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    assert cpu_has_amx(cpuinfo)
    cpuinfo.write_text("model name\t: Xeon amx_tile\nflags\t\t: fpu avx2 avx512f\n")
    assert not cpu_has_amx(cpuinfo)
    assert not cpu_has_amx(tmp_path / "missing")


def test_models_loadwithout_extra_buffer_types_inside_the_switch() -> None:
    class Params:
        use_extra_bufts = True

    def defaults() -> Params:
        return Params()

    lib = SimpleNamespace(llama_cpp=SimpleNamespace(llama_model_default_params=defaults))
    with without_extra_buffer_types(lib):
        assert lib.llama_cpp.llama_model_default_params().use_extra_bufts is False
    assert lib.llama_cpp.llama_model_default_params is defaults
    with pytest.raises(RuntimeError), without_extra_buffer_types(lib):
        raise RuntimeError("load failed")
    assert lib.llama_cpp.llama_model_default_params().use_extra_bufts is True


# -- output parsing: no model needed ------------------------------------------------------
def test_skipped_span_finds_the_dropped_reminder_before_the_reply() -> None:
    head, reminder, reply = list(range(100)), [500, 501, 7, 502], list(range(7, 7 + MIN_SHIFTED + 2))
    assert skipped_span(head + reminder + reply, head + reply + [99], 100) == (len(reminder), len(reply))
    partly = head + reply[:-1] + [99]  # the cache's last tokens are not in the prompt: nothing kept
    assert skipped_span(head + reminder + reply, partly, 100) == (0, 0)
    other = head + reminder + reply + [5, 6, 7]  # a match that stops before the cache ends: another run's tokens
    assert skipped_span(other, head + reply + [99], 100) == (0, 0)
    short = head + reply[: MIN_SHIFTED - 1] + [99]
    assert skipped_span(head + reminder + reply, short, 100) == (0, 0)  # too little to keep
    assert skipped_span(head + reply, head + reply + [1], len(head + reply)) == (0, 0)  # nothing dropped
    assert skipped_span(head + reminder + reply, head + [42] * 20, 100) == (0, 0)  # the reply is not there


def test_prompt_tokens_splice_each_reply_as_it_was_sampled() -> None:
    """Text is tokenized a byte at a time here; a remembered reply keeps its own tokens."""
    llm = SimpleNamespace(tokenize=lambda data, add_bos, special: [1] * add_bos + list(data))
    runtime = _Runtime(llm, Path("m.gguf"), 64, None, "", None, "<s>", 0.0)  # type: ignore[arg-type]
    reply = list(range(500, 500 + MIN_SHIFTED))
    runtime.replies.remember("CALL", reply)
    runtime.replies.remember("CALL", [7] * MIN_SHIFTED)  # sampled again otherwise: the first tokens stay
    runtime.replies.remember("AL", [8] * MIN_SHIFTED)  # inside CALL: CALL is spliced whole
    runtime.replies.remember("short", [9])  # too few tokens to be worth it
    assert runtime.replies.known() == {"CALL": reply, "AL": [8] * MIN_SHIFTED}
    assert runtime.prompt_tokens("ab CALL c CALL") == [1, *b"ab ", *reply, *b" c ", *reply]
    assert runtime.prompt_tokens("no reply short") == runtime.tokenize("no reply short") == [1, *b"no reply short"]
    assert runtime.prompt_tokens("CALL") == [1, *reply]


def test_parse_native_calls_final_answer_and_text() -> None:
    text = (
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
        '<tool_call>\n{"name": "web_search", "arguments": {"query": "x\ny"}}\n</tool_call>'
    )
    message = parse_output(text, "native", [ADD, SEARCH])
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("web_search", {"query": "x\ny"}),  # a raw newline inside a string is accepted and re-escaped
    ]
    assert all(c.id.startswith("call_") for c in message.tool_calls)
    assert len({c.id for c in message.tool_calls}) == 2
    final = '<tool_call>\n{"name": "final_answer", "arguments": {"answer": "It is 3."}}\n</tool_call>'
    assert parse_output(final, "native", [ADD]) == Message.assistant("It is 3.")
    assert parse_output("  The answer is 3.\n", "native", [ADD]) == Message.assistant("The answer is 3.")


def test_parse_truncated_outputs() -> None:
    with pytest.raises(ModelOutputError, match="max_tokens"):
        parse_output('<tool_call>\n{"name": "add", "arguments": {"a": 1', "native", [ADD])
    kept = parse_output(
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n<tool_call>\n{"na', "native", [ADD]
    )
    assert len(kept.tool_calls) == 1  # the complete call stands
    with pytest.raises(ModelOutputError, match="max_tokens"):
        parse_output('{"tool_calls": [{"name": "add", "argu', "json", [ADD])
    salvaged = parse_output('{"final_answer": "It is \\"42\\" \\u00e9 and', "json", [ADD])
    assert salvaged.content == 'It is "42" é and'
    cut = parse_output('<tool_call>\n{"name": "final_answer", "arguments": {"answer": "Half an ans', "native", [ADD])
    assert cut.content == "Half an ans"


def test_parse_drops_copied_tool_response_tags_from_arguments() -> None:
    copied = '{"name": "add_todos", "arguments": {"items": [{"title": "<tool_response>milk</tool_response>"}]}}'
    message = parse_output(f"<tool_call>\n{copied}\n</tool_call>", "native", [TODO])
    assert json.loads(message.tool_calls[0].arguments) == {"items": [{"title": "milk"}]}


def test_parse_refuses_unknown_tool() -> None:
    with pytest.raises(ModelOutputError, match="unknown tool 'rm'"):
        parse_output('{"tool_calls": [{"name": "rm", "arguments": {}}]}', "json", [ADD])


def test_json_string_prefix() -> None:
    assert json_string_prefix('abc\\n"}') == "abc\n"
    assert json_string_prefix("abc\\") == "abc"
    assert json_string_prefix("abc\\u00") == "abc"
    assert json_string_prefix("") == ""


def test_grammar_builds_for_pydantic_refs_and_falls_back_for_the_rest() -> None:
    pytest.importorskip("llama_cpp")
    from pymanus.models.local import build_grammar

    odd = ToolDefinition(name="odd", parameters={"type": "object", "properties": {"x": {"type": "weird"}}})
    grammar = build_grammar([ADD, TODO, odd, NOTHING], "native", 2)
    assert '"\\"add_todos\\""' in grammar and "t1-Item" in grammar and '"\\"odd\\""' in grammar
    assert 'space ::= ""' in grammar  # canonical separators only
    assert grammar.splitlines()[0] == r'root ::= pm-calls | "<tool_call>\n" pm-final "\n</tool_call>"'
    after_results = build_grammar([ADD], "native", 1, text_answer=True)
    assert after_results.splitlines()[0].endswith("| pm-answer")
    assert "root ::= alternative-0 | alternative-1" in build_grammar([ADD], "json", 1)


PYTHON = ToolDefinition(
    name="python",
    description="Run Python code.",
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "contentMediaType": PYTHON_SOURCE}, "note": {"type": "string"}},
        "required": ["code", "note"],
    },
)


def test_python_source_strings_get_the_code_grammar() -> None:
    pytest.importorskip("llama_cpp")
    from pymanus.models.local import build_grammar

    for style in ("native", "json"):
        rules = dict(line.split(" ::= ", 1) for line in build_grammar([PYTHON, ADD], style, 1).splitlines())
        code_rule = next(body for name, body in rules.items() if name.endswith("-code") and name != "pm-code")
        assert code_rule == "pm-code"
        assert rules["pm-code"] == r'"\"" pm-item* pm-comment? "\""'  # what it accepts: test_code_grammar.py
        note_rule = next(body for name, body in rules.items() if name.endswith("-note-kv"))
        assert note_rule.endswith(" string")  # other strings keep the ordinary rule
    assert "pm-code" not in build_grammar([ADD], "native", 1)


def test_render_offers_final_answer_and_keeps_history_canonical() -> None:
    if not llama_ready() or packs.pack_status("qwen2.5-coder-0.5b").missing:
        pytest.skip("needs the qwen2.5-coder-0.5b pack")
    model = LocalModel.from_spec("qwen2.5-coder-0.5b")
    history = [
        Message.user("2+40?"),
        Message.assistant(tool_calls=[ToolCall(id="c1", name="add", arguments='{"a":2,"b":40}')]),
        Message.tool("c1", "add", "42"),
    ]
    prompt = model.render(history, [ADD])
    assert '"name": "final_answer"' in prompt
    assert '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>' in prompt
    assert "<tool_response>\n42\n</tool_response>" in prompt


# -- real llama.cpp -----------------------------------------------------------------------
PROMPTS: list[tuple[list[Message], list[ToolDefinition]]] = [
    ([Message.system("You are a helpful agent."), Message.user("What is 2 + 40?")], [ADD, SEARCH]),
    ([Message.user("Put 'buy milk' (high priority) and 'call mom' on my todo list.")], [TODO, ADD, NOTHING]),
    ([Message.user("Hello! Who are you?")], [ADD]),
    ([Message.user("Find recent news about the Rust language, then finish.")], [SEARCH, NOTHING]),
    (
        [
            Message.user("What is 2 + 40?"),
            Message.assistant(tool_calls=[ToolCall(id="call_1", name="add", arguments='{"a": 2, "b": 40}')]),
            Message.tool("call_1", "add", "42"),
        ],
        [ADD, SEARCH],
    ),
]


@pytest.mark.local_model
@requires_model
@pytest.mark.parametrize("tool_format", ["auto", "native"])
@pytest.mark.parametrize("case", range(len(PROMPTS)))
async def test_constrained_output_always_parses(case: int, tool_format: str) -> None:
    model = LocalModel.from_spec(SMALL, tool_format=tool_format)  # type: ignore[arg-type]
    messages, tools = PROMPTS[case]
    for seed in (1, 2):
        response = await model.request(messages, tools, ModelSettings(seed=seed, temperature=0.8, max_tokens=512))
        _check_response(response, tools)


@pytest.mark.local_model
@requires_model
class TestRealModel:
    async def test_single_call_when_parallel_disabled(self, small: LocalModel) -> None:
        messages = [Message.user("Add 1 and 2, add 3 and 4, and add 5 and 6.")]
        for seed in (1, 2, 3):
            settings = ModelSettings(seed=seed, parallel_tool_calls=False)
            response = await small.request(messages, [ADD], settings)
            _check_response(response, [ADD])
            assert len(response.message.tool_calls) <= 1

    async def test_prompt_cache_evaluates_only_new_tokens(
        self, small: LocalModel, caplog: pytest.LogCaptureFixture
    ) -> None:
        messages = [Message.system("You are a helpful agent."), Message.user("What is 2 + 40? Use the tool.")]
        first = await small.request(messages, [ADD, SEARCH], ModelSettings(seed=1))
        messages += [first.message]
        for call in first.message.tool_calls:
            messages.append(Message.tool(call.id, call.name, "42"))
        messages.append(Message.user("Thanks. Now what is 7 + 8?"))
        second = await small.request(messages, [ADD, SEARCH], ModelSettings(seed=1))
        evaluated = small.last_prompt_eval_tokens
        assert evaluated is not None
        assert second.usage.prompt_tokens > first.usage.prompt_tokens
        assert evaluated < second.usage.prompt_tokens - first.usage.prompt_tokens + 40  # only the added turns
        assert second.usage.prompt_tokens - evaluated >= first.usage.prompt_tokens - 1  # the first prompt was cached
        with caplog.at_level(logging.INFO, logger="pymanus.models.local"):
            await small.request(messages, [ADD, SEARCH], ModelSettings(seed=2))
        assert small.last_prompt_eval_tokens == 1  # same prompt: only the last token is re-evaluated
        [record] = [r for r in caplog.records if r.name == "pymanus.models.local"]  # what --verbose prints
        assert "(1 evaluated," in record.getMessage() and record.__dict__["prompt_eval_tokens"] == 1

    async def test_a_dropped_reminder_keeps_the_reply_after_it_cached(self, small: LocalModel) -> None:
        """The agent loop's reminder closes one prompt and is gone from the next, which holds the reply."""
        tools = [ADD, SEARCH]
        system, task = Message.system("You are a helpful agent."), Message.user("What is 2 + 40? Use the tool.")
        first_prompt = [system, task, Message.user("Reminder: call one tool now.")]
        first = await small.request(first_prompt, tools, ModelSettings(seed=1))
        history = [system, task, first.message]
        history += [Message.tool(call.id, call.name, "42") for call in first.message.tool_calls]
        second_prompt = [*history, Message.user("Reminder: if that answers the task, answer now.")]
        second = await small.request(second_prompt, tools, ModelSettings(seed=1))
        _check_response(second, tools)
        tokens = [small._runtime.tokenize(small.render(m, tools)) for m in (first_prompt, second_prompt)]
        after_prefix = len(tokens[1]) - common_prefix(*tokens)  # what plain prefix reuse evaluates
        evaluated = small.last_prompt_eval_tokens
        assert evaluated is not None and evaluated <= after_prefix - MIN_SHIFTED  # the reply was kept
        await small.request(second_prompt, tools, ModelSettings(seed=2))
        assert small.last_prompt_eval_tokens == 1  # the shifted cache is the new prompt, token for token

    async def test_allowed_tools_limit_the_calls_and_keep_the_prompt_cache(self, small: LocalModel) -> None:
        messages = [Message.system("You are a helpful agent."), Message.user("What is 2 + 40? Use the add tool.")]
        await small.request(messages, [ADD, SEARCH], ModelSettings(seed=1))
        for seed in (1, 2, 3):
            response = await small.request(messages, [ADD, SEARCH], ModelSettings(seed=seed, allowed_tools=["search"]))
            assert small.last_prompt_eval_tokens == 1  # the same prompt: every tool is still in it
            assert {c.name for c in response.message.tool_calls} <= {"search"}
            _check_response(response, [SEARCH])

    async def test_an_output_that_does_not_parse_is_drawn_again_once(
        self, small: LocalModel, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from pymanus.models import local

        real = local.generate
        draws: list[tuple[int, float]] = []

        def cut_off_first(runtime, req, on_text, cancel):  # type: ignore[no-untyped-def]
            draws.append((req.seed, req.sampling.temperature))
            gen = real(runtime, req, on_text, cancel)
            return replace(gen, text='<tool_call>\n{"name": "add", "argu') if len(draws) == 1 else gen

        monkeypatch.setattr(local, "generate", cut_off_first)
        response = await small.request(PROMPTS[0][0], [ADD], ModelSettings(seed=5, temperature=0.1))
        _check_response(response, [ADD])
        assert draws == [(5, 0.1), (6, local.RETRY_TEMPERATURE)]

        monkeypatch.setattr(local, "generate", lambda *a: replace(real(*a), text='{"tool_calls": [{"na'))
        with pytest.raises(ModelOutputError, match="ended inside a tool call"):
            await small.request(PROMPTS[0][0], [ADD], ModelSettings(seed=5))

    async def test_a_run_of_blank_tokens_ends_the_generation(self, small: LocalModel) -> None:
        import threading

        from pymanus.models.local_runtime import MAX_BLANK_TOKENS, Request, Sampling, generate

        prompt = small._runtime.tokenize(small.render([Message.user("Say a word.")]))
        blank_forever = 'root ::= "a" blank\nblank ::= [ \\n\\t] blank'  # only whitespace after "a", no end
        req = Request(prompt, blank_forever, None, Sampling(max_tokens=400), seed=1, stop=[])
        gen = await asyncio.to_thread(generate, small._runtime, req, None, threading.Event())
        assert gen.text.startswith("a") and not gen.text[1:].strip()
        assert gen.completion_tokens <= MAX_BLANK_TOKENS + 1

    async def test_a_loop_ends_the_generation(self, small: LocalModel) -> None:
        import threading

        from pymanus.models.local_runtime import LOOP_CHARS, LOOP_CHECK_TOKENS, Request, Sampling, generate

        prompt = small._runtime.tokenize(small.render([Message.user("Say a word.")]))
        loop_forever = 'root ::= "[" item\nitem ::= "{\\"a\\": 1}, " item'  # the same entry again and again
        req = Request(prompt, loop_forever, None, Sampling(max_tokens=1000), seed=1, stop=[])
        gen = await asyncio.to_thread(generate, small._runtime, req, None, threading.Event())
        assert gen.text.startswith('[{"a": 1}, {"a": 1}, ') and gen.finish == "length"
        assert len(gen.text) < LOOP_CHARS + 40 and gen.completion_tokens % LOOP_CHECK_TOKENS == 0

    async def test_a_closing_tag_inside_a_call_ends_the_generation(self, small: LocalModel) -> None:
        import threading

        from pymanus.models.local_runtime import Request, Sampling, generate

        prompt = small._runtime.tokenize(small.render([Message.user("Say a word.")]))
        # The call's code string never closes: the tag lands inside it, and then only filler can follow.
        tag_in_string = (
            'root ::= "<tool_call>\\n{\\"name\\": \\"python\\", \\"arguments\\": {\\"code\\": \\"print(1'
            '\\\\\\"}}</tool_call>" filler\nfiller ::= [a-z] filler'
        )
        req = Request(prompt, tag_in_string, "native", Sampling(max_tokens=300), seed=1, stop=[])
        gen = await asyncio.to_thread(generate, small._runtime, req, None, threading.Event())
        assert gen.text.endswith('print(1\\"}}</tool_call>') and gen.finish == "length"

    async def test_copying_the_instructions_ends_the_generation(self, small: LocalModel) -> None:
        import threading

        from pymanus.models.local_runtime import ECHO_CHARS, Sampling, compared_text, generate

        words = ["read", "write", "edit", "list", "run", "check", "plan", "answer", "file", "table", "code"]
        instructions = " ".join(f"{a} the {b} before you {c}" for a in words for b in words[:2] for c in words[5:7])
        prepared = small._prepare([Message.system(instructions), Message.user("Go.")], [], ModelSettings(seed=1))
        assert compared_text(instructions) in prepared.instructions  # what the model must not copy back
        copy_them = 'root ::= "print(\\"' + instructions + '\\")"'  # a call that repeats the system prompt
        req = replace(prepared, grammar=copy_them, sampling=Sampling(max_tokens=1000), shared=0, store=None)
        cut = await asyncio.to_thread(generate, small._runtime, req, None, threading.Event())
        # The grammar allows nothing but the whole copy, so only the check can end it early.
        assert cut.finish == "length" and ECHO_CHARS <= len(compared_text(cut.text)) < len(instructions) // 2

    @pytest.mark.parametrize("grammar", [None, 'root ::= "Copy: " [a-z ]+'])
    async def test_drafting_changes_the_speed_not_the_output(self, small: LocalModel, grammar: str | None) -> None:
        import threading

        from pymanus.models.local_runtime import Request, Sampling, generate

        text = "the quick brown fox jumps over the lazy dog and then the quick brown fox sleeps"
        prompt = small._runtime.tokenize(small.render([Message.user(f"Copy this text exactly: {text}")]))

        async def run(draft_tokens: int):  # type: ignore[no-untyped-def]
            sampling = Sampling(temperature=0.0, max_tokens=40, draft_tokens=draft_tokens)
            req = Request(prompt, grammar, None, sampling, seed=1, stop=[])
            return await asyncio.to_thread(generate, small._runtime, req, None, threading.Event())

        plain, drafted = await run(0), await run(16)
        assert plain.drafted == 0 and drafted.drafted > 0
        assert 0 < drafted.accepted <= drafted.drafted
        assert drafted.text == plain.text and drafted.completion_tokens == plain.completion_tokens
        assert (await run(16)).text == plain.text  # and the cache it leaves behind is sound

    async def test_context_overflow(self) -> None:
        tiny = LocalModel.from_spec(SMALL, context_window=256)
        assert tiny.context_window == 256
        with pytest.raises(ContextOverflowError, match=r"prompt is \d+ tokens but the context window is 256 tokens"):
            await tiny.request([Message.user("word " * 400)], [], ModelSettings())

    async def test_generation_is_clamped_to_the_context(self) -> None:
        tiny = LocalModel.from_spec(SMALL, context_window=256)
        response = await tiny.request([Message.user("Tell me a very long story. " * 18)], [], ModelSettings())
        assert response.usage.prompt_tokens + response.usage.completion_tokens <= 256

    async def test_count_tokens_matches_prompt(self, small: LocalModel) -> None:
        messages = [Message.system("Be brief."), Message.user("Name a colour.")]
        response = await small.request(messages, [], ModelSettings(seed=1, max_tokens=8))
        assert small.count_tokens(messages) == response.usage.prompt_tokens

    async def test_empty_output_is_a_model_output_error(self, small: LocalModel) -> None:
        # Every character a token can start with: the retry at a higher temperature may draw "¡" or "é".
        llm = small._runtime.llm
        starts = {llm.detokenize([token]).decode("utf-8", errors="ignore")[:1] for token in range(llm.n_vocab())}
        stop_everything = sorted((starts - {""}) | set(string.printable))
        settings = ModelSettings(temperature=0, seed=3, stop=stop_everything)
        with pytest.raises(ModelOutputError, match="produced no output"):
            await small.request([Message.user("Say hi.")], [], settings)

    async def test_stream_yields_the_answer_text(self, small: LocalModel) -> None:
        chunks: list[str] = []
        final: ModelResponse | None = None
        settings = ModelSettings(seed=3, max_tokens=40)
        async for item in small.stream([Message.user("Describe the sea in two sentences.")], [], settings):
            if isinstance(item, TextChunk):
                chunks.append(item.text)
            else:
                final = item
        assert final is not None and len(chunks) > 3
        assert "".join(chunks).strip() == final.message.text

    async def test_stream_of_json_final_answer(self, small: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
        assert small.tool_format == "json"
        # Only final answers are possible: the stream must carry the decoded answer as it grows.
        answer_only = r"""root ::= "{\"final_answer\": \"" [a-zA-Z ,.!']+ "\"}" """
        monkeypatch.setattr(small, "_grammar", lambda *args: answer_only)
        settings = ModelSettings(seed=1, max_tokens=60)
        items = [item async for item in small.stream(PROMPTS[2][0], [ADD], settings)]
        final = items[-1]
        assert isinstance(final, ModelResponse) and final.message.text
        chunks = [item.text for item in items if isinstance(item, TextChunk)]
        assert len(chunks) > 2
        assert "".join(chunks).strip() == final.message.text

    async def test_instances_share_one_loaded_model_and_serialise(self, small: LocalModel) -> None:
        other = LocalModel.from_spec(SMALL)
        assert other._runtime is small._runtime
        settings = ModelSettings(seed=1, max_tokens=256)
        results = await asyncio.gather(
            small.request([Message.user("Say one word.")], [], settings),
            other.request([Message.user("Name a fruit.")], [ADD], settings),
            small.request([Message.user("Count to three.")], [], settings),
        )
        assert all(r.message.text or r.message.tool_calls for r in results)

    async def test_abandoned_stream_leaves_the_model_usable(self, small: LocalModel) -> None:
        settings = ModelSettings(seed=1, max_tokens=300)
        async for item in small.stream([Message.user("Write a long poem about rivers.")], [], settings):
            if isinstance(item, TextChunk):
                break
        response = await small.request([Message.user("Say hi.")], [], ModelSettings(seed=1, max_tokens=8))
        assert response.message.text

    async def test_corrupt_gguf_is_a_config_error(self, tmp_path: Path) -> None:
        broken = tmp_path / "broken.gguf"
        broken.write_bytes(b"GGUF" + b"\x00" * 64)
        with pytest.raises(ConfigError, match=r"llama\.cpp cannot load"):
            LocalModel.from_spec(broken)


QWEN_SMALL = "qwen2.5-coder-0.5b"


@pytest.mark.local_model
@pytest.mark.skipif(
    not llama_ready() or bool(packs.pack_status(QWEN_SMALL).missing), reason="needs the qwen2.5-coder-0.5b pack"
)
async def test_qwen_native_tool_calls() -> None:
    model = LocalModel.from_spec(QWEN_SMALL)
    assert model.tool_format == "native"
    response = await model.request([Message.user("What is 2 + 40?")], [ADD, SEARCH], ModelSettings(seed=1))
    _check_response(response, [ADD, SEARCH])
    assert [(c.name, json.loads(c.arguments)) for c in response.message.tool_calls] == [("add", {"a": 2, "b": 40})]
    todo = await model.request([PROMPTS[1][0][0]], [TODO, ADD, NOTHING], ModelSettings(seed=1))
    _check_response(todo, [TODO, ADD, NOTHING])


@pytest.mark.parametrize(
    ("text", "loops"),
    [
        ('{"a": 1}, ' * 30, True),  # the same dict entry again and again
        ("\\n    total += row['amount']" * 8, True),  # the same line of code
        ("".join(chr(65 + i % 26) for i in range(280)) * 4, True),  # a long piece, four times
        ("-" * 250, True),
        ('{"a": 1}, ' * 5, False),  # repeated, but too short to call it a loop
        ("|---" * 20 + "|", False),  # a wide table's rule line
        ("-" * 150, False),
        ("import os\nfor name in os.listdir('.'):\n    print(name)\n", False),
        # Counting: the same piece with a number one higher each time.
        ("r'" + "|".join(f"\\\\u{i:04X}" for i in range(0x20A0, 0x20E4)), True),
        ("r'" + "|".join(f"\\\\u{i:04X}" for i in range(0x20A0, 0x20E4))[:-2], True),  # a number cut off
        ("".join(f"{{read_file(path, start_line={i})}}\\t" for i in range(40, 60)), True),
        ("".join(f"{{read_file(path, start_line={i})}}\\t" for i in range(40, 46)), False),  # too few
        # Typed data whose numbers change otherwise is not a loop.
        (", ".join(str(i * i) for i in range(1, 101)), False),
        ("\n".join(f"| {i} | {i * i} |" for i in range(1, 60)), False),
        ("\n".join(f"2024-03-{i:02d},North,{i * 1.5}" for i in range(1, 30)), False),
        (", ".join(f'{{"x": {i}, "y": {2 * i}}}' for i in range(40)), False),
        ("\n".join(f"line {i}: {i * 7 % 10} items" for i in range(40)), False),
    ],
)
def test_looping_output(text: str, loops: bool) -> None:
    from pymanus.models.local_runtime import looping

    assert looping(text) is loops


def test_echoing_the_instructions() -> None:
    import json

    from pymanus.agent.manus import SYSTEM_PROMPT
    from pymanus.local_aids.example import EXAMPLE_RUN
    from pymanus.models.local_runtime import compared_text, echoing

    instructions = compared_text(SYSTEM_PROMPT + EXAMPLE_RUN)
    copied = SYSTEM_PROMPT[200:800]
    for escaped in (copied, json.dumps(copied), json.dumps(json.dumps(copied))):  # as text, in JSON, in code in JSON
        assert echoing('{"name": "python", "arguments": {"code": "print(' + escaped, instructions)
    assert not echoing('{"code": "print(' + SYSTEM_PROMPT[200:400], instructions)  # a short quote
    example = json.loads(EXAMPLE_RUN.split("Call: python ", 1)[1].split("\n", 1)[0])["code"]
    assert not echoing(json.dumps({"code": example}), instructions)  # the worked example, imitated
    assert not echoing(json.dumps({"code": SYSTEM_PROMPT[200:800]}), "")

"""Token counting: per-message cache, the calibrated estimate, an optional tokenizer file."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import pytest

from helpers.local_models import SMALL, requires_model
from pymanus.context.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    TokenCounter,
    estimate_message_tokens,
    estimate_messages_tokens,
    tokenizer_file_counter,
)
from pymanus.context.window import WindowedModel
from pymanus.errors import ConfigError
from pymanus.messages import Message, ToolCall
from pymanus.models.testing import ScriptedModel

needs_tokenizers = pytest.mark.skipif(
    importlib.util.find_spec("tokenizers") is None, reason="the tokenizers package ([tokenizer] extra) is not installed"
)


def test_counts_are_cached_per_message_and_forgotten_with_it() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    counter = TokenCounter(count)
    message = Message.user("three little words")
    assert counter.message(message) == counter.message(message) == 3 + 4
    assert calls == ["three little words"]
    del message
    gc.collect()
    assert counter._cache == {}


def test_the_default_is_the_calibrated_estimate() -> None:
    message = Message.user("漢字かな交じり文 and some English text")
    assert TokenCounter().message(message) == estimate_message_tokens(message)


def test_a_missing_tokenizer_file_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[model\] tokenizer"):
        tokenizer_file_counter(tmp_path / "missing.json")


@needs_tokenizers
def test_a_tokenizer_file_counts_with_its_vocabulary(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers  # type: ignore[import-not-found, unused-ignore]

    tokenizer = Tokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    assert tokenizer_file_counter(path)("hello world and more") == 4


@needs_tokenizers
def test_a_corrupt_tokenizer_file_is_a_clear_config_error_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "WordLevel", "vocab": ')
    with pytest.raises(ConfigError, match=r"\[model\] tokenizer: cannot load"):
        tokenizer_file_counter(path)
    assert path.read_text() == '{"model": {"type": "WordLevel", "vocab": '


def test_a_model_without_a_tokenizer_is_counted_with_the_estimate() -> None:
    windowed = WindowedModel(ScriptedModel(["ok"]), context_window=4096)
    message = Message.user("def f(x):\n    return x * 2  # 漢字")
    assert windowed.counter.message(message) == estimate_message_tokens(message)


CONVERSATION = [
    Message.system("You are a careful agent."),
    Message.user("把这份报告翻译成英文，然后保存为 report_en.md。"),
    Message.assistant(None, [ToolCall(id="c1", name="read_file", arguments='{"path": "报告.md"}')]),
    Message.tool("c1", "read_file", "第一季度销售额增长了百分之十二，主要来自华东地区。" * 8),
    Message.assistant('{"a": [1, 2, 3], "b": {"c": null}} <- parsed; next: 0x1F, 3.14159, ∑ᵢ xᵢ²'),
]


@pytest.mark.local_model
@requires_model
def test_a_local_model_counts_each_message_with_its_own_tokenizer() -> None:
    from pymanus.models.local import LocalModel

    model = LocalModel.from_spec(SMALL, context_window=2048)
    llm = model._runtime.llm
    text = CONVERSATION[3].text
    assert model.count_text(text) == len(llm.tokenize(text.encode(), add_bos=False, special=True))
    windowed = WindowedModel(model)
    assert windowed.counter.count_text == model.count_text
    assert windowed.counter.message(CONVERSATION[3]) == MESSAGE_OVERHEAD_TOKENS + model.count_text(text)
    # The per-message counts match the rendered prompt (template and all) far better than the
    # estimate does on Chinese text and symbols, which this model's vocabulary splits finely.
    real = model.count_tokens(CONVERSATION)
    counted = windowed.counter.messages(CONVERSATION)
    estimated = estimate_messages_tokens(CONVERSATION)
    assert abs(counted - real) / real < 0.15
    assert abs(estimated - real) / real > 0.5

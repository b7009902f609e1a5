"""Token counting: per-message cache, the calibrated estimate, an optional tokenizer file."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import pytest

from pymanus.context.tokens import TokenCounter, estimate_message_tokens, tokenizer_file_counter
from pymanus.errors import ConfigError
from pymanus.messages import Message


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


@pytest.mark.skipif(importlib.util.find_spec("tokenizers") is None, reason="the tokenizers package is not installed")
def test_a_tokenizer_file_counts_with_its_vocabulary(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers  # type: ignore[import-not-found, unused-ignore]

    tokenizer = Tokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    assert tokenizer_file_counter(path)("hello world and more") == 4

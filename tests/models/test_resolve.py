"""resolve_model: model strings to models, and clear errors for anything else."""

from __future__ import annotations

import sys
import types
from typing import Any, cast

import pytest

from pymanus.errors import ConfigError
from pymanus.models import ScriptedModel, resolve_model


def test_openai_spec(no_openai_env: None) -> None:
    from pymanus.models.openai import OpenAIModel

    model = resolve_model(
        "openai:qwen2.5:7b",
        base_url="http://127.0.0.1:11434/v1",
        api_key="sk-x",
        context_window=32768,
        vision=True,
        request_timeout=12.5,
    )
    assert isinstance(model, OpenAIModel)
    assert model.model_name == "qwen2.5:7b"  # only the first colon separates the kind
    assert model.base_url == "http://127.0.0.1:11434/v1"
    assert (model.context_window, model.vision, model.request_timeout) == (32768, True, 12.5)


def test_openai_spec_without_key_is_config_error(no_openai_env: None) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_local_spec_calls_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    built = ScriptedModel([])

    class FakeLocalModel:
        @classmethod
        def from_spec(cls, spec: str, **kwargs: Any) -> ScriptedModel:
            seen.append((spec, kwargs))
            return built

    fake = types.ModuleType("pymanus.models.local")
    fake.LocalModel = FakeLocalModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pymanus.models.local", fake)
    assert resolve_model("local:qwen2.5-coder-1.5b", context_window=4096) is built
    assert resolve_model("local:/models/my model.gguf") is built
    assert seen == [
        ("qwen2.5-coder-1.5b", {"context_window": 4096}),
        ("/models/my model.gguf", {"context_window": None}),
    ]


def test_model_instance_passes_through() -> None:
    model = ScriptedModel(["hi"])
    assert resolve_model(model) is model


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "local:", "anthropic:claude", "", "  ", ":x"])
def test_unknown_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model(spec)
    message = str(caught.value)
    assert "openai:<model>" in message and "local:<pack-name>" in message and "local:<path.gguf>" in message
    assert "\n" not in message


def test_non_string_spec_is_config_error() -> None:
    with pytest.raises(ConfigError, match="must be a string"):
        resolve_model(cast(Any, 42))

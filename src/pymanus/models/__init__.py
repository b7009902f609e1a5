"""The model gateway: the :class:`Model` protocol and its implementations.

``OpenAIModel`` lives in :mod:`pymanus.models.openai` and is imported only on demand (the
``openai`` SDK is heavy); :func:`resolve_model` builds one from ``"openai:<model>"``.
Wrappers: :class:`ResilientModel` (retries, breaker) and :class:`FallbackModel` (see
:mod:`pymanus.models.resilience`; :func:`gateway_model` builds both from the config),
:class:`RecordingModel` / :class:`ReplayModel` (cassettes of a run's exchanges).
"""

from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk, ToolDefinition, WrapperModel
from pymanus.models.cassette import RecordingModel, ReplayModel
from pymanus.models.resilience import CircuitBreaker, FallbackModel, ResilientModel, RetryPolicy, gateway_model
from pymanus.models.resolve import resolve_model
from pymanus.models.testing import FunctionModel, ScriptedModel, call

__all__ = [
    "CircuitBreaker",
    "FallbackModel",
    "FunctionModel",
    "Model",
    "ModelResponse",
    "ModelSettings",
    "RecordingModel",
    "ReplayModel",
    "ResilientModel",
    "RetryPolicy",
    "ScriptedModel",
    "TextChunk",
    "ToolDefinition",
    "WrapperModel",
    "call",
    "gateway_model",
    "resolve_model",
]

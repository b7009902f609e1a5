"""The model gateway: the :class:`Model` protocol and its implementations.

``OpenAIModel`` lives in :mod:`pymanus.models.openai` and is imported only on demand (the
``openai`` SDK is heavy); :func:`resolve_model` builds one from ``"openai:<model>"``.
"""

from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk, ToolDefinition
from pymanus.models.resolve import resolve_model
from pymanus.models.testing import FunctionModel, ScriptedModel, call

__all__ = [
    "FunctionModel",
    "Model",
    "ModelResponse",
    "ModelSettings",
    "ScriptedModel",
    "TextChunk",
    "ToolDefinition",
    "call",
    "resolve_model",
]

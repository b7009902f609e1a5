"""The model gateway: the :class:`Model` protocol and its implementations."""

from pymanus.models.base import Model, ModelResponse, ModelSettings, TextChunk, ToolDefinition

__all__ = ["Model", "ModelResponse", "ModelSettings", "TextChunk", "ToolDefinition"]

"""Turn a model string (``openai:<name>``, ``local:<pack or path.gguf>``) into a :class:`Model`.

Implementations are imported only when asked for: the ``openai`` SDK and llama.cpp are
heavy, and ``import pymanus`` stays light.
"""

from __future__ import annotations

from pymanus.errors import ConfigError
from pymanus.models.base import Model

ACCEPTED_FORMS = "openai:<model>, local:<pack-name> or local:<path.gguf>"


def resolve_model(
    spec: str | Model,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    context_window: int | None = None,
    vision: bool = False,
    request_timeout: float = 60.0,
    connect_timeout: float = 10.0,
) -> Model:
    """The model a spec names; a :class:`Model` instance is returned as it is.

    ``base_url``, ``api_key``, ``vision``, ``request_timeout`` and ``connect_timeout`` apply
    to ``openai:`` models; ``context_window`` to both kinds. Raises :class:`~pymanus.errors.ConfigError`
    for anything else, naming the accepted forms.
    """
    if isinstance(spec, Model):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"model must be a string ({ACCEPTED_FORMS}) or a Model, not {type(spec).__name__}")
    kind, sep, rest = spec.strip().partition(":")
    rest = rest.strip()
    if sep and kind == "openai" and rest:
        from pymanus.models.openai import OpenAIModel

        return OpenAIModel(
            rest,
            base_url=base_url,
            api_key=api_key,
            context_window=context_window,
            vision=vision,
            request_timeout=request_timeout,
            connect_timeout=connect_timeout,
        )
    if sep and kind == "local" and rest:
        from pymanus.models.local import LocalModel

        return LocalModel.from_spec(rest, context_window=context_window)
    raise ConfigError(f"unknown model {spec!r}: use {ACCEPTED_FORMS}")

"""The Manus preset: the agent ``pymanus run`` builds from settings."""

from __future__ import annotations

from pymanus.agent.agent import Agent
from pymanus.config import Settings


def build_manus_agent(settings: Settings) -> Agent:
    """An agent with the model, workspace and limits of ``settings``."""
    from pymanus.models.resolve import resolve_model

    model = resolve_model(
        settings.model.name,
        base_url=settings.model.base_url or None,
        api_key=settings.model.api_key or None,
        context_window=settings.model.context_window,
        vision=settings.model.vision,
        request_timeout=settings.model.request_timeout,
    )
    return Agent(
        model,
        max_steps=settings.agent.max_steps,
        timeout=settings.agent.timeout,
        workspace=settings.agent.workspace,
        stream=True,
    )

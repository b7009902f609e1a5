"""Aids for small local models, each with a name and a switch.

A small model on a laptop CPU needs help a capable hosted model does not: fewer tools,
one call per step, an example to imitate, the inputs shown up front, its code's JSON
escaping repaired, errors explained, and its final answer checked against the files it
should have left. Each aid here is one such help, built only from the agent's extension
points (:class:`~pymanus.agent.extensions.Extension`: prompts and answer checks;
:class:`~pymanus.tools.middleware.ToolMiddleware`) or from the preset's arguments (the
toolset, the sampling settings). The loop and the tools know nothing of them.

By default every aid is on for ``local:`` models and off for the others; ``[local_aids]
enabled`` / ``disabled`` in the config change that (:func:`select`). ``docs/local-aids.md``
describes each one: what triggers it, what it does, and its switch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from pymanus.agent.agent import Agent
from pymanus.agent.extensions import Extension
from pymanus.agent.manus import build_manus_agent, preset_model, sandbox_for
from pymanus.config import LocalAidsConfig, Settings
from pymanus.errors import ConfigError
from pymanus.models.base import Model, ModelSettings
from pymanus.sandbox.process import Sandbox
from pymanus.tools.builtin.human import AskHuman
from pymanus.tools.middleware import ToolMiddleware

COMPACT_TOOLS = frozenset({"read_file", "write_file", "edit_file", "list_dir", "python"})
"""The built-in tools the ``compact_tools`` aid offers (plus those the settings enable)."""


@dataclass(frozen=True)
class AidInputs:
    """What an aid may be built from."""

    settings: Settings
    sandbox: Sandbox


@dataclass(frozen=True)
class Aid:
    """One aid: what it adds to the preset agent."""

    name: str
    summary: str
    extension: Callable[[AidInputs], Extension] | None = None
    tools: frozenset[str] | None = None
    """Offer only these built-in tools."""
    one_call_per_step: bool = False


def _code_repair(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.code_repair import CodeRepair

    return _MiddlewareAid("code_repair", CodeRepair())


def _error_hints(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.error_hints import ErrorHints

    return _MiddlewareAid("error_hints", ErrorHints())


def _file_previews(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.previews import FilePreviews

    return FilePreviews()


def _output_check(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.outputs import OutputCheck

    return OutputCheck()


def _test_check(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.tests_pass import TestsPass

    return TestsPass(inputs.sandbox)


def _progress_note(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.progress import ProgressNote

    return ProgressNote(inputs.settings.agent.max_steps)


def _worked_example(inputs: AidInputs) -> Extension:
    from pymanus.local_aids.example import WorkedExample

    return WorkedExample()


class _MiddlewareAid(Extension):
    """An extension that only brings middleware."""

    def __init__(self, name: str, middleware: ToolMiddleware) -> None:
        self.name = name
        self.middleware = middleware


AIDS: dict[str, Aid] = {
    aid.name: aid
    for aid in (
        Aid("compact_tools", "offer five file and python tools instead of twelve", tools=COMPACT_TOOLS),
        Aid("one_call_per_step", "one tool call per response", one_call_per_step=True),
        Aid("worked_example", "a short worked run at the end of the system prompt", _worked_example),
        Aid("file_previews", "the first message shows the heads of small files", _file_previews),
        Aid("progress_note", "each step's reminder: steps left, files changed", _progress_note),
        Aid("code_repair", "repair JSON-escaping and one-line-block mistakes in code", _code_repair),
        Aid("error_hints", "a note on the likely cause of a python exception", _error_hints),
        Aid("output_check", "send back an answer while named files are missing or broken", _output_check),
        Aid("test_check", "send back an answer while the workspace's tests fail", _test_check),
    )
}
"""Every aid, by name, in the order they are applied."""


def select(config: LocalAidsConfig, model_name: str) -> list[str]:
    """The aids on for ``model_name``: all for ``local:`` models, none for others, then ``config``'s switches.

    Raises :class:`~pymanus.errors.ConfigError` naming an unknown aid and the known ones.
    """
    for key, names in (("enabled", config.enabled), ("disabled", config.disabled)):
        unknown = [name for name in names if name != "all" and name not in AIDS]
        if unknown:
            raise ConfigError(
                f"local_aids.{key}: unknown aid {', '.join(map(repr, unknown))}; known: all, {', '.join(AIDS)}"
            )

    def expand(names: Collection[str]) -> set[str]:
        return set(AIDS) if "all" in names else set(names)

    chosen = set(AIDS) if model_name.startswith("local:") else set()
    chosen = (chosen | expand(config.enabled)) - expand(config.disabled)
    return [name for name in AIDS if name in chosen]


def equipped_agent(
    settings: Settings,
    *,
    model: Model | None = None,
    asker: AskHuman | None = None,
    aids: Sequence[str] | None = None,
) -> Agent:
    """The preset agent with the aids ``settings`` turn on for its model (or exactly ``aids``)."""
    model = model or preset_model(settings)
    try:
        names = select(settings.local_aids, model.name) if aids is None else list(aids)
    except ConfigError as exc:
        raise ConfigError(f"{settings.source}: {exc}" if settings.source else str(exc)) from None
    unknown = [name for name in names if name not in AIDS]
    if unknown:
        raise ConfigError(f"unknown aid {', '.join(map(repr, unknown))}; known: {', '.join(AIDS)}")
    chosen = [AIDS[name] for name in names]
    sandbox = sandbox_for(settings)
    inputs = AidInputs(settings, sandbox)
    tools: set[str] | None = None
    for aid in chosen:
        if aid.tools is not None:
            tools = set(aid.tools) if tools is None else tools & aid.tools
    return build_manus_agent(
        settings,
        model=model,
        asker=asker,
        sandbox=sandbox,
        extensions=[aid.extension(inputs) for aid in chosen if aid.extension is not None],
        tools=tools,
        model_settings=ModelSettings(parallel_tool_calls=False) if any(a.one_call_per_step for a in chosen) else None,
    )


__all__ = ["AIDS", "Aid", "equipped_agent", "select"]

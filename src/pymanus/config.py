"""Settings from the config file, the environment and flags (in rising precedence).

The file is ``pymanus.toml`` in the working directory, else
``~/.config/pymanus/config.toml``. Environment: ``PYMANUS_MODEL``,
``PYMANUS_WORKSPACE``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pymanus.errors import ConfigError

DEFAULT_MODEL = "local:qwen2.5-coder-1.5b"
CONFIG_FILE_NAME = "pymanus.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelConfig(_Section):
    """``[model]``: which model, and how to reach it."""

    name: str = DEFAULT_MODEL
    base_url: str = ""
    api_key: str = ""
    context_window: int | None = Field(default=None, gt=0)
    vision: bool = False
    request_timeout: float = Field(default=60.0, gt=0)
    """Seconds to wait for each read of an answer (the gap between chunks when streaming)."""
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to wait for a connection to an ``openai:`` endpoint."""
    total_timeout: float = Field(default=600.0, gt=0)
    """Seconds one call to an ``openai:`` endpoint may take, its retries and waits included."""
    max_retries: int = Field(default=4, ge=0)
    """Retries of a call that failed transiently (429, 408, 5xx, connection, timeout, cut stream)."""
    max_concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight to the endpoint at most, over all runs of the agent (unset: no cap)."""
    breaker_failures: int = Field(default=5, ge=1)
    """Transient failures in a row after which an endpoint's calls are refused..."""
    breaker_reset: float = Field(default=30.0, gt=0)
    """...until this many seconds have passed; then one call probes it."""
    fallback: list[str] = Field(default_factory=list)
    """Models tried in order when this one fails or its breaker is open."""
    tokenizer: str = ""
    """A ``tokenizer.json`` counting this model's tokens (the ``[tokenizer]`` extra);
    else ``local:`` models count with their own tokenizer and others with the calibrated estimate."""

    @field_validator("name")
    @classmethod
    def _known_prefix(cls, value: str) -> str:
        return _model_string(value)

    @field_validator("fallback")
    @classmethod
    def _known_prefixes(cls, values: list[str]) -> list[str]:
        return [_model_string(value) for value in values]


def _model_string(value: str) -> str:
    if not value.startswith(("openai:", "local:")) or value.endswith(":"):
        raise ValueError(f"{value!r} is not a model string; use 'openai:<model>' or 'local:<pack or .gguf path>'")
    return value


class AgentConfig(_Section):
    """``[agent]``: limits and the workspace."""

    max_steps: int = Field(default=30, ge=1)
    workspace: str = "./workspace"
    timeout: float | None = Field(default=None, gt=0)
    nudge_unfinished: bool = True
    """Send a clearly unfinished text-only reply back once (see :mod:`pymanus.agent.unfinished`)."""


class LimitsConfig(_Section):
    """``[limits]``: what one run may spend on its model (unset: no limit); see ``UsageLimits``."""

    max_requests: int | None = Field(default=None, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)


class PriceConfig(_Section):
    """One model's price per million tokens, in ``[prices."openai:gpt-4o-mini"]``."""

    input: float = Field(default=0.0, ge=0)
    output: float = Field(default=0.0, ge=0)


class SandboxConfig(_Section):
    """``[sandbox]``: how model-written code is isolated."""

    backend: Literal["auto", "bwrap", "landlock", "none"] = "auto"
    """``auto``: bubblewrap, else Landlock; code is refused when neither confines it.
    ``none`` runs code unconfined (see :class:`pymanus.sandbox.Sandbox`)."""
    shell: bool = False
    shell_allow: list[str] = Field(default_factory=list)
    read_only_roots: list[str] = Field(default_factory=list)


class WorkspaceConfig(_Section):
    """``[workspace]``: what the agent may change, and how much history of its changes is kept."""

    read_only: list[str] = Field(default_factory=list)
    """Globs of paths the agent may read but never change (``"*.md"``: at any depth; ``"data/**"``)."""
    keep_runs: int = Field(default=20, ge=1)
    """Journals of this many recent runs are kept (``pymanus undo`` needs them)."""


class WebConfig(_Section):
    """``[web]``: what the web tools may reach."""

    allow_domains: list[str] = Field(default_factory=list)
    search_docs: str = ""
    searxng_url: str = ""


class LocalAidsConfig(_Section):
    """``[local_aids]``: the small-model aids (see :mod:`pymanus.local_aids`) to turn on or off.

    By default every aid is on for ``local:`` models and off for the others; ``enabled``
    turns aids on for any model, ``disabled`` turns them off (it wins over ``enabled``).
    ``"all"`` names every aid.
    """

    enabled: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)


class ContextConfig(_Section):
    """``[context]``: what of a long history each request carries (see ``docs/context.md``)."""

    enabled: bool = True
    """Fit every request into ``[model] context_window`` (or a local model's own window)."""
    reserve_tokens: int = Field(default=1024, ge=0)
    """Tokens kept free for the answer when a request sets no ``max_tokens``."""
    cut_tool_results: bool = True
    """Cut long tool results of old turns (their head is kept)..."""
    tool_result_tokens: int = Field(default=400, ge=16)
    """...to about this many tokens."""
    drop_images: bool = True
    """Drop the screenshots of old turns."""
    summarise: bool = True
    """Replace the oldest turns with a summary the model writes (else they are dropped with a note)."""
    keep_recent: int = Field(default=3, ge=1)
    """The latest turns, always sent."""
    tool_selection: int = Field(default=12, ge=0)
    """With more tools than this, each request offers only those relevant to the step (0: never)."""
    tool_selection_local: bool = False
    """Select tools for ``local:`` models too (off: a changing tool list defeats their prompt cache)."""
    tool_selection_vectors: bool = True
    """Rank tools by meaning too, when the ``[memory]`` extra and its model are installed (else by BM25)."""
    memory: str = ""
    """SQLite file of the long-term memory of past runs (empty: no memory)."""
    memory_vectors: bool = True
    """Search memory by meaning too (needs the ``[memory]`` extra and its model; without them: by keyword)."""
    embedding_model: str = ""
    """Directory of a BERT sentence-transformers model for memory and tool vectors (empty: the packaged
    all-MiniLM-L6-v2)."""


class Settings(_Section):
    """All settings of PyManus."""

    model: ModelConfig = Field(default_factory=ModelConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    local_aids: LocalAidsConfig = Field(default_factory=LocalAidsConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)
    """Per model string, what it costs (for ``[limits] max_cost`` and the run's cost)."""
    context: ContextConfig = Field(default_factory=ContextConfig)
    source: str | None = Field(default=None, exclude=True)
    """The config file these settings were read from, if any."""

    @classmethod
    def load(
        cls,
        *,
        path: Path | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        cwd: Path | None = None,
    ) -> Settings:
        """Read the config file, apply the environment, then ``overrides`` (the flags).

        ``overrides`` maps section to keys, e.g. ``{"agent": {"max_steps": 5}}``;
        ``None`` values are ignored.
        """
        env = os.environ if env is None else env
        file = path if path is not None else find_config_file(cwd or Path.cwd())
        data: dict[str, dict[str, Any]] = _read_toml(file) if file is not None else {}

        for variable, (section, key) in _ENV_KEYS.items():
            if env.get(variable):
                data.setdefault(section, {})[key] = env[variable]
        for section, values in (overrides or {}).items():
            for key, value in values.items():
                if value is not None:
                    data.setdefault(section, {})[key] = value
        try:
            settings = cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, file)) from None
        settings.source = str(file) if file is not None else None
        return settings


_ENV_KEYS = {
    "PYMANUS_MODEL": ("model", "name"),
    "PYMANUS_WORKSPACE": ("agent", "workspace"),
    "OPENAI_BASE_URL": ("model", "base_url"),
    "OPENAI_API_KEY": ("model", "api_key"),
}


def find_config_file(cwd: Path) -> Path | None:
    """``pymanus.toml`` in ``cwd``, else the user's config file, else ``None``."""
    local = cwd / CONFIG_FILE_NAME
    if local.is_file():
        return local
    user = Path(os.path.expanduser("~/.config/pymanus/config.toml"))
    return user if user.is_file() else None


def _read_toml(file: Path) -> dict[str, Any]:
    try:
        with file.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from None


def _describe(exc: ValidationError, file: Path | None) -> str:
    where = f"{file}: " if file is not None else ""
    problems = []
    for error in exc.errors(include_url=False):
        key = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        problems.append(f"{key}: {message}")
    return where + "invalid config: " + "; ".join(problems)

"""The exception types of PyManus.

Two families matter to callers:

* errors a *user* made (bad config, missing key, bad flag): :class:`ConfigError`;
  the CLI prints them as one line and exits 2.
* errors of a *run*: a model that fails, a limit that is hit. A tool's own failure is
  never one of these: it becomes an observation for the model.
"""

from __future__ import annotations


class PyManusError(Exception):
    """Base class of every error PyManus raises on purpose."""


class ConfigError(PyManusError):
    """The user's configuration, flags or environment are invalid."""


class ModelError(PyManusError):
    """A model request failed.

    ``retryable`` says whether sending the same request again may succeed (timeouts,
    rate limits, 5xx); auth failures and bad requests are not retryable. ``retry_after``
    is the wait in seconds the endpoint asked for (its ``Retry-After`` header), if any.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ModelAuthError(ModelError):
    """The endpoint rejected the API key (401/403). Never retried."""


class ContextOverflowError(ModelError):
    """The request does not fit in the model's context window."""


class ModelOutputError(ModelError):
    """The model answered with something that cannot be used (e.g. nothing at all)."""


class CircuitOpenError(ModelError):
    """The endpoint failed too often in a row; calls are refused until it is probed again."""


class ToolError(PyManusError):
    """Raised by a tool to report a failure to the model.

    The message becomes the tool's observation; the run goes on.
    """


class ToolDefinitionError(PyManusError):
    """A Python function cannot be turned into a tool (e.g. an unsupported type hint)."""


class UsageLimitExceeded(PyManusError):
    """A token, request or cost budget of the run was exhausted."""


class SandboxError(PyManusError):
    """The sandbox refused an operation or could not be set up."""


class PathEscapeError(SandboxError):
    """A path resolved outside the workspace (or is otherwise not allowed)."""


class ModelPackError(PyManusError):
    """A model pack is unknown, missing, incomplete or corrupt."""

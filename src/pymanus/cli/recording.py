"""What ``pymanus run --record`` stores beside a run's model exchanges, so ``pymanus replay`` can run it again.

The cassette (:mod:`pymanus.models.cassette`) holds the model's answers. To run the same
task again, a replay also needs what the run started from, kept in the cassette's ``run``
(:class:`RecordedRun`):

* the task and the settings; not the key or the endpoint (a replay asks no model), nor the
  workspace or the long-term memory (a replay has its own, and never touches the memory);
* whether ``ask_human`` was offered (a terminal was there): the replay offers it too and
  gives the person's recorded answers again, in order (:class:`RecordedAnswers`);
* the workspace's files as the run found them, up to :data:`MAX_STORED_BYTES` (the state
  folder ``.pymanus`` and tool folders such as ``.git`` are left out): a replay starts from
  them, so it sees what the recorded run saw;
* how the run ended, so a replay can tell whether it reproduced it (:func:`reproduction`).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from pymanus.agent.events import RunState
from pymanus.agent.result import RunResult
from pymanus.config import Settings
from pymanus.errors import ConfigError
from pymanus.models.base import Model
from pymanus.models.cassette import Cassette, RecordingModel, ReplayModel
from pymanus.tools.builtin.human import HumanUnavailable
from pymanus.tools.builtin.workspace_scan import scan

MAX_STORED_BYTES = 5 * 1024 * 1024
"""The most a cassette holds of the starting workspace; a larger one is left out (replay it with ``--workspace``)."""

ANSWERED = "The user answered: "
"""How ``ask_human`` reports an answer (see :mod:`pymanus.tools.builtin.human`)."""


class RecordedOutcome(BaseModel):
    """How the recorded run ended."""

    state: RunState
    reason: str
    output: str
    steps: int


class RecordedRun(BaseModel):
    """What a replay needs to run the recorded task again, and how the recorded run ended."""

    task: str
    settings: Settings
    ask_human: bool = False
    files: dict[str, str] = Field(default_factory=dict)
    """The starting workspace: relative path → content, base64-encoded."""
    files_left_out: str = ""
    """Why the starting workspace is not in the cassette (empty: it is, whole)."""
    outcome: RecordedOutcome | None = None
    """``None`` while the run goes on, or when it was interrupted."""

    @classmethod
    def of(cls, cassette: Cassette, path: Path) -> RecordedRun:
        """The recorded run of ``cassette`` (read from ``path``); a :class:`ConfigError` when it has none."""
        if not cassette.run:
            raise ConfigError(f"{path} holds model exchanges but no task: record a run with `pymanus run --record`")
        try:
            return cls.model_validate(cassette.run)
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise ConfigError(f"{path}: the recorded run is unreadable: {where}: {problem['msg']}") from None


@dataclass
class Recording:
    """A run being recorded: the model whose exchanges go to the cassette, and what it holds of the run."""

    model: RecordingModel
    run: RecordedRun

    @classmethod
    def start(cls, model: Model, path: Path, task: str, settings: Settings, *, ask_human: bool) -> Recording:
        """Record ``model``'s exchanges to ``path``, with the run's task, settings and starting workspace.

        The cassette is written at once: a :class:`ConfigError` when it cannot be.
        """
        stored = settings.model_copy(deep=True)
        stored.model.api_key = stored.model.base_url = ""
        stored.agent.workspace = ""
        stored.context.memory = ""
        files, left_out = _snapshot(Path(settings.agent.workspace).expanduser())
        run = RecordedRun(task=task, settings=stored, ask_human=ask_human, files=files, files_left_out=left_out)
        recording = cls(RecordingModel(model, path), run)
        recording._write()
        return recording

    def finish(self, result: RunResult) -> None:
        """Add how the run ended to the cassette, and write it."""
        self.run.outcome = RecordedOutcome(
            state=result.state, reason=result.reason, output=result.output, steps=result.steps
        )
        self._write()

    def _write(self) -> None:
        self.model.cassette.run = self.run.model_dump(mode="json")
        try:
            self.model.cassette.save(self.model.path)
        except OSError as exc:
            raise ConfigError(f"cannot write cassette {self.model.path}: {exc.strerror}") from None


def _snapshot(workspace: Path) -> tuple[dict[str, str], str]:
    """The files of ``workspace`` (base64) and, when they are left out, why."""
    if not workspace.is_dir():
        return {}, ""
    found = scan(workspace)
    if found is None:
        return {}, "the workspace holds too many files"
    total = sum(size for _, size in found.values())
    if total > MAX_STORED_BYTES:
        return {}, f"the workspace holds {total / 1024 / 1024:.1f} MB (at most {MAX_STORED_BYTES // 1024 // 1024} MB)"
    files = {}
    for relative in sorted(found):
        try:
            files[relative] = base64.b64encode((workspace / relative).read_bytes()).decode("ascii")
        except OSError as exc:
            return {}, f"{relative} cannot be read: {exc.strerror}"
    return files, ""


def seed_workspace(workspace: Path, recorded: RecordedRun) -> None:
    """Write the recorded starting files into ``workspace`` (created if missing)."""
    root = workspace.resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the workspace {root}: {exc.strerror}") from None
    for relative, content in recorded.files.items():
        target = (root / relative).resolve()
        if not target.is_relative_to(root) or target == root:  # a cassette is input: no path leaves the folder
            raise ConfigError(f"the cassette's file {relative!r} is outside the workspace")
        try:
            data = base64.b64decode(content, validate=True)
        except ValueError:
            raise ConfigError(f"the cassette's file {relative!r} is not valid base64") from None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            raise ConfigError(f"cannot write {target}: {exc.strerror}") from None


def is_empty_folder(path: Path) -> bool:
    """Whether ``path`` is missing or an empty folder."""
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def replay_settings(recorded: RecordedRun, workspace: Path) -> Settings:
    """The recorded settings, for a replay in ``workspace`` (no long-term memory)."""
    settings = recorded.settings.model_copy(deep=True)
    settings.agent.workspace = str(workspace)
    settings.context.memory = ""
    return settings


class RecordedAnswers:
    """Answers ``ask_human`` with the person's answers of the recorded run, in order."""

    def __init__(self, cassette: Cassette) -> None:
        answers: dict[str, str | None] = {}
        for exchange in cassette.exchanges:
            for message in exchange.messages:
                if message.role == "tool" and message.name == "ask_human" and message.tool_call_id:
                    text = message.text  # what the tool said: the answer, or that nobody gave one
                    answer = text[len(ANSWERED) :] if text.startswith(ANSWERED) else None
                    answers.setdefault(message.tool_call_id, answer)
        self._answers = list(answers.values())

    async def __call__(self, question: str, run_id: str) -> str:
        """The next recorded answer."""
        if not self._answers:
            raise HumanUnavailable("the recorded run has no answer left for this question")
        answer = self._answers.pop(0)
        if answer is None:
            raise HumanUnavailable("nobody answered this question in the recorded run")
        return answer


def reproduction(recorded: RecordedRun, model: ReplayModel, result: RunResult) -> str | None:
    """How the replay departed from the recorded run (``None``: it reproduced it)."""
    if model.divergence is not None:
        return model.divergence
    outcome = recorded.outcome
    if outcome is not None:
        replayed = (result.state, result.reason, result.steps)
        if replayed != (outcome.state, outcome.reason, outcome.steps):
            return (
                f"the run ended {result.state.value} ({result.reason}) after {result.steps} steps; "
                f"recorded: {outcome.state.value} ({outcome.reason}) after {outcome.steps} steps"
            )
        if result.output != outcome.output:
            return f"the run's output differs: {result.output[:200]!r}; recorded: {outcome.output[:200]!r}"
    recorded_answers = len(model.cassette.exchanges)
    if model.position != recorded_answers:
        return f"the run used {model.position} of the {recorded_answers} recorded answers"
    return None

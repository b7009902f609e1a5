"""What a recording keeps of a run beside its exchanges: the person's answers, the preset's setup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli_cases import run_cli
from helpers.preset_cases import settings_for
from pymanus import Message
from pymanus.agent.manus import build_manus_agent, preset_model
from pymanus.cli.recording import RecordedAnswers, Recording
from pymanus.config import ModelConfig, Settings
from pymanus.models import ScriptedModel, call
from pymanus.models.cassette import Cassette, Exchange
from pymanus.tools.builtin.human import HumanUnavailable


async def test_recorded_answers_are_given_again_in_order() -> None:
    asked = [
        Message.assistant(tool_calls=[call("ask_human", question="Colour?")]),
        Message.tool("c1", "ask_human", "The user answered: blue"),
        Message.tool("c2", "ask_human", "No human is available to answer (no terminal); proceed."),
    ]
    tape = Cassette(exchanges=[Exchange(messages=asked[:2]), Exchange(messages=asked)])
    answers = RecordedAnswers(tape)
    assert await answers("Colour?", "run") == "blue"
    with pytest.raises(HumanUnavailable, match="nobody answered this question in the recorded run"):
        await answers("Size?", "run")
    with pytest.raises(HumanUnavailable, match="no answer left"):
        await answers("More?", "run")


async def test_a_run_recorded_with_a_person_replays_their_answers(tmp_path: Path) -> None:
    async def person(question: str, run_id: str) -> str:
        return "blue"

    settings = settings_for(tmp_path / "workspace")
    model = ScriptedModel(
        [
            call("ask_human", question="Which colour?"),
            call("write_file", path="colour.txt", content="blue\n"),
            call("terminate", status="success", message="colour.txt says blue"),
        ]
    )
    recording = Recording.start(model, tmp_path / "tape.json", "Ask the colour.", settings, ask_human=True)
    agent = build_manus_agent(settings, model=recording.model, asker=person)
    try:
        result = await agent.run("Ask the colour.")
    finally:
        await agent.aclose()
    recording.finish(result)
    assert json.loads((tmp_path / "tape.json").read_text())["run"]["ask_human"] is True

    # The replay runs without a terminal: the person's recorded answer is given again.
    proc = run_cli(["replay", "tape.json", "--strict", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["reproduced"] is True and verdict["output"] == "colour.txt says blue"


def test_a_recorded_preset_model_keeps_its_window_scope(tmp_path: Path) -> None:
    config = ModelConfig(name="openai:m", base_url="http://127.0.0.1:9/v1", api_key="k", context_window=4096)
    settings = Settings(model=config, agent=settings_for(tmp_path).agent)
    recording = Recording.start(preset_model(settings), tmp_path / "tape.json", "x", settings, ask_human=False)
    agent = build_manus_agent(settings, model=recording.model)
    assert "WindowScope" in [type(e).__name__ for e in agent.extensions]

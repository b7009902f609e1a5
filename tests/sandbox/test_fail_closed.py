"""The sandbox never fails open: ``auto`` refuses to run code when no backend confines it, the
refusal reaches the model as an observation while the run goes on, and only ``none`` runs
code unconfined. Also: the default toolset, on each confining backend, blocks the escape
probes and still does a quick-start job (write a script, run it, save its output)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from helpers.preset_cases import settings_for
from helpers.sandbox_backends import CONFINED, install_fake_bwrap, unusable_reason
from pymanus import RunState
from pymanus.agent.manus import build_manus_agent
from pymanus.errors import SandboxError
from pymanus.models import ScriptedModel, call
from pymanus.sandbox import Sandbox, bwrap, confine
from pymanus.sandbox.report import sandbox_report
from pymanus.tools.builtin.python import PythonRunner
from pymanus.tools.tool import ToolContext

PY = sys.executable


@pytest.fixture
def nothing_confines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host where bwrap fails to make namespaces and the kernel has no usable Landlock."""
    install_fake_bwrap(tmp_path / "bin", monkeypatch)

    def unsupported(*args: object, **kwargs: object) -> confine.ProbeResult:
        return confine.ProbeResult(0, None, "Landlock is not usable: this kernel has no Landlock")

    monkeypatch.setattr(confine, "probe", unsupported)


@pytest.mark.usefixtures("nothing_confines")
async def test_auto_refuses_when_neither_backend_confines(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    box = Sandbox(tmp_path / "ws", backend="auto")
    assert box.active_backend == "refused" and not box.confined
    with pytest.raises(SandboxError) as caught:
        await box.run([PY, "-c", f"open({str(outside)!r}, 'w').write('escaped')"])
    message = str(caught.value)
    assert "Refusing to run code" in message
    assert "bwrap: No permissions to creating new namespace" in message  # what is missing
    assert "this kernel has no Landlock" in message
    assert "apt-get install bubblewrap" in message  # the fix
    assert '[sandbox] backend = "none"' in message and "--sandbox none" in message  # the opt-out
    assert not outside.exists()
    report = sandbox_report(box)
    assert report.refusal == message and not any(layer.protected for layer in report.layers)


@pytest.mark.usefixtures("nothing_confines")
async def test_none_runs_unconfined_when_the_user_says_so(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    box = Sandbox(tmp_path / "ws", backend="none")
    assert box.active_backend == "none" and box.refusal() is None
    result = await box.run([PY, "-c", f"open({str(outside)!r}, 'w').write('unconfined')"])
    assert result.ok and outside.read_text() == "unconfined"


@pytest.mark.usefixtures("nothing_confines")
async def test_the_python_tool_answers_with_the_refusal(tmp_path: Path) -> None:
    tool = PythonRunner(Sandbox(tmp_path / "ws", backend="auto")).tool  # building it does not raise
    result = await tool.run(tool.validate({"code": "print(1 + 1)"}), ToolContext(run_id="r"))
    assert result.is_error
    assert "Refusing to run code" in result.text and "apt-get install bubblewrap" in result.text


@pytest.mark.usefixtures("nothing_confines")
async def test_a_run_goes_on_when_code_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            call("python", code="print(6 * 7)"),
            call("write_file", path="answer.txt", content="42\n"),
            call("terminate", status="success", message="wrote answer.txt"),
        ]
    )
    agent = build_manus_agent(settings_for(tmp_path / "ws"), model=model)
    try:
        result = await agent.run("Compute 6 * 7 and save it to answer.txt.")
    finally:
        await agent.aclose()
    assert result.state is RunState.FINISHED, result.output
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert "Refusing to run code" in observations[0] and "--sandbox none" in observations[0]
    assert (tmp_path / "ws" / "answer.txt").read_text() == "42\n"


def test_the_probe_catches_a_layer_that_does_not_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if (reason := unusable_reason("landlock")) is not None:
        pytest.skip(reason)
    monkeypatch.setattr(confine.Confiner, "apply", lambda self: None)  # confines nothing
    result = confine.probe(bwrap.python_dirs(tmp_path), [], network=False)
    assert not result.ok and "readable" in (result.reason or "")
    box = Sandbox(tmp_path, backend="landlock")
    assert box.active_backend == "refused"


# -- the default toolset, on each backend ---------------------------------------------------
@pytest.fixture(
    params=[
        *CONFINED,
        pytest.param(
            "auto",
            id="auto-broken-bwrap",
            marks=pytest.mark.skipif(unusable_reason("landlock") is not None, reason="landlock cannot run here"),
        ),
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "auto":
        install_fake_bwrap(tmp_path / "bin", monkeypatch)
    return str(request.param)


SCRIPT = "for n in range(1, 11):\n    print(n * n)\n"


async def test_the_default_toolset_blocks_escapes_and_does_the_job(backend: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    secret = tmp_path / "home" / ".secret"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    model = ScriptedModel(
        [
            call("python", code=f"print(open({str(secret)!r}).read())"),
            call("python", code=f"open({str(tmp_path / 'planted.txt')!r}, 'w').write('x')"),
            call("python", code=f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"),
            call("write_file", path="squares.py", content=SCRIPT),
            call("python", code="python squares.py > squares.txt"),
            call("terminate", status="success", message="squares.txt holds the squares"),
        ]
    )
    agent = build_manus_agent(settings_for(workspace, backend=backend), model=model)
    try:
        result = await agent.run("Write squares.py, run it, and save what it prints to squares.txt.")
    finally:
        await agent.aclose()
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing reached the host's loopback
    listener.close()
    assert result.state is RunState.FINISHED, result.output
    observations = [m.text for m in result.messages if m.role == "tool"]
    assert "TOP-SECRET" not in "".join(observations)
    assert "Permission" in observations[0] or "No such file" in observations[0], observations[0]
    assert not (tmp_path / "planted.txt").exists()
    assert "Error" in observations[2], observations[2]
    assert (workspace / "squares.txt").read_text().split() == [str(n * n) for n in range(1, 11)]

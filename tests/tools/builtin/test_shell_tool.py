"""The shell tool: runs bash in the sandbox; with an allowlist, refuses what it cannot vouch for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pymanus.errors import ToolError
from pymanus.sandbox import Sandbox
from pymanus.tools import Tool, ToolContext, ToolResult
from pymanus.tools.builtin.shell import check_allowed, shell_tool

BACKENDS = [
    "none",
    pytest.param("bwrap", marks=pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")),
]
ALLOWED = ["ls", "cat", "grep", "wc", "echo", "head", "sort"]


async def call(tool: Tool, command: str) -> ToolResult:
    return await tool.run(tool.validate({"command": command}), ToolContext(run_id="run"))


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "ws", backend=request.param, timeout=10)


async def test_runs_bash_in_the_workspace(sandbox: Sandbox) -> None:
    tool = shell_tool(sandbox)
    assert tool.name == "shell" and not tool.parallel_safe
    result = await call(tool, "pwd; echo hi > f.txt; cat f.txt; echo oops >&2")
    assert not result.is_error
    assert result.text == f"{sandbox.workspace}\nhi\n\n[stderr]\noops\n\n[exit code 0]"
    assert (sandbox.workspace / "f.txt").read_text() == "hi\n"


async def test_failures_and_timeouts_are_observations(sandbox: Sandbox) -> None:
    tool = shell_tool(Sandbox(sandbox.workspace, backend=sandbox.backend, timeout=1))
    failed = await call(tool, "ls no-such-file")
    assert failed.is_error and "[exit code 2]" in failed.text and "No such file" in failed.text
    slow = await call(tool, "echo started; sleep 30")
    assert slow.is_error and "started" in slow.text and "ran longer than 1 s" in slow.text
    empty = await call(tool, "   ")
    assert empty.is_error and "empty" in empty.text


async def test_endless_output_fits_in_one_result(sandbox: Sandbox) -> None:
    result = await call(shell_tool(Sandbox(sandbox.workspace, backend=sandbox.backend, timeout=1)), "yes")
    assert result.is_error and "bytes of output cut" in result.text and "ran longer" in result.text
    assert len(result.text) < 20_000


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap")
async def test_description_says_there_is_no_network(tmp_path: Path) -> None:
    tool = shell_tool(Sandbox(tmp_path, backend="bwrap"), allow_programs=["ls"])
    assert "no network" in tool.description and "Only these programs may be used: ls" in tool.description
    result = await call(tool, "ls")
    assert not result.is_error


async def test_allowlist_is_enforced_by_the_tool(sandbox: Sandbox) -> None:
    tool = shell_tool(sandbox, allow_programs=ALLOWED)
    refused = await call(tool, "echo hi && rm -rf .")
    assert refused.is_error and "'rm' is not an allowed program" in refused.text and "cat" in refused.text
    fine = await call(tool, "echo hello | wc -c")
    assert not fine.is_error and "6" in fine.text


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat a.txt | grep x | wc -l",
        "ls; echo done",
        "ls && echo ok || echo failed",
        "echo 'rm -rf /' > notes.txt",
        'grep "a|b;c" file.txt',
        "ls 2>&1 | sort",
        "echo a &> log.txt",
        "> out.txt echo x",
        "(ls; echo x) | head",
        "echo $HOME",
        "ls &",
    ],
)
def test_allowlist_accepts_plain_pipelines(command: str) -> None:
    check_allowed(command, ALLOWED)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf /", "'rm' is not an allowed program"),
        ("ls | sh", "'sh'"),
        ("ls; curl example.com", "'curl'"),
        ("ls && python -c 'x'", "'python'"),
        ("ls\nrm x", "'rm'"),
        ("ls || bash", "'bash'"),
        ("echo $(rm x)", "command substitution"),
        ("echo `rm x`", "backticks"),
        ("cat <(rm x)", "process substitution"),
        ("cat <<EOF\nx\nEOF", "here-documents"),
        ("PATH=. ls", "variable assignments"),
        ("x=rm; $x -rf .", "variable assignments"),
        ("$CMD", "'$CMD'"),
        ("/bin/rm x", "'/bin/rm'"),
        ("./ls", "'./ls'"),
        ("l? -la", "'l?'"),
        ("{rm,-rf,.}", "not an allowed program"),
        ("if true; then rm x; fi", "'if'"),
        ("echo 'unbalanced", "cannot be parsed"),
        ("ls() { rm -rf .; }; ls", "not an allowed program"),
        ("ls & rm x", "'rm'"),
        ("ls |& rm x", "'rm'"),
    ],
)
def test_allowlist_refuses(command: str, reason: str) -> None:
    with pytest.raises(ToolError) as info:
        check_allowed(command, ALLOWED)
    assert reason in str(info.value) and "Allowed programs" in str(info.value)

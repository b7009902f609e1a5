"""``pymanus run`` end to end: a real subprocess against a real local chat-completions server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.chat_server import ChatServer, completion, error, tool_call
from helpers.cli_cases import run_cli


def test_json_run_performs_scripted_calls_in_order(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    chat_server_thread.push(
        completion(tool_calls=[tool_call("planning", {"command": "get"})]),
        completion(
            tool_calls=[tool_call("terminate", {"status": "success", "message": "All done."})],
        ),
    )
    proc = run_cli(["run", "--model", "openai:any", "--json", "Say done."], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert set(summary) == {"run_id", "state", "output", "steps", "usage", "workspace", "changes"}
    assert summary["changes"] == []
    assert summary["state"] == "finished"
    assert summary["output"] == "All done."
    assert summary["steps"] == 2
    assert summary["usage"]["requests"] == 2
    assert set(summary["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens", "requests"}
    assert summary["workspace"] == str(tmp_path / "workspace")
    # The second request carried the first call's result, answered in order.
    second = chat_server_thread.messages[1]
    calling = next(i for i, m in enumerate(second) if m["role"] == "assistant")
    assert second[calling]["tool_calls"][0]["function"]["name"] == "planning"
    assert second[calling + 1]["role"] == "tool"
    assert second[calling + 1]["tool_call_id"] == second[calling]["tool_calls"][0]["id"]
    assert "No plan yet" in second[calling + 1]["content"] or "no plan" in second[calling + 1]["content"].lower()


def test_default_run_offers_the_manus_tools(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    chat_server_thread.push(completion("ok"))
    proc = run_cli(["run", "--model", "openai:any", "--json", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    request = chat_server_thread.requests[0]
    names = [t["function"]["name"] for t in request["tools"]]
    assert names == [
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "find_files",
        "grep",
        "python",
        "web_fetch",
        "web_search",
        "planning",
        "terminate",
    ]  # no ask_human: standard input is not a terminal, so nobody could answer
    system = request["messages"][0]["content"]
    assert "- python: run Python code" in system
    # The system prompt is the same for every run (a local model reuses its cache across runs);
    # what the workspace holds comes with the task.
    assert str(tmp_path) not in system
    assert request["messages"][1]["content"] == "x\n\nThe workspace is empty."


def test_run_that_never_terminates_exits_1(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    step = iter(range(1000))
    chat_server_thread.respond_with(
        lambda body: completion(tool_calls=[tool_call("planning", {"command": "get", "note": next(step)})])
    )
    proc = run_cli(
        ["run", "--model", "openai:any", "--json", "--max-steps", "3", "Loop."], tmp_path, chat_server_thread
    )
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["state"] == "error"
    assert summary["steps"] == 3


def test_progress_is_shown_without_json(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    chat_server_thread.push(completion("The answer is 42."))
    proc = run_cli(["run", "--model", "openai:any", "What is 2 + 40?"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    assert "The answer is 42." in proc.stdout
    assert "finished" in proc.stdout


def test_progress_shows_a_fallback_switch(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "pymanus.toml").write_text('[model]\nmax_retries = 0\nfallback = ["openai:backup"]\n')
    chat_server_thread.respond_with(
        lambda body: error(503, "overloaded") if body["model"] == "primary" else completion("Served by the backup.")
    )
    proc = run_cli(["run", "--model", "openai:primary", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    assert [r["model"] for r in chat_server_thread.requests] == ["primary", "backup"]
    (line,) = [line for line in proc.stdout.splitlines() if "switched to" in line]
    assert "model openai:primary failed (ModelError); switched to openai:backup" in line
    assert "Served by the backup." in proc.stdout


def test_an_openai_model_gets_no_local_aids(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    from pymanus.local_aids.example import EXAMPLE_RUN

    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("secret-looking note text\n")
    chat_server_thread.push(
        completion(tool_calls=[tool_call("python", {"code": "for i in range(2): if i: print(i)"})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "Done."})]),
    )
    proc = run_cli(["run", "--model", "openai:any", "Read notes.txt."], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    first, second = chat_server_thread.requests
    system, task = first["messages"][0]["content"], first["messages"][1]["content"]
    assert EXAMPLE_RUN not in system and "Example of a good run" not in system  # worked_example
    assert task == "Read notes.txt.\n\nFiles in the workspace:\n- notes.txt (1 line)"  # no file_previews
    assert {"grep", "find_files", "web_search", "planning"} <= {t["function"]["name"] for t in first["tools"]}
    assert "parallel_tool_calls" not in first  # no one_call_per_step
    observation = second["messages"][-1]["content"]
    assert "SyntaxError" in observation and "was run with each statement" not in observation  # no code_repair
    assert len(second["messages"]) == 4  # no progress_note reminder after the tool result


def test_configured_limits_end_a_run_with_its_reason(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "pymanus.toml").write_text("[limits]\nmax_requests = 1\n")
    chat_server_thread.push(completion(tool_calls=[tool_call("planning", {"command": "get"})]))
    proc = run_cli(["run", "--json", "--model", "openai:any", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["state"], summary["steps"], summary["usage"]["requests"]) == ("error", 2, 1)
    assert summary["output"] == "The run reached its limit of 1 requests (1 spent)."


def test_an_aid_can_be_switched_on_for_any_model(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "pymanus.toml").write_text('[local_aids]\nenabled = ["worked_example", "progress_note"]\n')
    chat_server_thread.push(
        completion(tool_calls=[tool_call("planning", {"command": "get"})]),
        completion(tool_calls=[tool_call("terminate", {"status": "success", "message": "Done."})]),
    )
    proc = run_cli(["run", "--model", "openai:any", "x"], tmp_path, chat_server_thread)
    assert proc.returncode == 0, proc.stderr
    first, second = chat_server_thread.requests
    assert "Example of a good run" in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith("Step 2 of 30")


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["run", "--max-steps", "0", "x"], {}, "Invalid value for '--max-steps'"),
        (["run", "--model", "gpt-4", "x"], {}, "is not a model string"),
        (["run", "--bogus", "x"], {}, "No such option: --bogus"),
        (["run", "--model", "openai:gpt-4o", "x"], {}, "OPENAI_API_KEY is not set"),
        (["run", "x"], {"PYMANUS_MODEL": "nonsense"}, "is not a model string"),
        (["run", "--config", "missing.toml", "x"], {}, "does not exist"),
        (["run", "--model", "local:qwen-9000", "x"], {}, "unknown model pack 'qwen-9000'"),
        (["run", "--model", "local:nowhere/model.gguf", "x"], {}, "model file not found"),
        (["run", "--model", "local:notes.gguf", "x"], {}, "not a GGUF model file"),
    ],
)
def test_usage_and_config_errors_exit_2_with_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    (tmp_path / "notes.gguf").write_text("not a model")
    proc = run_cli(args, tmp_path, **env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[model\nname=", "invalid TOML"),
        ('[agent]\nmax_steps = "many"', "agent.max_steps: Input should be a valid integer"),
        ("[agent]\nmax_stepz = 3", "agent.max_stepz: unknown key"),
        ('[sandbox]\nbackend = "docker"', "sandbox.backend: Input should be 'auto', 'bwrap', 'landlock' or 'none'"),
        ("[agent]\nattempts = 2", "agent.attempts: unknown key"),
        ('[local_aids]\nenabled = ["nope"]', "local_aids.enabled: unknown aid 'nope'"),
        ("[limits]\nmax_cost = -1", "limits.max_cost: Input should be greater than 0"),
        ('[prices."openai:x"]\ninput = "cheap"', "prices.openai:x.input: Input should be a valid number"),
    ],
)
def test_bad_config_file_exits_2(tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / "pymanus.toml").write_text(config)
    proc = run_cli(["run", "x"], tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert str(tmp_path / "pymanus.toml") in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_flags_override_env_and_file(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    (tmp_path / "pymanus.toml").write_text('[model]\nname = "openai:from-file"\n[agent]\nworkspace = "ws-file"\n')
    chat_server_thread.push(completion("ok"))
    proc = run_cli(
        ["run", "--json", "--workspace", "ws-flag", "x"], tmp_path, chat_server_thread, PYMANUS_MODEL="openai:from-env"
    )
    assert proc.returncode == 0, proc.stderr
    assert chat_server_thread.requests[0]["model"] == "from-env"
    assert json.loads(proc.stdout)["workspace"] == str(tmp_path / "ws-flag")


def test_verbose_shows_model_io_and_structured_records(chat_server_thread: ChatServer, tmp_path: Path) -> None:
    chat_server_thread.push(
        completion(tool_calls=[tool_call("list_dir", {"path": "."})]),
        completion("Nothing here."),
    )
    proc = run_cli(
        ["run", "--model", "openai:any", "--verbose", "What is in the workspace?"], tmp_path, chat_server_thread
    )
    assert proc.returncode == 0, proc.stderr
    assert "step 1 request" in proc.stdout and "What is in the workspace?" in proc.stdout
    assert "tool call" in proc.stdout and "list_dir" in proc.stdout
    assert "INFO pymanus.agent: model call openai:any" in proc.stderr
    assert "step=1" in proc.stderr and "run_id=" in proc.stderr
    assert "INFO pymanus.tools: tool call list_dir ok" in proc.stderr


def test_model_pack_with_parts_not_installed_exits_2_with_the_pip_command(tmp_path: Path) -> None:
    from pymanus.models import packs

    missing = [status for status in packs.list_packs(tmp_path / "cache") if status.state == "missing"]
    if not missing:
        pytest.skip("every model pack's part packages are installed here")
    pack = missing[0].pack
    proc = run_cli(["run", "--model", f"local:{pack.name}", "x"], tmp_path, PYMANUS_CACHE_DIR=str(tmp_path / "cache"))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert f"model pack {pack.name!r} is missing" in proc.stderr
    assert pack.pip_command in proc.stderr
    assert "Traceback" not in proc.stderr

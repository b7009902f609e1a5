"""Long-term memory: the store, the briefing, the search_memory tool, runs recorded at their end."""

from __future__ import annotations

from pathlib import Path

from pymanus import Agent
from pymanus.context.memory import LongTermMemory, MemoryStore
from pymanus.models.testing import ScriptedModel, call


def test_the_store_finds_runs_by_keyword_best_first(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "mem" / "memory.db")
    store.record(run_id="r1", task="Summarise the sales CSV by region", outcome="answered", answer="North leads")
    store.record(run_id="r2", task="Fix the failing unit test in parser.py", outcome="unfinished")
    store.record(run_id="r3", task="Plot the sales of 2023", outcome="answered", notes="sales.csv has a BOM")
    assert store.full_text
    found = store.search("sales by region")
    assert found[0].run_id == "r1" and {m.run_id for m in found} == {"r1", "r3"}
    assert store.search("parser test")[0].outcome == "unfinished"
    assert store.search("zebra") == [] and store.search("") == []
    store.close()
    reopened = MemoryStore(tmp_path / "mem" / "memory.db")  # it persists
    assert len(reopened) == 3 and reopened.search("BOM")[0].run_id == "r3"
    reopened.close()


def test_odd_queries_are_safe() -> None:
    store = MemoryStore(":memory:")
    store.record(run_id="r", task='quote " and NEAR( OR * stars', outcome="answered")
    assert store.search('" NEAR( * OR AND stars')[0].run_id == "r"


async def test_runs_are_recorded_and_remembered_by_later_runs() -> None:
    store = MemoryStore(":memory:")
    first = Agent(ScriptedModel([call("terminate", status="success", message="The total is 42.")]), max_steps=3)
    LongTermMemory(store).install(first)
    result = await first.run("Add up the invoice totals in invoices.csv")
    assert result.state.value == "finished"
    [memory] = store.search("invoice totals")
    assert (memory.run_id, memory.outcome, memory.answer) == (result.run_id, "answered", "The total is 42.")

    model = ScriptedModel([call("search_memory", query="invoice"), call("terminate", status="success", message="ok")])
    second = Agent(model, max_steps=3)
    LongTermMemory(store).install(second)
    await second.run("Check the invoice totals again")
    briefing = model.requests[0][1].text
    assert "Earlier runs on related tasks" in briefing and "The total is 42." in briefing
    searched = model.requests[1][-1]
    assert searched.role == "tool" and "Add up the invoice totals" in searched.text
    assert len(store) == 2


async def test_a_run_without_an_answer_is_recorded_unfinished() -> None:
    store = MemoryStore(":memory:")
    agent = Agent(ScriptedModel([call("search_memory", query="x"), call("search_memory", query="y")]), max_steps=2)
    LongTermMemory(store).install(agent)
    result = await agent.run("Find the lost keys")
    assert result.state.value == "error"
    assert store.search("lost keys")[0].outcome == "unfinished"


async def test_the_preset_turns_memory_on_from_the_config(tmp_path: Path) -> None:
    from pymanus.agent.manus import build_manus_agent
    from pymanus.config import Settings

    settings = Settings.model_validate(
        {
            "agent": {"workspace": str(tmp_path / "ws")},
            "sandbox": {"backend": "none"},
            "context": {"memory": str(tmp_path / "memory.db")},
        }
    )
    agent = build_manus_agent(settings, model=ScriptedModel([call("terminate", status="success", message="done")]))
    assert "search_memory" in agent.toolset and "search_memory" in agent.system_prompt
    result = await agent.run("Write the weekly report")
    await agent.aclose()
    assert result.state.value == "finished"
    store = MemoryStore(tmp_path / "memory.db")
    assert store.search("weekly report")[0].answer == "done"
    store.close()

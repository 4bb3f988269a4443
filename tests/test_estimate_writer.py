"""The writer calls of a writer-built memory, stated before a run (issue 45 item 3, issue 40
item 4): `plan --estimate` adds a writer role whose calls each method declares
(`writer_calls`), exact where the input fixes them, else expected with a range and its
basis; `memory.max_sessions` and the questions' conversations cut them as the build does."""

from __future__ import annotations

import json
import math
import re

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

from memorybench.cli import main
from memorybench.data.source import load_dataset
from memorybench.estimate import (
    OPENAI_PER_MESSAGE,
    OPENAI_PER_REPLY,
    RoleEstimate,
    RunEstimate,
    estimate_run,
    estimate_vs_actual,
    tokenizer_for,
)
from memorybench.memory.graph import GraphMemory
from memorybench.memory.mem0 import Mem0
from memorybench.memory.mem0g import Mem0G
from memorybench.plan import plan_runs
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
WRITER_LINE = re.compile(r"^  writer (\S+): (~?)([\d,]+) calls(?: expected \(range ([\d,]+)-([\d,]+|unbounded)\))?", re.M)
#: what selects each clone beyond memory=NAME
SELECT = {"session_summaries": ["memory.source=writer"]}


def conversations(max_sessions: int | None = None, sample_ids: set[str] | None = None):
    out = [c for c in load_dataset(MINI, "locomo10") if sample_ids is None or c.sample_id in sample_ids]
    return [c.sessions[:max_sessions] if max_sessions else c.sessions for c in out]


def pairs(turns: int) -> int:
    return math.ceil(turns / 2)


def expected_calls(method: str, sessions_of: list) -> dict[str, int]:
    """Each clone's writer tasks, counted here from the fixture's sessions as each build makes them."""
    sessions = [s for sessions in sessions_of for s in sessions if s.turns]
    extract = sum(2 * pairs(len(s.turns)) for s in sessions)  # mem0: per message pair and speaker
    return {
        "session_summaries": {"summary": len(sessions)},
        "graph": {"extract": len(sessions)},
        "openai_memory": {"update": 2 * len(sessions)},
        "mem0": {"extract": extract, "update": round(extract * Mem0.UPDATES_PER_EXTRACTION)},
        "mem0g": {
            "extract": extract,
            "update": round(extract * Mem0.UPDATES_PER_EXTRACTION),
            "graph": extract // 2,
            "conflict": round(extract // 2 * Mem0G.CONFLICTS_PER_GRAPH),
        },
    }[method]


def plan_estimate(capsys, *overrides: str) -> str:
    assert main(["plan", "--estimate", f"dataset.path={MINI}", *overrides]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("method", ["session_summaries", "graph", "openai_memory", "mem0", "mem0g"])
def test_plan_estimate_states_each_clone_s_writer_calls(capsys, method):
    out = plan_estimate(capsys, f"memory={method}", *SELECT.get(method, []), "writer=local", "embedder=hashing")
    tasks = expected_calls(method, conversations())
    (line,) = WRITER_LINE.findall(out)
    model, approx, calls, low, high = line
    assert model == "smollm2-135m"
    assert int(calls.replace(",", "")) == sum(tasks.values()), out
    exact = method not in ("mem0", "mem0g")
    assert (approx == "") is exact, out  # an expectation is marked as one, with its range
    if not exact:
        fixed = sum(n for task, n in tasks.items() if task in ("extract", "graph"))
        assert int(low.replace(",", "")) == fixed
        assert int(high.replace(",", "")) > int(calls.replace(",", ""))
        basis = {"mem0": Mem0, "mem0g": Mem0G}[method].WRITER_CALLS_BASIS
        assert f"expected counts measured: {basis}" in out
    for task, n in tasks.items():  # the note names every task with its count, exact or expected
        fixed = exact or task in ("extract", "graph")
        assert (f"{task} {n:,} (exact)" if fixed else f"{task} ~{n:,} expected (") in out, (task, n, out)
    # the run's total holds the writer's calls beside one reader call per question
    questions = sum(len(c["qa"]) for c in json.loads(MINI.read_text()))
    total = out.strip().splitlines()[-1]
    assert f"{questions + sum(tasks.values()):,} model calls ({sum(tasks.values()):,} of them writer calls" in total
    assert "without their writer" not in total  # nothing left out: the embedder is local


def test_max_sessions_and_the_questions_conversations_cut_the_writer_calls(tmp_path):
    """Through the console entry point: the first session only, and only the conversation the
    first three questions ask about (mini-1), as qa builds them."""
    result = run_cli(
        "plan",
        "--estimate",
        "memory=mem0",
        "writer=local",
        "embedder=hashing",
        "memory.max_sessions=1",
        "max_questions=3",
        f"dataset.path={MINI}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    first = json.loads(MINI.read_text())[0]
    assert len(first["qa"]) >= 3  # the first three questions are mini-1's
    tasks = expected_calls("mem0", conversations(max_sessions=1, sample_ids={first["sample_id"]}))
    ((_, _, calls, low, _),) = WRITER_LINE.findall(result.stdout)
    assert int(calls.replace(",", "")) == sum(tasks.values()) and int(low.replace(",", "")) == tasks["extract"]
    assert "over 1 conversation(s), each cut to its first 1 session(s) (memory.max_sessions=1)" in result.stdout
    whole = expected_calls("mem0", conversations(sample_ids={first["sample_id"]}))
    assert sum(whole.values()) > sum(tasks.values())  # the cut mattered: the fixture has a second session


def test_a_method_that_declares_no_writer_calls_leaves_the_estimate_partial(monkeypatch):
    monkeypatch.delattr(GraphMemory, "writer_calls")
    (spec,) = plan_runs(["memory=graph", "writer=local", f"dataset.path={MINI}"])
    estimate = estimate_run(spec.cfg, spec.run_id)
    assert estimate.partial and [r.role for r in estimate.roles] == ["reader"]
    assert any("declares no writer_calls: its writer calls are not estimated" in n for n in estimate.notes)


def test_a_reader_role_keeps_its_json_and_a_writer_role_says_its_range():
    reader = json.loads(RoleEstimate(role="reader", calls=3).dump())
    assert not {"calls_low", "calls_high", "calls_exact"} & set(reader)  # estimate.json's bytes, as before
    writer = RoleEstimate(role="writer", calls=10, calls_low=4, calls_high=None, calls_exact=False)
    data = json.loads(writer.dump())
    assert data["calls_low"] == 4 and data["calls_high"] is None and data["calls_exact"] is False
    assert RoleEstimate.model_validate(data) == writer


def _openai_count(body, tokenizer) -> int:
    messages = body["messages"]
    return sum(tokenizer.count(m["content"]) for m in messages) + OPENAI_PER_MESSAGE * len(messages) + OPENAI_PER_REPLY


def _scripted_qa(tmp_path, reader, writer, *overrides: str) -> tuple[RunEstimate, list[dict]]:
    args = [
        "qa",
        *scripted_reader(reader.base_url),
        *overrides,
        "writer=openai_compatible",
        f"writer.base_url={writer.base_url}",
        "writer.model=scripted-writer",
        "embedder=hashing",
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=wc",
    ]
    assert main(args) == 0
    (pack,) = (tmp_path / "packs" / "wc" / "runs").iterdir()
    calls = [json.loads(line) for line in (pack / "memory/writer/calls.jsonl").read_text().splitlines() if line.strip()]
    return RunEstimate.model_validate_json((pack / "estimate.json").read_text()), calls


@pytest.mark.parametrize(
    ("overrides", "reply"),
    [
        (["memory=session_summaries", "memory.source=writer"], "They talked about painting."),
        (["memory=graph", "memory.max_sessions=1"], json.dumps({"entities": [{"name": "Jon"}], "relations": []})),
    ],
)
def test_a_build_makes_the_calls_and_reads_the_tokens_its_estimate_stated(tmp_path, overrides, reply):
    """The scripted writer counts each request with the tokenizer the estimate names: the
    exact methods' calls are equal and their prompt tokens within 5%."""
    tokenizer = tokenizer_for({"provider": "openai_compatible", "model": "scripted-writer"})

    def counting(body):
        return Reply(text=reply, prompt_tokens=_openai_count(body, tokenizer), completion_tokens=5)

    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=counting) as writer:
        estimate, calls = _scripted_qa(tmp_path, reader, writer, *overrides)
    (role,) = [r for r in estimate.roles if r.role == "writer"]
    assert role.calls_exact is True and role.calls == len(calls) == len(writer.requests)
    prompt_tokens = sum(c["response"]["usage"]["prompt_tokens"] for c in calls)
    assert abs(prompt_tokens - role.input_tokens) <= 0.05 * prompt_tokens, (prompt_tokens, role.input_tokens)
    assert not estimate.partial


def test_a_mem0_build_stays_in_its_stated_range_and_its_extractions_are_exact(tmp_path):
    """Every extraction returns two facts (so two update calls each, not the measured rate):
    the extractions match the exact part, the whole build lies in the stated range."""

    def writer_reply(body):
        user = body["messages"][-1]["content"]
        if "extract the facts" in user:
            return Reply(text=json.dumps({"facts": ["Jon likes jazz.", "Jon lost his job."]}))
        return Reply(text=json.dumps({"event": "ADD", "text": "Jon likes jazz."}))

    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_reply) as writer:
        estimate, calls = _scripted_qa(tmp_path, reader, writer, "memory=mem0", "max_questions=3")
    (role,) = [r for r in estimate.roles if r.role == "writer"]
    extract = sum(2 * pairs(len(s.turns)) for s in conversations(sample_ids={"mini-1"})[0] if s.turns)
    assert sum(c["role"] == "extract" for c in calls) == extract == role.calls_low
    assert sum(c["role"] == "update" for c in calls) == 2 * extract
    # expected, not exact; and with no schema sent (writer.json_schema unset) no list is bounded: no high end
    assert role.calls_exact is False and role.calls_low <= len(calls) and role.calls_high is None


def test_released_summaries_have_no_writer_and_an_expected_count_keeps_its_range_beside_the_actual():
    (spec,) = plan_runs(["memory=session_summaries", "memory.source=released", f"dataset.path={MINI}"])
    estimate = estimate_run(spec.cfg, spec.run_id)
    assert [r.role for r in estimate.roles] == ["reader"] and not estimate.partial
    writer = RoleEstimate(role="writer", calls=10, calls_low=4, calls_high=40, calls_exact=False)
    both = estimate_vs_actual(RunEstimate(run_id="r", questions=1, roles=[writer]), {"usage": {}})
    assert both["writer"]["calls"] == {"estimated": 10, "actual": None, "low": 4, "high": 40}

"""Writer methods on the embedded llama.cpp model, end to end, for a few questions.

The embedded writer (SmolLM2-135M-Instruct) is asked each JSON task with the task's schema,
size-bounded, which llama.cpp compiles into a grammar: every reply must parse, and what
it says comes from the session (or it is a visible, journaled failure). The reader is the
scripted server here (the embedded reader has its own tests), so these check the writer.
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, scripted_reader
from memtest import jrows

from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer

#: small bounds keep each call short on 2 cores (one item per list, so a graph reply is at most
#: ~270 tokens; openai_memory keeps its max_facts=20 items, ~870); max_tokens holds every
#: task's longest reply, so no bound is lowered. These test the plumbing, so they go on
#: whatever the share of failed tasks (tests/memory/test_writer_failures.py: the stop);
#: test_the_default_local_writer_builds_with_no_failed_task holds the defaults to zero
BOUNDS = ["writer.max_tokens=1024", "writer.json_max_items=1", "writer.json_max_chars=40", "memory.max_failed_share=1.0"]


@pytest.fixture(scope="module")
def embedded_writer():
    try:
        import llama_cpp  # noqa: F401

        from memorybench.llm.local import LOCAL_MODELS, LocalModelError

        LOCAL_MODELS["smollm2-135m"].path()  # installed and verified
    except (ImportError, LocalModelError) as e:
        pytest.skip(f"the embedded model cannot start here: {getattr(e, 'message', e)}")


def _qa(tmp_path, reader, *extra: str) -> None:
    args = [
        "qa",
        *extra,
        "writer=local",
        *scripted_reader(reader.base_url),
        "embedder=hashing",
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        "max_questions=2",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=local",
    ]
    try:
        assert main(args) == 0
    except SystemExit as e:  # a job's error ends Hydra's task with SystemExit
        pytest.fail(f"qa exited with {e.code}")


def _only_pack(tmp_path):
    (pack,) = (tmp_path / "packs" / "local" / "runs").iterdir()
    return pack


@pytest.mark.local_model
def test_session_summaries_written_by_the_embedded_model(tmp_path, embedded_writer):
    with ScriptedOpenAIServer() as reader:
        _qa(tmp_path, reader, "memory=session_summaries", "memory.source=writer", "writer.max_tokens=64")
    pack = _only_pack(tmp_path)
    calls = jrows(pack / "memory/writer/calls.jsonl")
    assert [(c["sample_id"], c["session"]) for c in calls if c["attempt"] == "first"] == [("mini-1", 1), ("mini-1", 2)]
    assert all(c["response"]["model_answered"] for c in calls)
    assert all(c["request"]["response_format"] is None for c in calls)  # a text task: no grammar
    summaries = sorted((pack / "memory/writer/sessions/mini-1").glob("*.txt"))
    assert len(summaries) == 2 and all(p.read_text().strip() for p in summaries)
    meta = json.loads((pack / "run_meta.json").read_text())
    writer = next(m for m in meta["models"] if m["role"] == "writer")
    assert writer["local"] is True and writer["weights"]["sha256"] and writer["answered"] == ["smollm2-135m"]
    assert any("Memory written by the embedded local model" in n for n in meta["notes"])
    assert len(reader.requests) == 2 and "[Session 1]" in reader.requests[0]["messages"][1]["content"]
    (cost,) = jrows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] >= 2 and cost["writer"]["completion_tokens"] > 0 and cost["cost_usd"] == 0.0
    assert verify_pack(pack) == []


#: method -> the writer roles it must have called at least once
JSON_METHODS = {
    "graph": {"extract"},
    "openai_memory": {"update"},
    "mem0": {"extract"},
    "mem0g": {"extract", "graph"},
}


@pytest.mark.local_model
@pytest.mark.parametrize("method", list(JSON_METHODS))
def test_json_writer_methods_on_the_embedded_model(method, tmp_path, embedded_writer):
    with ScriptedOpenAIServer() as reader:
        _qa(tmp_path, reader, f"memory={method}", *BOUNDS)
    pack = _only_pack(tmp_path)
    calls = jrows(pack / "memory/writer/calls.jsonl")
    assert JSON_METHODS[method] <= {c["role"] for c in calls}
    assert {c["sample_id"] for c in calls} == {"mini-1"}  # only the conversation asked about
    for call in calls:
        response_format = call["request"]["response_format"]
        # the grammar: the task's own schema, every list and string bounded as configured
        schema = response_format["schema"]
        assert response_format["type"] == "json_object"
        # an object, or (mem0's update) one object shape per event
        assert schema.get("type") == "object" or {s["type"] for s in schema["anyOf"]} == {"object"}
        lists, strings = _bounds(response_format["schema"])
        assert set(lists) <= {20 if method == "openai_memory" else 1, 0}  # openai_memory: its max_facts
        assert set(strings) <= {40}  # (mem0g's conflict names ids shown, no free string)
        # it asks for the longest reply its grammar allows, which max_tokens holds
        assert call["request"]["max_tokens"] <= 1024 and call["response"]["finish_reason"] != "length"
        # grammar-constrained: every reply is one JSON object, whatever the model says
        assert isinstance(json.loads(call["response"]["text"], strict=False), dict), call["response"]["text"]
        assert call["response"]["model_answered"] == "smollm2-135m"
    failures = jrows(pack / "memory/writer/failures.jsonl")
    failed = sum(1 for c in calls if c["attempt"] == "repair" and not c["ok"])
    assert len(failures) == failed  # every task given up is journaled, none silently
    (cost,) = jrows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls) and cost["writer"]["completion_tokens"] > 0
    assert cost["cost_usd"] == 0.0 and cost["writer"]["failures"] == len(failures)
    metrics = json.loads((pack / "metrics.json").read_text())
    assert metrics["memory"]["failed"] == len(failures) and metrics["memory"]["tasks"] == len(calls) - failed_repairs(calls)
    (manifest,) = jrows(pack / "memory/manifest.jsonl")  # the store: what the model wrote, maybe nothing
    assert manifest["sample_id"] == "mini-1" and manifest["metadata"]["writer"]["model"] == "smollm2-135m"
    assert len(jrows(pack / "memory/lineage.jsonl")) == manifest["item_count"]
    assert len(reader.requests) == 2
    findings = verify_pack(pack)  # the failed tasks, if any, are the one (warning) finding
    assert [(f.code, f.path) for f in findings] == [("memory.writer_failures", "memory/writer/failures.jsonl")] * bool(failures)


def failed_repairs(calls) -> int:
    """Repair calls: a task is its first call, plus at most one repair."""
    return sum(1 for c in calls if c["attempt"] == "repair")


def _bounds(schema) -> tuple[list, list]:
    """maxItems of every array and maxLength of every free string in a JSON schema (None: unbounded)."""
    lists, strings = [], []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "array":
                lists.append(node.get("maxItems"))
            if node.get("type") == "string" and "enum" not in node:
                strings.append(node.get("maxLength"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return lists, strings


#: a conversation prefix: mini-1's two sessions (5 turns), the first question
SMOKE = ["dataset.path=" + str(FIXTURES / "mini_locomo.json"), "max_questions=1"]


@pytest.mark.local_model
@pytest.mark.parametrize("method", ["graph", "mem0"])
def test_the_default_local_writer_builds_with_no_failed_task(method, tmp_path, embedded_writer):
    """writer=local as configured (bounds, max_tokens, the grammar): every reply parses,
    none is cut, and the memory is not empty (issue 28 item 7: 8 of 19 graph tasks failed)."""
    with ScriptedOpenAIServer() as reader:
        args = [
            "qa",
            f"memory={method}",
            "writer=local",
            *scripted_reader(reader.base_url),
            "embedder=hashing",
            *SMOKE,
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "name=local",
        ]
        try:
            assert main(args) == 0
        except SystemExit as e:
            pytest.fail(f"qa exited with {e.code}")
    pack = _only_pack(tmp_path)
    calls = jrows(pack / "memory/writer/calls.jsonl")
    assert calls and all(c["ok"] for c in calls), [c["error"] for c in calls if not c["ok"]]
    assert not jrows(pack / "memory/writer/failures.jsonl")
    (cost,) = jrows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == 0 and cost["writer"]["cut_by_length"] == 0
    assert all(not b["tightened"] for b in cost["writer"]["json_bounds"].values())
    (manifest,) = jrows(pack / "memory/manifest.jsonl")
    assert manifest["item_count"] > 0
    if method == "graph":
        assert jrows(pack / "memory/graph/nodes.jsonl")
    else:
        assert any(o["event"] == "ADD" for o in jrows(pack / "memory/mem0/operations.jsonl"))
    assert verify_pack(pack) == []

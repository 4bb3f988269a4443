"""memory=graphiti (Graphiti on embedded Kùzu) against scripted servers over real HTTP: plumbing only.

The scripted writer answers each of Graphiti's structured calls in the shape of the reply
model the request names (`response_format.json_schema.name`): entity extraction names the
speaker and the capitalised words of the current message, fact extraction links the first
two entities with the message itself as the fact, every other task gets the smallest reply
its schema allows ("no duplicates", "no dates", "no summary updates"). So what lands in the
graph comes from session text. Checked: every call Graphiti made has its row in the pack
(calls the endpoint saw = rows), each labelled by its reply model; the build cost counts
them; the pack verifies (contamination check included); the Kùzu database lives in the
pack; facts carry their source turns; a rerun does not rebuild; run_meta.json records
graphiti-core's version; the build opens no connection except to the recording endpoint.

Skipped, with the reason, when the plugin is not installed (`.venv/bin/pip install -e plugins/graphiti`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_graphiti", reason="the graphiti plugin is not installed: .venv/bin/pip install -e plugins/graphiti")
if importlib.util.find_spec("graphiti_core") is None:
    pytest.skip("graphiti-core is not installed: .venv/bin/pip install -e plugins/graphiti", allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.llm.recording_proxy import THREAD_NAME  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import ScriptedQA, assert_only_the_endpoint, rows, scripted_servers  # noqa: E402
from memorybench.testing.scripted_server import Reply, Status, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
qa = ScriptedQA(main, "graphiti", MINI, always=("memory.max_episodes=4",))


def smallest(schema: dict[str, Any], node: dict[str, Any]) -> Any:
    """The smallest instance of a JSON Schema node: empty lists, nulls, -1, ""."""
    if "$ref" in node:
        return smallest(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    if "anyOf" in node:
        kinds = [b for b in node["anyOf"] if b.get("type") == "null"] or node["anyOf"]
        return smallest(schema, kinds[0])
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties", {})
        return {k: smallest(schema, props[k]) for k in node.get("required", list(props))}
    return {"array": [], "string": "", "integer": -1, "number": 0, "boolean": False, "null": None}.get(kind)


def tagged(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.S)
    return found.group(1) if found else ""


def graphiti_responder(body: dict[str, Any]) -> Reply:
    """Graphiti's structured calls, answered from the request's own text; else an echo (the reader)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return echo_responder(body)
    name, schema = fmt["json_schema"]["name"], fmt["json_schema"]["schema"]
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if name == "ExtractedEntities":
        message = tagged(user, "CURRENT MESSAGE")
        speaker, _, said = message.partition(":")
        names = [speaker.strip()] + [w for w in re.findall(r"\b[A-Z][a-z]{2,}\b", said) if w != speaker.strip()][:2]
        reply: Any = {"extracted_entities": [{"name": n, "entity_type_id": 0, "episode_indices": [0]} for n in names if n]}
    elif name == "ExtractedEdges":
        entities = json.loads(tagged(user, "ENTITIES") or "[]")
        message = tagged(user, "CURRENT_MESSAGE")
        names = [e["name"] for e in entities]
        reply = {
            "edges": []
            if len(names) < 2
            else [
                {
                    "source_entity_name": names[0],
                    "target_entity_name": names[1],
                    "relation_type": "MENTIONED",
                    "fact": message.partition(":")[2].strip()[:100] or message[:100],
                }
            ]
        }
    else:
        reply = smallest(schema, schema)
    text = json.dumps(reply)
    return Reply(text=text, prompt_tokens=len(user.split()), completion_tokens=len(text.split()))


def test_graphiti_builds_a_graph_through_the_recording_endpoint(tmp_path):
    with scripted_servers(graphiti_responder) as (reader, writer):
        with SocketAudit() as audit:
            assert qa(tmp_path, reader, writer) == 0
        pack = qa.pack(tmp_path)
        assert verify_pack(pack) == []

        # every call Graphiti made reached the writer through us and has its row, named by its reply model
        calls = rows(pack / "memory/writer/calls.jsonl")
        assert calls and len(calls) == len(writer.requests)
        roles = {c["role"] for c in calls}
        assert {"graphiti:ExtractedEntities", "graphiti:ExtractedEdges"} <= roles, roles
        assert all(c["ok"] for c in calls), [c["error"] for c in calls if not c["ok"]]
        assert all(c["template"].startswith("library:graphiti/") and len(c["template_sha256"]) == 64 for c in calls)
        embeds = rows(pack / "memory/graphiti/embed_calls.jsonl")
        assert embeds and any(e["question_id"] for e in embeds)  # the questions' searches are rows too

        # the build cost counts them
        (cost,) = rows(pack / "memory/build_cost.jsonl")
        assert cost["writer"]["calls"] == len(calls)
        # and the estimate written when the run started (writer_calls) held them: at least the two extractions an episode
        estimate = json.loads((pack / "estimate.json").read_text("utf-8"))
        (planned,) = [r for r in estimate["roles"] if r["role"] == "writer"]
        assert planned["calls_exact"] is False and planned["calls_low"] == 2 * 4 <= len(calls)

        # the store lives in the pack; the dump shows facts with their source turns and entities
        sid = cost["sample_id"]
        assert (pack / f"memory/library_stores/graphiti/{sid}/graph.kuzu").exists()
        stored = json.loads((pack / f"memory/graphiti/{sid}.json").read_text("utf-8"))
        library = stored["metadata"]["library"]
        assert library["episodes"] == 4 and library["facts"] >= 1 and library["entities"] >= 2
        facts = [i for i in stored["items"] if "(valid from" in i["text"]]
        assert facts and all(i["sources"] for i in facts)
        assert library["endpoint_rows"]["chat"] == len(calls)

        # the reader saw the facts Graphiti found
        predictions = rows(pack / "predictions.jsonl")
        assert predictions
        prompts = (
            [json.loads(line) for line in (pack / "calls.jsonl").read_text("utf-8").splitlines()]
            if (pack / "calls.jsonl").is_file()
            else []
        )
        assert any("Facts (with the dates they held):" in json.dumps(p) for p in prompts) or any(
            "Facts (with the dates they held):" in json.dumps(r) for r in reader.requests
        )

        # run_meta.json: the wrapped library's version beside the plugin's own
        meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
        (plugin,) = [p for p in meta["plugins"] if p["name"] == "graphiti"]
        assert plugin["wraps"]["graphiti-core"] == "0.31.2" and plugin["wraps"]["kuzu"]

        # no connection but to our endpoint; the endpoint's own threads call the writer
        assert_only_the_endpoint(audit.seen, writer.port)
        library_ports = {addr[1] for name, addr in audit.seen if not name.startswith(THREAD_NAME)} - {reader.port, writer.port}
        assert len(library_ports) <= 1  # graphiti itself: only the recording endpoint's one port

        # a rerun of the same run id builds nothing again
        before = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) == before


def test_a_reply_that_is_not_json_stops_with_its_count(tmp_path, monkeypatch):
    """Graphiti retries a reply that does not parse (4 tries), then gives up: the run stops,
    and each try is a call row and a counted failure. (Graphiti's backoff, 5 to 120 s a
    try, is not what is tested: it is set to no wait here.)"""
    import tenacity
    from graphiti_core.llm_client.client import LLMClient

    monkeypatch.setattr(LLMClient._generate_response_with_retry.retry, "wait", tenacity.wait_none())
    bad = lambda body: Reply(text="no json here") if body.get("response_format") else echo_responder(body)  # noqa: E731
    with scripted_servers(bad) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_episodes=1")
        assert code != 0
        pack = qa.pack(tmp_path)
        failures = rows(pack / "memory/writer/failures.jsonl")
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert len(calls) == len(writer.requests) == 4 and not any(c["ok"] for c in calls)
    assert len(failures) == 4 and all("JSON" in f["error"] or "json" in f["error"] for f in failures)


def test_a_reply_graphiti_refuses_counts_as_a_failed_task_with_graphiti_s_message(tmp_path, monkeypatch, capsys):
    """Issue 40, item 1: the first fact extraction's reply holds a raw newline inside a JSON
    string. The recording endpoint reads it (it parses leniently); Graphiti's strict
    json.loads refuses it, logs `Invalid control character`, and retries. That task is a
    counted writer failure with Graphiti's own words: in failures.jsonl, on the call's row
    (ok false), in library_reports.jsonl, in metrics.json, in the run's summary and in verify."""
    import tenacity
    from graphiti_core.llm_client.client import LLMClient

    monkeypatch.setattr(LLMClient._generate_response_with_retry.retry, "wait", tenacity.wait_none())
    broken: list[int] = []

    def control_character_once(body: dict[str, Any]) -> Reply:
        reply = graphiti_responder(body)
        fmt = body.get("response_format") or {}
        if not broken and fmt.get("type") == "json_schema" and fmt["json_schema"]["name"] == "ExtractedEdges":
            data = json.loads(reply.text)
            if data["edges"]:
                broken.append(1)
                data["edges"][0]["fact"] = "first line\nsecond line"
                return Reply(text=json.dumps(data).replace("\\n", "\n"))  # a raw newline inside the string
        return reply

    with scripted_servers(control_character_once) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=0.5") == 0
    assert broken
    pack = qa.pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    bad = [c for c in calls if not c["ok"]]
    assert len(bad) == 1 and bad[0]["role"] == "graphiti:ExtractedEdges" and "Invalid control character" in bad[0]["error"]
    (failure,) = rows(pack / "memory/writer/failures.jsonl")
    assert "Invalid control character" in failure["error"] and "reported by the library" in failure["action"]
    reports = rows(pack / "memory/graphiti/library_reports.jsonl")
    assert [r["counted"] for r in reports].count(True) == 1 and all(r["call"] == bad[0]["call"] for r in reports)
    assert reports[0]["source"].startswith("log graphiti_core")
    metrics = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert metrics["memory"]["failed"] == 1 and metrics["memory"]["library_reported"]["failed_tasks"] == 1
    findings = verify_pack(pack)
    assert [(f.code, f.path) for f in findings] == [("memory.writer_failures", "memory/writer/failures.jsonl")]
    assert "reported by the wrapped library itself" in findings[0].message
    # the run's summary and the report say it too
    out = capsys.readouterr().out
    assert "writer tasks failed (1 of them by the library's own report" in out, out
    assert main(["report", "--packs", str(tmp_path / "packs"), "--out", str(tmp_path / "report")]) == 0
    assert "Writer tasks failed (" in (tmp_path / "report" / "report.md").read_text("utf-8")


def test_a_resumed_run_reopens_the_committed_database_for_search(tmp_path):
    """The reader fails on the second question: the conversation's graph is committed; the
    rerun builds nothing and searches the reopened Kùzu database."""
    with scripted_servers(graphiti_responder) as (reader, writer):
        reader.script(Reply("first answer"), Status(400))
        assert qa(tmp_path, reader, writer) != 0
        pack = qa.pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        built_with = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) == built_with  # nothing rebuilt
    assert len(rows(pack / "predictions.jsonl")) == 3
    searched = {e["question_id"] for e in rows(pack / "memory/graphiti/embed_calls.jsonl") if e["question_id"]}
    assert len(searched) == 3  # the two questions after the resume searched the reopened graph
    assert verify_pack(pack) == []


@pytest.mark.local_model
def test_graphiti_on_the_embedded_model(tmp_path, monkeypatch):
    """The real smoke: conv-26's first two messages built by Graphiti with the embedded
    writer (SmolLM2-135M under llama.cpp's grammar) and MiniLM, three questions answered by
    the embedded reader. The grammar makes every reply JSON to the endpoint, yet SmolLM2
    writes raw newlines inside strings that Graphiti's strict json.loads refuses: each such
    task is counted failed on Graphiti's own report (issue 40), and memory.max_failed_share=1.0
    lets the smoke finish to show it. Graphiti's retry backoff (5-120 s a try) is set to no wait."""
    import tenacity
    from graphiti_core.llm_client.client import LLMClient

    monkeypatch.setattr(LLMClient._generate_response_with_retry.retry, "wait", tenacity.wait_none())
    pins = Path(os.environ.get("MEMORYBENCH_PINS") or FIXTURES.parents[2] / "shared" / "pins")
    locomo = pins / "data" / "locomo10.json"
    if not locomo.is_file():
        pytest.fail(f"{locomo} is missing: the plugin's tests read the pinned files from ../shared/pins")
    try:
        code = main(
            [
                "qa",
                "memory=graphiti",
                "writer=local",
                "reader=local",
                "memory.max_episodes=2",
                "max_questions=3",
                "memory.max_failed_share=1.0",
                f"dataset.path={locomo}",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
                "name=gsmoke",
            ]
        )
    except SystemExit as e:
        code = int(e.code or 0)
    assert code == 0
    (pack,) = (tmp_path / "packs" / "gsmoke" / "runs").iterdir()
    findings = verify_pack(pack)
    assert all(f.warning for f in findings), [f.format() for f in findings]
    assert len(rows(pack / "predictions.jsonl")) == 3
    calls = rows(pack / "memory/writer/calls.jsonl")
    stored = json.loads((pack / "memory/graphiti/conv-26.json").read_text("utf-8"))
    library = stored["metadata"]["library"]
    assert library["episodes"] == 2 and stored["items"]  # a non-empty graph
    assert library["endpoint_rows"]["chat"] == len(calls) > 0  # calls the endpoint saw = rows in the pack
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    # a call counts failed once, on the endpoint's check or on Graphiti's own report, and says why
    failed = [c for c in calls if not c["ok"]]
    assert cost["writer"]["failures"] == len(failed) == len(rows(pack / "memory/writer/failures.jsonl"))
    reported = {r["call"] for r in rows(pack / "memory/graphiti/library_reports.jsonl") if r["counted"]}
    assert all(c["error"] for c in failed) and reported <= {c["call"] for c in failed}


def test_a_writer_that_finds_no_relation_builds_an_empty_graph(tmp_path):
    """Issue 39, item 3: valid but empty extractions (what a small writer gives a short session)
    made `dump` raise Graphiti's GroupsEdgesNotFoundError, so the conversation could never build."""

    def nothing(body: dict[str, Any]) -> Reply:
        fmt = body.get("response_format") or {}
        if fmt.get("type") != "json_schema":
            return echo_responder(body)
        schema = fmt["json_schema"]["schema"]
        return Reply(text=json.dumps(smallest(schema, schema)))

    with scripted_servers(nothing) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_episodes=2") == 0
    pack = qa.pack(tmp_path)
    assert verify_pack(pack) == []
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/graphiti/{cost['sample_id']}.json").read_text("utf-8"))
    assert stored["metadata"]["library"]["facts"] == 0 and len(rows(pack / "predictions.jsonl")) == 3


def test_graphiti_runs_longmemeval_with_its_dates(tmp_path):
    """Issue 39, item 3: LongMemEval's session dates ('2023/05/11 (Thu) 17:50') were refused."""
    import sys

    sys.path.insert(0, str(FIXTURES))
    from make_longmemeval import make_longmemeval

    data = make_longmemeval(tmp_path / "lme.json", questions=2)
    with scripted_servers(graphiti_responder) as (reader, writer):
        try:
            code = main(
                [
                    "qa",
                    "dataset=longmemeval_oracle",
                    f"dataset.path={data}",
                    "reader=openai_compatible",
                    f"reader.base_url={reader.base_url}",
                    "reader.model=scripted",
                    "memory=graphiti",
                    "writer=openai_compatible",
                    f"writer.base_url={writer.base_url}",
                    "writer.model=scripted-writer",
                    "embedder=hashing",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=glme",
                    "memory.max_episodes=2",
                    "memory.max_failed_share=1.0",
                ]
            )
        except SystemExit as e:
            code = int(e.code or 0)
    assert code == 0
    (pack,) = (tmp_path / "packs" / "glme" / "runs").iterdir()
    assert verify_pack(pack) == [] or all(f.warning for f in verify_pack(pack))
    assert len(rows(pack / "predictions.jsonl")) == 2
    assert rows(pack / "memory/writer/calls.jsonl")
    stored = json.loads((pack / "memory/graphiti/lme000.json").read_text("utf-8"))
    assert stored["metadata"]["library"]["episodes"] == 2


def test_plan_estimate_states_graphiti_s_writer_calls_per_episode(capsys):
    """`writer_calls`: Graphiti's calls per episode depend on what it extracts, so the number is
    expected (CALLS_PER_EPISODE, measured, its basis named), at least two an episode; the
    episodes are counted from the sessions memory.max_sessions keeps, `turns_per_episode`
    turns each, at most max_episodes."""
    import math

    from mb_graphiti._core import GraphitiMemory

    from memorybench.data.source import load_dataset

    args = ["plan", "--estimate", "memory=graphiti", "writer=openai_compatible", "writer.base_url=http://127.0.0.1:9/v1"]
    args += ["writer.model=w", "embedder=hashing", f"dataset.path={MINI}", "max_questions=3", "memory.max_sessions=1"]
    (conversation,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]  # the first 3 questions'
    turns = len(conversation.sessions[0].turns)
    assert turns > 2  # so that each setting below changes the count
    cases = (
        (["memory.turns_per_episode=1"], turns),
        (["memory.turns_per_episode=2"], math.ceil(turns / 2)),
        (["memory.max_episodes=2"], 2),
    )
    for extra, n in cases:
        assert main([*args, *extra]) == 0
        out = capsys.readouterr().out
        calls = round(n * GraphitiMemory.CALLS_PER_EPISODE)
        assert f"writer w: ~{calls:,} calls expected (range {2 * n:,}-unbounded)" in out, out
        assert f"add_episode ~{calls:,} expected ({GraphitiMemory.CALLS_PER_EPISODE:g} calls per episode" in out
        assert GraphitiMemory.WRITER_CALLS_BASIS in out

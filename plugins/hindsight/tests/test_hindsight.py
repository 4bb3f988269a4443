"""memory=hindsight (Hindsight's own MemoryEngine, in its own venv) against scripted servers
over real HTTP: plumbing; and one smoke on the embedded local model (marked `local_model`).

The scripted writer answers Hindsight's fact-extraction calls with one fact per turn of the
chunk in the request (its text, speaker and the turn's dia id), so what lands in Hindsight's
store comes from session text. Checked: every call Hindsight made has its row in the pack
(calls the endpoint saw = rows), labelled by its task; the build cost counts them; the pack
verifies (contamination check included); the store is in the pack (a pg_dump) and restored
by a resumed run; a rerun does not rebuild; run_meta.json records Hindsight's versions; the
worker opened no connection but the endpoint and its own cluster's socket, and the whole
process tree made no TCP connection elsewhere (strace, where installed); a reply that is
not JSON is a counted failure; every way the method can fail to start is one line.

Skipped, with the reason, when the plugin or its venv is not installed (`bash plugins/hindsight/install.sh`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_hindsight", reason="the hindsight plugin is not installed: bash plugins/hindsight/install.sh")

from mb_hindsight import _client  # noqa: E402
from mb_hindsight._core import HindsightMemory  # noqa: E402

try:
    _client.worker_python()
except Exception as e:  # noqa: BLE001 - the venv is missing: every test here needs it
    pytest.skip(f"Hindsight's venv is not installed ({e})", allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import (  # noqa: E402
    ScriptedQA,
    assert_only_the_endpoint,
    failing_reader,
    pinned_dataset,
    rows,
    scripted_servers,
    smoke_qa,
)
from memorybench.testing.scripted_server import Reply, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
PROMPT_FILE = "library/hindsight/hindsight-1.1.0_extract_facts.txt"
EXTRACT = "Extract SIGNIFICANT facts from text."
qa = ScriptedQA(main, "hindsight", MINI)
the_pack = qa.pack


def is_extraction(body: dict[str, Any]) -> bool:
    return any(m["role"] == "system" and m["content"].startswith(EXTRACT) for m in body.get("messages", []))


def chunk_turns(body: dict[str, Any]) -> list[dict[str, str]]:
    """The turns of the chunk Hindsight sent (its user message's `Content:` JSON array)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user" and "Content:" in m["content"])
    return json.loads(user.split("Content:\n", 1)[1].strip())


def hindsight_responder(body: dict[str, Any]) -> Reply:
    """Hindsight's extraction calls answered from the chunk in the request; else an echo (the reader)."""
    if not is_extraction(body):
        return echo_responder(body)
    facts = [
        {
            "what": f"{t['speaker']} said: {t['text']}",
            "when": "N/A",
            "where": "N/A",
            "who": t["speaker"],
            "why": "N/A",
            "fact_type": "world",
            "entities": [t["speaker"]],
        }
        for t in chunk_turns(body)
    ]
    text = json.dumps({"facts": facts})
    return Reply(
        text=text, prompt_tokens=sum(len(m["content"].split()) for m in body["messages"]), completion_tokens=len(text.split())
    )


@pytest.fixture()
def servers():
    with scripted_servers(hindsight_responder) as pair:
        yield pair


def test_hindsight_builds_through_the_recording_endpoint(tmp_path, servers):
    reader, writer = servers
    with SocketAudit() as audit:
        assert qa(tmp_path, reader, writer) == 0
    pack = the_pack(tmp_path)
    assert verify_pack(pack) == []

    # every call Hindsight made reached the writer through us and has its row, labelled by its task
    calls = rows(pack / "memory/writer/calls.jsonl")
    extractions = [b for b in writer.requests if is_extraction(b)]
    assert calls and len(calls) == len(extractions) and all(c["ok"] for c in calls)
    assert {c["role"] for c in calls} == {"hindsight:extract_facts"}
    assert all(c["template"].startswith("library:hindsight/") for c in calls)
    assert (pack / "prompts" / PROMPT_FILE).is_file()
    embeds = rows(pack / "memory/hindsight/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert any(e["question_id"] for e in embeds)  # the questions' searches are rows too

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    sid = cost["sample_id"]

    # the store lives in the pack: the conversation's database in pg_dump's custom format
    dump = (pack / f"memory/library_stores/hindsight/{sid}/hindsight.dump").read_bytes()
    assert dump.startswith(b"PGDMP") and b"CREATE TABLE public.memory_units" in dump
    stored = json.loads((pack / f"memory/hindsight/{sid}.json").read_text("utf-8"))
    items = stored["items"]
    assert items and all(i["sources"] for i in items) and all("said:" in i["text"] for i in items)
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) and library["version"] == "1.1.0"
    assert library["postgres"]["pgvector"] and library["reranker"].startswith("rrf")
    retrievals = rows(pack / "memory/hindsight/retrievals.jsonl")
    assert retrievals and all(r["hits"] for r in retrievals)
    assert (pack / "memory/hindsight/worker.log").is_file()

    # run_meta.json: the plugin (its pins are among its source files), and Hindsight's versions in the notes
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "hindsight"]
    assert plugin["source_sha256"]
    assert any("hindsight-api-slim 1.1.0" in note and "PostgreSQL 18" in note for note in meta["notes"])

    # no connection but to our endpoint: in this process (the endpoint's threads call the writer) ...
    assert_only_the_endpoint(audit.seen, writer.port)
    # ... and in Hindsight's process: the endpoint's port and its own cluster's Unix socket, nothing refused
    connects = library["worker_connections"]
    tcp = [c for c in connects if not c.startswith("/")]
    assert len(tcp) == 1 and tcp[0].startswith("127.0.0.1:"), connects
    assert all(c.endswith("/sock/.s.PGSQL.5432") for c in connects if c.startswith("/")), connects

    # `show` walks a question through the pack: the memories retrieved and the writer calls
    shown, out = qa.show(pack, rows(pack / "predictions.jsonl")[0]["question_id"])
    assert shown == 0 and "memory=hindsight" in out and "retrieved for this question" in out

    # a rerun of the same run id builds nothing again
    before = len(writer.requests)
    assert qa(tmp_path, reader, writer) == 0
    assert len(writer.requests) == before


def test_a_resumed_run_searches_the_store_restored_from_the_pack(tmp_path):
    """The reader fails on the second question: the run stops with the memory committed; the
    rerun restores hindsight.sql into a fresh database (no writer call) and recalls from it."""
    with scripted_servers(hindsight_responder, reader=failing_reader()) as (reader, writer):
        assert qa(tmp_path, reader, writer) != 0
        pack = the_pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        built = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) == built  # nothing rebuilt
    assert verify_pack(pack) == []
    retrievals = rows(pack / "memory/hindsight/retrievals.jsonl")
    assert len(retrievals) >= 3 and all(r["hits"] for r in retrievals)


def test_a_reply_that_is_not_json_is_a_counted_failure(tmp_path):
    """Hindsight asks again after a reply it cannot read (its own repair loop), then gives up on
    the chunk: every such reply is a counted writer failure, and the run goes on."""

    def not_json(body: dict[str, Any]) -> Reply:
        return Reply(text="no json here") if is_extraction(body) else echo_responder(body)

    with scripted_servers(not_json) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_failed_share=1.0", "memory.max_sessions=1")
    pack = the_pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    failures = rows(pack / "memory/writer/failures.jsonl")
    assert calls and not any(c["ok"] for c in calls) and len(failures) >= len(calls)
    if code == 0:
        (cost,) = rows(pack / "memory/build_cost.jsonl")
        assert cost["writer"]["failures"] >= len(calls)
    else:  # Hindsight itself gave up on the retain: one line, nothing committed
        assert not rows(pack / "memory/manifest.jsonl")


def test_its_declared_writer_calls_are_the_calls_hindsight_makes(tmp_path, servers):
    """`writer_calls`: one extraction call per chunk; the estimate written when the run starts
    meets the calls Hindsight made, with memory.max_sessions honoured."""
    from memorybench.data.source import load_dataset

    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") == 0
    pack = the_pack(tmp_path)
    (conversation,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]
    (role,) = [r for r in json.loads((pack / "estimate.json").read_text("utf-8"))["roles"] if r["role"] == "writer"]
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert role["calls"] == len(calls) >= 1
    session_2 = conversation.sessions[1].turns[0].text
    assert not any(session_2 in m["content"] for c in calls for m in c["request"]["messages"])
    stored = json.loads((pack / "memory/hindsight/mini-1.json").read_text("utf-8"))
    assert stored["metadata"]["prefix"] == {"max_sessions": 1, "sessions_built": 1, "sessions": 2}


CANARY = "sk-canary-hindsight-0123456789abcdefghijklmnop"


def test_no_canary_key_reaches_the_pack_the_worker_or_a_request(tmp_path, monkeypatch):
    """Provider keys in our environment (Hindsight would read OPENAI_API_KEY and its own
    HINDSIGHT_API_LLM_API_KEY) reach no file of the pack or the cache and no request: the
    worker's environment is built from a short allow-list."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("HINDSIGHT_API_LLM_API_KEY", CANARY + "-hs")
    monkeypatch.setenv("HINDSIGHT_API_LLM_BASE_URL", "http://192.0.2.1:9/v1")  # would be refused anyway
    with scripted_servers(hindsight_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_sessions=1") == 0
        sent = json.dumps(writer.requests) + json.dumps(reader.requests)
    assert CANARY not in sent
    assert [p for p in tmp_path.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()] == []


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)")
def test_the_worker_process_tree_connects_nowhere_else(tmp_path):
    """The OS-level audit: the worker and everything it starts (PostgreSQL, pg_dump, psql,
    libpq inside psycopg2, which Python's audit hook cannot see) under strace: every
    connect() is to the endpoint's 127.0.0.1 port or to the cluster's Unix socket."""
    trace = tmp_path / "strace"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec strace -f -qq -e trace=connect -o {trace} {_client.worker_python()} "$@"\n', "utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, _client.PYTHON_ENV: str(wrapper)}
    with scripted_servers(hindsight_responder) as (reader, writer):
        done = subprocess.run(
            [
                sys.executable, "-m", "memorybench.cli", "qa", "memory=hindsight", "reader=openai_compatible",
                f"reader.base_url={reader.base_url}", "reader.model=scripted", "writer=openai_compatible",
                f"writer.base_url={writer.base_url}", "writer.model=scripted-writer", "embedder=hashing",
                f"dataset.path={MINI}", f"paths.packs={tmp_path / 'packs'}", f"paths.cache={tmp_path / 'cache'}",
                "name=hindsight", "max_questions=2", "memory.max_sessions=1",
            ],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for path in tmp_path.glob("strace*") for line in path.read_text("utf-8").splitlines()]
    inet = re.findall(r"sin6?_addr=inet_(?:addr|pton)\([^)]*?\"([^\"]+)\"\)", "\n".join(lines))
    ports = set(re.findall(r"sin6?_port=htons\((\d+)\)", "\n".join(lines)))
    unix = set(re.findall(r"sun_path=\"([^\"]+)\"", "\n".join(lines)))
    assert lines and set(inet) <= {"127.0.0.1"}, inet
    assert len(ports) == 1, ports  # the recording endpoint's port, and no other
    assert all(p.endswith("/sock/.s.PGSQL.5432") or p.startswith("/var/run/nscd") for p in unix), unix


def test_the_empty_store_holds_no_locomo_gold():
    """Hindsight's schema is fixed text in every dump (memory/library_stores is scanned for
    gold): an empty store, made by the installed library, holds no LoCoMo gold answer that
    the store's conversation does not also hold (any conversation's gold, as verify reads it)."""
    locomo = pinned_dataset("the check reads LoCoMo's golds")
    from memorybench.data.source import load_dataset

    from memorybench.llm.recording_proxy import RecordingProxy

    def embed(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:  # Hindsight's dimension probe at start-up
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": [0.0] * 16} for i in range(len(texts))]
        return 200, {"object": "list", "data": data, "model": "x", "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"mb-hindsight-empty-{os.getpid()}.sql"
    with (
        RecordingProxy(chat=lambda body: (400, {}), embed=embed) as proxy,
        _client.Worker(endpoint=proxy.base_url, api_key=proxy.api_key) as worker,
    ):
        worker.call("start")
        worker.call("empty_dump", database="hs_empty", path=str(out))
    try:  # its text as verify reads a binary file: runs of text
        schema = b"\n".join(re.findall(rb"[^\x00-\x08\x0b-\x1f\x7f]{4,}", out.read_bytes())).decode("utf-8", "replace").lower()
    finally:
        out.unlink(missing_ok=True)
    assert "create table public.memory_units" in schema
    conversations = load_dataset(locomo, "locomo10")
    # verify's own scan: a gold of any conversation, in a store of one whose text (and the run's prompt
    # files: the library's prompts, pg_dump's preamble among them) does not hold it
    from memorybench.pack.verify.needles import Needles

    instructions = "\n".join(HindsightMemory.library_prompts(None).values())  # type: ignore[arg-type]
    needles = Needles(conversations, with_summaries=False, instructions=instructions)
    leaks = {(c.sample_id, g) for c in conversations for g in needles.scan(c.sample_id, schema)}
    assert leaks == set()
    # without pg_dump's preamble as the library's text, its "client_encoding" would read as conv-47's gold
    bare = Needles(conversations, with_summaries=False)
    assert any("coding" in bare.scan(c.sample_id, schema) for c in conversations)


# -- every way it can fail to start: one line ---------------------------------------------------


def test_a_missing_venv_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(_client.PYTHON_ENV, str(tmp_path / "nowhere" / "python"))
    with pytest.raises(UserError) as missing:
        _client.worker_python()
    message = str(missing.value)
    assert "runs Hindsight in a venv of its own" in message and "bash plugins/hindsight/install.sh" in message
    assert "\n" not in message


def test_qa_refuses_a_missing_venv_before_any_call(tmp_path, servers, monkeypatch, capsys):
    from mb_hindsight import _core

    monkeypatch.setattr(_core, "_DESCRIBED", {})
    monkeypatch.setenv(_client.PYTHON_ENV, str(tmp_path / "nowhere" / "python"))
    reader, writer = servers
    assert qa(tmp_path, reader, writer) != 0
    err = capsys.readouterr().err
    assert "memory=hindsight runs Hindsight in a venv of its own" in err and "Traceback" not in err
    assert writer.requests == [] and reader.requests == []


def test_a_venv_off_its_pins_is_one_line(monkeypatch):
    from mb_hindsight import _core

    found = {**_core.check_installed()}
    monkeypatch.setattr(_core, "_DESCRIBED", {**found, "versions": {**found["versions"], "hindsight-api-slim": "1.0.9"}})
    with pytest.raises(UserError, match=r"written for hindsight-api-slim 1\.1\.0 .*but hindsight-api-slim 1\.0\.9 is installed"):
        _core.check_installed()
    monkeypatch.setattr(_core, "_DESCRIBED", {**found, "wrong": ["openai: pinned 2.54.0, installed 3.63.0"]})
    with pytest.raises(UserError, match=r"venv differs from its pins \(openai: pinned 2\.54\.0, installed 3\.63\.0\); rerun"):
        _core.check_installed()


def test_a_broken_venv_is_one_line(tmp_path, monkeypatch):
    """A Python that is there but has no Hindsight: the worker dies on import; one line with its log's end."""
    from mb_hindsight import _core

    monkeypatch.setattr(_core, "_DESCRIBED", {})
    monkeypatch.setenv(_client.PYTHON_ENV, sys.executable)  # memorybench's Python: no hindsight_api here
    with pytest.raises(UserError) as broken:
        _core.check_installed()
    message = str(broken.value)
    assert "could not start Hindsight" in message and "reinstall with `bash plugins/hindsight/install.sh`" in message
    assert "\n" not in message


def test_a_bad_budget_is_one_line(tmp_path, servers, capsys):
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.budget=huge") != 0
    err = capsys.readouterr().err
    assert "memory.budget=huge is not one of low, mid, high" in err and "Traceback" not in err
    assert writer.requests == []


def test_the_declared_prompt_size_holds_hindsight_s_system_message():
    """FIXED_PROMPT_TOKENS is Hindsight's extraction system message (prompt and schema) in the
    local models' tokens (the larger count): a library change that grows it fails here."""
    from mb_hindsight._core import FIXED_PROMPT_TOKENS, check_installed
    from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

    system = check_installed()["extraction"]["system"]
    counted = max(count_tokens(system, spec) for spec in LOCAL_MODELS.values())
    assert counted <= FIXED_PROMPT_TOKENS < counted * 1.05


def test_dates_and_chunks_as_hindsight_reads_them():
    from mb_hindsight._core import chunk_count, parse_date

    assert parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_date("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00+00:00"
    assert parse_date("not a date") is None and parse_date(None) is None
    turns = [{"speaker": "A", "dia_id": f"D1:{n}", "text": "x" * 100} for n in range(40)]
    assert chunk_count(json.dumps(turns), 3000) == 2  # 40 turns of ~140 characters: two chunks of whole turns


@pytest.mark.local_model
def test_hindsight_smoke_on_the_embedded_model(tmp_path):
    """conv-26's first session on the embedded models (the writer extracts facts under
    Hindsight's reply schema as a grammar, MiniLM embeds, the local reader answers), 5
    questions: answers, a pack that verifies, every library call a row."""
    started = time.perf_counter()
    pack = smoke_qa(
        tmp_path,
        "hindsight-smoke",
        "memory=hindsight",
        "writer=local",
        "reader=local",
        "embedder=minilm",
        "memory.max_sessions=1",
        "memory.max_failed_share=1.0",
        "max_questions=5",
        timeout=1500,
    )
    # a warning at most (the small writer's failed tasks, counted): what Hindsight derives from a
    # session's date ("(happened in May 2023)") is the conversation's own text, and pg_dump's
    # preamble is among the library's prompt files
    findings = verify_pack(pack)
    assert [f for f in findings if not f.warning] == [], [f.format() for f in findings]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/hindsight/{cost['sample_id']}.json").read_text("utf-8"))
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert stored["metadata"]["library"]["endpoint_rows"]["chat"] == len(calls) == cost["writer"]["calls"] >= 1
    predictions = rows(pack / "predictions.jsonl")
    assert len(predictions) == 5 and all(p["prediction"].strip() for p in predictions)
    print(
        f"hindsight smoke: {time.perf_counter() - started:.0f} s, {len(stored['items'])} memories, {len(calls)} chat calls "
        f"({sum(1 for c in calls if not c['ok'])} failed)"
    )

"""memory=cognee (cognee's own add, cognify and search, in its own environment) against
scripted servers over real HTTP: plumbing; and one smoke on the embedded local model
(marked `local_model`).

The scripted writer (`_cognee_scripted.cognee_responder`) answers cognee's calls in the shape
their schema names (`KnowledgeGraph`: the chunk's speakers and who talks with whom;
`SummarizedContent`: the chunk's first line), so what lands in cognee's graph comes from
session text. Most checks read one pack (`run`, module-scoped: three `qa` runs of one run id,
a failed, a resumed and a finished one, with canary keys in the environment), since
starting cognee is most of a test's time. Checked: every call cognee made has its row in the
pack (calls the endpoint saw = rows), named by its schema; cognee's JSON fallback reached
the writer as a named JSON-schema request; the build cost and the estimate count them; the
pack verifies (contamination check included); the store (SQLite, LanceDB, graph database)
is in the pack and searched again by a resumed run without a build call; a rerun builds
nothing; run_meta.json records the cognee environment's versions; no canary key reaches a
file or a request; the store-words prompt file holds the store's own words and the rest of
the store is still scanned; cognee's process connected to nothing but the recording
endpoint (its socket audit, which refuses anything else: tested with a wrong allowed port);
a reply cognee's validation refuses is a counted failure with cognee's words; every way the
method can fail to start is one line.

Skipped, with the reason, when the plugin or its cognee environment is not installed
(`bash plugins/cognee/install.sh`).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_cognee", reason="the cognee plugin is not installed: bash plugins/cognee/install.sh")
from mb_cognee import _env  # noqa: E402

if not _env.python().is_file():
    pytest.skip(f"no cognee environment at {_env.python()}: bash plugins/cognee/install.sh", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parent))
from _cognee_scripted import chunk_of, cognee_responder, task_of  # noqa: E402

from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import (  # noqa: E402
    ResumedRuns,
    ScriptedQA,
    assert_only_the_endpoint,
    broken_python,
    error_line,
    pinned_dataset,
    resumed_runs,
    rows,
    scripted_servers,
    smoke_qa,
)
from memorybench.testing.scripted_server import Reply  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
PROMPT_FILE = "library/cognee/cognee-1.6.5_prompts.txt"
STORE_WORDS_FILE = "library/cognee/cognee-1.6.5_store_words.txt"
qa = ScriptedQA(main, "cognee", MINI)
the_pack = qa.pack


@pytest.fixture()
def servers():
    with scripted_servers(cognee_responder) as pair:
        yield pair


CANARY = "sk-canary-cognee-0123456789abcdefghijklmnop"
#: a UUID (with or without dashes), a longer hex run, a timestamp: what cognee's store holds of random digits
RANDOM_DIGITS = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|[0-9a-f]{16,}"
    r"|\d{4}-\d\d-\d\d[ t]\d\d:\d\d:\d\d(?:\.\d+)?"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> ResumedRuns:
    """One pack made by three `qa` runs of the same run id on mini-1 (its two sessions), with
    an OPENAI_API_KEY and an LLM_API_KEY canary in the environment: the first stops when the
    reader fails on the second question (the memory committed), the second resumes it
    (cognee opened again over the pack's store, for search only), the third finds it done."""
    return resumed_runs(
        qa, tmp_path_factory.mktemp("cognee-shared"), cognee_responder, {"OPENAI_API_KEY": CANARY, "LLM_API_KEY": CANARY + "-llm"}
    )


def test_cognee_builds_and_searches_through_the_recording_endpoint(run):
    pack = run.pack
    assert run.codes[1:] == [0, 0]
    assert verify_pack(pack) == []

    # every call cognee made reached the writer through us and has its row, named by its schema:
    # mini-1's two sessions are two documents, each one chunk: a graph and a summary each
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert len(calls) == len(run.writer_requests) == 4 and all(c["ok"] for c in calls)
    assert sorted(c["role"] for c in calls) == ["cognee:KnowledgeGraph"] * 2 + ["cognee:SummarizedContent"] * 2
    # cognee's JSON fallback (the schema in its system message) went out as a named JSON-schema request
    assert all(body["response_format"]["type"] == "json_schema" for body in run.writer_requests)
    assert all("You MUST respond with valid JSON" in c["request"]["messages"][0]["content"] for c in calls)
    assert all(c["template"].startswith("library:cognee/") for c in calls)
    assert (pack / "prompts" / PROMPT_FILE).is_file() and (pack / "prompts" / STORE_WORDS_FILE).is_file()
    embeds = rows(pack / "memory/cognee/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert any(e["question_id"] for e in embeds)  # the questions' searches embed the query through us too

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    assert cost["embedder"]["texts"] >= sum(len(e["texts"]) for e in embeds if e["question_id"] is None)

    # the store lives in the pack: cognee's SQLite catalogue, LanceDB and graph database
    sid = cost["sample_id"]
    system = pack / f"memory/library_stores/cognee/{sid}/system"
    assert (system / "databases").is_dir(), sorted(p.name for p in system.rglob("*"))[:20]
    names = {p.name for p in system.rglob("*")}
    assert any(n.endswith(".lancedb") for n in names) and any("cognee_db" in n for n in names)
    stored = json.loads((pack / f"memory/cognee/{sid}.json").read_text("utf-8"))
    items = stored["items"]
    assert items and all(i["sources"] for i in items)
    assert any(i["text"].startswith("ana (person)") for i in items) and any("--talks_with-->" in i["text"] for i in items)
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) and library["documents"] == 2
    assert library["json_schemas_named"] == {"KnowledgeGraph": 2, "SummarizedContent": 2}

    # run_meta.json: the cognee environment's versions (its wrapped_versions()) beside the plugin's
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "cognee"]
    assert plugin["wraps"]["cognee"] == "1.6.5" and plugin["wraps"]["lancedb"] == "0.39.0"
    assert plugin["wraps"]["litellm"] and plugin["wraps"]["openai"].startswith("2.")  # the cognee environment's, not ours
    assert any("cognee's own add, cognify and search" in note for note in meta["notes"])

    # cognee's process connected only to the recording endpoint (its audit refuses the rest) ...
    (endpoint_at,) = library["connections"]
    assert endpoint_at.startswith("127.0.0.1:")
    # ... and in this process only the endpoint's threads called the writer
    assert_only_the_endpoint(run.seen, run.writer_port)

    # `show` walks a question through the pack: the context cognee retrieved and the writer calls
    shown, out = qa.show(pack, rows(pack / "predictions.jsonl")[0]["question_id"])
    assert shown == 0 and "memory=cognee" in out and "retrieved for this question" in out


def test_a_resumed_run_searches_the_store_in_the_pack_and_a_rerun_builds_nothing(run):
    """The reader failed on the second question: the first run stopped with the memory
    committed; the second opened cognee again over the pack's store (no writer call) and
    searched it; the third, of a finished run id, built and asked nothing."""
    assert run.codes[0] != 0 and run.first["predictions"] == 1 and not run.first["success"]
    assert len(run.writer_requests) == run.first["writer_calls"] == 4  # nothing rebuilt
    assert (run.pack / "_SUCCESS").exists()
    predictions = rows(run.pack / "predictions.jsonl")
    retrievals = rows(run.pack / "memory/cognee/retrievals.jsonl")
    assert len(predictions) == 3 and {r["question_id"] for r in retrievals} == {p["question_id"] for p in predictions}
    assert all(r["hits"] for r in retrievals)
    assert all("Nodes:" in (r.get("memory_text") or "Nodes:") for r in retrievals)
    assert len(run.reader_requests) == 4  # q1, q2 refused, then q2 and q3: the third run asked nothing


def test_its_declared_writer_calls_meet_the_calls_cognee_makes(run):
    """`writer_calls`: a graph and a summary per chunk; on mini-1 each session is one chunk."""
    (role,) = [r for r in json.loads((run.pack / "estimate.json").read_text("utf-8"))["roles"] if r["role"] == "writer"]
    assert role["calls"] == len(rows(run.pack / "memory/writer/calls.jsonl")) == 4


def test_no_canary_key_reaches_the_pack_or_a_request(run):
    """An OPENAI_API_KEY and an LLM_API_KEY in the environment (cognee and litellm read both)
    reach no file of the pack and no request."""
    sent = json.dumps(run.writer_requests) + json.dumps(run.reader_requests)
    assert CANARY not in sent
    assert [p for p in run.tmp.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()] == []


def test_the_store_words_are_an_empty_store_s_and_leave_the_rest_of_a_store_scanned(run):
    """cognee's store holds words of its own in every conversation (LanceDB's
    `lance.encodings.ColumnEncoding`, cognee's SQLite table `notebooks`: LoCoMo golds of
    other conversations). The pack's store-words file, read from empty stores the installed
    cognee made, holds them, and no word of a conversation or an id; with the pack's prompt
    files as verify reads them, the shared run's store holds no LoCoMo gold of any
    conversation but what its own conversation's text holds (its ids and timestamps aside)."""
    locomo = pinned_dataset("the check reads LoCoMo's golds")
    from memorybench.data.source import load_dataset
    from memorybench.memory.venv_store_words import HEX_ONLY, WORD
    from memorybench.pack.verify.contamination import _text_of
    from memorybench.pack.verify.needles import Needles, date_forms

    text = (run.pack / "prompts" / STORE_WORDS_FILE).read_text("utf-8")
    head, *words = text.splitlines()
    assert head.startswith("# the words every cognee store holds") and "cognee 1.6.5" in head
    assert "lance.encodings.columnencoding" in words and "notebooks" in words
    assert all(WORD.fullmatch(w) and len(w) >= 4 and not HEX_ONLY.match(w) for w in words)
    (mini,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]
    assert not {w for w in words if w in WORD.findall(mini.text_blob().lower())} - {
        "data",
        "text",
    }  # "data" and "text" are cognee's columns

    conversations = load_dataset(locomo, "locomo10")
    own = (mini.text_blob() + "\n" + "\n".join(f for s in mini.sessions for f in date_forms(s.date_time))).lower()
    prompts = "\n".join(p.read_text("utf-8") for p in sorted((run.pack / "prompts").rglob("*.txt")))
    scanned, bare = Needles(conversations, with_summaries=False, instructions=prompts), Needles(conversations, False)
    store = run.pack / "memory/library_stores/cognee/mini-1"
    leaks: set[tuple[str, str]] = set()
    without: set[str] = set()
    for path in (p for p in store.rglob("*") if p.is_file()):
        # less cognee's ids and timestamps: random digits, where a numeric gold turns up by chance
        # ("2020" inside the id 9d020208-33f9-...; verify itself still matches there: README.md)
        low = RANDOM_DIGITS.sub(" ", _text_of(path.read_bytes()).lower())
        for c in conversations:
            leaks |= {(path.relative_to(store).as_posix(), g) for g in scanned.scan(c.sample_id, low) if g not in own}
            without |= set(bare.scan(c.sample_id, low))
    assert leaks == set()
    assert {"coding", "notebooks"} <= without  # what the store words answer: verify's findings without them


def test_a_reply_cognee_refuses_is_a_counted_failure_with_its_words(tmp_path):
    """The writer's first graph lacks the required `type` of a node: the endpoint reads the
    JSON (it parses), cognee's validation refuses it, logs `litellm_native validation retry
    1/3` and asks again with the error, and the second reply passes. The refused call is a
    counted failure with cognee's words (attached to the call the endpoint held when the
    warning came); the build goes on. (A reply refused on every try
    stops the build after cognee's 3 tries and tenacity's retries of the whole call, with one
    line: README.md, known failure modes; not run here, its backoff takes minutes.)
    With memory.max_sessions=1, the build is a prefix: session 2 is never sent."""
    graphs_seen: list[int] = []

    def untyped_once(body: dict[str, Any]) -> Reply:
        if task_of(body) == "KnowledgeGraph" and not graphs_seen:
            graphs_seen.append(1)
            return Reply(text=json.dumps({"nodes": [{"id": "x", "description": "no type"}], "edges": []}))
        return cognee_responder(body)

    with scripted_servers(untyped_once) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=1.0", "memory.max_sessions=1") == 0
    pack = the_pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    graphs = [c for c in calls if c["role"] == "cognee:KnowledgeGraph"]
    assert len(graphs) == 2
    # one call is marked failed: the one held when cognee's warning arrived (cognee runs a
    # chunk's graph and summary calls concurrently, so it may be the summary beside it)
    assert [c["ok"] for c in calls].count(False) == 1
    assert "failed validation" in graphs[1]["request"]["messages"][-1]["content"]  # its retry quotes the error
    reports = [r for r in rows(pack / "memory/cognee/library_reports.jsonl") if r["failure"]]
    assert [r["counted"] for r in reports] == [True] and "validation retry 1/3" in reports[0]["message"]
    (failure,) = rows(pack / "memory/writer/failures.jsonl")
    assert "reported by the library" in failure["action"] and "type" in failure["error"]
    findings = verify_pack(pack)
    assert [f.code for f in findings] == ["memory.writer_failures"] and findings[0].warning
    # memory.max_sessions=1: a prefix, in the dump's metadata; session 2 was never sent
    stored = json.loads((pack / "memory/cognee/mini-1.json").read_text("utf-8"))
    assert stored["metadata"]["prefix"] == {"max_sessions": 1, "sessions_built": 1, "sessions": 2}
    assert not any("Lisbon" in chunk_of(body) for body in writer.requests)


def test_a_connection_elsewhere_is_refused_and_stops_the_run(tmp_path, servers, capsys, monkeypatch):
    """The worker's socket audit allows only the recording endpoint's address: told another
    port, cognee's first call is refused in its process, and the run stops with one line."""
    from memorybench.memory import venv_method

    monkeypatch.setattr(venv_method, "host_port", lambda base_url: ("127.0.0.1", 9))
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") != 0
    line = error_line(capsys.readouterr().err)
    assert "cognee tried to connect to 127.0.0.1:" in line and "only the recording endpoint" in line
    assert writer.requests == []


# -- every way it can fail to start: one line ---------------------------------------------------


def test_a_missing_environment_or_other_cognee_is_one_line(monkeypatch, tmp_path):
    from mb_cognee import _core

    monkeypatch.setenv(_env.PYTHON_ENV, str(tmp_path / "nowhere" / "bin" / "python"))
    with pytest.raises(UserError) as missing:
        _core.check_installed()
    message = str(missing.value)
    assert "no cognee environment at" in message and "bash plugins/cognee/install.sh" in message and "\n" not in message
    monkeypatch.delenv(_env.PYTHON_ENV)

    monkeypatch.setitem(_core.PINNED, "cognee", "9.9.9")
    with pytest.raises(UserError) as other:
        _core.check_installed()
    message = str(other.value)
    assert "written for cognee 9.9.9" in message and "cognee 1.6.5 is installed" in message and "\n" not in message


def test_qa_refuses_a_wrong_cognee_or_search_type_before_any_call(tmp_path, servers, monkeypatch, capsys):
    from mb_cognee import _core

    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.search_type=NOPE") != 0
    err = capsys.readouterr().err
    assert "memory.search_type=NOPE is not one of GRAPH_COMPLETION" in err and "Traceback" not in err
    monkeypatch.setitem(_core.PINNED, "lancedb", "0.0.1")
    assert qa(tmp_path, reader, writer) != 0
    err = capsys.readouterr().err
    assert "memory=cognee was written for lancedb 0.0.1" in err and "Traceback" not in err
    assert writer.requests == [] and reader.requests == []


def test_a_worker_that_dies_is_one_line(tmp_path, servers, capsys, monkeypatch):
    """The cognee environment's Python is not a Python that can run the worker: one line with its last words."""
    fake = broken_python(tmp_path, "cognee environment is broken")
    from mb_cognee import _core

    monkeypatch.setattr(_core, "check_installed", lambda: None)
    monkeypatch.setenv(_env.PYTHON_ENV, str(fake))
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") != 0
    line = error_line(capsys.readouterr().err)
    assert "cognee's worker exited (code 3)" in line and "cognee environment is broken" in line


def test_the_json_fallback_becomes_a_named_schema_request():
    from mb_cognee._core import with_schema

    schema = {"title": "KnowledgeGraph", "type": "object", "properties": {"nodes": {"type": "array"}}}
    system = (
        "Extract a graph.\n\nYou MUST respond with valid JSON conforming to this schema:\n```json\n"
        f"{json.dumps(schema, indent=2)}\n```\nDo not include any text outside the JSON object."
    )
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}]}
    seen: dict[str, int] = {}
    out = with_schema({**body, "response_format": {"type": "json_object"}}, seen)
    assert out["response_format"] == {"type": "json_schema", "json_schema": {"name": "KnowledgeGraph", "schema": schema}}
    assert out["messages"] == body["messages"] and seen == {"KnowledgeGraph": 1}
    assert with_schema(body) == body  # no response_format: as it came
    plain = {"messages": [{"role": "system", "content": "no schema"}], "response_format": {"type": "json_object"}}
    assert with_schema(plain) == plain


def test_the_graph_context_splits_into_hits_and_renders_back():
    from mb_cognee._core import split_context

    context = "Nodes:\nNode: a\n__node_content_start__\nA\n__node_content_end__\n\nNode: b\nB\n\n\nConnections:\na --[r]--> b  (x)\nb --[s]--> a"
    texts, render = split_context(context)
    assert texts == [
        "Node: a\n__node_content_start__\nA\n__node_content_end__",
        "Node: b\nB",
        "a --[r]--> b  (x)",
        "b --[s]--> a",
    ]
    assert render([0, 1, 2, 3]) == context
    assert (
        render([0, 2]) == "Nodes:\nNode: a\n__node_content_start__\nA\n__node_content_end__\n\n\nConnections:\na --[r]--> b  (x)"
    )
    texts, render = split_context("chunk one")
    assert texts == ["chunk one"] and render([0]) == "chunk one"


@pytest.mark.local_model
def test_cognee_smoke_on_the_embedded_model(tmp_path):
    """conv-26's first session on the embedded models (SmolLM2 writes under cognee's schemas as
    grammars, Gemma reads), 3 questions: answers, a pack that verifies, every library call a row."""
    started = time.perf_counter()
    pack = smoke_qa(
        tmp_path,
        "cognee-smoke",
        "memory=cognee",
        "writer=local",
        "reader=local",
        "embedder=minilm",
        "memory.max_sessions=1",
        "memory.max_failed_share=1.0",
        "max_questions=3",
        timeout=1500,
    )
    findings = verify_pack(pack)  # a warning at most: the small writer's failed tasks, counted
    assert all(f.warning for f in findings), [f.format() for f in findings]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/cognee/{cost['sample_id']}.json").read_text("utf-8"))
    calls = rows(pack / "memory/writer/calls.jsonl")
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) == cost["writer"]["calls"] >= 2
    assert all(c.startswith("127.0.0.1:") for c in library["connections"])
    predictions = rows(pack / "predictions.jsonl")
    assert len(predictions) == 3 and all(p["prediction"].strip() for p in predictions)
    failed = [c for c in calls if not c["ok"]]
    print(
        f"cognee smoke: {time.perf_counter() - started:.0f} s, {len(stored['items'])} items, {len(calls)} chat calls "
        f"({len(failed)} failed)"
    )

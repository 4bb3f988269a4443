"""memory=amem (A-MEM's own library) against scripted servers over real HTTP: plumbing; and
one smoke on the embedded local model (marked `local_model`).

The scripted writer answers A-MEM's two calls in the shapes A-MEM parses: the analysis
(`{"keywords", "context", "tags"}`, words copied from the note) and the evolution
(`{"should_evolve", "actions", "suggested_connections", ...}`, linking the new note to its
nearest neighbour and giving each neighbour a context copied from its own content), so what
lands in A-MEM's store comes from session text. Checked: every call A-MEM made has its row
in the pack (calls the endpoint saw = rows), labelled by its task (amem:analyze,
amem:evolve); the build cost counts them; the pack verifies (contamination check included);
the Chroma store lives in the pack and its notes are the pack's items; a rerun does not
rebuild, and a resumed run searches the committed store; run_meta.json records which A-MEM
ran (the fork, labelled so) and the build opens no connection except to the recording
endpoint (no telemetry, no model download, no nltk download).

Skipped, with the reason, when the plugin or A-MEM is not installed
(`.venv/bin/pip install -e "plugins/amem[fork]"`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_amem", reason='the amem plugin is not installed: .venv/bin/pip install -e "plugins/amem[fork]"')
if importlib.util.find_spec("agentic_memory") is None:  # found, not imported: litellm reads its env at import
    pytest.skip('A-MEM is not installed: .venv/bin/pip install -e "plugins/amem[fork]"', allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.llm.recording_proxy import THREAD_NAME  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import (  # noqa: E402
    ScriptedQA,
    assert_only_the_endpoint,
    failing_reader,
    rows,
    scripted_servers,
    smoke_qa,
)
from memorybench.testing.scripted_server import Reply, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
ANALYZE = "Generate a structured analysis of the following content by:"
EVOLVE = "You are an AI memory evolution agent"
qa = ScriptedQA(main, "amem", MINI)


def user_of(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z]{4,}", text) if w not in ("Speaker", "says")]


def amem_responder(body: dict[str, Any]) -> Reply:
    """A-MEM's analysis and evolution calls, answered from the prompt's own words; else an echo (the reader)."""
    user = user_of(body)
    if ANALYZE in user:
        content = user.split("Content for analysis:", 1)[1]
        found = words(content) or ["chat"]
        reply = {"keywords": found[:3], "context": " ".join(found[:6]), "tags": found[-2:]}
    elif EVOLVE in user:
        # the fork lists each neighbour by its id, the authors' library by its index
        neighbours = re.findall(r"memory[_ ](?:id|index):(\S+)\ttalk start time:.*?\tmemory content: (.*?)\tmemory context", user)
        reply = {
            "should_evolve": True,
            "actions": ["strengthen", "update_neighbor"],
            "suggested_connections": [neighbours[0][0]] if neighbours else [],
            "tags_to_update": words(user.split("content:", 1)[1])[:2],
            "new_context_neighborhood": [" ".join(words(text)[:4]) for _, text in neighbours],
            "new_tags_neighborhood": [words(text)[:2] for _, text in neighbours],
        }
    else:
        return echo_responder(body)
    text = json.dumps(reply)
    return Reply(text=text, prompt_tokens=len(user.split()), completion_tokens=len(text.split()))


def analyses_not_json(body: dict[str, Any]) -> Reply:
    """A-MEM's analyses answered with prose; its evolutions as `amem_responder` answers them."""
    return Reply(text="no json here") if ANALYZE in user_of(body) else amem_responder(body)


@pytest.fixture()
def servers():
    with scripted_servers(amem_responder) as pair:
        yield pair


def test_amem_builds_through_the_recording_endpoint(tmp_path, servers, monkeypatch):
    import nltk

    downloads: list[Any] = []
    monkeypatch.setattr(nltk, "download", lambda *a, **k: downloads.append(a) or False)
    reader, writer = servers
    with SocketAudit() as audit:
        assert qa(tmp_path, reader, writer) == 0
    assert not downloads
    pack = qa.pack(tmp_path)
    assert verify_pack(pack) == []

    # every call A-MEM made reached the writer through us and has its row, labelled by its task
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert calls and len(calls) == len(writer.requests)
    roles = [c["role"] for c in calls]
    assert set(roles) == {"amem:analyze", "amem:evolve"} and all(c["ok"] for c in calls)
    # mini-1 has 5 turns: 5 analyses, 4 evolutions (the first note has no neighbour)
    assert roles.count("amem:analyze") == 5 and roles.count("amem:evolve") == 4
    assert all(c["request"]["response_format"]["type"] == "json_schema" for c in calls)
    embeds = rows(pack / "memory/amem/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert any(e["question_id"] for e in embeds)  # the questions' searches are rows too
    # A-MEM's prompts and chromadb's store schema are files of the pack's prompts/ (verify
    # reads their words as the libraries' fixed text), hashed in run_meta.json
    library = pack / "prompts/library/amem"
    assert sorted(p.name for p in library.iterdir()) == ["a-mem-0.2.6_prompts.txt", "chromadb-1.5.9_store_schema.txt"]
    assert ANALYZE in (library / "a-mem-0.2.6_prompts.txt").read_text("utf-8")
    assert "untouched" in (library / "chromadb-1.5.9_store_schema.txt").read_text("utf-8")

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    assert cost["embedder"]["texts"] >= sum(len(e["texts"]) for e in embeds if e["question_id"] is None)

    # the store lives in the pack; its notes are the pack's items, one per turn
    sid = cost["sample_id"]
    store = pack / f"memory/library_stores/amem/{sid}"
    assert (store / "chroma.sqlite3").is_file()
    assert not (Path.cwd() / "chroma_db").exists()
    stored = json.loads((pack / f"memory/amem/{sid}.json").read_text("utf-8"))
    items = stored["items"]
    assert [i["item_id"] for i in items] == [i["sources"][0] for i in items] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert all("memory content: Speaker " in i["text"] and "memory keywords: [" in i["text"] for i in items)
    assert any("links: [" in i["text"] for i in items)  # the evolution linked notes
    made = stored["metadata"]["library"]
    assert made["distribution"] == "a-mem" and made["fork"] and "fork" in made["label"]
    assert made["endpoint_rows"]["chat"] == len(calls) and made["notes"] == 5 and made["evolutions"] == 4
    retrievals = rows(pack / "memory/amem/retrievals.jsonl")
    assert retrievals and all(r["hits"] for r in retrievals)

    # run_meta.json: which A-MEM ran, beside the plugin's own version, and a note saying it is a fork
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "amem"]
    assert plugin["wraps"]["a-mem"] == "0.2.6" and plugin["wraps"]["agentic-memory"] is None
    assert plugin["wraps"]["chromadb"] and plugin["wraps"]["litellm"]
    assert any("third party's fork" in note for note in meta["notes"])

    # no connection but to our endpoint; the endpoint's own threads call the writer
    assert_only_the_endpoint(audit.seen, writer.port)
    library_side = [(name, addr) for name, addr in audit.seen if not name.startswith(THREAD_NAME)]
    amem_ports = {addr[1] for _, addr in library_side} - {reader.port, writer.port}
    assert len(amem_ports) <= 1  # A-MEM itself: only the recording endpoint's one port

    # a rerun of the same run id builds nothing again
    before = len(writer.requests)
    assert qa(tmp_path, reader, writer) == 0
    assert len(writer.requests) == before


def test_a_resumed_run_searches_the_committed_store(tmp_path):
    """The reader fails on the second question: the run stops with the memory committed; the
    rerun loads it from the pack (no writer call) and searches the reopened Chroma store."""
    with scripted_servers(amem_responder, reader=failing_reader()) as (reader, writer):
        assert qa(tmp_path, reader, writer) != 0
        pack = qa.pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        built = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) == built  # nothing rebuilt
    assert verify_pack(pack) == []
    retrievals = rows(pack / "memory/amem/retrievals.jsonl")
    assert len(retrievals) >= 3 and all(r["hits"] for r in retrievals)
    searched = {e["question_id"] for e in rows(pack / "memory/amem/embed_calls.jsonl") if e["question_id"]}
    assert {r["question_id"] for r in retrievals} <= searched


def test_a_reply_that_is_not_json_is_a_counted_failure(tmp_path):
    with scripted_servers(analyses_not_json) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_failed_share=1.0")
    assert code == 0
    pack = qa.pack(tmp_path)
    failures = rows(pack / "memory/writer/failures.jsonl")
    calls = rows(pack / "memory/writer/calls.jsonl")
    analyses = [c for c in calls if c["role"] == "amem:analyze"]
    assert analyses and len(failures) == len(analyses) and not any(c["ok"] for c in analyses)
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == len(analyses)
    # A-MEM kept the notes with its own defaults (no keywords, context "General")
    stored = json.loads((pack / f"memory/amem/{cost['sample_id']}.json").read_text("utf-8"))
    assert len(stored["items"]) == 5 and all("memory context: " in i["text"] for i in stored["items"])


def test_a_reply_amem_refuses_counts_as_a_failed_task_with_amem_s_message(tmp_path):
    """Issue 40, item 1: the first evolution reply holds a raw newline inside a JSON string.
    The recording endpoint reads it (it parses leniently); A-MEM's json.loads refuses it and
    logs `Error in memory evolution: Invalid control character ...`, then goes on without
    the evolution. That task is a counted writer failure with A-MEM's own words."""
    broken: list[int] = []

    def control_character_once(body: dict[str, Any]) -> Reply:
        reply = amem_responder(body)
        if not broken and EVOLVE in user_of(body):
            broken.append(1)
            data = json.loads(reply.text)
            data["tags_to_update"] = ["first line\nsecond line"]
            return Reply(text=json.dumps(data).replace("\\n", "\n"))  # a raw newline inside the string
        return reply

    with scripted_servers(control_character_once) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=0.5") == 0
    assert broken
    pack = qa.pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    bad = [c for c in calls if not c["ok"]]
    assert len(bad) == 1 and bad[0]["role"] == "amem:evolve" and "Invalid control character" in bad[0]["error"]
    (failure,) = rows(pack / "memory/writer/failures.jsonl")
    assert "Error in memory evolution" in failure["error"] and "Invalid control character" in failure["error"]
    assert "reported by the library (log agentic_memory" in failure["action"]
    reports = [r for r in rows(pack / "memory/amem/library_reports.jsonl") if r["failure"]]
    assert [r["counted"] for r in reports] == [True] and reports[0]["call"] == bad[0]["call"]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == 1
    findings = verify_pack(pack)
    assert [(f.code, f.path) for f in findings] == [("memory.writer_failures", "memory/writer/failures.jsonl")]
    assert "1 of them reported by the wrapped library itself" in findings[0].message


def test_what_amem_prints_is_a_report_too(tmp_path):
    """A-MEM prints `Error analyzing content: ...` where it drops an analysis: each printed
    line is journaled (here beside the endpoint's own count of the reply: one failure per task)."""
    with scripted_servers(analyses_not_json) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=1.0") == 0
    pack = qa.pack(tmp_path)
    printed = [r for r in rows(pack / "memory/amem/library_reports.jsonl") if r["source"] == "stdout"]
    assert len(printed) == 5 and all(r["message"].startswith("Error analyzing content") for r in printed)
    assert not any(r["counted"] for r in printed)  # the endpoint had counted each of those replies already
    assert len(rows(pack / "memory/writer/failures.jsonl")) == 5


AUTHORS_SRC = os.environ.get("MEMORYBENCH_AMEM_AUTHORS_SRC")


@pytest.mark.skipif(
    not AUTHORS_SRC,
    reason="set MEMORYBENCH_AMEM_AUTHORS_SRC to a checkout of agiresearch/A-mem "
    "(a folder holding agentic_memory/) to run the authors' code path",
)
def test_the_authors_library_runs_and_is_labelled(tmp_path, servers):
    """The authors' code (agiresearch/A-mem) instead of the fork, without touching the venv:
    its `agentic_memory` first on PYTHONPATH with a dist-info as pip writes it for a git
    install (`agentic-memory`, direct_url.json naming the commit)."""
    import shutil
    import subprocess

    from mb_amem._core import AUTHORS_COMMIT

    site = tmp_path / "site"
    shutil.copytree(Path(AUTHORS_SRC) / "agentic_memory", site / "agentic_memory")
    info = site / "agentic_memory-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agentic-memory\nVersion: 0.0.1\n", "utf-8")
    files = sorted(p.relative_to(site).as_posix() for p in (site / "agentic_memory").glob("*.py"))
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files), "utf-8")
    commit = os.environ.get("MEMORYBENCH_AMEM_AUTHORS_COMMIT", AUTHORS_COMMIT)
    (info / "direct_url.json").write_text(
        json.dumps({"url": "https://github.com/agiresearch/A-mem", "vcs_info": {"vcs": "git", "commit_id": commit}}), "utf-8"
    )
    reader, writer = servers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    authors = dataclasses.replace(qa, name="authors")
    done = subprocess.run(
        authors.command(tmp_path, reader, writer),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pack = authors.pack(tmp_path)
    assert verify_pack(pack) == []
    calls = rows(pack / "memory/writer/calls.jsonl")
    roles = [c["role"] for c in calls]
    assert roles.count("amem:analyze") == 5 and roles.count("amem:evolve") == 4 and len(calls) == len(writer.requests)
    stored = json.loads((pack / "memory/amem/mini-1.json").read_text("utf-8"))
    library = stored["metadata"]["library"]
    assert library["distribution"] == "agentic-memory" and not library["fork"] and library["commit"] == commit
    assert [i["item_id"] for i in stored["items"]] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert all("memory keywords: [" in i["text"] for i in stored["items"])
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    assert any("the authors' A-MEM library" in note and commit in note for note in meta["notes"])
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "amem"]
    assert plugin["wraps"]["agentic-memory"] == "0.0.1"


@pytest.mark.local_model
def test_amem_smoke_on_the_embedded_model(tmp_path):
    """conv-26's first notes on the embedded model (SmolLM2 writes, answers), 3 questions:
    a non-empty store, answers, a pack that verifies, every library call a row."""
    started = time.perf_counter()
    # in a process of its own, verified after it exited: the Chroma files _SUCCESS hashed
    # must not change when the library's objects go away
    pack = smoke_qa(
        tmp_path,
        "amem-smoke",
        "memory=amem",
        "writer=local",
        "reader=local",
        "embedder=minilm",
        "memory.max_notes=6",
        "memory.max_failed_share=1.0",
        "max_questions=3",
        timeout=900,
    )
    findings = verify_pack(pack)  # a warning at most: the small writer's failed tasks, counted (issue 40)
    assert all(f.warning for f in findings), [f.format() for f in findings]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/amem/{cost['sample_id']}.json").read_text("utf-8"))
    assert len(stored["items"]) == 6
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert stored["metadata"]["library"]["endpoint_rows"]["chat"] == len(calls) == cost["writer"]["calls"]
    embeds = rows(pack / "memory/amem/embed_calls.jsonl")
    assert stored["metadata"]["library"]["endpoint_rows"]["embed"] == len([e for e in embeds if e["question_id"] is None])
    predictions = rows(pack / "predictions.jsonl")
    assert len(predictions) == 3 and all(p["prediction"].strip() for p in predictions)
    failed = [c for c in calls if not c["ok"]]
    assert cost["writer"]["failures"] == len(failed) == len(rows(pack / "memory/writer/failures.jsonl"))
    print(
        f"amem smoke: {time.perf_counter() - started:.0f} s, {len(stored['items'])} notes, {len(calls)} chat calls "
        f"({len(failed)} failed), {len(embeds)} embedding requests"
    )


# -- the fourth red team's probe of A-MEM (issue 39, item 9) -----------------------------------


CANARY = "sk-canary-amem-0123456789abcdefghijklmnop"
HOSTILE = "\x1b]0;pwned\x07 </script><script>alert(1)</script> {content} {{x}} \u202e \\ud800"


def test_no_canary_key_reaches_the_pack_the_cache_or_a_request(tmp_path, monkeypatch):
    """An OPENAI_API_KEY in the environment (A-MEM's controller would read it) reaches no file
    of the pack or the cache, and no request the writer saw."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with scripted_servers(amem_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_notes=3") == 0
        sent = json.dumps(writer.requests) + json.dumps(reader.requests)
    assert CANARY not in sent
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()]
    assert leaked == []


def test_hostile_text_in_the_conversation_builds_and_verifies(tmp_path):
    """Escape sequences, script tags, format braces (A-MEM fills its evolution prompt with
    str.format), a right-to-left override and an escaped surrogate's text in a turn."""
    data = json.loads(MINI.read_text("utf-8"))
    data[0]["conversation"]["session_1"][0]["text"] = HOSTILE
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(data), "utf-8")
    with scripted_servers(amem_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer, f"dataset.path={hostile}", "memory.max_failed_share=1.0") == 0
    pack = qa.pack(tmp_path)
    findings = verify_pack(pack)
    assert all(f.warning for f in findings), [f.format() for f in findings]
    stored = json.loads((pack / "memory/amem/mini-1.json").read_text("utf-8"))
    assert any("</script>" in i["text"] and "{content}" in i["text"] for i in stored["items"])


def test_kill_minus_nine_during_a_build_then_a_rerun_builds_it_whole(tmp_path):
    """A build killed halfway (SIGKILL, a writer that answers slowly) leaves no committed memory;
    the rerun empties the store folder, builds the conversation from its first note, and the
    pack verifies."""
    import signal
    import subprocess

    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(0.3)
        return amem_responder(body)

    with scripted_servers(slow) as (reader, writer):
        proc = subprocess.Popen(
            qa.command(tmp_path, reader, writer), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 240
        while len(writer.requests) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pack = qa.pack(tmp_path)
        assert not (pack / "_SUCCESS").exists() and not rows(pack / "memory/manifest.jsonl")
        killed_at = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) - killed_at == 9  # 5 analyses and 4 evolutions: the whole conversation again
    assert verify_pack(pack) == []
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == 9


def test_its_declared_writer_calls_are_the_calls_amem_makes(tmp_path, servers):
    """`writer_calls`: an analysis per note and an evolution per note after the first (A-MEM
    skips it while its store is empty), 2N-1 for N notes, exact; the estimate written when the
    run starts meets the calls A-MEM made, with memory.max_notes honoured."""
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_notes=3") == 0
    pack = qa.pack(tmp_path)
    estimate = json.loads((pack / "estimate.json").read_text("utf-8"))
    (role,) = [r for r in estimate["roles"] if r["role"] == "writer"]
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert role["calls"] == 2 * 3 - 1 == len(calls) and role["calls_exact"] is True
    assert sum(c["role"] == "amem:analyze" for c in calls) == 3

"""memory=mem0_lib (mem0's own library) against scripted servers over real HTTP: plumbing only.

The scripted writer answers mem0's extraction call in the shape mem0 2.x parses
(`{"memory": [{"id", "text"}]}`, text copied from the request's new messages), so what
lands in mem0's store comes from session text. Checked: every call mem0 made has its row
in the pack (calls the endpoint saw = rows), the build cost counts them, the pack
verifies (contamination check included), the Qdrant store lives in the pack, a rerun does
not rebuild, run_meta.json records mem0ai's version, and the build opens no connection
except to the recording endpoint (and the endpoint's own to the writer).

Skipped, with the reason, when the plugin is not installed
(`.venv/bin/pip install -e plugins/mem0_lib`).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_mem0_lib", reason="the mem0_lib plugin is not installed: .venv/bin/pip install -e plugins/mem0_lib")
if importlib.util.find_spec("mem0") is None:  # found, not imported: mem0 reads MEM0_TELEMETRY at import
    pytest.skip("mem0ai is not installed: .venv/bin/pip install -e plugins/mem0_lib", allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.llm.recording_proxy import THREAD_NAME  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import ScriptedQA, assert_only_the_endpoint, rows, scripted_servers  # noqa: E402
from memorybench.testing.scripted_server import Reply, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
EXTRACTOR = "You are a Memory Extractor"
qa = ScriptedQA(main, "mem0_lib", MINI, name="mem0lib")


def mem0_responder(body: dict[str, Any]) -> Reply:
    """mem0's extraction call: one memory per new message, copied from it; else an echo (the reader)."""
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    if EXTRACTOR not in system:
        return echo_responder(body)
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    new = user.split("## New Messages", 1)[1].split("## Observation Date", 1)[0]
    lines = [re.sub(r"^\w+: ", "", line.strip()) for line in new.strip().splitlines() if line.strip()]
    memories = [{"id": str(n), "text": line} for n, line in enumerate(lines)]
    text = json.dumps({"memory": memories})
    return Reply(text=text, prompt_tokens=len(user.split()), completion_tokens=len(text.split()))


@pytest.fixture()
def servers():
    with scripted_servers(mem0_responder) as pair:
        yield pair


def test_mem0_lib_builds_through_the_recording_endpoint(tmp_path, servers):
    reader, writer = servers
    with SocketAudit() as audit:
        assert qa(tmp_path, reader, writer) == 0
    pack = qa.pack(tmp_path)
    assert verify_pack(pack) == []

    # every call mem0 made reached the writer through us and has its row
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert calls and len(calls) == len(writer.requests)
    assert {c["role"] for c in calls} == {"mem0_lib:extract"} and all(c["ok"] for c in calls)
    assert all(EXTRACTOR in c["request"]["messages"][0]["content"] for c in calls)
    # mem0's prompt is a prompt file of the pack (verify reads its words as instructions)
    assert {c["template"] for c in calls} == {"library/mem0_lib/mem0ai-2.2.1_additive_extraction.txt"}
    assert (pack / "prompts/library/mem0_lib/mem0ai-2.2.1_additive_extraction.txt").is_file()
    embeds = rows(pack / "memory/mem0_lib/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert any(e["question_id"] for e in embeds)  # the questions' searches are rows too

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    assert cost["embedder"]["texts"] >= sum(len(e["texts"]) for e in embeds if e["question_id"] is None)

    # the store lives in the pack, and a readable dump of what mem0 remembered
    sid = cost["sample_id"]
    assert (pack / f"memory/library_stores/mem0_lib/{sid}/qdrant").is_dir()
    stored = json.loads((pack / f"memory/mem0_lib/{sid}.json").read_text("utf-8"))
    assert stored["items"] and all(i["sources"] for i in stored["items"])
    assert stored["metadata"]["library"]["endpoint_rows"]["chat"] == len(calls)

    # run_meta.json: the wrapped library's version beside the plugin's own
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "mem0_lib"]
    assert plugin["wraps"]["mem0ai"] == "2.2.1" and plugin["wraps"]["qdrant-client"]

    # no connection but to our endpoint; the endpoint's own threads call the writer
    assert_only_the_endpoint(audit.seen, writer.port)
    library = [(name, addr) for name, addr in audit.seen if not name.startswith(THREAD_NAME)]
    allowed = {reader.port, writer.port} | {p for _, (host, p, *_) in library if host == "127.0.0.1"}
    assert all(addr[1] in allowed for _, addr in library)
    mem0_ports = {addr[1] for _, addr in library} - {reader.port, writer.port}
    assert len(mem0_ports) <= 1  # mem0 itself: only the recording endpoint's one port

    # a rerun of the same run id builds nothing again
    before = len(writer.requests)
    assert qa(tmp_path, reader, writer) == 0
    assert len(writer.requests) == before


def test_a_reply_that_is_not_json_is_a_counted_failure(tmp_path):
    def not_json(body: dict[str, Any]) -> Reply:
        return Reply(text="no json here") if EXTRACTOR in body["messages"][0]["content"] else echo_responder(body)

    with scripted_servers(not_json) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_failed_share=1.0")
    assert code == 0
    pack = qa.pack(tmp_path)
    failures = rows(pack / "memory/writer/failures.jsonl")
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert failures and len(failures) == len(calls) and not any(c["ok"] for c in calls)
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == len(calls)


def test_a_control_character_mem0_reads_is_no_failure_and_its_warnings_are_remarks(tmp_path):
    """Issue 40, item 1, from mem0's side: a reply counts as parsed when the library parsed it.
    mem0 reads its extraction with `json.loads(..., strict=False)`, so a raw newline inside a
    string is no failure of mem0's (the memory holds the text); its WARNING records (an
    optional package such as fastembed or spaCy missing) are journaled as remarks, never a
    failed task. Its ERROR records are failures (`loggers={"mem0": logging.ERROR}`)."""

    def control_character(body: dict[str, Any]) -> Reply:
        reply = mem0_responder(body)
        if EXTRACTOR in body["messages"][0]["content"]:
            data = json.loads(reply.text)
            for memory in data["memory"]:
                memory["text"] += "\nthen more"
            return Reply(text=json.dumps(data).replace("\\n", "\n"))  # raw newlines inside strings
        return reply

    with scripted_servers(control_character) as (reader, writer):
        assert qa(tmp_path, reader, writer) == 0
    pack = qa.pack(tmp_path)
    assert verify_pack(pack) == []
    assert all(c["ok"] for c in rows(pack / "memory/writer/calls.jsonl"))
    assert not rows(pack / "memory/writer/failures.jsonl")
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/mem0_lib/{cost['sample_id']}.json").read_text("utf-8"))
    assert stored["items"] and all("then more" in i["text"] for i in stored["items"])
    reports = rows(pack / "memory/mem0_lib/library_reports.jsonl")
    assert all(not r["failure"] and not r["counted"] and r["source"].endswith("WARNING") for r in reports)


def _estimate(pack: Path) -> dict:
    return json.loads((pack / "estimate.json").read_text("utf-8"))


def test_its_declared_writer_calls_are_the_calls_mem0_makes(tmp_path, servers):
    """`writer_calls`: one extraction per Memory.add (per session and speaker, `batch_size`
    turns each), exact; the estimate written when the run starts meets the calls mem0 made,
    with memory.max_sessions and batch_size honoured."""
    from memorybench.data.source import load_dataset

    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1", "memory.batch_size=3") == 0
    pack = qa.pack(tmp_path)
    (conversation,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]  # the first 3 questions'
    adds = 2 * -(-len(conversation.sessions[0].turns) // 3)
    (role,) = [r for r in _estimate(pack)["roles"] if r["role"] == "writer"]
    assert role["calls"] == adds == len(rows(pack / "memory/writer/calls.jsonl")) and role["calls_exact"] is True

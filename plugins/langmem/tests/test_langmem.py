"""memory=langmem (LangMem's own memory store manager) against scripted servers over real
HTTP: plumbing; and one smoke on the embedded local model (marked `local_model`).

The scripted writer answers LangMem's calls in the reply shape the recording endpoint asks
for (`{"tool_calls": [...]}`, the schema named by the task: `extract`, `update`, `fix`): a
`Memory` per message of the namespace's own speaker, copied from the session in the
request, and on an update a `PatchDoc` that appends to the first memory shown. So what lands
in LangMem's store comes from session text. Checked: every call LangMem made has its row in
the pack (calls the endpoint saw = rows), labelled by its task; its tools reached the writer
as text and the replies came back as tool calls; the build cost counts them; the pack
verifies (contamination check included); the store is in the pack and read back by a
resumed run; a rerun does not rebuild; run_meta.json records langmem's version; the build
opens no connection except to the recording endpoint; a tool call trustcall refuses is a
counted failure with its words; every way the method can fail to start is one line.

Skipped, with the reason, when the plugin is not installed (`.venv/bin/pip install -e plugins/langmem`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_langmem", reason="the langmem plugin is not installed: .venv/bin/pip install -e plugins/langmem")
if importlib.util.find_spec("langmem") is None:  # found, not imported: tracing must be off before LangChain is imported
    pytest.skip("langmem is not installed: .venv/bin/pip install -e plugins/langmem", allow_module_level=True)

from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.llm.recording_proxy import THREAD_NAME  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import (  # noqa: E402
    ScriptedQA,
    assert_only_the_endpoint,
    error_line,
    failing_reader,
    rows,
    scripted_servers,
    smoke_qa,
)
from memorybench.testing.scripted_server import Reply, echo_responder  # noqa: E402
from memorybench.testing.socket_audit import SocketAudit  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
TASKS = ("extract", "update", "fix")
PROMPT_FILE = "library/langmem/langmem-0.0.30_prompts.txt"
qa = ScriptedQA(main, "langmem", MINI)
the_pack = qa.pack


def task_of(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name") if fmt.get("type") == "json_schema" else None
    return name if name in TASKS else None


def own_lines(body: dict[str, Any]) -> list[str]:
    """The namespace owner's messages in the session LangMem sent (its "Human Message" blocks)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user" and "<session_" in m["content"])
    session = re.search(r"<session_[^>]+>\n(.*)\n</session_", user, re.S).group(1)
    blocks = re.split(r"=+ (Human|Ai) Message =+\n\n", session)
    lines = []
    for kind, text in zip(blocks[1::2], blocks[2::2]):
        if kind == "Human":
            lines += [line.split(" | ", 1)[-1] for line in text.strip().splitlines() if line.strip()]
    return lines


def shown_ids(body: dict[str, Any]) -> list[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    items = schema["properties"]["tool_calls"]["items"]
    for branch in items.get("anyOf", [items]):
        if branch["properties"]["name"]["const"] == "PatchDoc":
            return list(branch["properties"]["arguments"]["properties"]["json_doc_id"].get("enum") or [])
    return []


def langmem_responder(body: dict[str, Any]) -> Reply:
    """LangMem's calls answered from the session in the request; else an echo (the reader)."""
    task = task_of(body)
    if task is None:
        return echo_responder(body)
    if task == "fix":
        calls: list[dict[str, Any]] = []
    else:
        lines = own_lines(body)
        calls = [{"name": "Memory", "arguments": {"content": line}} for line in lines[:2]]
        ids = shown_ids(body) if task == "update" else []
        if ids and lines:
            patch = {"op": "replace", "path": "/content", "value": f"{lines[0]} (said again)"}
            calls.append({"name": "PatchDoc", "arguments": {"json_doc_id": ids[0], "planned_edits": "-", "patches": [patch]}})
    text = json.dumps({"tool_calls": calls})
    return Reply(
        text=text, prompt_tokens=sum(len(m["content"].split()) for m in body["messages"]), completion_tokens=len(text.split())
    )


@pytest.fixture()
def servers():
    with scripted_servers(langmem_responder) as pair:
        yield pair


def test_langmem_builds_through_the_recording_endpoint(tmp_path, servers):
    reader, writer = servers
    with SocketAudit() as audit:
        assert qa(tmp_path, reader, writer) == 0
    pack = the_pack(tmp_path)
    assert verify_pack(pack) == []
    # LangSmith tracing is off and no key of it is left in the process
    assert os.environ["LANGSMITH_TRACING"] == "false" and os.environ["LANGCHAIN_TRACING_V2"] == "false"
    assert "LANGSMITH_API_KEY" not in os.environ and "LANGCHAIN_API_KEY" not in os.environ

    # every call LangMem made reached the writer through us and has its row, labelled by its task;
    # mini-1's two sessions, each handed to both speakers' managers: 4 manager calls, 4 writer calls
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert len(calls) == len(writer.requests) == 4 and all(c["ok"] for c in calls)
    assert [c["role"] for c in calls] == ["langmem:extract", "langmem:extract", "langmem:update", "langmem:update"]
    # the tools reached the writer as text, the reply was asked for as JSON: no tool field on the wire
    assert not any("tools" in body or "tool_choice" in body for body in writer.requests)
    assert all("# Tools" in c["request"]["messages"][0]["content"] for c in calls)
    assert all(c["template"].startswith("library:langmem/") for c in calls)
    assert (pack / "prompts" / PROMPT_FILE).is_file()
    embeds = rows(pack / "memory/langmem/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert any(e["question_id"] for e in embeds)  # the questions' searches are rows too

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    assert cost["embedder"]["texts"] >= sum(len(e["texts"]) for e in embeds if e["question_id"] is None)

    # the store lives in the pack (items and vectors), and a readable dump of what LangMem kept
    sid = cost["sample_id"]
    store = json.loads((pack / f"memory/library_stores/langmem/{sid}/store.json").read_text("utf-8"))
    assert store["items"] and all(i["vectors"]["$"] and i["value"]["kind"] == "Memory" for i in store["items"])
    assert {tuple(i["namespace"]) for i in store["items"]} == {("memories", f"{sid}-speaker-a"), ("memories", f"{sid}-speaker-b")}
    stored = json.loads((pack / f"memory/langmem/{sid}.json").read_text("utf-8"))
    items = stored["items"]
    assert len(items) == len(store["items"]) and all(i["sources"] for i in items)
    assert any("(said again)" in i["text"] for i in items)  # the update's patch reached the store
    assert all(re.match(r"^\w+ \(.+\): ", i["text"]) for i in items)  # SPEAKER (DATE): text
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) and library["manager_calls"] == 4
    assert library["tool_calls_as_json"] == {"extract": 2, "update": 2}
    retrievals = rows(pack / "memory/langmem/retrievals.jsonl")
    assert retrievals and all(r["hits"] for r in retrievals)

    # run_meta.json: the wrapped library's version beside the plugin's own
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "langmem"]
    assert plugin["wraps"]["langmem"] == "0.0.30" and plugin["wraps"]["trustcall"] == "0.0.39"
    assert any("LangMem's own memory store manager" in note for note in meta["notes"])

    # no connection but to our endpoint; the endpoint's own threads call the writer
    assert_only_the_endpoint(audit.seen, writer.port)
    library_side = {addr[1] for name, addr in audit.seen if not name.startswith(THREAD_NAME)} - {reader.port, writer.port}
    assert len(library_side) <= 1  # LangMem itself: only the recording endpoint's one port

    # `show` walks a question through the pack: the memories retrieved and the writer calls
    shown, out = qa.show(pack, rows(pack / "predictions.jsonl")[0]["question_id"])
    assert shown == 0 and "memory=langmem" in out and "retrieved for this question" in out

    # a rerun of the same run id builds nothing again
    before = len(writer.requests)
    assert qa(tmp_path, reader, writer) == 0
    assert len(writer.requests) == before


def test_a_resumed_run_searches_the_store_read_back_from_the_pack(tmp_path):
    """The reader fails on the second question: the run stops with the memory committed; the
    rerun reads store.json back into an InMemoryStore (no writer call) and searches it."""
    with scripted_servers(langmem_responder, reader=failing_reader()) as (reader, writer):
        assert qa(tmp_path, reader, writer) != 0
        pack = the_pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        built = len(writer.requests)
        assert qa(tmp_path, reader, writer) == 0
        assert len(writer.requests) == built  # nothing rebuilt
    assert verify_pack(pack) == []
    retrievals = rows(pack / "memory/langmem/retrievals.jsonl")
    assert len(retrievals) >= 3 and all(r["hits"] for r in retrievals)
    searched = {e["question_id"] for e in rows(pack / "memory/langmem/embed_calls.jsonl") if e["question_id"]}
    assert {r["question_id"] for r in retrievals} <= searched


def test_a_patch_trustcall_refuses_is_a_counted_failure_with_its_words(tmp_path):
    """The writer's update patches a memory id the request never showed (a server writer has
    no grammar to stop it): the endpoint reads the JSON (it parses), trustcall cannot find the
    memory, logs `Could not find existing schema ...` at ERROR on its logger and drops the
    patch. That task is a counted writer failure with trustcall's words; the memories the same
    reply inserted are kept."""

    def unknown_id(body: dict[str, Any]) -> Reply:
        reply = langmem_responder(body)
        if task_of(body) == "update":
            data = json.loads(reply.text)
            for call in data["tool_calls"]:
                if call["name"] == "PatchDoc":
                    call["arguments"]["json_doc_id"] = "not-a-memory-shown"
            return Reply(text=json.dumps(data))
        return reply

    with scripted_servers(unknown_id) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=1.0") == 0
    pack = the_pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    updates = [c for c in calls if c["role"] == "langmem:update"]
    assert updates and not any(c["ok"] for c in updates) and all(c["ok"] for c in calls if c not in updates)
    reports = [r for r in rows(pack / "memory/langmem/library_reports.jsonl") if r["failure"]]
    assert reports and all(r["source"] == "log extraction ERROR" and "not-a-memory-shown" in r["message"] for r in reports)
    assert [r["counted"] for r in reports] == [True] * len(updates)
    failures = rows(pack / "memory/writer/failures.jsonl")
    assert len(failures) == len(updates) and all("reported by the library" in f["action"] for f in failures)
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == len(updates)
    stored = json.loads((pack / f"memory/langmem/{cost['sample_id']}.json").read_text("utf-8"))
    assert stored["items"] and not any("(said again)" in i["text"] for i in stored["items"])
    findings = verify_pack(pack)
    assert [f.code for f in findings] == ["memory.writer_failures"] and findings[0].warning


def test_a_tool_call_trustcall_cannot_repair_stops_the_build_in_one_line(tmp_path, capsys):
    """The writer calls `Memory` without its required `content`: trustcall's validation refuses
    it and its repair step fails under langgraph 1.x (`'ExtractionState' object has no
    attribute 'tool_call_id'`: trustcall 0.0.39 passes its repair state through a Send that
    langgraph 1.x narrows to the graph's state). The build stops with one line naming the
    session, the speaker and LangMem's error; nothing is committed, so a rerun rebuilds."""

    def no_content(body: dict[str, Any]) -> Reply:
        if task_of(body) == "extract":
            return Reply(text=json.dumps({"tool_calls": [{"name": "Memory", "arguments": {"text": "no content field"}}]}))
        return langmem_responder(body)

    with scripted_servers(no_content) as (reader, writer):
        code = qa(tmp_path, reader, writer, "memory.max_sessions=1")
    assert code != 0
    line = error_line(capsys.readouterr().err)
    assert "LangMem stopped on mini-1's session 1" in line and "AttributeError" in line and "tool_call_id" in line
    assert "a rerun restarts this conversation" in line
    pack = the_pack(tmp_path)
    assert not (pack / "_SUCCESS").exists() and not rows(pack / "memory/manifest.jsonl")


def test_a_reply_that_is_not_json_is_a_counted_failure(tmp_path):
    def not_json(body: dict[str, Any]) -> Reply:
        return Reply(text="no json here") if task_of(body) else echo_responder(body)

    with scripted_servers(not_json) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=1.0") == 0
    pack = the_pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    failures = rows(pack / "memory/writer/failures.jsonl")
    assert calls and len(failures) == len(calls) and not any(c["ok"] for c in calls)
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == len(calls)


def test_its_declared_writer_calls_are_the_calls_langmem_makes(tmp_path, servers):
    """`writer_calls`: one call per manager call (per session, speaker and `batch_size` turns);
    the estimate written when the run starts meets the calls LangMem made, with
    memory.max_sessions and batch_size honoured."""
    from memorybench.data.source import load_dataset

    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1", "memory.batch_size=2") == 0
    pack = the_pack(tmp_path)
    (conversation,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]
    manager_calls = 2 * -(-len(conversation.sessions[0].turns) // 2)
    (role,) = [r for r in json.loads((pack / "estimate.json").read_text("utf-8"))["roles"] if r["role"] == "writer"]
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert role["calls"] == manager_calls == len(calls)
    session_2 = conversation.sessions[1].turns[0].text
    assert not any(session_2 in m["content"] for c in calls for m in c["request"]["messages"])
    stored = json.loads((pack / "memory/langmem/mini-1.json").read_text("utf-8"))
    assert stored["metadata"]["prefix"] == {"max_sessions": 1, "sessions_built": 1, "sessions": 2}
    assert stored["metadata"]["library"]["manager_calls"] == manager_calls


CANARY = "sk-canary-langmem-0123456789abcdefghijklmnop"


def test_no_canary_key_reaches_the_pack_the_cache_or_a_request(tmp_path, monkeypatch):
    """An OPENAI_API_KEY (ChatOpenAI and OpenAIEmbeddings would read it) and a LangSmith key in
    the environment reach no file of the pack or the cache and no request; the LangSmith key
    is gone from the process once LangMem is imported."""
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("LANGSMITH_API_KEY", CANARY + "-ls")
    with scripted_servers(langmem_responder) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_sessions=1") == 0
        sent = json.dumps(writer.requests) + json.dumps(reader.requests)
    assert CANARY not in sent
    assert [p for p in tmp_path.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()] == []
    assert "LANGSMITH_API_KEY" not in os.environ


# -- every way it can fail to start: one line ---------------------------------------------------


def test_a_missing_or_other_langmem_is_one_line(monkeypatch):
    from mb_langmem import _core

    real = _core.importlib_metadata.version

    def other(name: str) -> str:
        return "0.0.29" if name == "langmem" else real(name)

    monkeypatch.setattr(_core.importlib_metadata, "version", other)
    with pytest.raises(UserError) as wrong:
        _core.check_installed()
    message = str(wrong.value)
    assert (
        "langmem 0.0.30" in message and "langmem 0.0.29 is installed" in message and "pip install -e plugins/langmem" in message
    )
    assert "\n" not in message

    def missing(name: str) -> str:
        if name == "trustcall":
            raise _core.importlib_metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(_core.importlib_metadata, "version", missing)
    with pytest.raises(UserError, match=r"needs trustcall 0\.0\.39, which is not installed; install the plugin with"):
        _core.check_installed()


def test_qa_refuses_a_wrong_langmem_before_any_call(tmp_path, servers, monkeypatch, capsys):
    from mb_langmem import _core

    monkeypatch.setitem(_core.PINNED, "langmem", "9.9.9")
    reader, writer = servers
    assert qa(tmp_path, reader, writer) != 0
    err = capsys.readouterr().err
    assert "memory=langmem was written for langmem 9.9.9" in err and "Traceback" not in err
    assert writer.requests == [] and reader.requests == []


def test_plan_refuses_a_local_writer_too_small_for_langmem_s_prompt(capsys):
    """The declared prompt (LangMem's fixed text, the memories shown) plus writer.max_tokens
    must fit the local writer's context: SmolLM2's 8,192 tokens hold it with 1,024 for the
    reply, not with 6,000."""
    args = ["plan", "memory=langmem", "writer=local", "writer.model=smollm2-135m", "reader=local"]
    assert main(args) == 0
    capsys.readouterr()
    try:
        code = main([*args, "writer.max_tokens=6000"])
    except SystemExit as e:
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    line = next(line for line in err.splitlines() if "memory=langmem" in line)
    assert "the writer (writer=local, local model smollm2-135m) holds 8,192 tokens" in line
    assert "LangMem's instructions" in line and "writer.model=gemma3-270m" in line


def test_the_declared_prompt_size_holds_langmem_s_longest_call():
    """FIXED_PROMPT_TOKENS is the fixed text of LangMem's update call in SmolLM2's tokens (the
    larger count): a library or rendering change that grows it fails here."""
    from mb_langmem._core import FIXED_PROMPT_TOKENS, update_call_text
    from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

    counted = max(count_tokens(update_call_text(), spec) for spec in LOCAL_MODELS.values())
    assert counted <= FIXED_PROMPT_TOKENS < counted * 1.05


def test_tool_calls_round_trip_through_a_json_reply():
    """The translation alone: tools into the system message and a named reply schema, a
    repair turn's tool messages into plain ones, the JSON reply back into tool calls."""
    from mb_langmem._tools import json_request, with_tool_calls

    memory = {
        "name": "Memory",
        "description": "Record a memory.",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
    }
    patch = {
        "name": "PatchDoc",
        "description": "Patch a memory.",
        "parameters": {
            "type": "object",
            "properties": {
                "json_doc_id": {"type": "string"},
                "patches": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": {"type": "string", "enum": ["add", "remove", "replace"]},
                            "path": {"type": "string"},
                            "value": {
                                "anyOf": [
                                    {"type": "string"},
                                    {"type": "array", "items": {"type": "string"}},
                                    {"type": "object", "additionalProperties": {"type": "string"}},
                                ]
                            },
                        },
                    },
                },
            },
        },
    }
    body = {
        "model": "w",
        "messages": [
            {"role": "system", "content": 'Update.\n<instance id=abc schema_type="Memory">\n{}\n</instance>'},
            {"role": "user", "content": "session"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Memory", "arguments": '{"text": 1}'}}],
            },
            {"role": "tool", "content": "Error: content missing", "tool_call_id": "c1"},
        ],
        "tools": [{"type": "function", "function": patch}, {"type": "function", "function": memory}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    plain = json_request(body)
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(plain)
    assert plain["response_format"]["json_schema"]["name"] == "update"
    calls = plain["response_format"]["json_schema"]["schema"]["properties"]["tool_calls"]
    assert calls["minItems"] == 1
    branches = {b["properties"]["name"]["const"]: b["properties"]["arguments"] for b in calls["items"]["anyOf"]}
    assert branches["PatchDoc"]["properties"]["json_doc_id"]["enum"] == ["abc"]
    # a patch its memories can take: add or replace /content (Memory's one field) with a string
    patch = branches["PatchDoc"]["properties"]["patches"]["items"]["properties"]
    assert patch == {
        "op": {"type": "string", "enum": ["add", "replace"]},
        "path": {"type": "string", "enum": ["/content"]},
        "value": {"type": "string"},
    }
    system, user, assistant, tool = plain["messages"]
    assert "## PatchDoc" in system["content"] and "Call at least one tool." in system["content"]
    assert json.loads(assistant["content"]) == {"tool_calls": [{"name": "Memory", "arguments": {"text": 1}}]}
    assert tool == {"role": "user", "content": "Tool result for call c1:\nError: content missing"}

    completion = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": '{"tool_calls": [{"name": "Memory", "arguments": {"content": "x"}}]}',
                },
                "finish_reason": "stop",
            }
        ]
    }
    (choice,) = with_tool_calls(completion, 7)["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [
        {"id": "call_7_0", "type": "function", "function": {"name": "Memory", "arguments": '{"content": "x"}'}}
    ]
    not_json = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "no json"}, "finish_reason": "stop"}]}
    assert with_tool_calls(not_json, 1) == not_json


@pytest.mark.local_model
def test_langmem_smoke_on_the_embedded_model(tmp_path):
    """conv-26's first session on the embedded models (SmolLM2 writes under the tool-call
    grammar, reads), 3 questions: answers, a pack that verifies, every library call a row."""
    started = time.perf_counter()
    pack = smoke_qa(
        tmp_path,
        "langmem-smoke",
        "memory=langmem",
        "writer=local",
        "reader=local",
        "embedder=minilm",
        "memory.max_sessions=1",
        "memory.max_failed_share=1.0",
        "max_questions=3",
        timeout=900,
    )
    findings = verify_pack(pack)  # a warning at most: the small writer's failed tasks, counted
    assert all(f.warning for f in findings), [f.format() for f in findings]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/langmem/{cost['sample_id']}.json").read_text("utf-8"))
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert stored["metadata"]["library"]["endpoint_rows"]["chat"] == len(calls) == cost["writer"]["calls"] >= 2
    predictions = rows(pack / "predictions.jsonl")
    assert len(predictions) == 3 and all(p["prediction"].strip() for p in predictions)
    failed = [c for c in calls if not c["ok"]]
    assert cost["writer"]["failures"] >= len(failed)
    print(
        f"langmem smoke: {time.perf_counter() - started:.0f} s, {len(stored['items'])} memories, {len(calls)} chat calls "
        f"({len(failed)} failed)"
    )

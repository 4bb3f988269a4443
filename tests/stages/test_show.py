"""`memorybench show PACK QUESTION_ID` and TRACE.md, the same walk, on a reader pack (judged by
the real autorater), a writer-method pack (session summaries by a scripted writer) and a
Codex pack (the real pinned CLI against the scripted Responses server)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader
from tracking.pack_factory import lookup_responder

from memorybench.cli import main
from memorybench.pack.walk import PackWalker
from memorybench.stages.autorater import autorater_main
from memorybench.viewers.show import show
from memorybench.testing.scripted_responses import (
    Message,
    ScriptedResponsesServer,
    Shell,
    Usage,
    is_follow_up,
    last_user_text,
)
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
READER_SYSTEM = "You answer questions using only the provided memory."
#: what TRACE.md of an agent's pack said before it walked the agent's files
WRONG_FOR_AGENTS = ("prompts/None", "line None", "requested `None`")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _only(root: Path) -> Path:
    (pack,) = sorted(root.glob("packs/*/runs/*"))
    return pack


def _judge(body: dict) -> Reply:
    content = body["messages"][-1]["content"]
    answer = content.rsplit("Generated answer: ", 1)[-1].split("\n", 1)[0]
    return Reply(json.dumps({"label": "CORRECT" if "pottery" in answer.lower() else "WRONG"}), model="judge-x-1")


@pytest.fixture(scope="module")
def reader_pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("show-reader")
    with ScriptedOpenAIServer(responder=lookup_responder) as reader, ScriptedOpenAIServer(responder=_judge) as judge:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(reader.base_url),
                    f"dataset.path={MINI}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=reader",
                ]
            )
            == 0
        )
        pack = _only(root)
        assert (
            autorater_main(
                [str(pack), "judge=openai_compatible", f"judge.base_url={judge.base_url}", "judge.model=judge-x", "--quiet"]
            )
            == 0
        )
    return pack


def _writer(body: dict) -> Reply:
    """Plumbing: a reader echo, and a 'summary' that is the session's first line."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = body["messages"][-1]["content"]
    if system == READER_SYSTEM:
        return Reply(user.rsplit("Question:", 1)[-1].split("\n")[0].strip(), prompt_tokens=30, completion_tokens=5)
    first = next((line for line in user.splitlines() if ": " in line and line[:1].isupper()), "nothing")
    return Reply(f"Summary: {first[:60]}", prompt_tokens=40, completion_tokens=9)


@pytest.fixture(scope="module")
def writer_pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("show-writer")
    with ScriptedOpenAIServer(responder=_writer) as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    "memory=session_summaries",
                    "memory.source=writer",
                    "writer=openai_compatible",
                    f"writer.base_url={server.base_url}",
                    "writer.model=scripted-writer",
                    f"dataset.path={MINI}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=writer",
                ]
            )
            == 0
        )
    return _only(root)


def _agent(body: dict):
    """Reads a session file and appends a note, then answers (the same for every question)."""
    if is_follow_up(body):
        return Message("scripted answer", usage=Usage(input_tokens=50, cached_tokens=20, output_tokens=4, reasoning_tokens=1))
    question = last_user_text(body).split("Question: ", 1)[1].split("\n", 1)[0]
    note = shlex.quote(f"- asked: {question}")
    return Shell(
        f"cat memory/notes.md; grep -n Biscuit sessions/*.md; echo {note} >> memory/notes.md",
        usage=Usage(input_tokens=40, cached_tokens=0, output_tokens=6, reasoning_tokens=2),
    )


@pytest.fixture(scope="module")
def codex_pack(tmp_path_factory) -> Path:
    """One Codex pack for the module: the real CLI, ten questions (about half a minute)."""
    root = tmp_path_factory.mktemp("show-codex")
    with ScriptedResponsesServer(responder=_agent) as server:
        assert (
            main(
                [
                    "qa",
                    "answerer=codex",
                    "answerer.provider=openai_compatible",
                    f"answerer.base_url={server.base_url}",
                    "answerer.model=scripted",
                    "answerer.api_key_env=null",
                    "answerer.request_max_retries=0",
                    "answerer.stream_max_retries=0",
                    "answerer.timeout_s=60",
                    "answerer.persist=true",
                    f"dataset.path={MINI}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=agent",
                ]
            )
            == 0
        )
    return _only(root)


def _every_question(pack: Path) -> list[str]:
    return [r["question_id"] for r in _rows(pack / "predictions.jsonl")]


def _category(pack: Path, question_id: str) -> int:
    return next(r["category"] for r in _rows(pack / "predictions.jsonl") if r["question_id"] == question_id)


# -- a reader pack ---------------------------------------------------------------------
def test_show_walks_every_question_of_a_reader_pack(reader_pack):
    traces = {t["question_id"]: t for t in _rows(reader_pack / "reader/traces.jsonl")}
    for qid in _every_question(reader_pack):
        text = show(str(reader_pack), qid)
        trace = traces[qid]
        assert text.startswith(f"{qid} in ")
        assert f"Question: {trace['request']['slots']['question']['text']}" in text  # the prompt as sent
        assert f"matches reader_payload_sha256 {trace['reader_payload_sha256']}" in text
        assert f"reply: {trace['response']['text']!r}" in text and "attempt 1: HTTP 200" in text
        assert "locomo_f1 " in text and "7. Blame" in text
        # the whole memory text is in the prompt, rebuilt through REFERENCE_PIN.json
        dump = (reader_pack / f"memory/dumps/{trace['sample_id']}.txt").read_text()
        assert dump in text.replace("    | ", "")


def test_show_has_the_gold_evidence_and_every_judge_verdict(reader_pack):
    text = show(str(reader_pack), "mini-1-q-0")
    assert "gold: 'pottery'" in text and "D1:1 [session 1, " in text and "Ana: Hi Ben! I started pottery last week." in text
    (judge,) = PackWalker.open(reader_pack).judges()
    assert f"{judge} (model judge-x)" in text and "pass 1: CORRECT" in text
    assert "judge (pass 1) at autorater/" in text and "answered judge-x-1" in text
    assert "correct (correctness by judge " in text
    wrong = show(str(reader_pack), "mini-1-q-1")
    assert "pass 1: WRONG" in wrong and "ignored (correctness by judge" in wrong


def test_show_json_and_the_command_line(reader_pack, capsys):
    data = json.loads(show(str(reader_pack), "mini-2-q-0", as_json=True))
    assert data["walk"]["question_id"] == "mini-2-q-0" and data["blame"]["blame"] in {"correct", "ignored", "wrong_judged"}
    assert data["walk"]["prompt"]["sha256"] == data["walk"]["prompt"]["recorded_sha256"]
    assert main(["show", str(reader_pack), "mini-2-q-0", "--brief"]) == 0
    assert "mini-2-q-0 in " in capsys.readouterr().out


def test_show_brief_is_a_few_lines_question_answer_gold_scores_blame(reader_pack, capsys):
    assert main(["show", str(reader_pack), "mini-1-q-0", "--brief"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) <= 8, out
    assert "question: 'What did Ana start?' (category 4, single-hop)" in out and "gold:     'pottery'" in out
    assert "answer:   " in out and "locomo_f1 " in out and "blame:    correct (correctness by judge " in out
    for walk_only in ("lineage", "memory/lineage.jsonl", "user message", "system message", READER_SYSTEM, "None"):
        assert walk_only not in out
    assert not re.search(r"\d\.\d{5,}", out)  # 4 decimals, no 16-digit floats


def test_blame_prints_unknown_with_why_never_none(reader_pack):
    for qid in _every_question(reader_pack):
        text = show(str(reader_pack), qid)
        blame = text.split("7. Blame", 1)[1]
        assert "None" not in blame, blame
    # category 5 has no gold answer: whether the answer used the evidence is unknown, and why
    fives = [q for q in _every_question(reader_pack) if _category(reader_pack, q) == 5]
    assert fives
    for qid in fives:
        assert "answer_used_evidence unknown (category 5 has no gold answer)" in show(str(reader_pack), qid)


def test_an_unknown_question_is_one_line_with_a_suggestion(reader_pack, capsys):
    assert main(["show", str(reader_pack), "mini-1-q-9"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "'mini-1-q-9' is not answered" in err and "(10 answered); did you mean 'mini-1-q-" in err


def test_trace_md_of_a_reader_pack_is_the_first_questions_walk(reader_pack):
    trace = (reader_pack / "TRACE.md").read_text()
    assert trace.startswith("# Trace of one answer: mini-1-q-0\n")
    assert "Template `prompts/readers/qa_v1.txt`" in trace and "`reader/traces.jsonl` line 1" in trace
    assert "pottery" not in trace.split("## 1. Source row", 1)[1].split("## 2.", 1)[0]  # no gold in TRACE.md


# -- a writer-method pack --------------------------------------------------------------
def test_show_lists_the_writer_calls_that_made_the_memory(writer_pack):
    calls = [c for c in _rows(writer_pack / "memory/writer/calls.jsonl")]
    for qid in _every_question(writer_pack):
        text = show(str(writer_pack), qid)
        sample = qid.rsplit("-q-", 1)[0]
        mine = [c for c in calls if c["sample_id"] == sample]
        assert f"writer calls for {sample} ({len(mine)}):" in text
        for c in mine:
            assert f"writer (summary session {c['session']}) at memory/writer/calls.jsonl line " in text
            assert f"reply: {c['response']['text']!r}" in text
        assert "method session_summaries (question-independent)" in text and "matches reader_payload_sha256" in text
    trace = (writer_pack / "TRACE.md").read_text()
    assert (
        "- Written by a writer model (`scripted-writer`): `memory/writer/calls.jsonl` lines 1-2 (2 call(s) for `mini-1`)."
        in trace
    )


# -- a Codex pack ----------------------------------------------------------------------
def test_show_walks_every_question_of_a_codex_pack(codex_pack):
    traces = {t["question_id"]: t for t in _rows(codex_pack / "agent/traces.jsonl") if t.get("question_id")}
    notes = {n["question_id"]: n for n in _rows(codex_pack / "agent/notes.jsonl") if n.get("question_id")}
    for qid in _every_question(codex_pack):
        text = show(str(codex_pack), qid)
        trace = traces[qid]
        assert "3. Task as sent" in text and f"matches agent_task_sha256 {trace['agent_task_sha256']}" in text
        assert f"Question: {trace['task']['slots']['question']['text']}" in text
        assert f"codex {trace['codex_version']} at agent/traces.jsonl line " in text and "mode workspace_files" in text
        assert "step 1 [write]" in text and "reads: memory/notes.md, sessions/session_1.md, sessions/session_2.md" in text
        if qid.startswith("mini-1-"):  # grep Biscuit finds Ana's conversation's dog: what the step printed is shown
            assert "printed turns: D1:2, D2:1" in text and "Ben: Biscuit is 3 years old now." in text
        assert f"notes after this question: {notes[qid]['path']}" in text
        assert f"input_tokens {trace['usage']['input_tokens']}" in text
        for wrong in ("None (sha256 None)", "line None"):
            assert wrong not in text


def test_trace_md_of_a_codex_pack_walks_the_agent(codex_pack):
    trace = (codex_pack / "TRACE.md").read_text()
    for wrong in WRONG_FOR_AGENTS:
        assert wrong not in trace
    first = _rows(codex_pack / "agent/traces.jsonl")[0]
    assert "## 3. Task" in trace and "## 4. Agent process" in trace
    assert f"Template `prompts/{first['task']['template']}`" in trace and f"`{first['agent_task_sha256']}` (matches)" in trace
    assert "- Trajectory: `agent/trajectory.jsonl` line 1 (1 step(s))" in trace
    assert "- Notes after this question: `agent/notes/mini-1-q-0.md`" in trace
    # the task rebuilt from the pack is byte for byte the one codex got
    walk = PackWalker.open(codex_pack).walk("mini-1-q-0")
    assert hashlib.sha256(walk.prompt.message.encode()).hexdigest() == first["agent_task_sha256"]


def test_a_pack_whose_dataset_is_gone_still_shows_and_says_why(reader_pack, tmp_path):
    import shutil

    pack = tmp_path / reader_pack.name
    shutil.copytree(reader_pack, pack)
    meta = json.loads((pack / "run_meta.json").read_text())
    meta["data"]["path"] = str(tmp_path / "moved.json")
    (pack / "run_meta.json").write_text(json.dumps(meta))
    text = show(str(pack), "mini-1-q-1")
    assert f"evidence: unknown (dataset file {tmp_path / 'moved.json'} is not here; put the file back at that path" in text
    assert f"evidence_stored unknown (the gold evidence is not known: dataset file {tmp_path / 'moved.json'} is not here" in text
    assert "evidence_given unknown (the gold evidence is not known" in text
    assert (
        "answer_used_evidence False" in text and "None" not in text.split("7. Blame", 1)[1]
    )  # the gold is in the prediction row

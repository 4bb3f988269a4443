"""answerer=codex: the real pinned Codex CLI against our scripted Responses server on 127.0.0.1.

Every test that runs the agent runs the real `codex exec` binary from node_modules (npm ci),
inside the real isolation wrapper; the scripted server only plays the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench import PROJECT_ROOT
from memorybench.answer.agent import finalize_agent_pack, locate_cli, open_codex_answerer, pinned_version
from memorybench.answer.agent._events import classify, steps_from_items, unwrap_shell
from memorybench.answer.agent._isolation import Isolation
from memorybench.answer.base import ConversationView
from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.cli import main
from memorybench.data import iter_questions
from memorybench.errors import ModelCallError, UserError
from memorybench.pack.run_pack import RunPack
from memorybench.plan import plan_runs
from memorybench.testing.scripted_responses import (
    Failed,
    Hang,
    Message,
    ScriptedResponsesServer,
    Shell,
    Status,
    Usage,
    WebSearch,
    function_outputs,
    is_follow_up,
    last_user_text,
    tool_names,
)

MINI = FIXTURES / "mini_locomo.json"


# -- helpers -------------------------------------------------------------------------
@pytest.fixture()
def responses_server() -> Iterator[ScriptedResponsesServer]:
    with ScriptedResponsesServer() as server:
        yield server


def codex_overrides(base_url: str, *extra: str) -> list[str]:
    """answerer=codex against a scripted server: no key, no retries inside the CLI."""
    return [
        "answerer=codex",
        "answerer.provider=openai_compatible",
        f"answerer.base_url={base_url}",
        "answerer.model=scripted",
        "answerer.api_key_env=null",
        "answerer.request_max_retries=0",
        "answerer.stream_max_retries=0",
        "answerer.timeout_s=60",
        *extra,
    ]


def qa_args(tmp_path: Path, base_url: str, *extra: str) -> list[str]:
    return ["qa", *codex_overrides(base_url), f"paths.packs={tmp_path / 'packs'}", f"paths.cache={tmp_path / 'cache'}", *extra]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def only_pack(tmp_path: Path) -> Path:
    (pack,) = sorted((tmp_path / "packs").glob("*/runs/*"))
    return pack


def view_of(conversation) -> ConversationView:
    return ConversationView(conversation.sample_id, conversation.speaker_a, conversation.speaker_b, conversation.sessions)


@contextlib.contextmanager
def agent(tmp_path: Path, server: ScriptedResponsesServer, *extra: str) -> Iterator[tuple]:
    """An opened CodexAnswerer on the mini fixture, its pack, and the fixture's conversations."""
    (spec,) = plan_runs(
        [
            *codex_overrides(server.base_url, *extra),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
        ]
    )
    pack = RunPack(tmp_path / "packs" / "unit" / "runs" / spec.run_id)
    pack.open()
    pack.write_text("config.resolved.yaml", "unit test\n")
    conversations = load_locomo(MINI)
    with open_codex_answerer(spec.cfg, pack, cache_dir=tmp_path / "cache") as answerer:
        yield answerer, pack, conversations
        # what the qa stage does once every question is answered: recall and comparability
        answerer.finish([q for c in conversations for q in c.questions])
    pack.close()


# -- the pinned CLI ------------------------------------------------------------------
def test_the_pinned_cli_is_installed_and_has_every_flag_we_pass():
    cli = locate_cli()
    assert cli.version == pinned_version() == "0.171.0"
    lock = json.loads((PROJECT_ROOT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@openai/codex"]["version"] == cli.version
    assert cli.reported == f"codex-cli {cli.version}"
    help_text = subprocess.run([str(cli.binary), "exec", "--help"], capture_output=True, text=True, check=True).stdout
    for flag in (
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--strict-config",
        "--sandbox",
        "read-only",
        "workspace-write",
        "--cd",
    ):
        assert flag in help_text, flag


# -- one question --------------------------------------------------------------------
def test_answer_after_reading_a_session_file(tmp_path, responses_server):
    responses_server.script(
        Shell("cat sessions/session_2.md", usage=Usage(input_tokens=100, cached_tokens=40, output_tokens=7, reasoning_tokens=3)),
        Message("20 May 2023", usage=Usage(input_tokens=120, cached_tokens=100, output_tokens=5, reasoning_tokens=2)),
    )
    with agent(tmp_path, responses_server) as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        question = conversations[0].questions[1]
        answer = answerer.answer(question.asked(), "unused memory")
    assert answer.prediction == "20 May 2023" and answer.reader_payload_sha256 is None
    first, second = responses_server.requests
    # the task on stdin reached the model as the user message; no web search tool is offered
    assert last_user_text(first).endswith(f"Question: {question.question}\n")
    assert "exec_command" in tool_names(first)
    assert not any("web_search" in name for name in tool_names(first))
    # the agent saw the session file (function_call_output of the next request)
    (output,) = function_outputs(second)
    assert "[D2:2] Ana: I moved to Lisbon and I love it." in output and "Date: 10:00 am on 20 May, 2023" in output
    # audit: events wrapped with the question id, a normalized read, usage summed over both model calls
    events = rows(pack.path("agent/events.jsonl"))
    assert events and all(e["question_id"] == question.question_id and e["schema"] == "agent_event.v1" for e in events)
    assert [e["event"]["type"] for e in events][0] == "thread.started"
    (step,) = rows(pack.path("agent/trajectory.jsonl"))
    assert step["kind"] == "read" and step["session_files"] == ["sessions/session_2.md"]
    assert step["dia_ids"] == ["D2:1", "D2:2"] and step["exit_code"] == 0
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert trace["schema"] == "agent_trace.v3" and trace["status"] == "completed" and trace["sandbox"] == "read-only"
    assert trace["workspace_findings"] == []
    assert trace["usage"]["input_tokens"] == 220 and trace["usage"]["cached_input_tokens"] == 140
    assert trace["usage"]["output_tokens"] == 12 and trace["usage"]["reasoning_output_tokens"] == 5
    assert trace["agent_task_sha256"] == hashlib.sha256(last_user_text(first).encode()).hexdigest()
    assert trace["codex_version"] == "0.171.0"
    # the workspace snapshot holds the conversation and nothing of the questions
    index = pack.path("agent/workspaces/mini-1/INDEX.md").read_text()
    assert "sessions/session_2.md: 10:00 am on 20 May, 2023 (2 turns)" in index
    snapshot = "\n".join(p.read_text() for p in pack.path("agent/workspaces").rglob("*.md"))
    assert "When did Ana move" not in snapshot and "evidence" not in snapshot
    cli = json.loads(pack.path("agent/cli.json").read_text())
    for line in (
        'web_search = "disabled"',
        'approval_policy = "never"',
        "project_doc_max_bytes = 0",
        "[mcp_servers]",
        'wire_api = "responses"',
        "[analytics]\nenabled = false",
        "plugins = false",
        "apps = false",
    ):
        assert line in cli["config_toml"], line
    comparison = json.loads(pack.path("agent/comparison.json").read_text())
    assert comparison["schema"] == "agent_comparison.v1" and comparison["comparable"] is False
    assert any("no token budget enforced" in r for r in comparison["reasons"])


def test_persist_off_refuses_writes_and_gives_each_question_a_fresh_copy(tmp_path, responses_server):
    responses_server.script(Shell("echo changed >> INDEX.md; echo x > memory_x.md; cat INDEX.md | head -1"), Message("ok"))
    with agent(tmp_path, responses_server) as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        answerer.answer(conversations[0].questions[0].asked(), "")
        template = answerer.scratch / "conversations" / "mini-1"
        assert "changed" not in (template / "INDEX.md").read_text()
    (output,) = function_outputs(responses_server.requests[1])
    assert "Read-only file system" in output and "changed" not in output
    (step,) = rows(pack.path("agent/trajectory.jsonl"))
    assert step["kind"] == "write" and set(step["writes"]) == {"INDEX.md", "memory_x.md"}


def test_persist_on_appends_notes_snapshots_them_and_restores_the_sessions(tmp_path, responses_server):
    note = "- Ana started pottery (D1:1)"
    responses_server.script(
        Shell(f"echo '{note}' >> memory/notes.md; echo tampered >> sessions/session_1.md"),
        Message("pottery"),
        Shell("cat memory/notes.md; tail -n 1 sessions/session_1.md"),
        Message("20 May 2023"),
    )
    with agent(tmp_path, responses_server, "answerer.persist=true") as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        q0, q1 = conversations[0].questions[:2]
        answerer.answer(q0.asked(), "")
        answerer.answer(q1.asked(), "")
    footer = (PROJECT_ROOT / "prompts/agents/codex_persist_footer_v1.txt").read_text()
    assert last_user_text(responses_server.requests[0]).endswith(footer)
    # the note written for q0 is what q1's agent read; the tampered session line was put back
    (output,) = function_outputs(responses_server.requests[3])
    assert note in output and "tampered" not in output
    assert pack.path(f"agent/notes/{q0.question_id}.md").read_text() == note + "\n"
    ledger = rows(pack.path("agent/notes.jsonl"))
    assert [(r["question_id"], r["changed"]) for r in ledger] == [(q0.question_id, True), (q1.question_id, False)]
    traces = rows(pack.path("agent/traces.jsonl"))
    assert all(t["sandbox"] == "workspace-write" and t["persist"] for t in traces)
    assert traces[0]["workspace_restored"] == ["sessions/session_1.md"] and traces[1]["workspace_restored"] == []
    assert traces[1]["notes_before_sha256"] == traces[0]["notes_after_sha256"] == ledger[0]["notes_sha256"]
    assert traces[0]["task"]["footer"] == "agents/codex_persist_footer_v1.txt"
    # recall is computed at `finish` for the run's questions that the agent answered
    recall = rows(pack.path("agent/recall.jsonl"))
    assert [r["question_id"] for r in recall] == [q0.question_id, q1.question_id]


def test_the_key_reaches_the_server_but_never_the_agent_or_the_pack(tmp_path, responses_server, monkeypatch):
    key = "sk-memorybench-test-0123456789abcdef"
    monkeypatch.setenv("MB_TEST_KEY", key)
    responses_server.script(Shell("env; tr '\\0' '\\n' < /proc/1/environ"), Message("ok"))
    with agent(tmp_path, responses_server, "answerer.api_key_env=MB_TEST_KEY") as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        answerer.answer(conversations[0].questions[0].asked(), "")
    assert responses_server.headers[0]["authorization"] == f"Bearer {key}"
    (output,) = function_outputs(responses_server.requests[1])
    assert "PATH=" in output and key not in output and "MB_TEST_KEY" not in output
    for path in [*pack.root.rglob("*"), *answerer.scratch.rglob("*")]:
        if path.is_file():
            assert key not in path.read_text("utf-8", errors="replace"), path
    # the key is the gateway's alone (tests/answer/test_gateway.py): Codex's provider names no key variable
    assert "env_key" not in json.loads(pack.path("agent/cli.json").read_text())["config_toml"]


# -- failures ------------------------------------------------------------------------
def test_the_outer_timeout_kills_the_process_group(tmp_path, responses_server):
    responses_server.script(Hang(60))
    with agent(tmp_path, responses_server, "answerer.timeout_s=3", "answerer.on_failure=abort") as (
        answerer,
        pack,
        conversations,
    ):
        answerer.start_conversation(view_of(conversations[0]))
        answer = answerer.answer(conversations[0].questions[0].asked(), "")
        scratch = str(answerer.scratch)
    assert answer.prediction == ""  # a timeout is an outcome of the agent, recorded, never an abort
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert trace["status"] == "timeout" and trace["exit_code"] is None and 3 <= trace["wall_s"] < 15
    leftover = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if scratch.encode() in (proc / "cmdline").read_bytes() or scratch.encode() in (proc / "environ").read_bytes():
                    leftover.append(proc.name)
    assert not leftover, leftover


def test_turn_failed_aborts_by_default_and_is_recorded_on_request(tmp_path, responses_server):
    responses_server.script(Status(400, "scripted bad request"))
    with pytest.raises(ModelCallError, match="scripted bad request.*rerun the same command to resume"):
        with agent(tmp_path / "a", responses_server) as (answerer, pack, conversations):
            answerer.start_conversation(view_of(conversations[0]))
            answerer.answer(conversations[0].questions[0].asked(), "")
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert trace["status"] == "failed" and trace["exit_code"] == 1 and "scripted bad request" in trace["error"]
    assert any(e["event"]["type"] == "turn.failed" for e in rows(pack.path("agent/events.jsonl")))

    responses_server.script(Failed("stream broke"))
    with agent(tmp_path / "b", responses_server, "answerer.on_failure=record") as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        assert answerer.answer(conversations[0].questions[0].asked(), "").prediction == ""
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert trace["status"] == "failed" and "stream broke" in trace["error"]
    assert json.loads(pack.path("agent/comparison.json").read_text())["failures"] == 1


def test_web_search_is_seen_and_makes_the_run_not_comparable(tmp_path, responses_server):
    responses_server.script(WebSearch("pottery classes"))
    with agent(tmp_path, responses_server) as (answerer, pack, conversations):
        answerer.start_conversation(view_of(conversations[0]))
        answerer.answer(conversations[0].questions[0].asked(), "")
    kinds = [s["kind"] for s in rows(pack.path("agent/trajectory.jsonl"))]
    assert kinds == ["web_search"]
    comparison = json.loads(pack.path("agent/comparison.json").read_text())
    assert comparison["questions_with_web_search"] == 1 and "web search used in 1 question(s)" in comparison["reasons"]


# -- gold out of reach ---------------------------------------------------------------
def _gold_needles(conversation, questions) -> set[str]:
    text = conversation.text_blob().lower()
    golds = {g.strip().lower() for q in questions for g in q.gold_strings()}
    return {g for g in golds if len(g) >= 4 and g not in text}


def test_gold_is_out_of_the_agents_reach_on_the_real_data(tmp_path, conversations, locomo_path):
    needles = _gold_needles(conversations[0], conversations[0].questions)
    assert len(needles) > 50  # the check has teeth
    snoop = " ; ".join(
        [
            f"cat {locomo_path} | head -c 3000",
            f"cat {tmp_path}/packs/*/runs/*/predictions.jsonl",
            f"cat {tmp_path}/packs/*/runs/*/memory/dumps/*.txt | head -c 300",
            f"cat {MINI}",
            f"ls {PROJECT_ROOT} {PROJECT_ROOT}/tests",
            f"cat /proc/1/root{locomo_path} | head -c 300",
            "ls / /tmp",
        ]
    )

    def responder(body):
        if is_follow_up(body):
            return Message("Not mentioned in the conversation")
        if "What did Caroline research" in last_user_text(body) or "When did Melanie paint" in last_user_text(body):
            return Shell(snoop)
        return Message("7 May 2023")

    with ScriptedResponsesServer(responder=responder) as server:
        assert main(qa_args(tmp_path, server.base_url, "max_questions=3")) == 0
        outputs = [o for body in server.requests for o in function_outputs(body)]
    pack = only_pack(tmp_path)
    predictions = pack.joinpath("predictions.jsonl").read_text()
    assert '"gold"' in predictions and "7 May 2023" in predictions  # the files the agent asked for do hold gold
    assert outputs and all("No such file or directory" in o for o in outputs)
    for output in outputs:
        low = output.lower()
        assert '"answer"' not in low and '"evidence"' not in low and "ana" not in low.split()
        leaked = [g for g in needles if g in low]
        assert not leaked, leaked[:5]


def test_isolation_that_cannot_be_set_up_is_refused_in_one_line(tmp_path, responses_server, monkeypatch):
    monkeypatch.setattr(
        Isolation,
        "unshare_prefix",
        staticmethod(lambda: ["/bin/sh", "-c", "echo 'unshare failed: Operation not permitted' >&2; exit 1", "x"]),
    )
    with pytest.raises(UserError) as info:
        with agent(tmp_path, responses_server):
            pass
    assert "cannot isolate the agent from the gold files: unshare failed" in info.value.message
    assert "\n" not in info.value.message and not responses_server.requests
    isolation = Isolation.create(tmp_path / "root", [])
    with pytest.raises(UserError, match="lies under /etc, which the agent can read"):
        isolation.check_secrets({"dataset file": Path("/etc/hostname")}, [])


@pytest.mark.parametrize(
    "override, message",
    [
        ("answerer.mode=files", "answerer.mode='files' is unknown. "),
        ("answerer.provider=azure", "answerer.provider='azure' is unknown."),
        ("answerer.on_failure=retry", "answerer.on_failure='retry' is unknown."),
        ("answerer.base_url=null", "answerer.base_url is required for provider openai_compatible"),
    ],
)
def test_bad_codex_settings_fail_in_one_line_before_any_call(tmp_path, responses_server, override, message):
    with pytest.raises(UserError) as info:
        with agent(tmp_path, responses_server, override):
            pass
    assert message in info.value.message and "\n" not in info.value.message and not responses_server.requests


# -- whole runs through the CLI ------------------------------------------------------
def _notes_responder(body):
    """Reads the notes and a session, appends a line, answers: the same every question."""
    if is_follow_up(body):
        return Message("scripted answer", usage=Usage(input_tokens=50, cached_tokens=20, output_tokens=4, reasoning_tokens=1))
    question = last_user_text(body).split("Question: ", 1)[1].split("\n", 1)[0]
    note = shlex.quote(f"- asked: {question}")
    return Shell(
        f"cat memory/notes.md; grep -n Biscuit sessions/*.md; echo {note} >> memory/notes.md",
        usage=Usage(input_tokens=40, cached_tokens=0, output_tokens=6, reasoning_tokens=2),
    )


def test_qa_codex_over_two_conversations_writes_a_full_pack(tmp_path):
    with ScriptedResponsesServer(responder=_notes_responder) as server:
        assert main(qa_args(tmp_path, server.base_url, f"dataset.path={MINI}", "answerer.persist=true", "name=agent")) == 0
    pack = only_pack(tmp_path)
    questions = list(iter_questions(load_locomo(MINI)))
    predictions = rows(pack / "predictions.jsonl")
    assert [p["question_id"] for p in predictions] == [q.question_id for q in questions]
    assert all(p["prediction"] == "scripted answer" and p["answerer"] == "codex" for p in predictions)
    for name in (
        "agent/events.jsonl",
        "agent/trajectory.jsonl",
        "agent/traces.jsonl",
        "agent/notes.jsonl",
        "agent/cli.json",
        "agent/recall.jsonl",
        "agent/comparison.json",
        "agent/COMPARISON.md",
        "prompts/agents/codex_workspace_v1.txt",
        "prompts/agents/codex_persist_footer_v1.txt",
        "agent/workspaces/mini-2/INDEX.md",
        "_SUCCESS",
    ):
        assert (pack / name).is_file(), name
    traces = rows(pack / "agent/traces.jsonl")
    assert [t["question_id"] for t in traces] == [q.question_id for q in questions]
    assert all(t["usage"]["input_tokens"] == 90 and t["usage"]["reasoning_output_tokens"] == 3 for t in traces)
    # notes carry over inside a conversation, never across conversations
    ledger = rows(pack / "agent/notes.jsonl")
    assert len(ledger) == 10
    last_of_first = (pack / ledger[4]["path"]).read_text()
    assert last_of_first.count("- asked:") == 5 and (pack / ledger[5]["path"]).read_text().count("- asked:") == 1
    # recall, from the trajectory: grep Biscuit prints D1:2 and D2:1 (the dog's questions' evidence)
    recall = {r["question_id"]: r for r in rows(pack / "agent/recall.jsonl")}
    assert recall["mini-1-q-2"]["evidence"] == ["D2:1"] and recall["mini-1-q-2"]["memory_recall"] == 1.0
    assert recall["mini-1-q-2"]["hop_to_evidence"] == 1 and recall["mini-1-q-0"]["memory_recall"] == 0.0
    meta = json.loads((pack / "run_meta.json").read_text())
    roles = {m["role"]: m for m in meta["models"]}
    assert roles["agent"]["requested"] == "scripted" and roles["agent_cli"]["requested"] == "@openai/codex@0.171.0"
    assert "agents/codex_workspace_v1.txt" in meta["prompts"]
    # no gold reached the agent's files in the pack (workspaces and notes)
    golds = {g for q in questions for g in q.gold_strings() if len(g) >= 4}
    text = "\n".join(p.read_text() for p in (pack / "agent").rglob("*.md") if "COMPARISON" not in p.name).lower()
    blob = "\n".join(c.text_blob() for c in load_locomo(MINI)).lower()
    assert not [g for g in golds if g.lower() in text and g.lower() not in blob]


def test_a_crashed_persisted_run_resumes_with_the_notes_it_had(tmp_path):
    failing = {"on": True}

    def responder(body):
        if failing["on"] and "How old is Ben's dog" in last_user_text(body):
            return Status(400, "scripted outage")
        return _notes_responder(body)

    with ScriptedResponsesServer(responder=responder) as server:
        args = qa_args(tmp_path, server.base_url, f"dataset.path={MINI}", "answerer.persist=true", "max_questions=4")
        with pytest.raises(SystemExit) as stopped:  # the Hydra app exits with the error's code
            main(args)
        assert stopped.value.code == 3
        pack = only_pack(tmp_path)
        assert len(rows(pack / "predictions.jsonl")) == 2
        failing["on"] = False
        assert main(args) == 0
    traces = rows(pack / "agent/traces.jsonl")
    assert [t["question_id"] for t in traces] == ["mini-1-q-0", "mini-1-q-1", "mini-1-q-2", "mini-1-q-3"]
    assert traces[2]["notes_before_sha256"] == traces[1]["notes_after_sha256"]
    assert (pack / "agent/notes/mini-1-q-3.md").read_text().count("- asked:") == 4
    assert {e["question_id"] for e in rows(pack / "agent/events.jsonl")} == {t["question_id"] for t in traces}


def test_notes_only_ingests_then_answers_from_the_notes_alone(tmp_path):
    def responder(body):
        task = last_user_text(body)
        if is_follow_up(body):
            return Message("done" if "Read every session" in task else "pottery")
        if "Read every session" in task:
            return Shell("cat sessions/*.md > /dev/null; echo '- Ana started pottery in May 2023 (D1:1)' >> memory/notes.md")
        return Shell("ls; cat memory/notes.md")

    with ScriptedResponsesServer(responder=responder) as server:
        assert (
            main(qa_args(tmp_path, server.base_url, f"dataset.path={MINI}", "answerer.mode=notes_only", "max_questions=2")) == 0
        )
        outputs = [function_outputs(b) for b in server.requests if is_follow_up(b)]
    pack = only_pack(tmp_path)
    ingest_output, *question_outputs = [o[0] for o in outputs]
    for output in question_outputs:
        assert "INDEX.md" in output and "sessions" not in output and "(D1:1)" in output
    ledger = rows(pack / "agent/notes.jsonl")
    assert ledger[0]["phase"] == "ingest" and "question_id" not in ledger[0]
    assert (pack / "agent/notes/mini-1.ingest.md").read_text() == "- Ana started pottery in May 2023 (D1:1)\n"
    assert (pack / "agent/workspaces/mini-1/ingest/sessions/session_1.md").is_file()
    ingest_trace = rows(pack / "agent/traces.jsonl")[0]
    assert (
        ingest_trace["phase"] == "ingest" and ingest_trace["sandbox"] == "workspace-write" and "question_id" not in ingest_trace
    )
    recall = rows(pack / "agent/recall.jsonl")
    assert recall[0]["question_id"] == "mini-1-q-0" and recall[0]["memory_recall"] == 1.0


def test_prompt_injected_sends_the_readers_user_message_byte_for_byte(tmp_path, scripted_server):
    with ScriptedResponsesServer(responder=lambda body: Message("scripted")) as server:
        assert (
            main(
                qa_args(
                    tmp_path / "agent",
                    server.base_url,
                    f"dataset.path={MINI}",
                    "answerer.mode=prompt_injected",
                    "max_questions=2",
                )
            )
            == 0
        )
        agent_tasks = [last_user_text(b) for b in server.requests]
    reader_args = [
        "qa",
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={MINI}",
        "max_questions=2",
        f"paths.packs={tmp_path / 'reader' / 'packs'}",
        f"paths.cache={tmp_path / 'reader' / 'cache'}",
    ]
    assert main(reader_args) == 0
    reader_messages = [b["messages"][1]["content"] for b in scripted_server.requests]
    assert agent_tasks == reader_messages
    agent_rows = rows(only_pack(tmp_path / "agent") / "predictions.jsonl")
    reader_rows = rows(only_pack(tmp_path / "reader") / "predictions.jsonl")
    assert [r["reader_payload_sha256"] for r in agent_rows] == [r["reader_payload_sha256"] for r in reader_rows]
    assert all(r["reader_payload_sha256"] for r in agent_rows)
    traces = rows(only_pack(tmp_path / "agent") / "agent/traces.jsonl")
    assert [t["agent_task_sha256"] for t in traces] == [r["reader_payload_sha256"] for r in reader_rows]
    assert traces[0]["task"]["slots"]["memory"]["ref"] == agent_rows[0]["memory_sha256"]


# -- trajectory normalization (no CLI) -----------------------------------------------
@pytest.mark.parametrize(
    "command, kind, reads, writes",
    [
        ("/bin/bash -c 'cat sessions/session_1.md'", "read", ["sessions/session_1.md"], []),
        ("/bin/bash -lc 'grep -n Lisbon sessions/*.md | head -5'", "search", ["sessions/*.md"], []),
        ("/bin/bash -c 'sed -n 1,20p sessions/session_2.md'", "read", ["sessions/session_2.md"], []),
        ("/bin/bash -c 'rg -e pottery'", "search", ["."], []),
        ("/bin/bash -c 'ls -la sessions'", "list", ["sessions"], []),
        ("/bin/bash -c 'head -n 5 INDEX.md 2>/dev/null'", "read", ["INDEX.md"], []),
        ('bash -c "echo x >> memory/notes.md; cat memory/notes.md"', "write", ["memory/notes.md"], ["memory/notes.md"]),
        ("/bin/bash -c 'cat a 2>&1 | tee out.txt'", "write", ["a"], ["out.txt"]),
        ("/bin/bash -c 'python3 -c \"print(1)\"'", "command", [], []),
    ],
)
def test_commands_are_classified_from_their_words(command, kind, reads, writes):
    access = classify(command)
    assert (access.kind, access.reads, access.writes) == (kind, reads, writes)


def test_steps_expand_globs_and_keep_only_this_conversations_dia_ids(tmp_path):
    (tmp_path / "sessions").mkdir()
    for n in (1, 2):
        (tmp_path / "sessions" / f"session_{n}.md").write_text("x")
    items = [
        {
            "id": "item_1",
            "type": "command_execution",
            "status": "completed",
            "exit_code": 0,
            "command": "/bin/bash -c 'grep -n dog sessions/*.md /etc/passwd'",
            "aggregated_output": "sessions/session_1.md:3:[D1:2] Ben: dog\nD9:9 is not a turn of this conversation",
        }
    ]
    (step,) = steps_from_items(items, tmp_path, {"D1:1": "D1:1", "D1:2": "D1:2"})
    assert step["reads"] == ["sessions/session_1.md", "sessions/session_2.md", "/etc/passwd"]
    assert step["session_files"] == ["sessions/session_1.md", "sessions/session_2.md"]
    assert step["dia_ids"] == ["D1:2"] and step["outside_workspace"] is True
    assert unwrap_shell("/bin/bash -lc 'ls'") == "ls"


def test_finalize_without_agent_traces_is_a_no_op(tmp_path):
    assert finalize_agent_pack(tmp_path, []) is None
    assert not (tmp_path / "agent").exists()

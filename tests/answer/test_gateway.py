"""The Responses gateway: every Codex model request counted, budgets enforced, the key held by the gateway alone.

The agent tests run the real pinned `codex exec` binary (node_modules) inside the real
isolation wrapper, behind the real gateway process, against our scripted Responses server;
the plumbing tests drive the gateway with http.client over real sockets.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import FIXTURES, LOCOMO, scripted_reader
from test_codex import agent, codex_overrides, only_pack, rows, view_of

from memorybench.answer.agent.gateway import GatewayProcess
from memorybench.cli import main
from memorybench.compare.aggregate import pack_examples, runs_table
from memorybench.compare.report import run_report
from memorybench.pack.verify import verify_pack
from memorybench.pack.verify.findings import failures
from memorybench.plan import plan_runs
from memorybench.records import parse_record
from memorybench.testing.scripted_responses import (
    Hang,
    Message,
    ScriptedResponsesServer,
    Shell,
    Status,
    Usage,
    function_outputs,
    is_follow_up,
)

MINI = FIXTURES / "mini_locomo.json"
KEY = "sk-memorybench-gateway-test-0123456789abcdef"


# -- helpers: test_codex's (the same codex overrides, pack and agent helpers) ----------


def post(gateway: GatewayProcess, body: dict, conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    conn = conn or http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    conn.request("POST", "/v1/responses", body=json.dumps(body), headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    return reply.status, reply.read()


def request(text: str = "hello") -> dict:
    return {
        "model": "scripted",
        "stream": True,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


# -- the gateway alone ---------------------------------------------------------------
def test_requests_are_forwarded_counted_and_hashed_not_stored():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        server.script(Message("one", usage=Usage(11, 4, 5, 2)), Message("two", usage=Usage(30, 11, 7, 0)))
        gateway.begin("q-1", "s", "answer")
        conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
        first = post(gateway, request("first secret prompt"), conn)
        second = post(gateway, request("second"), conn)  # the same kept-alive connection
        report = gateway.end()
    assert first[0] == second[0] == 200 and b"response.completed" in first[1] and b'"one"' in first[1]
    assert len(server.requests) == len(report.rows) == 2 and report.unattributed == 0
    one, two = report.rows
    assert (one["index"], one["response_id"], one["model_answered"], one["upstream_status"]) == (1, "resp_1", "scripted", 200)
    assert (one["input_tokens"], one["cached_tokens"], one["output_tokens"], one["reasoning_tokens"]) == (11, 4, 5, 2)
    assert (two["index"], two["input_tokens"], two["cached_tokens"], two["output_tokens"]) == (2, 30, 11, 7)
    assert one["completed"] and one["retries"] == 0 and one["reply_bytes"] == len(first[1])
    items = json.dumps(request("first secret prompt")["input"], sort_keys=True, separators=(",", ":")).encode()
    assert one["request_sha256"] == hashlib.sha256(items).hexdigest() and one["request_bytes"] == len(items)
    assert one["reply_sha256"] == hashlib.sha256(first[1]).hexdigest()
    assert "first secret prompt" not in json.dumps(report.rows)  # hashes and lengths only (audit.raw off)


def test_audit_raw_keeps_the_request_and_the_reply_text_in_the_row():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url, raw=True) as gateway:
        server.script(Message("the raw answer"))
        gateway.begin("q", "s", "answer")
        post(gateway, request("the raw prompt"))
        (row,) = gateway.end().rows
    assert row["raw_request"]["input"][0]["content"][0]["text"] == "the raw prompt"
    assert "the raw answer" in row["raw_reply"] and len(row["raw_reply"].encode()) == row["reply_bytes"]


def test_the_stream_is_relayed_chunk_by_chunk_not_buffered():
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            first = b'event: response.created\ndata: {"type":"response.created","response":{"id":"r1","model":"m"}}\n\n'
            self.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
            self.wfile.flush()
            release.wait(30)  # the rest only once the client has seen the first event
            last = (
                b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r1","model":"m",'
                b'"usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
            )
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with GatewayProcess(f"http://127.0.0.1:{upstream.server_address[1]}/v1") as gateway:
            gateway.begin("q", "s", "answer")
            conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
            conn.request("POST", "/v1/responses", body=json.dumps(request()), headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            seen = reply.read1(65536)  # arrives while the upstream still holds the rest back
            assert b"response.created" in seen and b"response.completed" not in seen
            release.set()
            rest = reply.read()
            assert b"response.completed" in seen + rest
            (row,) = gateway.end().rows
    finally:
        release.set()
        upstream.shutdown()
    assert row["completed"] and row["input_tokens"] == 3 and row["response_id"] == "r1"


def test_a_scripted_429_is_retried_by_the_gateway_and_counted_once_as_a_retry():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url, max_retries=2) as gateway:
        server.script(Status(429, "slow down", headers={"Retry-After": "0"}), Message("ok"))
        gateway.begin("q", "s", "answer")
        status, body = post(gateway, request())
        (row,) = gateway.end().rows
    assert status == 200 and b'"ok"' in body and len(server.requests) == 2
    assert row["retries"] == 1 and row["retry_statuses"] == [429] and row["completed"] and row["index"] == 1


def test_token_budgets_refuse_the_request_that_would_exceed_them_and_cap_output():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        gateway.begin("q", "s", "answer", {"max_input_tokens": 25, "max_output_tokens": 100})
        results = [post(gateway, request(str(n))) for n in range(3)]  # each answer: 10 input, 3 output tokens
        report = gateway.end()
        gateway.begin("q2", "s", "answer")  # a new question starts with a fresh count
        assert post(gateway, request())[0] == 200
        gateway.end()
    assert [r[0] for r in results] == [200, 200, 400]
    error = json.loads(results[2][1])["error"]
    assert error["code"] == "budget_exceeded" and "max_input_tokens=25" in error["message"]
    assert len(server.requests) == 3 and len(report.rows) == 2 and len(report.refused) == 1
    # the output budget is passed upstream as what is left of it
    assert [b["max_output_tokens"] for b in server.requests[:2]] == [100, 97]


def test_a_request_outside_any_question_is_refused_and_counted():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        assert post(gateway, request())[0] == 503
        gateway.begin("q", "s", "answer")
        assert gateway.end().unattributed == 0
    assert not server.requests


def test_a_request_still_unanswered_when_its_work_ends_is_reported_in_flight():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        server.script(Hang(30))
        gateway.begin("q", "s", "answer")
        conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=1)
        try:
            post(gateway, request(), conn)
            raise AssertionError("the upstream hangs: no reply expected")
        except socket.timeout:
            pass  # the CLI killed at its timeout, as far as the gateway can tell
        report = gateway.end()
    assert report.in_flight == 1 and report.rows == [] and len(server.requests) == 1


PARENT = """
import sys, time
from memorybench.answer.agent.gateway import GatewayProcess
gateway = GatewayProcess(sys.argv[1]).start()
print(gateway.pid, flush=True)
time.sleep(120)
"""


def test_the_gateway_dies_with_its_parent_on_sigkill(tmp_path):
    with ScriptedResponsesServer() as server:
        parent = subprocess.Popen(
            [sys.executable, "-c", PARENT, server.base_url],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        try:
            pid = int(parent.stdout.readline())
            assert alive(pid) and os.getpgid(pid) == pid  # its own process group
            os.kill(parent.pid, signal.SIGKILL)
            parent.wait(30)
            for _ in range(200):  # bounded wait for the child to notice, not a timing assertion
                if not alive(pid):
                    break
                time.sleep(0.05)
            assert not alive(pid)
        finally:
            if parent.poll() is None:
                parent.kill()


# -- the real Codex CLI behind the gateway -------------------------------------------
def _reading_responder(body):
    if is_follow_up(body):
        return Message("scripted answer", usage=Usage(input_tokens=50, cached_tokens=20, output_tokens=4, reasoning_tokens=1))
    return Shell("cat INDEX.md", usage=Usage(input_tokens=40, cached_tokens=0, output_tokens=6, reasoning_tokens=2))


def test_requests_and_usage_per_question_equal_what_the_server_served(tmp_path):
    with ScriptedResponsesServer(responder=_reading_responder) as server:
        assert (
            main(
                [
                    "qa",
                    *codex_overrides(server.base_url),
                    f"dataset.path={MINI}",
                    "max_questions=3",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
        served = len(server.requests)
    pack = only_pack(tmp_path)
    requests = rows(pack / "agent/requests.jsonl")
    assert served == len(requests) == 6  # two per question: the shell call, then the answer
    assert all(parse_record(r).SCHEMA == "agent_request.v2" for r in requests)
    assert [(r["question_id"], r["index"]) for r in requests] == [(f"mini-1-q-{q}", i) for q in range(3) for i in (1, 2)]
    assert all(r["run_id"] == pack.name and r["completed"] and r["upstream_status"] == 200 for r in requests)
    traces = rows(pack / "agent/traces.jsonl")
    for trace in traces:
        gateway = trace["gateway"]
        assert trace["schema"] == "agent_trace.v3" and gateway["requests"] == 2 and gateway["usage_matches_cli"] is True
        assert gateway["usage"] == {
            "input_tokens": 90,
            "cached_input_tokens": 20,
            "output_tokens": 10,
            "reasoning_output_tokens": 3,
        }
        assert {k: trace["usage"][k] for k in gateway["usage"]} == gateway["usage"]  # Codex's own turn.completed
    metrics = json.loads((pack / "metrics.json").read_text())
    assert metrics["usage"]["agent"]["calls"] == 6 and metrics["usage"]["agent"]["prompt_tokens"] == 270
    comparison = json.loads((pack / "agent/comparison.json").read_text())
    assert comparison["requests_per_question"] == {"p50": 2.0, "p95": 2.0, "max": 2.0}
    assert comparison["requests_accounted"] is True and comparison["comparable"] is False
    assert any("no token budget enforced" in r for r in comparison["reasons"])
    assert "| model requests | 2 | 2 | 2 |" in (pack / "agent/COMPARISON.md").read_text()
    cli = json.loads((pack / "agent/cli.json").read_text())
    assert 'base_url = "http://127.0.0.1:<gateway>/v1"' in cli["config_toml"] and "env_key" not in cli["config_toml"]
    assert not failures(verify_pack(pack))


def test_a_script_past_the_request_budget_ends_budget_exceeded_after_exactly_the_allowed_number(tmp_path):
    with ScriptedResponsesServer(responder=lambda body: Shell("ls")) as server:  # would call tools forever
        with agent(tmp_path, server, "answerer.budget.max_requests=3") as (answerer, pack, conversations):
            answerer.start_conversation(view_of(conversations[0]))
            answer = answerer.answer(conversations[0].questions[0].asked(), "")
        served = len(server.requests)
    assert served == 3 and answer.prediction == ""
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert trace["status"] == "budget_exceeded" and "max_requests=3" in trace["error"]
    assert trace["gateway"]["requests"] == 3 and trace["gateway"]["refused"] == 1
    assert trace["gateway"]["budget"]["max_requests"] == 3
    assert len(rows(pack.path("agent/requests.jsonl"))) == 3
    comparison = json.loads(pack.path("agent/comparison.json").read_text())
    assert comparison["budget_exceeded"] == 1 and comparison["failures"] == 0
    assert any("budget is not the reader's" in r for r in comparison["reasons"])


def test_no_key_reaches_the_codex_process_its_codex_home_or_the_pack(tmp_path, monkeypatch):
    monkeypatch.setenv("MB_GATEWAY_KEY", KEY)
    home: dict[str, Path] = {}

    def responder(body):
        if is_follow_up(body):
            return Message("ok")
        return Shell(f"env; tr '\\0' '\\n' < /proc/1/environ; cat {home['config']}")

    with ScriptedResponsesServer(responder=responder) as server:
        with agent(tmp_path, server, "answerer.api_key_env=MB_GATEWAY_KEY") as (answerer, pack, conversations):
            question = conversations[0].questions[0]
            home["config"] = answerer.scratch / "processes" / question.question_id / "codex_home" / "config.toml"
            answerer.start_conversation(view_of(conversations[0]))
            answerer.answer(question.asked(), "")
            scratch = answerer.scratch
    # the gateway sent the key upstream; the agent's environment and its CODEX_HOME never had it
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    (output,) = function_outputs(server.requests[1])
    assert "PATH=" in output and "HOME=" in output and 'wire_api = "responses"' in output  # the env and config.toml
    assert KEY not in output and "MB_GATEWAY_KEY" not in output and "env_key" not in output
    for path in [*pack.root.rglob("*"), *scratch.rglob("*")]:
        if path.is_file():
            assert KEY not in path.read_text("utf-8", errors="replace"), path


def _report(tmp_path: Path, *roots: Path):
    """`memorybench report` over `roots`' packs, one condition per answerer: the requests_budget table by answerer."""
    design = tmp_path / "design.yaml"
    design.write_text(
        json.dumps(
            {
                "name": "agent_vs_reader",
                "packs": [str(r / "packs") for r in roots],
                "conditions": ["answerer"],
                "tables": ["requests_budget"],
                "figures": [],
            }
        )
    )
    report = run_report(design, tmp_path / "report")
    return report, report.tables["requests_budget"].set_index("answerer")


def test_prompt_injected_with_match_reader_is_comparable_with_the_reader_run(tmp_path, scripted_server, monkeypatch):
    """The issue's done-means: the same 20 LoCoMo questions, a Codex prompt_injected run with
    match_reader and a reader run; the report sets them side by side, the agent `comparable`."""
    monkeypatch.setenv("MB_GATEWAY_KEY", KEY)
    agent_root, reader_root = tmp_path / "agent", tmp_path / "reader"
    data = [f"dataset.path={LOCOMO}", "max_questions=20"]
    with ScriptedResponsesServer(responder=lambda body: Message("scripted")) as server:
        assert (
            main(
                [
                    "qa",
                    *codex_overrides(
                        server.base_url,
                        "answerer.mode=prompt_injected",
                        "answerer.budget.match_reader=true",
                        "answerer.api_key_env=MB_GATEWAY_KEY",
                    ),
                    *data,
                    f"paths.packs={agent_root / 'packs'}",
                    f"paths.cache={agent_root / 'cache'}",
                ]
            )
            == 0
        )
        served = len(server.requests)
    assert (
        main(
            [
                "qa",
                *scripted_reader(scripted_server.base_url),
                *data,
                f"paths.packs={reader_root / 'packs'}",
                f"paths.cache={reader_root / 'cache'}",
            ]
        )
        == 0
    )
    pack = only_pack(agent_root)
    predictions = rows(pack / "predictions.jsonl")
    reader_predictions = rows(only_pack(reader_root) / "predictions.jsonl")
    assert [p["reader_payload_sha256"] for p in predictions] == [p["reader_payload_sha256"] for p in reader_predictions]
    assert served == len(rows(pack / "agent/requests.jsonl")) == len(predictions) == 20
    budgets = [t["gateway"]["budget"] for t in rows(pack / "agent/traces.jsonl")]
    assert all(b["source"] == "reader" and b["tokenizer"] == "cl100k_base" for b in budgets)
    assert all(b["max_total_tokens"] == b["reader_prompt_tokens"] + b["reader_max_tokens"] for b in budgets)
    comparison = json.loads((pack / "agent/comparison.json").read_text())
    assert comparison["reasons"] == [] and comparison["comparable"] is True and comparison["requests_accounted"] is True
    assert "# Agent run: comparable with reader runs" in (pack / "agent/COMPARISON.md").read_text()
    # the whole pack verifies (requests.jsonl rows by their schema) and holds no trace of the key
    assert not failures(verify_pack(pack, secrets=[KEY]))
    assert all(h["authorization"] == f"Bearer {KEY}" for h in server.headers)
    for path in pack.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text("utf-8", errors="replace"), path

    # `report`: requests, tokens and budget per question beside accuracy, the figures of COMPARISON.md
    report, table = _report(tmp_path, agent_root, reader_root)
    codex, reader = table.loc["codex"], table.loc["reader"]
    assert codex["comparable"] == "yes" and codex["why_not"] == "-" and reader["comparable"] == "reader"
    assert codex["rows"] == reader["rows"] == 20 and codex["budget_exceeded"] == 0
    for name in ("requests", "tokens"):
        assert {k: codex[f"{name}_{k}"] for k in ("p50", "p95", "max")} == comparison[f"{name}_per_question"]
    assert codex["token_budget_p50"] == comparison["budget"]["max_total_tokens_per_question"]["p50"]
    assert reader["requests_max"] == 1 and reader["tokens_p50"] > 1000  # a conversation's full context
    assert codex["locomo_f1_1_4"] == pytest.approx(
        json.loads((pack / "metrics.json").read_text())["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
    )
    assert "## requests_budget" in report.markdown.read_text()


def test_the_report_counts_budget_hits_and_the_tokens_the_gateway_saw(tmp_path):
    """A turn the budget stops has no turn.completed usage from Codex: the gateway's count is
    what the examples table and the report carry, and each stop is counted apart."""

    def responder(body):
        return Shell("cat INDEX.md", usage=Usage(input_tokens=70, cached_tokens=10, output_tokens=5, reasoning_tokens=1))

    with ScriptedResponsesServer(responder=responder) as server:
        assert (
            main(
                [
                    "qa",
                    *codex_overrides(server.base_url, "answerer.budget.max_requests=2"),
                    f"dataset.path={MINI}",
                    "max_questions=3",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
    pack = only_pack(tmp_path)
    traces = rows(pack / "agent/traces.jsonl")
    assert [t["status"] for t in traces] == ["budget_exceeded"] * 3
    assert all(t["gateway"]["usage"]["input_tokens"] == 140 for t in traces)
    examples = pack_examples(pack).to_pylist()
    assert [(e["requests"], e["agent_status"], e["prompt_tokens"], e["completion_tokens"]) for e in examples] == [
        (2, "budget_exceeded", 140, 10)
    ] * 3
    (run,) = runs_table([pack]).to_pylist()
    assert run["agent_budget_exceeded"] == 3 and run["agent_comparable"] is False and run["agent_requests_max"] == 2
    assert "budget is not the reader's" in run["agent_reasons"]
    _, table = _report(tmp_path, tmp_path)
    codex = table.loc["codex"]
    assert codex["budget_exceeded"] == 3 and codex["requests_p95"] == 2 and codex["tokens_max"] == 150
    assert codex["comparable"] == "no" and "budget is not the reader's" in codex["why_not"]


def test_unset_budgets_keep_the_run_id_and_a_set_one_changes_it(tmp_path):
    base = [*codex_overrides("http://127.0.0.1:9/v1"), f"paths.packs={tmp_path}"]
    (plain,) = plan_runs(base)
    (raw,) = plan_runs([*base, "answerer.audit.raw=true"])
    (budgeted,) = plan_runs([*base, "answerer.budget.max_requests=5"])
    assert plain.run_id == raw.run_id != budgeted.run_id


def test_a_budget_stop_keeps_the_partial_answer_the_agent_had_given(tmp_path):
    with ScriptedResponsesServer(responder=lambda body: Shell("ls", preamble="Probably pottery")) as server:
        with agent(tmp_path, server, "answerer.budget.max_requests=2", "answerer.on_failure=abort") as (
            answerer,
            pack,
            conversations,
        ):
            answerer.start_conversation(view_of(conversations[0]))
            answer = answerer.answer(conversations[0].questions[0].asked(), "")  # no abort: a budget stop is an outcome
        served = len(server.requests)
    (trace,) = rows(pack.path("agent/traces.jsonl"))
    assert served == 2 and trace["status"] == "budget_exceeded" and answer.prediction == trace["answer"] == "Probably pottery"

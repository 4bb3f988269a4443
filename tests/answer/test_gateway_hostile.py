"""The gateway against a careless or hostile client (issue 29): budgets under concurrent requests,
endpoints no budget counts, bodies it cannot read, and resends on a kept-alive connection."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import time
import zlib

from memorybench.answer.agent._finalize import _gateway_reasons
from memorybench.answer.agent._records import AgentTraceV3, Budget, GatewaySummary
from memorybench.answer.agent.gateway import GatewayProcess
from memorybench.answer.agent.gateway_upstream import BACKOFF_BASE_S
from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer, Usage


def request(text: str = "hello") -> dict:
    return {
        "model": "scripted",
        "stream": True,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def send(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
    reply = conn.getresponse()
    return reply.status, reply.read()


def _slow(body: dict) -> Message:
    """Every request: 1,000 input tokens, 400 output (or the cap, if lower), after a pause that makes them overlap."""
    time.sleep(0.3)
    cap = body.get("max_output_tokens")
    return Message("ok", usage=Usage(1000, 0, 400 if cap is None else min(400, cap), 0))


def _concurrently(budget: dict, n: int = 8) -> tuple[list[int], list[dict]]:
    with ScriptedResponsesServer(responder=_slow) as server, GatewayProcess(server.base_url, max_retries=0) as gateway:
        gateway.begin("q", "s", "answer", budget)
        statuses: list[int] = []

        def one(i: int) -> None:
            statuses.append(send(gateway.port, "POST", "/v1/responses", json.dumps(request(str(i))).encode())[0])

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        report = gateway.end()
    return statuses, report.rows


def test_concurrent_requests_cannot_overshoot_the_input_budget():
    statuses, rows = _concurrently({"max_input_tokens": 1500})
    assert sum(r["input_tokens"] for r in rows) <= 1500 + 1000  # at most what one request alone adds, as sequentially
    assert len(rows) == 1 and statuses.count(200) == 1 and statuses.count(400) == 7


def test_concurrent_requests_share_the_output_and_total_budgets():
    _, rows = _concurrently({"max_output_tokens": 500})
    assert sum(r["output_tokens"] for r in rows) <= 500
    _, rows = _concurrently({"max_total_tokens": 1200})
    assert sum(r["input_tokens"] + r["output_tokens"] for r in rows) <= 1200 + 1000


def test_only_the_endpoints_codex_needs_are_forwarded():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        gateway.begin("q", "s", "answer", {"max_requests": 0})
        chat = json.dumps({"model": "x", "messages": [{"role": "user", "content": "hi"}]}).encode()
        assert send(gateway.port, "POST", "/v1/chat/completions", chat)[0] == 404
        assert send(gateway.port, "POST", "/v1/responses/../../v1/chat/completions", chat)[0] == 400
        assert send(gateway.port, "POST", "/v1/responses/%2e%2e/chat/completions", chat)[0] == 400
        assert send(gateway.port, "POST", "/v1//responses", json.dumps(request()).encode())[0] == 400
        assert send(gateway.port, "DELETE", "/v1/responses")[0] == 404
        status, body = send(gateway.port, "POST", "/v1/responses", json.dumps(request()).encode())
        assert status == 400 and b"budget_exceeded" in body  # the budgeted endpoint, refused by its budget
        assert send(gateway.port, "GET", "/v1/models")[0] != 404  # what Codex reads besides responses
        report = gateway.end()
    assert not any(r.get("messages") for r in server.requests)  # nothing reached the upstream's chat endpoint
    assert len(report.not_forwarded) == 5 and report.not_forwarded[0] == "POST /v1/chat/completions"
    assert report.rows == []


def test_a_request_refused_for_its_endpoint_is_a_finding():
    summary = GatewaySummary(
        requests=1, budget=Budget(max_requests=5, source="explicit"), not_forwarded=["POST /v1/chat/completions"]
    )
    trace = AgentTraceV3.model_construct(phase="answer", question_id="q", gateway=summary)
    reasons, _ = _gateway_reasons([trace], [trace])
    assert any("1 request(s) to an endpoint no budget counts (first: POST /v1/chat/completions)" in r for r in reasons)


def test_a_body_the_budget_cannot_read_is_refused_and_gzip_is_read():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url) as gateway:
        gateway.begin("q", "s", "answer", {"max_output_tokens": 50})
        raw = json.dumps({**request(), "max_output_tokens": 100_000}).encode()
        status, body = send(gateway.port, "POST", "/v1/responses", zlib.compress(raw), {"Content-Encoding": "deflate"})
        assert status == 415 and b"deflate" in body
        assert send(gateway.port, "POST", "/v1/responses", b"\x00not json")[0] == 400
        bomb = gzip.compress(b" " * (80 * 1024 * 1024))
        assert send(gateway.port, "POST", "/v1/responses", bomb, {"Content-Encoding": "gzip"})[0] == 400
        assert send(gateway.port, "POST", "/v1/responses", gzip.compress(raw), {"Content-Encoding": "gzip"})[0] == 200
        report = gateway.end()
    assert len(server.requests) == 1 and server.requests[0]["max_output_tokens"] == 50  # decoded, then capped
    assert len(report.not_forwarded) == 3


# -- a kept-alive connection that fails after the request was written --------------------
COMPLETED = (
    b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_1","model":"m",'
    b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
)


def _upstream(requests: list[bytes]) -> tuple[socket.socket, int]:
    """A raw upstream: the first connection answers one request and keeps alive, then reads the next request
    and hangs up without a reply (billed, perhaps); later connections answer."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return b""
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0)
        while len(rest) < length:
            rest += conn.recv(65536)
        requests.append(rest)
        return rest

    def answer(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"%x\r\n%s\r\n0\r\n\r\n" % (len(COMPLETED), COMPLETED)
        )  # streamed, as the API does

    def serve() -> None:
        first = True
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            if first:
                first = False
                read_request(conn)
                answer(conn)
                read_request(conn)
                conn.close()  # the second request was read: the upstream may have billed it
            else:
                if read_request(conn):
                    answer(conn)
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_a_request_written_on_a_kept_alive_connection_is_never_resent_uncounted():
    requests: list[bytes] = []
    listener, port = _upstream(requests)
    try:
        with GatewayProcess(f"http://127.0.0.1:{port}/v1", max_retries=2) as gateway:
            gateway.begin("q", "s", "answer")
            assert send(gateway.port, "POST", "/v1/responses", json.dumps(request("one")).encode())[0] == 200
            assert send(gateway.port, "POST", "/v1/responses", json.dumps(request("two")).encode())[0] == 200
            report = gateway.end()
    finally:
        listener.close()
    assert len(requests) == 3  # the second request reached the upstream twice
    second = report.rows[1]
    assert second["retries"] == 1 and second["retry_statuses"] == [None]  # and the gateway says so
    (wait,) = second["retry_waits_s"]  # with the wait it slept: no Retry-After, so our jittered backoff
    assert second["retry_after"] == [False] and 0.0 <= wait <= BACKOFF_BASE_S

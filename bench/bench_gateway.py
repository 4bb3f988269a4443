"""The Responses gateway's added latency per request, against a direct connection.

The scripted Responses server runs in this process; N streamed `POST /v1/responses`
requests go to it over one kept-alive connection, first directly, then through a
`GatewayProcess` (a child process, as in a Codex run) with a question open. Each request's
wall time is measured in the client to the reply's last byte. Added latency = the
gateway's figure minus the direct one (p50, p95, mean), after a warm-up; rounds alternate
so that drift of the machine hits both sides alike. Target: under 2 ms per request.
The direct request is the yardstick (issue 45): `gateway / direct` (p50 and mean) is the
figure that holds on another machine; the milliseconds stay beside it.

Run: .venv/bin/python bench/bench_gateway.py [N] [ANSWER_WORDS] [LINES]   (default: 400 requests, a 40-word
answer, a 2.4 KB input; a Codex request with its tool definitions is ~30 KB: LINES=2500)
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import time

from _common import report

from memorybench.answer.agent.gateway import GatewayProcess
from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer

WARMUP = 20
ROUNDS = 4


#: the request's input text, in repeats of "memory line " (12 bytes); argv[3] overrides
LINES = int(sys.argv[3]) if len(sys.argv) > 3 else 200


def body(n: int) -> bytes:
    text = f"question {n} " + "memory line " * LINES
    return json.dumps(
        {
            "model": "scripted",
            "stream": True,
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}],
        }
    ).encode()


def timed(port: int, count: int, offset: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    out = []
    for n in range(count):
        data = body(offset + n)
        t0 = time.perf_counter()
        conn.request("POST", "/v1/responses", body=data, headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
        out.append(time.perf_counter() - t0)
        assert reply.status == 200, reply.status
    conn.close()
    return out


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    answer = " ".join(f"word{i}" for i in range(events))
    with ScriptedResponsesServer(responder=lambda _b: Message(answer)) as server, GatewayProcess(server.base_url) as gateway:
        gateway.begin("bench", "bench", "answer")
        timed(server.port, WARMUP, 0)
        timed(gateway.port, WARMUP, 0)
        direct: list[float] = []
        via: list[float] = []
        per_round = max(1, n // ROUNDS)
        for r in range(ROUNDS):
            direct += timed(server.port, per_round, r * per_round)
            via += timed(gateway.port, per_round, r * per_round)
        rows = gateway.end().rows
    added = [v - d for v, d in zip(sorted(via), sorted(direct))]
    reply_bytes = statistics.mean(r["reply_bytes"] for r in rows)
    report(
        "bench_gateway",
        {
            "requests_each": len(direct),
            "reply_bytes_mean": round(reply_bytes),
            "request_bytes_mean": round(statistics.mean(r["request_bytes"] for r in rows)),
            "direct_ms": {"p50": ms(direct, 0.5), "p95": ms(direct, 0.95), "mean": round(1000 * statistics.mean(direct), 3)},
            "gateway_ms": {"p50": ms(via, 0.5), "p95": ms(via, 0.95), "mean": round(1000 * statistics.mean(via), 3)},
            "added_ms_per_request": {
                "p50": round(ms(via, 0.5) - ms(direct, 0.5), 3),
                "p95": round(ms(via, 0.95) - ms(direct, 0.95), 3),
                "mean": round(1000 * (statistics.mean(via) - statistics.mean(direct)), 3),
                "quantile_matched_median": round(1000 * statistics.median(added), 3),
            },
            "ratio_to_direct": {
                "p50": round(ms(via, 0.5) / ms(direct, 0.5), 2),
                "mean": round(statistics.mean(via) / statistics.mean(direct), 2),
            },
            "target_ms": 2.0,
            "rows_accounted": len(rows),
        },
    )


if __name__ == "__main__":
    main()

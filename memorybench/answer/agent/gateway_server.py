"""The Responses API gateway process: every Codex model request passes through it, counted.

    python -m memorybench.answer.agent.gateway_server --upstream URL [--key-env NAME] \
        --parent-pid PID [--pdeathsig] [--raw] [--max-retries N] [--timeout-s S]

Started by `gateway.GatewayProcess` (the parent side) in its own process group, one per
Codex run. It listens on 127.0.0.1 (a free port, printed as the first line of stdout:
`{"port": N}`) and forwards each `POST .../responses` to the upstream base URL with the
key it alone holds (read from its environment by name; Codex is given none). The reply
is relayed chunk by chunk as it arrives (SSE is never buffered whole) while the events
that matter are read off the stream: `response.created` / `response.completed` (id,
model, usage) and `response.failed` / `response.incomplete` / `error`.

Control is on stdin/stdout, one JSON object a line, from the parent only (nothing on the
network can reach it):

    {"op": "begin", "question_id": ..., "sample_id": ..., "phase": ..., "budget": {...}}  -> {"ok": true}
    {"op": "end"}                                                                    -> {"rows": [...], "refused": [...], ...}

Only the endpoints Codex needs are forwarded: `POST /v1/responses` (budgeted) and `GET /v1/models`
(no model call). A path with dot segments, repeated slashes or percent-escapes, and any
other method or endpoint (`/v1/chat/completions`: a billed call no budget would count) is
refused (400 `bad_path`, 404 `not_forwarded`) and counted `not_forwarded`, a finding in
agent/comparison.json. A request body is read by the budget only as identity or gzip
(decoded, bounded): any other Content-Encoding is refused (415), never forwarded unread.

A request that arrives while no work is open is refused (503) and counted `unattributed`.
Budgets (per `begin`): `max_requests`, `max_input_tokens`, `max_output_tokens`,
`max_total_tokens` (null: no limit). A request that would exceed one is not forwarded: it
is answered HTTP 400 with an OpenAI-style error `{"error": {"code": "budget_exceeded"...}}`,
which the CLI does not retry and ends its turn on. Token use of a request is known only
once it is answered, so an input budget refuses the next request when the last request's
input (which the next one repeats: Codex resends the history) would not fit; output and
total budgets also cap the forwarded `max_output_tokens` to what is left.

Retries: a 429/5xx or a connection error before any byte was relayed is retried here
(honouring Retry-After, in seconds or as an HTTP date, else waiting with full jitter; at most
--max-retries times; `gateway_upstream`, which also picks the proxy the environment names) and counted on that request's row;
Codex sees one request. Only a kept-alive connection that fails before the request was
written is reopened silently: once written, the upstream may have billed the request, so a
resend (a read timeout, a reset after the write) is a counted retry. Rows hold hashes and lengths of the request's input items and of
the reply, never their text, unless --raw.

The process never outlives its parent: stdin EOF ends it, `--pdeathsig` asks the kernel
for SIGKILL when the parent's thread dies, and a watcher thread exits when the parent
pid changes.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import hashlib
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorybench.answer.agent.gateway_budget import Work
from memorybench.answer.agent.gateway_stream import SSEWatch, usage_fields
from memorybench.answer.agent.gateway_upstream import Upstream, retry_delay

EXIT_ORPHANED = 97
PR_SET_PDEATHSIG = 1
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: request headers not passed upstream (hop-by-hop, recomputed, or credentials: ours only)
DROP_REQUEST = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "authorization",
        "accept-encoding",
        "api-key",
        "openai-organization",
        "openai-project",
        "chatgpt-account-id",
    }
)
#: reply headers not passed back (hop-by-hop, or set by the relay)
DROP_REPLY = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "trailer", "upgrade"})
#: the endpoints forwarded, by method (paths after the gateway's own `/v1`); every other one is refused
FORWARDED = {"POST": frozenset({"/responses"}), "GET": frozenset({"/models"})}
#: the largest request body the gateway decodes (gzip included): Codex's requests are a few MB at most
MAX_BODY_BYTES = 64 * 1024 * 1024
#: SSE events the accounting reads (a stream's deltas are relayed without being parsed)
#: how long `end` waits for a forwarded request to finish its row: the CLI has exited, so a reply it read
#: whole is done in milliseconds; one still open (a process killed at the timeout) is reported `in_flight`
SETTLE_TIMEOUT_S = 3.0


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Gateway:
    def __init__(self, upstream: str, key: str | None, *, raw: bool, max_retries: int, timeout_s: float) -> None:
        self.upstream = Upstream(upstream, timeout_s)
        self.key = key
        self.raw = raw
        self.max_retries = max(0, int(max_retries))
        self.work: Work | None = None
        self.unattributed = 0
        self.other_requests = 0
        #: requests refused for their path, method or encoding: never forwarded (a finding)
        self.not_forwarded: list[str] = []
        self.lock = threading.Lock()

    # -- control -----------------------------------------------------------------------
    def control(self, command: dict[str, Any]) -> dict[str, Any]:
        op = command.get("op")
        with self.lock:
            if op == "begin":
                self.work = Work(
                    command.get("question_id"), str(command.get("sample_id")), str(command.get("phase")), command.get("budget")
                )
                self.unattributed = self.other_requests = 0
                self.not_forwarded = []
                return {"ok": True}
            if op == "end":
                work, self.work = self.work, None
        if op == "end":
            # the CLI has exited; a reply it had read whole may still be finishing its row here
            open_rows = work.wait_settled(SETTLE_TIMEOUT_S) if work else 0
            with self.lock:
                rows = sorted(work.rows, key=lambda r: r["index"]) if work else []
                return {
                    "ok": True,
                    "rows": rows,
                    "refused": work.refused if work else [],
                    "in_flight": open_rows,
                    "unattributed": self.unattributed,
                    "other_requests": self.other_requests,
                    "not_forwarded": list(self.not_forwarded),
                }
        with self.lock:
            if op == "ping":
                return {"ok": True}
        return {"ok": False, "error": f"unknown op {op!r}"}

    # -- requests ----------------------------------------------------------------------
    def headers_for_upstream(self, handler: BaseHTTPRequestHandler, encoding: str | None) -> dict[str, str]:
        out = {k: v for k, v in handler.headers.items() if k.lower() not in DROP_REQUEST and k.lower() != "content-encoding"}
        out["Accept-Encoding"] = "identity"  # the relay reads the stream's events
        if encoding:
            out["Content-Encoding"] = encoding
        if self.key:
            out["Authorization"] = f"Bearer {self.key}"
        return out

    def responses(self, handler: BaseHTTPRequestHandler, raw_body: bytes) -> None:
        t0 = time.perf_counter()
        started_at = utc_now()
        encoding = (handler.headers.get("Content-Encoding") or "").strip().lower() or None
        if encoding not in (None, "identity", "gzip"):
            self.refuse(
                handler,
                415,
                "unsupported_encoding",
                f"POST {handler.path} Content-Encoding {encoding}",
                f"memorybench gateway: Content-Encoding {encoding!r} is not read here (identity or gzip); not forwarded",
            )
            return
        try:
            decoded = gunzip_bounded(raw_body) if encoding == "gzip" else raw_body
            body = json.loads(decoded)
        except (ValueError, OSError, EOFError, gzip.BadGzipFile):
            body = None
        body = body if isinstance(body, dict) else None
        if body is None:  # the budget cannot read it: never forwarded unread
            self.refuse(
                handler,
                400,
                "unreadable_body",
                f"POST {handler.path} unreadable body",
                "memorybench gateway: the request body is not a JSON object the budget can read; not forwarded",
            )
            return
        with self.lock:
            work = self.work
            if work is None:
                self.unattributed += 1
        if work is None:
            send_error(handler, 503, "no_open_work", "memorybench gateway: no question is open; request not forwarded")
            return
        index, reason, cap = work.admit()
        if index is None:
            with work.lock:
                work.refused.append({"after_requests": work.started, "reason": reason, "at": started_at})
            send_error(handler, 400, "budget_exceeded", f"memorybench budget exceeded: {reason}")
            return
        items = body.get("input") if body is not None else None
        request_bytes = canonical(items) if items is not None else raw_body
        data = raw_body
        capped = None
        if cap is not None and body is not None:
            asked = body.get("max_output_tokens")
            capped = cap if asked is None else min(int(asked), cap)
            body = {**body, "max_output_tokens": capped}
            data, encoding = json.dumps(body, ensure_ascii=False).encode("utf-8"), None
        row: dict[str, Any] = {
            "question_id": work.question_id,
            "sample_id": work.sample_id,
            "phase": work.phase,
            "index": index,
            "started_at": started_at,
            "model_requested": body.get("model") if body is not None else None,
            "request_sha256": hashlib.sha256(request_bytes).hexdigest(),
            "request_bytes": len(request_bytes),
            "max_output_tokens_cap": capped,
        }
        if self.raw and body is not None:
            row["raw_request"] = body
        previous = work.rows[-1] if work.rows else None
        if previous is not None and previous["request_sha256"] == row["request_sha256"] and not previous["completed"]:
            row["repeat_of"] = previous["index"]  # the CLI sent the same input again after a failed reply
        path = self.upstream.path(suffix_of(handler.path))
        headers = self.headers_for_upstream(handler, encoding)
        try:
            self.forward(handler, work, row, path, data, headers, t0)
        except BaseException as e:  # the CLI hung up while headers were sent, or a bug: the row is kept all the same
            if not any(r is row for r in work.rows):
                row.update(
                    self.empty_usage(),
                    upstream_status=row.get("upstream_status"),
                    retries=row.get("retries", 0),
                    retry_statuses=row.get("retry_statuses", []),
                    error=f"gateway: {type(e).__name__}: {e}",
                    completed=False,
                    reply_sha256=None,
                    reply_bytes=0,
                    response_id=None,
                    model_answered=None,
                    latency_s=round(time.perf_counter() - t0, 6),
                    first_byte_s=None,
                    client_gone=True,
                )
                work.record(row)
            raise

    def refuse(self, handler: BaseHTTPRequestHandler, status: int, code: str, what: str, message: str) -> None:
        """A request not forwarded for what it is (its path, method, encoding or body), counted."""
        with self.lock:
            self.not_forwarded.append(what[:200])
        send_error(handler, status, code, message)

    def forward(
        self,
        handler: BaseHTTPRequestHandler,
        work: Work,
        row: dict[str, Any],
        path: str,
        data: bytes,
        headers: dict[str, str],
        t0: float,
    ) -> None:
        retries, statuses = 0, []
        waits: list[float] = []
        asked: list[bool] = []
        error = None
        while True:
            conn, reused = self.upstream.get()
            sent = False
            try:
                conn.request("POST", path, body=data, headers=headers)
                sent = True
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if reused and not sent:  # a kept-alive connection closed meanwhile, the request not written: not a retry
                    continue
                # once written, the upstream may have billed it: a resend is a retry, counted (and bounded) as such
                error, answered = f"{type(e).__name__}: {e}", None
                statuses.append(None)
            else:
                if resp.status not in RETRY_STATUSES:
                    self.relay(handler, work, row, resp, conn, retries, statuses, t0)
                    return
                answered = resp
                reply = resp.read()
                statuses.append(resp.status)
                if retries >= self.max_retries:
                    self.finish_plain(handler, work, row, resp, reply, conn, retries, statuses, t0)
                    return
                self.upstream.put(conn) if not resp.will_close else conn.close()
            if retries >= self.max_retries:
                break
            retries += 1
            wait, from_upstream = retry_delay(answered, retries)  # Retry-After (seconds or an HTTP date), else full jitter
            waits.append(wait)
            asked.append(from_upstream)
            row.update(retry_waits_s=waits, retry_after=asked)  # on the row at once: every way out records them
            time.sleep(wait)
        row.update(
            self.empty_usage(),
            upstream_status=None,
            retries=retries,
            retry_statuses=statuses,
            error=error or "upstream unreachable",
            completed=False,
            reply_sha256=None,
            reply_bytes=0,
            response_id=None,
            model_answered=None,
            latency_s=round(time.perf_counter() - t0, 6),
            first_byte_s=None,
        )
        work.record(row)
        send_error(handler, 502, "upstream_unreachable", f"memorybench gateway: upstream unreachable ({error})")

    @staticmethod
    def empty_usage() -> dict[str, int]:
        return usage_fields(None)

    def finish_plain(
        self,
        handler: BaseHTTPRequestHandler,
        work: Work,
        row: dict[str, Any],
        resp: http.client.HTTPResponse,
        reply: bytes,
        conn: http.client.HTTPConnection,
        retries: int,
        statuses: list[int | None],
        t0: float,
    ) -> None:
        """An error status after the last retry: passed on whole (it is small), recorded."""
        self.upstream.put(conn) if not resp.will_close else conn.close()
        message = None
        try:
            message = (json.loads(reply).get("error") or {}).get("message")
        except (ValueError, AttributeError):
            pass
        row.update(
            self.empty_usage(),
            upstream_status=resp.status,
            retries=retries,
            retry_statuses=statuses,
            error=str(message or f"HTTP {resp.status}"),
            completed=False,
            reply_sha256=hashlib.sha256(reply).hexdigest(),
            reply_bytes=len(reply),
            response_id=None,
            model_answered=None,
            latency_s=round(time.perf_counter() - t0, 6),
            first_byte_s=None,
        )
        if self.raw:
            row["raw_reply"] = reply.decode("utf-8", "replace")
        work.record(row)
        send_whole(handler, resp.status, resp.getheaders(), reply)

    def relay(
        self,
        handler: BaseHTTPRequestHandler,
        work: Work,
        row: dict[str, Any],
        resp: http.client.HTTPResponse,
        conn: http.client.HTTPConnection,
        retries: int,
        statuses: list[int | None],
        t0: float,
    ) -> None:
        first_byte = time.perf_counter() - t0
        length = resp.getheader("Content-Length")
        chunked = length is None
        handler.send_response_only(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in DROP_REPLY:
                handler.send_header(k, v)
        handler.send_header("Transfer-Encoding", "chunked") if chunked else handler.send_header("Content-Length", length)
        # the headers go at once: an upstream may take a while to its first event, and the CLI should know it is answered
        handler.wfile.write(take_headers(handler))
        head = b""
        digest, size = hashlib.sha256(), 0
        watch = SSEWatch()
        kept: list[bytes] = []
        client_gone = upstream_cut = False
        while True:
            try:
                chunk = resp.read1(65536)
            except (OSError, http.client.HTTPException):
                upstream_cut = True
                break
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
            watch.feed(chunk)
            if self.raw:
                kept.append(chunk)
            if not client_gone:
                try:
                    handler.wfile.write(head + (b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk))
                    head = b""
                except OSError:
                    client_gone = True  # keep reading: the accounting wants the whole reply
        watch.close()
        # the upstream connection goes back to the pool before the client sees the reply end, so
        # the client's next request finds it there (kept alive), never racing its return
        if upstream_cut or resp.will_close or not resp.isclosed():
            conn.close()
        else:
            self.upstream.put(conn)
        if not client_gone:
            try:
                if chunked or head:
                    handler.wfile.write(head + (b"0\r\n\r\n" if chunked else b""))
            except OSError:
                client_gone = True
        if upstream_cut or client_gone:
            handler.close_connection = True
        error = watch.error
        if upstream_cut:
            error = error or "the upstream stream was cut"
        elif resp.status != 200:
            error = error or f"HTTP {resp.status}"
        elif not watch.completed and error is None:
            error = "the stream ended without response.completed"
        row.update(
            usage_fields(watch.usage),
            upstream_status=resp.status,
            retries=retries,
            retry_statuses=statuses,
            error=error,
            completed=watch.completed,
            reply_sha256=digest.hexdigest(),
            reply_bytes=size,
            response_id=watch.response_id,
            model_answered=watch.model,
            latency_s=round(time.perf_counter() - t0, 6),
            first_byte_s=round(first_byte, 6),
        )
        if client_gone:
            row["client_gone"] = True
        if self.raw:
            row["raw_reply"] = b"".join(kept).decode("utf-8", "replace")
        work.record(row)

    def other(self, handler: BaseHTTPRequestHandler, method: str, body: bytes | None) -> None:
        """Any other request (`GET /models`...): passed through whole, counted, not accounted as a model request."""
        with self.lock:
            self.other_requests += 1
        conn, _ = self.upstream.get()
        try:
            conn.request(
                method,
                self.upstream.path(suffix_of(handler.path)),
                body=body,
                headers=self.headers_for_upstream(handler, handler.headers.get("Content-Encoding")),
            )
            resp = conn.getresponse()
            reply = resp.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            send_error(handler, 502, "upstream_unreachable", f"memorybench gateway: upstream unreachable ({type(e).__name__})")
            return
        send_whole(handler, resp.status, resp.getheaders(), reply)
        self.upstream.put(conn) if not resp.will_close else conn.close()


def suffix_of(path: str) -> str:
    """The request path after the gateway's own `/v1` (what is appended to the upstream base URL)."""
    return path[3:] if path.startswith("/v1/") or path == "/v1" else path


def refused_path(method: str, path: str) -> tuple[int, str, str] | None:
    """None for a request to an endpoint the gateway forwards; else (status, code, message). The path
    must already be normal: no dot segments, repeated slashes, percent-escapes or backslashes."""
    route = path.split("?", 1)[0]
    segments = route.split("/")[1:]
    if (
        not route.startswith("/")
        or "%" in route
        or "\\" in route
        or any(seg in ("", ".", "..") for seg in segments[:-1])
        or (segments and segments[-1] in (".", ".."))
    ):
        return 400, "bad_path", f"memorybench gateway: path {route[:100]!r} is not a normal path; not forwarded"
    suffix = suffix_of(route.rstrip("/") or "/")
    if suffix not in FORWARDED.get(method, ()):
        allowed = ", ".join(f"{m} /v1{p}" for m, ps in FORWARDED.items() for p in sorted(ps))
        return 404, "not_forwarded", f"memorybench gateway: {method} {route[:100]} is not forwarded (only {allowed})"
    return None


def gunzip_bounded(data: bytes) -> bytes:
    """A gzip body decoded, at most MAX_BODY_BYTES (a bomb is refused, not inflated)."""
    import zlib

    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflate.decompress(data, MAX_BODY_BYTES + 1)
    if len(out) > MAX_BODY_BYTES or inflate.unconsumed_tail:
        raise ValueError("gzip body larger than the gateway reads")
    if not inflate.eof:
        raise ValueError("truncated gzip body")
    return out


def take_headers(handler: BaseHTTPRequestHandler) -> bytes:
    """The status line and headers queued on `handler`, ended, as bytes to send with the body."""
    buffered = getattr(handler, "_headers_buffer", [])
    head = b"".join(buffered) + b"\r\n"
    handler._headers_buffer = []  # type: ignore[attr-defined]
    return head


def send_whole(handler: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
    handler.send_response_only(status)
    for k, v in headers:
        if k.lower() not in DROP_REPLY:
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.wfile.write(take_headers(handler) + data)  # one write


def send_error(handler: BaseHTTPRequestHandler, status: int, code: str, message: str) -> None:
    data = json.dumps({"error": {"message": message, "type": code, "code": code, "param": None}}).encode("utf-8")
    send_whole(handler, status, [("Content-Type", "application/json")], data)


def handler_for(gateway: Gateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _route(self, method: str) -> None:
            body = self._body() if method == "POST" else None
            try:
                reason = refused_path(method, self.path)
                if reason is not None:
                    status, code, message = reason
                    gateway.refuse(self, status, code, f"{method} {self.path}", message)
                elif method == "POST":
                    gateway.responses(self, body or b"")
                else:
                    gateway.other(self, method, None)
            except OSError:
                self.close_connection = True

        def do_POST(self) -> None:
            self._route("POST")

        def do_GET(self) -> None:
            self._route("GET")

        def do_PUT(self) -> None:
            self._route("PUT")

        def do_DELETE(self) -> None:
            self._route("DELETE")

        def do_PATCH(self) -> None:
            self._route("PATCH")

    return Handler


def _guard_parent(parent_pid: int, pdeathsig: bool) -> None:
    if pdeathsig:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass

    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(EXIT_ORPHANED)
            time.sleep(0.5)

    threading.Thread(target=loop, name="parent-watch", daemon=True).start()
    if os.getppid() != parent_pid:
        os._exit(EXIT_ORPHANED)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memorybench-gateway")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--key-env")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--pdeathsig", action="store_true")
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--max-retries", type=int, default=4)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args(argv)
    _guard_parent(args.parent_pid, args.pdeathsig)
    key = os.environ.get(args.key_env) if args.key_env else None
    gateway = Gateway(args.upstream, key or None, raw=args.raw, max_retries=args.max_retries, timeout_s=args.timeout_s)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(gateway))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    out = sys.stdout
    out.write(json.dumps({"port": httpd.server_address[1], "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = gateway.control(json.loads(line))
        except ValueError as e:
            reply = {"ok": False, "error": f"bad control line: {e}"}
        out.write(json.dumps(reply, ensure_ascii=False) + "\n")
        out.flush()
    os._exit(0)  # the parent closed our stdin (stopped, or died): in-flight requests end with us


if __name__ == "__main__":
    main()

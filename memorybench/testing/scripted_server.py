"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, over real HTTP.

For plumbing only (errors, retries, exact bytes, harness overhead): its answers are
scripted or derived mechanically from the request, never results. Tests queue actions
(`Reply`, `Status`, `Hang`, `Stall`, `Drop`, `Raw`) that the next requests consume in order;
when the queue is empty the `responder` answers. Every request body is recorded.

For fault injection the server can also die and come back on the same port (`kill`,
`restart`, `outage`): listening stops and every open connection is cut, as when the
process behind an endpoint crashes.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str
    model: str | None = None
    prompt_tokens: int = 10
    completion_tokens: int = 3
    cached_tokens: int = 0
    finish_reason: str = "stop"


@dataclass
class Status:
    """An HTTP error status with an OpenAI-style error body."""

    code: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted error"


@dataclass
class Hang:
    """Sleep before answering (or forever, past any client timeout)."""

    seconds: float
    then: Reply | None = None


@dataclass
class Stall:
    """A reply that never ends: the status line, headers and the first bytes of the body are
    sent, then the connection is held for `seconds` (past the client's timeout) and closed."""

    seconds: float
    head: bytes = b'{"id": "chatcmpl-stall", "object": "chat.completion", "choices": ['


@dataclass
class Drop:
    """Close the connection without a reply, as a server that crashed mid-request."""


@dataclass
class Raw:
    """Exact bytes as the body (malformed JSON, empty choices...)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


Action = Reply | Status | Hang | Stall | Drop | Raw


def echo_responder(body: dict[str, Any]) -> Reply:
    """A deterministic reply derived from the request: plumbing, not an answer."""
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    digest = hashlib.sha256(str(user).encode("utf-8")).hexdigest()[:8]
    return Reply(text=f"scripted {digest}", prompt_tokens=max(1, len(str(user).split())), completion_tokens=2)


class ScriptedOpenAIServer:
    """Context manager: `with ScriptedOpenAIServer() as s: s.base_url ...`."""

    def __init__(
        self, responder: Callable[[dict[str, Any]], Action] = echo_responder, model: str = "scripted-model", port: int = 0
    ):
        self.responder = responder
        self.model = model
        self.queue: deque[Action] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: seconds spent inside request handling (for harness-overhead benchmarks)
        self.server_seconds = 0.0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        #: 0 until the first start picks a free port; a restart binds the same one
        self._port = port
        #: open client connections, cut by `kill`
        self._connections: set[socket.socket] = set()

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> ScriptedOpenAIServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def setup(self) -> None:
                super().setup()
                # no Nagle: a small response must not wait for the client's delayed ACK
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server._connections.add(self.connection)

            def handle(self) -> None:
                try:
                    super().handle()
                except OSError:  # a client killed mid-request (SIGKILL in a soak): nothing left to answer
                    self.close_connection = True

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:  # the connection was cut (kill, Drop) before the last flush
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    server._send_json(self, 200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    server._send_json(self, 404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    action = server.queue.popleft() if server.queue else None
                if action is None:
                    action = server.responder(body)
                try:
                    server._perform(self, action, body)
                except OSError:  # the client gave up (timeout) or the connection was cut
                    self.close_connection = True
                finally:
                    with server._lock:
                        server.server_seconds += time.perf_counter() - started

        # ThreadingHTTPServer sets SO_REUSEADDR: a restart binds the port again at once
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def kill(self) -> None:
        """Die as a crashed server does: stop listening and cut every open connection.
        A client then sees a reset or a refused connection until `restart`."""
        self.stop()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restart(self) -> None:
        """Listen again on the same port (the base URL a client holds stays valid)."""
        if self._httpd is None:
            self.start()

    def outage(self, seconds: float) -> threading.Thread:
        """`kill` now, `restart` after `seconds`, without blocking the caller (a responder may call it)."""

        def down_then_up() -> None:
            self.kill()
            time.sleep(seconds)
            self.restart()

        thread = threading.Thread(target=down_then_up, daemon=True)
        thread.start()
        return thread

    @property
    def up(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        assert self._port, "the server has not started"
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *actions: Action) -> None:
        with self._lock:
            self.queue.extend(actions)

    # -- responses -------------------------------------------------------------------
    def _perform(self, handler: BaseHTTPRequestHandler, action: Action, body: dict[str, Any]) -> None:
        if isinstance(action, Drop):
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if isinstance(action, Stall):
            handler.close_connection = True
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(action.head) + 4096))  # promised, never sent
            handler.end_headers()
            handler.wfile.write(action.head)
            time.sleep(action.seconds)
            return
        if isinstance(action, Hang):
            time.sleep(action.seconds)
            if action.then is None:
                return
            action = action.then
        if isinstance(action, Status):
            self._send_json(
                handler,
                action.code,
                {"error": {"message": action.message, "type": "scripted", "code": str(action.code)}},
                action.headers,
            )
        elif isinstance(action, Raw):
            handler.send_response(action.status)
            handler.send_header("Content-Type", action.content_type)
            handler.send_header("Content-Length", str(len(action.body)))
            handler.end_headers()
            handler.wfile.write(action.body)
        else:
            self._send_json(handler, 200, self._completion(action, body))

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": reply.model or body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
            },
        }

    @staticmethod
    def _send_json(handler: BaseHTTPRequestHandler, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        # headers and body leave in one write
        handler._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
        handler._headers_buffer.append(data)  # type: ignore[attr-defined]
        handler.flush_headers()

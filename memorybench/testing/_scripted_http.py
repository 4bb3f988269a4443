"""The HTTP plumbing the scripted servers share (Chat Completions and Responses).

One base class: a threaded HTTP/1.1 server on 127.0.0.1 without Nagle delays, a queue of
scripted actions consumed in order (the `responder` decides when it is empty), every request
body and its headers recorded, replies sent in one write, and the fault controls a test
needs: `Drop` and `Stall` as actions, `kill` / `restart` / `outage` of the whole server on
the same port. Each server adds only what its API answers (`_reply`).
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

A = TypeVar("A")


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
class Hang:
    """Sleep before answering `then` (None: no answer at all, past any client timeout)."""

    seconds: float
    then: Any = None


class ScriptedHTTPServer(Generic[A]):
    """Context manager: `with Server() as s: s.base_url ...`; subclasses implement `_reply`."""

    #: a request body that is not JSON is recorded as {"_raw": its text}, cut to this many bytes (None: whole)
    raw_body_bytes: int | None = None

    def __init__(self, responder: Callable[[dict[str, Any]], A], model: str = "scripted-model", port: int = 0) -> None:
        self.responder = responder
        self.model = model
        self.queue: deque[A | Drop | Stall | Hang] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        #: seconds spent inside request handling (for harness-overhead benchmarks)
        self.server_seconds = 0.0
        self._lock = threading.Lock()
        self._count = 0
        self._httpd: ThreadingHTTPServer | None = None
        #: 0 until the first start picks a free port; a restart binds the same one
        self._port = port
        #: open client connections, cut by `kill`
        self._connections: set[socket.socket] = set()

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self):  # noqa: ANN204  (the subclass's own type)
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        # ThreadingHTTPServer sets SO_REUSEADDR: a restart binds the port again at once
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self._port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

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

    def script(self, *actions: A | Drop | Stall) -> None:
        with self._lock:
            self.queue.extend(actions)

    # -- requests --------------------------------------------------------------------
    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path.rstrip("/").endswith("/models"):
            self.send_json(handler, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
        else:
            self.send_json(handler, 404, {"error": {"message": "not found"}})

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.perf_counter()
        raw = handler.rfile.read(int(handler.headers.get("Content-Length", "0")))
        if handler.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = {"_raw": raw[: self.raw_body_bytes].decode("utf-8", "replace")}
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            self._count += 1
            number = self._count
            action = self.queue.popleft() if self.queue else None
        if action is None:
            action = self.responder(body)
        try:
            if isinstance(action, Hang):
                time.sleep(action.seconds)
                action = action.then  # None: no answer at all
            if isinstance(action, Drop):
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
            elif isinstance(action, Stall):
                self._stall(handler, action)
            elif action is not None:
                self._reply(handler, action, body, number)
        except OSError:  # the client gave up (timeout) or the connection was cut
            handler.close_connection = True
        finally:
            with self._lock:
                self.server_seconds += time.perf_counter() - started

    def _reply(self, handler: BaseHTTPRequestHandler, action: A, body: dict[str, Any], number: int) -> None:
        """Answer `action` to the `number`-th request (1-based), whose JSON is `body`."""
        raise NotImplementedError

    @staticmethod
    def _stall(handler: BaseHTTPRequestHandler, action: Stall) -> None:
        handler.close_connection = True
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(action.head) + 4096))  # promised, never sent
        handler.end_headers()
        handler.wfile.write(action.head)
        time.sleep(action.seconds)

    # -- replies ---------------------------------------------------------------------
    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler,
        code: int,
        data: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        # headers and body leave in one write
        handler._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
        handler._headers_buffer.append(data)  # type: ignore[attr-defined]
        handler.flush_headers()

    @classmethod
    def send_json(
        cls, handler: BaseHTTPRequestHandler, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        cls.send(handler, code, json.dumps(payload).encode("utf-8"), headers=headers)


def _handler_for(server: ScriptedHTTPServer[Any]) -> type[BaseHTTPRequestHandler]:
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
            server._get(self)

        def do_POST(self) -> None:
            server._post(self)

    return Handler

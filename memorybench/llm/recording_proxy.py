"""A recording OpenAI-compatible endpoint on 127.0.0.1 for a wrapped third-party library.

A real memory system (mem0's library, Graphiti, A-MEM) makes its own model and embedding
calls through the openai SDK (or LiteLLM). Pointed at this endpoint (`base_url`), every
such call passes through handlers of ours, which forward it to the run's writer model
and embedder and journal it (`memorybench.memory.library_endpoint`). This module is the
HTTP side only: it knows two routes and nothing of packs.

    with RecordingProxy(chat=handle_chat, embed=handle_embed) as proxy:
        library = Library(base_url=proxy.base_url, api_key=proxy.api_key)

- `POST /v1/chat/completions` -> `chat(body) -> (status, reply)`
- `POST /v1/embeddings`       -> `embed(body) -> (status, reply)`

Anything else (another path, another method, a streamed request) is answered with an
OpenAI-style error and counted in `refused`, never forwarded. A handler that raises is
answered 500 with its message, and the exception is kept (`errors`) so the caller can
re-raise the real cause after the library has swallowed or wrapped the 500. Requests are
served one at a time (a lock): the writer's and embedder's counters are not thread-safe,
and a library's build is sequential anyway. Handler threads are named
`memorybench-recording-proxy`, so a socket audit can tell the proxy's own upstream
connections from the library's.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]

#: the name of every thread that serves a request (see the module doc)
THREAD_NAME = "memorybench-recording-proxy"
ROUTES = {"/v1/chat/completions": "chat", "/v1/embeddings": "embed"}


def error_body(message: str, code: str = "memorybench_proxy") -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


class RecordingProxy:
    """Context manager: a threaded HTTP server on a free port of 127.0.0.1."""

    def __init__(self, *, chat: Handler, embed: Handler) -> None:
        self._handlers = {"chat": chat, "embed": embed}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        #: a per-process token the library must send as its API key (nothing else can use the port)
        self.api_key = "mb-proxy-" + secrets.token_hex(12)
        #: requests answered per route
        self.seen: dict[str, int] = {"chat": 0, "embed": 0}
        #: requests refused: (method, path, reason)
        self.refused: list[tuple[str, str, str]] = []
        #: exceptions raised by a handler, oldest first
        self.errors: list[BaseException] = []

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the proxy is not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RecordingProxy:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=THREAD_NAME + "-accept", daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # -- one request -------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        route = ROUTES.get(path.split("?", 1)[0].rstrip("/"))
        if method != "POST" or route is None:
            return self._refuse(method, path, f"{method} {path} is not served here (only POST {', '.join(ROUTES)})", 404)
        if headers.get("Authorization", "") != f"Bearer {self.api_key}":
            return self._refuse(method, path, "wrong or missing API key", 401)
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except ValueError:
            return self._refuse(method, path, "the request body is not JSON", 400)
        if not isinstance(body, dict):
            return self._refuse(method, path, "the request body is not a JSON object", 400)
        if body.get("stream"):
            return self._refuse(method, path, "streamed requests are not supported by the recording endpoint", 400)
        with self._lock:
            self.seen[route] += 1
            try:
                return self._handlers[route](body)
            except Exception as e:  # the library sees a 500; the caller re-raises the cause
                self.errors.append(e)
                return 500, error_body(f"{type(e).__name__}: {' '.join(str(e).split())[:500]}", "upstream_failed")

    def _refuse(self, method: str, path: str, reason: str, status: int) -> tuple[int, dict[str, Any]]:
        self.refused.append((method, path, reason))
        return status, error_body(reason, "refused")


def _handler_class(proxy: RecordingProxy) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
            return  # no access log on stderr

        def _serve(self) -> None:
            threading.current_thread().name = THREAD_NAME
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, reply = proxy.handle(self.command, self.path, self.headers, raw)
            data = json.dumps(reply).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = _serve
        do_GET = _serve
        do_PUT = _serve
        do_DELETE = _serve

    return _Handler

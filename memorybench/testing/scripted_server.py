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

from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from memorybench.hashing import sha256_text
from memorybench.testing._scripted_http import Drop, Hang, ScriptedHTTPServer, Stall


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
class Raw:
    """Exact bytes as the body (malformed JSON, empty choices...)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


#: `Drop` and `Stall` (the shared fault actions) are accepted too
Action = Reply | Status | Hang | Stall | Drop | Raw


def echo_responder(body: dict[str, Any]) -> Reply:
    """A deterministic reply derived from the request: plumbing, not an answer."""
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    digest = sha256_text(str(user))[:8]
    return Reply(text=f"scripted {digest}", prompt_tokens=max(1, len(str(user).split())), completion_tokens=2)


class ScriptedOpenAIServer(ScriptedHTTPServer[Action]):
    """Context manager: `with ScriptedOpenAIServer() as s: s.base_url ...`."""

    def __init__(
        self, responder: Callable[[dict[str, Any]], Action] = echo_responder, model: str = "scripted-model", port: int = 0
    ) -> None:
        super().__init__(responder, model, port)

    # -- responses -------------------------------------------------------------------
    def _reply(self, handler: BaseHTTPRequestHandler, action: Action, body: dict[str, Any], number: int) -> None:
        if isinstance(action, Status):
            self.send_json(
                handler,
                action.code,
                {"error": {"message": action.message, "type": "scripted", "code": str(action.code)}},
                action.headers,
            )
        elif isinstance(action, Raw):
            self.send(handler, action.status, action.body, content_type=action.content_type)
        else:
            self.send_json(handler, 200, self._completion(action, body))

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


__all__ = ["Action", "Drop", "Hang", "Raw", "Reply", "ScriptedOpenAIServer", "Stall", "Status", "echo_responder"]

"""A scripted OpenAI Responses API server on 127.0.0.1 (`POST /v1/responses`, streaming SSE).

The Codex CLI speaks only the Responses API; this server stands in for the model in
tests and benchmarks of the agent harness, over real HTTP, against the real pinned CLI.
Its replies are plumbing (scripted or derived mechanically from the request), never
results. Like `scripted_server.ScriptedOpenAIServer`: tests queue actions that the next
requests consume in order; when the queue is empty the `responder` decides. Every request
body and its headers are recorded. The HTTP plumbing, and the fault controls (`Drop`,
`Stall`, `kill` / `restart` / `outage`), are the shared `_scripted_http.ScriptedHTTPServer`.

A reply streams `response.created`, one `response.output_item.done` per output item (an
assistant `message`, a `function_call` to the shell tool the request advertised, a
`web_search_call`), then `response.completed` with the usage: the events the pinned
Codex CLI reads (codex-rs `client.rs` / SSE parsing; checked against 0.171.0).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from memorybench.hashing import sha256_text
from memorybench.testing._scripted_http import Hang, ScriptedHTTPServer


@dataclass
class Usage:
    input_tokens: int = 10
    cached_tokens: int = 0
    output_tokens: int = 3
    reasoning_tokens: int = 0

    def payload(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass
class Message:
    """An assistant message: the agent's final answer for the turn."""

    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class Shell:
    """A call to the shell tool the request advertised (`exec_command`, `shell_command` or `shell`)."""

    command: str
    usage: Usage = field(default_factory=Usage)
    #: an assistant message sent before the call in the same response (what the agent says it is doing)
    preamble: str | None = None


@dataclass
class WebSearch:
    """A hosted `web_search_call` item followed by a message, in one response."""

    query: str
    then_text: str = "searched"
    usage: Usage = field(default_factory=Usage)


@dataclass
class Status:
    """An HTTP error status with an OpenAI-style error body."""

    code: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Failed:
    """A stream that ends with `response.failed`."""

    message: str = "scripted failure"
    code: str = "server_error"


@dataclass
class Raw:
    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"


Action = Message | Shell | WebSearch | Status | Failed | Hang | Raw


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last `user` message of a request's input."""
    for item in reversed(body.get("input") or []):
        if item.get("type") == "message" and item.get("role") == "user":
            return "".join(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))
    return ""


def function_outputs(body: dict[str, Any]) -> list[str]:
    """Every `function_call_output` text of a request's input, in order."""
    out = []
    for item in body.get("input") or []:
        if item.get("type") == "function_call_output":
            value = item.get("output")
            if isinstance(value, list):  # content items
                value = "".join(part.get("text", "") for part in value if isinstance(part, dict))
            elif isinstance(value, dict):
                value = value.get("content") or json.dumps(value)
            out.append(str(value))
    return out


def tool_names(body: dict[str, Any]) -> list[str]:
    """Names (or types, for hosted tools) of every tool a request offers, namespaces flattened."""
    names: list[str] = []

    def walk(tools: list[dict[str, Any]]) -> None:
        for tool in tools:
            names.append(str(tool.get("name") or tool.get("type")))
            if tool.get("tools"):
                walk(tool["tools"])

    walk(body.get("tools") or [])
    return names


def is_follow_up(body: dict[str, Any]) -> bool:
    """True when the request carries a tool result: the turn is past its first model call."""
    items = body.get("input") or []
    return bool(items) and items[-1].get("type") == "function_call_output"


def echo_responder(body: dict[str, Any]) -> Action:
    """A deterministic reply derived from the request: plumbing, not an answer."""
    digest = sha256_text(last_user_text(body))[:8]
    return Message(f"scripted {digest}")


class ScriptedResponsesServer(ScriptedHTTPServer[Action]):
    """Context manager: `with ScriptedResponsesServer() as s: s.base_url ...`."""

    raw_body_bytes = 2000

    def __init__(
        self, responder: Callable[[dict[str, Any]], Action] = echo_responder, model: str = "scripted-model", port: int = 0
    ) -> None:
        super().__init__(responder, model, port)

    # -- replies ---------------------------------------------------------------------
    def _reply(self, handler: BaseHTTPRequestHandler, action: Action, body: dict[str, Any], number: int) -> None:
        if isinstance(action, Status):
            payload = {"error": {"message": action.message, "type": "scripted", "code": str(action.code)}}
            self.send(handler, action.code, json.dumps(payload).encode(), headers=action.headers)
        elif isinstance(action, Raw):
            self.send(handler, action.status, action.body, content_type=action.content_type)
        else:
            try:
                data = self._stream(action, body, number)
            except RuntimeError as e:  # a script that does not fit the request
                self.send(handler, 500, json.dumps({"error": {"message": str(e), "type": "scripted"}}).encode())
                return
            self.send(handler, 200, data, content_type="text/event-stream")

    def _stream(self, action: Message | Shell | WebSearch | Failed, body: dict[str, Any], number: int) -> bytes:
        rid = f"resp_{number}"
        model = body.get("model") or self.model
        events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid, "model": model}}]
        if isinstance(action, Failed):
            events.append(
                {"type": "response.failed", "response": {"id": rid, "error": {"code": action.code, "message": action.message}}}
            )
            return _sse(events)
        items: list[dict[str, Any]] = []
        if isinstance(action, Shell):
            if action.preamble is not None:
                items.append(_message(action.preamble, number))
            items.append(_shell_call(body, action.command, f"call_{number}"))
        elif isinstance(action, WebSearch):
            items.append(
                {
                    "type": "web_search_call",
                    "id": f"ws_{number}",
                    "status": "completed",
                    "action": {"type": "search", "query": action.query},
                }
            )
            items.append(_message(action.then_text, number))
        else:
            items.append(_message(action.text, number))
        for index, item in enumerate(items):
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        events.append({"type": "response.completed", "response": {"id": rid, "model": model, "usage": action.usage.payload()}})
        return _sse(events)


def _message(text: str, number: int) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{number}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _shell_call(body: dict[str, Any], command: str, call_id: str) -> dict[str, Any]:
    names = tool_names(body)
    if "exec_command" in names:
        arguments: dict[str, Any] = {"cmd": command}
        name = "exec_command"
    elif "shell_command" in names:
        arguments, name = {"command": command}, "shell_command"
    elif "shell" in names:
        arguments, name = {"command": ["bash", "-c", command]}, "shell"
    else:
        raise RuntimeError(f"the request advertises no shell tool (tools: {names})")
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode("utf-8") for e in events)


__all__ = [
    "Action",
    "Failed",
    "Hang",
    "Message",
    "Raw",
    "ScriptedResponsesServer",
    "Shell",
    "Status",
    "Usage",
    "WebSearch",
    "echo_responder",
    "function_outputs",
    "is_follow_up",
    "last_user_text",
    "tool_names",
]

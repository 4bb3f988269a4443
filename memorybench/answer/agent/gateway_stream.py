"""The gateway's reading of a relayed Responses stream: the accounting events (response id,
model, usage, completion or failure) taken off the server-sent events as they pass,
incrementally, without copying the stream."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["WATCHED", "SSEWatch", "usage_fields"]

#: the stream events whose data the gateway reads (every other event is relayed unread)
WATCHED = (b"response.created", b"response.completed", b"response.failed", b"response.incomplete", b"error")


class SSEWatch:
    """Reads the accounting events off a relayed SSE stream, incrementally (bytes in, no copy out)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.response_id: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] | None = None
        self.completed = False
        self.error: str | None = None

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk.replace(b"\r\n", b"\n") if b"\r" in chunk else chunk
        while True:
            end = self.buffer.find(b"\n\n")
            if end < 0:
                return
            block, self.buffer = self.buffer[:end], self.buffer[end + 2 :]
            self._event(block)

    def close(self) -> None:
        if self.buffer.strip():
            self._event(self.buffer)
        self.buffer = b""

    def _event(self, block: bytes) -> None:
        name = None
        data: list[bytes] = []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                name = line[6:].strip()
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip())
        if not data or (name is not None and name not in WATCHED):
            return
        try:
            event = json.loads(b"\n".join(data))
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        response = event.get("response") if isinstance(event.get("response"), dict) else {}
        if kind in ("response.created", "response.completed", "response.failed", "response.incomplete"):
            self.response_id = response.get("id") or self.response_id
            self.model = response.get("model") or self.model
            if isinstance(response.get("usage"), dict):
                self.usage = response["usage"]
        if kind == "response.completed":
            self.completed = True
        elif kind == "response.failed":
            err = response.get("error") or {}
            self.error = str(err.get("message") or err.get("code") or "response.failed")
        elif kind == "response.incomplete":
            details = response.get("incomplete_details") or {}
            self.error = f"incomplete: {details.get('reason', 'unknown')}"
        elif kind == "error":
            self.error = str(event.get("message") or event.get("code") or "error event")


def usage_fields(usage: dict[str, Any] | None) -> dict[str, int]:
    u = usage or {}
    return {
        "input_tokens": int(u.get("input_tokens") or 0),
        "cached_tokens": int((u.get("input_tokens_details") or {}).get("cached_tokens") or 0),
        "output_tokens": int(u.get("output_tokens") or 0),
        "reasoning_tokens": int((u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0),
    }

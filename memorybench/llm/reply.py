"""What a Chat Completions reply must hold before anything is made of it, field by field.

A server that answers 200 may still send something that is not a completion: a body
that is not JSON, no choices, a `usage` that is a string, a `model` that is a number, a
`finish_reason` or `id` of the wrong type, a message with no text (`content: null`, or
only `tool_calls`). Each is a `BadReply` naming the field and what it held: the client
retries it like a server error, then fails in one line. Fields a reply may leave out
(usage, model, id, finish_reason, the token details) stay optional; unknown fields are
ignored, as every server adds its own.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

__all__ = ["BadReply", "CompletionReply", "EmptyReply", "parse_reply"]


class BadReply(Exception):
    """The server answered 200 with something that is not a usable completion."""


class EmptyReply(BadReply):
    """A well-formed completion with no text to use: `content` null or empty, or tool calls only."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PromptDetails(_Wire):
    cached_tokens: Optional[StrictInt] = Field(default=None, ge=0)


class CompletionDetails(_Wire):
    reasoning_tokens: Optional[StrictInt] = Field(default=None, ge=0)


class WireUsage(_Wire):
    prompt_tokens: Optional[StrictInt] = Field(default=None, ge=0)
    completion_tokens: Optional[StrictInt] = Field(default=None, ge=0)
    prompt_tokens_details: Optional[PromptDetails] = None
    #: memorybench's embedded server: prompt tokens restored from its prefill store
    restored_tokens: Optional[StrictInt] = Field(default=None, ge=0)
    completion_tokens_details: Optional[CompletionDetails] = None


class Message(_Wire):
    content: Optional[StrictStr] = None
    tool_calls: Optional[list[Any]] = None


class Choice(_Wire):
    message: Message
    finish_reason: Optional[StrictStr] = None


class CompletionReply(_Wire):
    id: Optional[StrictStr] = None
    model: Optional[StrictStr] = None
    choices: list[Choice] = Field(min_length=1)
    usage: Optional[WireUsage] = None

    @property
    def text(self) -> str:
        return self.choices[0].message.content or ""


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_reply(body: str) -> CompletionReply:
    """The reply in `body`, or `BadReply` naming the first field that is missing or of the wrong type."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as e:
        raise BadReply(f"body is not JSON ({e.msg}): {body[:80]!r}") from None
    if not isinstance(payload, dict):
        raise BadReply(f"body is not a JSON object: {body[:80]!r}")
    if not payload.get("choices"):
        raise BadReply("no choices in the completion")
    try:
        reply = CompletionReply.model_validate(payload)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(body)"
        raise BadReply(f"field {where} is {_shown(first.get('input'))}: {first.get('msg', 'invalid').lower()}") from None
    message = reply.choices[0].message
    if not message.content:
        calls = len(message.tool_calls or [])
        what = "content null" if message.content is None else "content empty"
        raise EmptyReply(f"no text in the reply ({what}{f', {calls} tool call(s)' if calls else ''})")
    return reply

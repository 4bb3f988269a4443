"""Typed records of one chat call: what was asked, every attempt, what came back."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field


class ChatRequest(BaseModel):
    """The canonical request; its sha256 is the response-cache key."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: tuple[dict[str, str], ...]
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    stop: Optional[tuple[str, ...]] = None

    def canonical_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class Attempt(BaseModel):
    """One HTTP attempt of a call; retries stay attached to the call they belong to."""

    n: int
    latency_s: float
    #: HTTP status when the server answered, else null
    status: Optional[int] = None
    #: the error class and message when the attempt failed (secrets redacted)
    error: Optional[str] = None
    #: the wait before the next attempt, and whether it came from Retry-After
    wait_s: Optional[float] = None
    retry_after: bool = False


class ChatResult(BaseModel):
    text: str
    model_requested: str
    model_answered: Optional[str] = None
    finish_reason: Optional[str] = None
    response_id: Optional[str] = None
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    attempts: list[Attempt] = Field(default_factory=list)
    cache_hit: bool = False
    #: USD; null when the model has no entry in the price table
    cost_usd: Optional[float] = None
    request_sha256: str

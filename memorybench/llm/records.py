"""Typed records of one chat call (what was asked, every attempt, what came back) and of
the model behind it (`ModelIdentity`: which model was asked for and which answered)."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import ConfigDict, Field

from memorybench.hashing import canonical_json, canonical_object, sha256_text
from memorybench.records import Record


class ChatRequest(Record):
    """The canonical request; its sha256 is the response-cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    messages: tuple[dict[str, str], ...]
    temperature: float
    #: None: no limit is sent (the server's own)
    max_tokens: Optional[int]
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    stop: Optional[tuple[str, ...]] = None

    def messages_json(self) -> str:
        """The messages as `canonical_json` encodes them: the bulk of both the hash and the body."""
        return canonical_json(list(self.messages))

    def canonical_json(self, messages_json: str | None = None) -> str:
        """`canonical_json(self.model_dump(mode="json"))`, built from the fields (tuples as
        lists) around the messages encoded once (`messages_json`, reused for the wire body):
        a dump copies the whole prompt, and a second encoding of an 80 kB prompt costs about
        0.3 ms a call (tests/llm/test_client.py checks the bytes against the dump's)."""
        return canonical_object(
            {
                "model": canonical_json(self.model),
                "messages": self.messages_json() if messages_json is None else messages_json,
                "temperature": canonical_json(self.temperature),
                "max_tokens": canonical_json(self.max_tokens),
                "seed": canonical_json(self.seed),
                "response_format": canonical_json(self.response_format),
                "stop": canonical_json(list(self.stop) if self.stop is not None else None),
            }
        )

    def sha256(self, messages_json: str | None = None) -> str:
        return sha256_text(self.canonical_json(messages_json))


class Usage(Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    #: prompt tokens the embedded model restored from the on-disk prefill store instead of
    #: evaluating them (null: none; a reader trace omits it then)
    restored_tokens: Optional[int] = None


class Attempt(Record):
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


class ChatResult(Record):
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
    #: why the reply's text is not an answer although the call succeeded (`empty reply: ...`
    #: after its second ask); null for a usable reply
    problem: Optional[str] = None


class ModelIdentity(Record):
    """One model a run used (reader, writer, embedder, judge, agent): as requested and as answered."""

    role: str
    provider: str
    requested: Optional[str]
    answered: list[str] = Field(default_factory=list)
    base_url: Optional[str] = None
    local: bool = False
    #: provider=local: the GGUF file's sha256 and the package it came from
    weights: Optional[dict[str, Any]] = None

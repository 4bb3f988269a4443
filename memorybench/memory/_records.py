"""Records the memory methods write under `memory/` in a pack, each with a `schema`.

Every row of a journal carries `sample_id`: a resumed run keeps a conversation's rows
only when its memory manifest row (the commit) exists, and rows of a question
(`question_id`) only when that question was answered.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import ConfigDict, Field

from memorybench.llm.records import ChatResult
from memorybench.pack.schemas import Record


class _Row(Record):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class WriterRequest(_Row):
    model: str
    messages: list[dict[str, str]]
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    stop: Optional[list[str]] = None


class WriterCall(_Row):
    """One writer call (`memory/writer/calls.jsonl`): what was sent, what came back, whether it parsed."""

    schema_: Literal["writer_call.v1"] = Field("writer_call.v1", alias="schema")
    sample_id: str
    method: str
    #: the task (summary, graph, extract, update, conflict...): the memory.prompts role
    role: str
    #: 1-based position among this conversation's writer calls
    call: int
    #: `first`, or `repair`: the one retry after a reply that did not parse or validate
    attempt: Literal["first", "repair"]
    session: Optional[int] = None
    speaker: Optional[str] = None
    template: str
    template_sha256: str
    request: WriterRequest
    response: ChatResult
    ok: bool
    error: Optional[str] = None


class WriterFailure(_Row):
    """A writer task given up after its repair attempt; the method skipped its input visibly."""

    schema_: Literal["writer_failure.v1"] = Field("writer_failure.v1", alias="schema")
    sample_id: str
    method: str
    role: str
    session: Optional[int] = None
    speaker: Optional[str] = None
    #: the turns whose memory was skipped
    sources: list[str] = Field(default_factory=list)
    error: str
    #: what the method did instead
    action: str


class BuildCost(_Row):
    """What building one conversation's memory cost, apart from answering (`memory/build_cost.jsonl`)."""

    schema_: Literal["memory_build_cost.v1"] = Field("memory_build_cost.v1", alias="schema")
    sample_id: str
    method: str
    #: wall-clock seconds of the build (writer and embedder time included)
    latency_s: float
    #: writer calls, repairs, failures, tokens, latency and cost (null: no writer)
    writer: Optional[dict[str, Any]] = None
    #: embedder requests, texts, cache hits, tokens, seconds and cost (null: no embedder)
    embedder: Optional[dict[str, Any]] = None
    #: writer + embedder USD; null when a price is unknown
    cost_usd: Optional[float] = None
    item_count: int
    #: cl100k_base tokens of the question-independent memory text (null for retrieval)
    memory_tokens: Optional[int] = None


class StoredMemory(_Row):
    """A conversation's built memory (`memory/<method>/<sample_id>.json`): items, text, state."""

    schema_: Literal["memory_store.v1"] = Field("memory_store.v1", alias="schema")
    sample_id: str
    method: str
    items: list[dict[str, Any]]
    text: Optional[str] = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)


class Retrieval(_Row):
    """What a question-dependent method handed the reader for one question (`memory/<method>/retrievals.jsonl`)."""

    schema_: Literal["memory_retrieval.v1"] = Field("memory_retrieval.v1", alias="schema")
    question_id: str
    sample_id: str
    method: str
    #: retrieved items, best first: {item_id, score} (plus method-specific fields)
    hits: list[dict[str, Any]]
    memory_tokens: int
    #: items left out by budget.max_memory_tokens, and whether the text itself was cut
    dropped_by_budget: int = 0
    cut_by_budget: bool = False
    #: the question's embedding (embedder usage for this question), when the method embeds it
    query_embedding: Optional[dict[str, Any]] = None
    extra: dict[str, Any] = Field(default_factory=dict)

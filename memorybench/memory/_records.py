"""Records the memory methods write under `memory/` in a pack, each with a `schema`.

Every row of a journal carries `sample_id`: a resumed run keeps a conversation's rows
only when its memory manifest row (the commit) exists, and rows of a question
(`question_id`) only when that question was answered.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import ConfigDict, Field

from memorybench.llm.records import ChatResult
from memorybench.records import Record


class WriterRequest(Record):
    model: str
    messages: list[dict[str, str]]
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    response_format: Optional[dict[str, Any]] = None
    stop: Optional[list[str]] = None


class WriterCall(Record, schema="writer_call.v1"):
    """One writer call (`memory/writer/calls.jsonl`): what was sent, what came back, whether it parsed."""

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


class WriterFailure(Record, schema="writer_failure.v1"):
    """A writer task given up after its repair attempt; the method skipped its input visibly."""

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


class BuildCost(Record, schema="memory_build_cost.v1"):
    """What building one conversation's memory cost, apart from answering (`memory/build_cost.jsonl`)."""

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


class StoredMemory(Record, schema="memory_store.v1"):
    """A conversation's built memory (`memory/<method>/<sample_id>.json`): items, text, state."""

    sample_id: str
    method: str
    items: list[dict[str, Any]]
    text: Optional[str] = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)


class Retrieval(Record, schema="memory_retrieval.v1"):
    """What a question-dependent method handed the reader for one question (`memory/<method>/retrievals.jsonl`)."""

    question_id: str
    sample_id: str
    method: str
    #: retrieved items, best first: {item_id, score} (plus method-specific fields)
    hits: list[dict[str, Any]]
    memory_tokens: int
    #: items left out by budget.max_memory_tokens (v3: or by budget.top_k), and whether the text itself was cut
    dropped_by_budget: int = 0
    cut_by_budget: bool = False
    #: the question's embedding (embedder usage for this question), when the method embeds it
    query_embedding: Optional[dict[str, Any]] = None
    extra: dict[str, Any] = Field(default_factory=dict)


class RetrievalV2(Retrieval, schema="memory_retrieval.v2"):
    """v2: the search's wall-clock time, as the papers measure retrieval (Mem0's Table 2)."""

    #: seconds from the question to the memory text the reader gets: the method's search
    #: (its query embedding and any library call included) and the fit to the budget; the
    #: reader's answer is not in it (reader/traces.jsonl has that call's latency)
    latency_s: float


class RetrievalV3(RetrievalV2, schema="memory_retrieval.v3"):
    """v3: what the system returned, against the run's retrieval budget (`memorybench.pack.budget`).

    The wrapper hands the reader at most `top_k` of the hits, best first, then those that fit
    `budget.max_memory_tokens`: `hits` are those kept, and `dropped_by_budget` counts the rest
    (left out by either), so `returned == len(hits) + dropped_by_budget`, as in v2."""

    #: the hits the system returned for the question, before the wrapper's budget
    returned: int
    #: `budget.top_k`, the item budget applied (null: none; the method's own memory.top_k)
    top_k: Optional[int] = None
    #: the items of the conversation's built memory: `returned >= memory_items` on a memory
    #: of more than a handful of items is the whole memory handed over (a retrieval bypass)
    memory_items: int


# -- the stores of the writer methods (validated by `memorybench verify`, row by row) ---------
class GraphNode(Record, schema="graph_node.v1"):
    """`memory/graph/nodes.jsonl`: one entity of our single-writer graph."""

    sample_id: str
    node_id: str
    name: str
    type: str
    #: the sessions it was named in, in the order they were read
    sessions: list[int]


class GraphEdge(Record, schema="graph_edge.v1"):
    """`memory/graph/edges.jsonl`: one relation, merged over the sessions that state it."""

    sample_id: str
    edge_id: str
    source: str
    relation: str
    target: str
    sessions: list[int]
    #: each session's date, beside `sessions`
    dates: list[str]
    #: the times the writer gave for it (free text), without repeats
    when: list[str]


class Mem0Operation(Record, schema="mem0_operation.v1"):
    """`memory/mem0*/operations.jsonl`: one step of Mem0's two phases (EXTRACT, ADD, UPDATE,
    DELETE, NOOP, FAILED, and mem0g's RELATION_*); each event carries its own fields."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    sample_id: str
    event: str
    session: int
    sources: list[str]


class Mem0gRelation(Record, schema="mem0g_relation.v1"):
    """`memory/mem0g/relations.jsonl`: one relation of Mem0^g's graph; obsolete ones are kept, marked."""

    sample_id: str
    id: str
    source: str
    relation: str
    target: str
    when: Optional[str] = None
    created: str
    session: int
    sources: list[str]
    valid: bool
    obsolete_since: Optional[str] = None
    obsoleted_by: Optional[list[str]] = None


class OpenAIMemoryUpdate(Record, schema="openai_memory_update.v1"):
    """`memory/openai_memory/updates.jsonl`: one speaker's saved facts before and after a session."""

    sample_id: str
    session: int
    speaker: str
    before: list[str]
    after: list[str]
    added: list[str]
    removed: list[str]
    dropped_over_max_facts: int


class LibraryEmbedCall(Record, schema="library_embed_call.v1"):
    """`memory/<method>/embed_calls.jsonl`: one embedding request a wrapped library sent."""

    sample_id: str
    method: str
    #: set while a question is answered (the library embeds the query); null while building
    question_id: Optional[str] = None
    #: 1-based position among this conversation's embedding requests
    call: int
    model_requested: Optional[str] = None
    texts: list[str]
    #: texts the embedder's cache answered (no model call)
    cache_hits: int = 0
    #: tokens billed by the embedder's provider (0 for a local model)
    tokens: int = 0
    cost_usd: Optional[float] = 0.0
    latency_s: float = 0.0
    dimensions: int
    error: Optional[str] = None


class LibraryReport(Record, schema="library_report.v1"):
    """`memory/<method>/library_reports.jsonl`: what a wrapped library reported itself (a log
    record at WARNING or above from its own loggers, or a line it printed) while
    memorybench's recording endpoint served it. The endpoint's check of a reply is not the
    library's parse: a reply can be valid JSON to us and refused by the library (a raw
    control character inside a string, for a library that parses strictly), and only the
    library says so."""

    sample_id: str
    method: str
    #: set while a question is answered; null while building
    question_id: Optional[str] = None
    #: the conversation's writer call the report came after (0: before any call of the scope)
    call: int
    #: that call's task (`<method>:<task>`), null before any call
    role: Optional[str] = None
    #: where the library said it: `log <logger> <LEVEL>` or `stdout`
    source: str
    #: the library's own words (with its exception's, where the record carried one)
    message: str
    #: a failure of the library's work (a record at or above its logger's failure level, a
    #: printed line), or a remark (a warning below it: an optional package missing, say)
    failure: bool
    #: whether this report made that writer task count as failed: the first report of a
    #: build call that had not already failed (a task counts once, however many lines it
    #: causes; a question-time report is journaled, never a writer task)
    counted: bool

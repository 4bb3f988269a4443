"""Records the agent harness writes under `agent/` in a pack, each with a `schema` version.

Journal rows carry `question_id` (work for one question) or only `sample_id` (a
conversation's ingest pass), so a resumed run keeps exactly the rows of finished work
(RunPack.resume). A row of conversation-level work never has a `question_id` key.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from memorybench.pack.schemas import SlotValue
from memorybench.records import Record

Phase = Literal["answer", "ingest"]


class _Row(Record):
    def row(self) -> dict[str, Any]:
        """The JSON object for a journal line: `schema` first; a null `question_id` is left out."""
        data = self.model_dump(mode="json", by_alias=True)
        if data.get("question_id") is None:
            data.pop("question_id", None)
        return data


class AgentEvent(_Row, schema="agent_event.v1"):
    """One line of `codex exec --json` output, as printed, wrapped with where it belongs."""

    question_id: Optional[str] = None
    sample_id: str
    phase: Phase
    #: 0-based line number within this codex process's output
    seq: int
    #: the parsed event; a line that was not JSON is kept as {"unparsed": LINE}
    event: dict[str, Any]


class AgentStep(_Row, schema="agent_step.v1"):
    """One normalized action of the agent (a tool call), in the order the CLI reported them."""

    question_id: Optional[str] = None
    sample_id: str
    phase: Phase
    #: 1-based position within this question's (or ingest pass's) steps
    step: int
    item_id: Optional[str] = None
    #: read | search | list | write | command | file_change | mcp | web_search
    kind: str
    status: Optional[str] = None
    command: Optional[str] = None
    exit_code: Optional[int] = None
    #: files named by a read/search/list command (relative to the workspace when inside it)
    reads: list[str] = Field(default_factory=list)
    #: files written by a redirection, tee, cp/mv/touch..., or a file_change item
    writes: list[str] = Field(default_factory=list)
    #: session files among reads
    session_files: list[str] = Field(default_factory=list)
    #: dia_ids of this conversation that appear in what the step printed (what the agent saw)
    dia_ids: list[str] = Field(default_factory=list)
    #: a path outside the workspace was named
    outside_workspace: bool = False
    server: Optional[str] = None
    tool: Optional[str] = None
    query: Optional[str] = None


class AgentTask(Record):
    """The task sent on stdin, kept as template + slot values (+ footer) like a reader request."""

    template: str
    template_sha256: str
    slots: dict[str, SlotValue]
    #: the persist footer appended to the filled template (persist on)
    footer: Optional[str] = None
    footer_sha256: Optional[str] = None


class AgentTraceV1(_Row, schema="agent_trace.v1"):
    """One `codex exec` process, as packs written before workspaces were checked hold it
    (read, never written; `AgentTrace` is the current version)."""

    question_id: Optional[str] = None
    sample_id: str
    phase: Phase
    mode: str
    persist: bool
    sandbox: str
    model: str
    provider: str
    base_url: str
    codex_version: str
    #: completed | timeout | failed | no_answer
    status: str
    #: the final agent message, stripped ("" unless status is completed)
    answer: str
    exit_code: Optional[int] = None
    error: Optional[str] = None
    #: `error` items and top-level `error` events: warnings, not failures
    warnings: list[str] = Field(default_factory=list)
    #: summed over the process's turn.completed events (input, cached input, output, reasoning output...)
    usage: dict[str, int] = Field(default_factory=dict)
    turns: int = 0
    wall_s: float
    timeout_s: float
    started_at: str
    ended_at: str
    thread_id: Optional[str] = None
    agent_task_sha256: str
    #: prompt_injected: sha256 of the filled reader template (the reader's user message)
    reader_payload_sha256: Optional[str] = None
    task: AgentTask
    events: int = 0
    steps: int = 0
    notes_before_sha256: Optional[str] = None
    notes_after_sha256: Optional[str] = None
    #: files outside memory/ the agent changed (persist on), put back as written before the next question
    workspace_restored: list[str] = Field(default_factory=list)
    stderr_tail: Optional[str] = None


class AgentTrace(AgentTraceV1, schema="agent_trace.v2"):
    """One `codex exec` process: what it was asked, how it ended, what it cost, and what it
    left in its workspace that the harness refused to follow (v2: `workspace_findings`)."""

    #: after the process: each link, FIFO, socket or device the agent left, each file or folder of the
    #: harness's it turned into another type, each file hard-linked from outside, notes cut at the size
    #: bound, one line per name (names shown as Python's ascii() writes them when not printable);
    #: none of it was followed or read. Non-empty flags the row; empty: nothing found
    workspace_findings: list[str] = Field(default_factory=list)


class Budget(Record):
    """A question's model budget as the gateway enforced it (null: no limit of that kind)."""

    max_requests: Optional[int] = None
    max_input_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None
    max_total_tokens: Optional[int] = None
    #: config (answerer.budget.max_*) | reader (answerer.budget.match_reader: the reader's prompt tokens + max_tokens)
    source: str = "config"
    #: match_reader: the reader's prompt tokens for this question (system + user message), its max_tokens, the tokenizer
    reader_prompt_tokens: Optional[int] = None
    reader_max_tokens: Optional[int] = None
    tokenizer: Optional[str] = None

    def limits(self) -> dict[str, int]:
        return {k: v for k, v in self.model_dump().items() if k.startswith("max_") and v is not None}


class GatewaySummary(Record):
    """One process's model requests as the gateway counted them (rows: agent/requests.jsonl)."""

    #: requests forwarded upstream (one row each)
    requests: int
    #: requests refused with the budget error (not forwarded)
    refused: int = 0
    #: the budget that refused one, and why ("max_requests=2 (2 requests made)"); null: none was hit
    budget_exceeded: Optional[str] = None
    #: upstream retries (429, 5xx, connection errors) the gateway made, summed over the requests
    retries: int = 0
    #: summed over the requests' `response.completed` usage, in the CLI's own keys
    #: (input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens)
    usage: dict[str, int] = Field(default_factory=dict)
    #: whether `usage` equals the CLI's `turn.completed` usage (the trace's `usage`); null: the CLI
    #: reported none (its turn failed, e.g. on the budget error), so there was nothing to check against
    usage_matches_cli: Optional[bool] = None
    #: what differs when it does not ("input_tokens: gateway 120, cli 100")
    mismatch: Optional[str] = None
    #: model requests that arrived while no work was open (not forwarded; should be 0)
    unattributed: int = 0
    #: requests forwarded whose reply had not ended when the process did (killed at its timeout): no row, usage unknown
    in_flight: int = 0
    #: requests the gateway refused for their endpoint, path or body encoding (no budget could count them),
    #: first few as "METHOD path"; none is forwarded, and any is a finding in agent/comparison.json
    not_forwarded: list[str] = Field(default_factory=list)
    budget: Optional[Budget] = None


class AgentRequest(_Row, schema="agent_request.v1"):
    """One model request of a Codex process, as the memorybench gateway forwarded it. Hashes and
    lengths only: the request's input items and the reply text are kept only with answerer.audit.raw."""

    run_id: str
    question_id: Optional[str] = None
    sample_id: str
    phase: Phase
    #: 1-based position among this process's forwarded requests
    index: int
    started_at: str
    #: the upstream's HTTP status (null: unreachable after the retries)
    upstream_status: Optional[int] = None
    response_id: Optional[str] = None
    model_requested: Optional[str] = None
    model_answered: Optional[str] = None
    #: from `response.completed` usage (0 when the reply had none)
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    #: the reply ended with `response.completed`
    completed: bool
    error: Optional[str] = None
    #: seconds from the request reaching the gateway to the last byte relayed, and to the upstream's first byte
    latency_s: float
    first_byte_s: Optional[float] = None
    #: upstream attempts that were retried (429, 5xx, connection errors) and their statuses (null: no connection)
    retries: int = 0
    retry_statuses: list[Optional[int]] = Field(default_factory=list)
    #: sha256 and length of the request's `input` items (canonical JSON: sorted keys, no spaces, UTF-8)
    request_sha256: str
    request_bytes: int
    #: sha256 and length of the reply body as relayed (the SSE stream)
    reply_sha256: Optional[str] = None
    reply_bytes: int = 0
    #: the `max_output_tokens` the gateway set to keep within an output or total budget
    max_output_tokens_cap: Optional[int] = None
    #: the CLI sent this request's input again after request N's reply failed
    repeat_of: Optional[int] = None
    #: the CLI hung up before the reply was relayed whole (the gateway read it to the end for the accounting)
    client_gone: bool = False
    #: answerer.audit.raw only: the request body and the reply text, as sent
    raw_request: Optional[dict[str, Any]] = None
    raw_reply: Optional[str] = None


class AgentRequestV2(AgentRequest, schema="agent_request.v2"):
    """v2: the seconds the gateway waited before each retry, as `retry_statuses` lists the
    statuses (Retry-After, an HTTP date included, when the upstream asked; else full jitter)."""

    #: one per retry, in order: seconds slept before resending
    retry_waits_s: list[float] = Field(default_factory=list)
    #: one per retry: the wait was the upstream's `Retry-After` (else drawn by our backoff)
    retry_after: list[bool] = Field(default_factory=list)


class AgentTraceV3(AgentTrace, schema="agent_trace.v3"):
    """v3: the gateway's count of the process's model requests and the budget it enforced;
    status `budget_exceeded` (the answer is the partial one the agent had given)."""

    gateway: Optional[GatewaySummary] = None


class NotesRow(_Row, schema="agent_notes.v1"):
    """The notes ledger: memory/notes.md after an ingest pass or after each question (persist on)."""

    question_id: Optional[str] = None
    sample_id: str
    phase: Phase
    notes_sha256: str
    bytes: int
    #: the snapshot in the pack
    path: str
    changed: bool


class AgentRecall(_Row, schema="agent_recall.v1"):
    """Computed after the run from the stored trajectory and the gold evidence (never shown to the agent)."""

    question_id: str
    sample_id: str
    evidence: list[str]
    #: evidence dia_ids that appeared in what the agent's steps printed
    found: list[str]
    #: len(found) / len(evidence); null when the question has no evidence ids or the mode has no files
    memory_recall: Optional[float] = None
    #: 1-based step that first printed an evidence dia_id; null if none did
    hop_to_evidence: Optional[int] = None
    steps: int


class AgentComparison(Record, schema="agent_comparison.v1"):
    """Whether this agent run can be set beside reader runs, and why not."""

    comparable: bool
    reasons: list[str]
    mode: str
    persist: bool
    model: str
    codex_version: str
    questions: int
    completed: int
    timeouts: int
    failures: int
    no_answer: int
    questions_with_web_search: int
    questions_with_mcp_calls: int
    token_budget: Optional[int] = None
    usage_total: dict[str, int]
    #: the gateway's accounting (null for packs written before it): per question over the answer processes
    requests_per_question: Optional[dict[str, float]] = None
    tokens_per_question: Optional[dict[str, float]] = None
    budget_exceeded: int = 0
    #: the budget limits of the run (as configured; match_reader: derived per question from the reader)
    budget: Optional[dict[str, Any]] = None
    #: every process's requests were forwarded by the gateway and their usage sums equal the CLI's
    requests_accounted: Optional[bool] = None
    memory_recall_mean: Optional[float] = None
    recall_questions: int = 0
    hop_to_evidence_median: Optional[float] = None
    notes: list[str] = Field(default_factory=list)


class CliIdentity(Record, schema="agent_cli.v1"):
    """`agent/cli.json`: the pinned CLI and the settings every process of the run got."""

    package: str
    version: str
    reported: str
    binary_sha256: str
    argv: list[str]
    config_toml: str
    config_toml_sha256: str
    isolation: str
    #: the model provider's base URL in `config_toml` is the run's gateway (`<gateway>`: its port varies)
    gateway: Optional[str] = None

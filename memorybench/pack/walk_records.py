"""The typed records of one question's walk (`memorybench.pack.walk`): where each thing was
found in the pack (file and line), what the source row, the memory, the prompt, the model
calls, the agent's process and the judges' verdicts were. Nothing here reads a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AgentAction",
    "AgentProcess",
    "Attempt",
    "EvidenceTurn",
    "JudgeStep",
    "LineageItem",
    "Located",
    "MemoryStep",
    "ModelCall",
    "PromptStep",
    "RetrievalStep",
    "SourceRow",
    "Verdict",
    "Walk",
]


@dataclass(frozen=True)
class Located:
    """Where a record is: a pack file and its 1-based line (None: a whole file, or absent)."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"`{self.path}` line {self.line}" if self.line is not None else f"`{self.path}`"


@dataclass(frozen=True)
class EvidenceTurn:
    """One gold evidence turn of the source row (joined after answering; no model saw it as such)."""

    dia_id: str
    session: int | None
    date_time: str | None
    speaker: str | None
    #: `SPEAKER: TEXT [image: CAPTION]`, as the memory renders a turn; None when the id names no turn
    rendered: str | None


@dataclass(frozen=True)
class SourceRow:
    """The question's row in the dataset file the pack names."""

    data_path: str
    data_sha256: str | None
    sample_id: str
    qa_index: int
    question: str
    category: int
    category_name: str
    #: the raw `answer` (str, int or None) and `adversarial_answer`, from the prediction row
    gold: str | int | None
    adversarial_answer: str | None
    #: the row's `evidence` exactly as released (None: the dataset file is not here)
    evidence: tuple[str, ...] | None
    evidence_turns: tuple[EvidenceTurn, ...]
    #: why the evidence is missing (the file is gone or altered), else None
    note: str | None = None
    #: the audit's finding on this row (`memorybench.benchmarks.locomo.gold_audit.GoldError`: kind, corrected
    #: answer and evidence, reasoning), when the pack ran on the pinned locomo10.json; else None
    gold_error: Any = None
    #: the corrected evidence turns of a finding (evidence diagnostics use them), else ()
    corrected_evidence_turns: tuple[EvidenceTurn, ...] = ()
    #: why the known gold errors were not checked (the overlay is not in the pins folder), else None
    gold_error_note: str | None = None


@dataclass(frozen=True)
class LineageItem:
    item_id: str
    sources: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class RetrievalStep:
    """What a question-dependent method handed over for this question."""

    where: Located
    #: {item_id, score, ...}, best first, as recorded
    hits: tuple[dict[str, Any], ...]
    memory_tokens: int | None
    dropped_by_budget: int
    cut_by_budget: bool


@dataclass(frozen=True)
class Attempt:
    n: int
    status: int | None
    latency_s: float | None
    error: str | None = None
    wait_s: float | None = None
    retry_after: bool = False


@dataclass(frozen=True)
class ModelCall:
    """One model call: a reader's, a writer's, a judge's, or one agent process."""

    role: str
    #: what the call was for (`session 1 summary`, `pass 1`, `answer`)
    purpose: str
    where: Located
    model_requested: str | None
    model_answered: str | None
    attempts: tuple[Attempt, ...]
    usage: dict[str, int]
    latency_s: float | None
    #: USD; None when the model has no price (never 0 for unknown)
    cost_usd: float | None
    cache_hit: bool | None
    reply: str | None
    error: str | None = None


@dataclass(frozen=True)
class MemoryStep:
    method: str | None
    question_dependent: bool | None
    manifest: Located | None
    #: the manifest's question-independent text file (None for question-dependent memory)
    memory_path: str | None
    #: sha256 of the memory text this question got, and the pack file holding it
    memory_sha256: str
    text_path: str | None
    item_count: int | None
    metadata: dict[str, Any]
    lineage: tuple[LineageItem, ...]
    retrieval: RetrievalStep | None
    writer_calls: tuple[ModelCall, ...]
    #: writer tasks given up (memory/writer/failures.jsonl rows of this conversation)
    writer_failures: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class PromptStep:
    """The user message (a reader's prompt, an agent's task) as sent, rebuilt from the pack."""

    where: Located
    template: str | None
    template_sha256: str | None
    #: slot name -> `text` (inline) or `ref` (a sha256 REFERENCE_PIN.json maps to a file) and that file
    slots: dict[str, dict[str, str | None]]
    #: the system message (a reader's; None for an agent) and an agent task's footer file
    system: str | None
    footer: str | None
    #: the rebuilt message; None when its template or a slot's text is missing from the pack
    message: str | None
    #: sha256 of the rebuilt message and the one the pack recorded for it
    sha256: str | None
    recorded_sha256: str | None
    #: which recorded hash it is (`reader_payload_sha256`, `agent_task_sha256`)
    recorded_as: str

    @property
    def matches(self) -> bool:
        return self.sha256 is not None and self.sha256 == self.recorded_sha256


@dataclass(frozen=True)
class AgentAction:
    step: int
    kind: str
    status: str | None
    command: str | None
    exit_code: int | None
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    dia_ids: tuple[str, ...]
    where: Located
    #: what the step printed (`aggregated_output` of its completed event), when there was a command
    output: str | None = None


@dataclass(frozen=True)
class AgentProcess:
    """One `codex exec` process of this question, with its trajectory, notes and recall."""

    where: Located
    mode: str
    persist: bool
    sandbox: str
    status: str
    codex_version: str
    turns: int
    wall_s: float | None
    usage: dict[str, int]
    warnings: tuple[str, ...]
    findings: tuple[str, ...]
    actions: tuple[AgentAction, ...]
    events: Located | None
    #: notes after this question (agent/notes.jsonl row): path, bytes, sha256, changed
    notes: dict[str, Any] | None
    notes_where: Located | None
    #: agent/recall.jsonl (computed after the run from the gold evidence): evidence, found, memory_recall, hop
    recall: dict[str, Any] | None
    recall_where: Located | None

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r for a in self.actions for r in a.reads))


@dataclass(frozen=True)
class Verdict:
    pass_: int
    status: str
    label_raw: str | None
    score: float | None
    failure: str | None
    error: str | None
    mem0_f1: float | None
    mem0_bleu1: float | None
    where: Located


@dataclass(frozen=True)
class JudgeStep:
    judge_id: str
    model: str | None
    verdicts: tuple[Verdict, ...]
    calls: tuple[ModelCall, ...]

    @property
    def mean_score(self) -> float | None:
        """Mean over the passes with a parsed label (CORRECT/WRONG); None without one."""
        scores = [v.score for v in self.verdicts if v.status in ("CORRECT", "WRONG") and v.score is not None]
        return sum(scores) / len(scores) if scores else None


@dataclass(frozen=True)
class Walk:
    pack: str
    run_id: str
    config_sha256: str
    choices: dict[str, str]
    answerer: str
    question_id: str
    sample_id: str
    qa_index: int
    #: position in predictions.jsonl (0-based)
    index: int
    category: int
    question: str
    source: SourceRow
    memory: MemoryStep
    prompt: PromptStep | None
    #: the calls that produced the answer: the reader's (its retries inside), or the agent's processes
    calls: tuple[ModelCall, ...]
    agent: tuple[AgentProcess, ...]
    #: the raw reply and the stored prediction (whitespace stripped)
    reply: str | None
    prediction: str
    prediction_at: Located
    csv_at: Located
    #: every qa-stage score of the row (LoCoMo F1, exact match, token F1, plugins' scorers)
    scores: dict[str, float]
    judges: tuple[JudgeStep, ...] = field(default_factory=tuple)

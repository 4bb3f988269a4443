"""Records of the `autorater` stage, written under `autorater/` inside a finished pack.

Each has a `schema` version, like every record of a pack (`memorybench.pack.schemas`).
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import ConfigDict, Field

from memorybench.llm.records import Attempt, ChatResult
from memorybench.pack.schemas import ModelIdentity, Record

VerdictStatus = Literal["CORRECT", "WRONG", "SKIPPED", "FAILED"]


class AutoraterVerdict(Record):
    """One (question, pass): appended to autorater_verdicts.jsonl once it is decided.

    Nothing here depends on the clock, so a resumed run writes the same bytes as an
    uninterrupted one.
    """

    schema_: Literal["autorater_verdict.v1"] = Field("autorater_verdict.v1", alias="schema")
    question_id: str
    sample_id: str
    #: position of the row in predictions.jsonl (0-based)
    index: int
    category: int
    #: judge pass, 1-based
    pass_: int = Field(alias="pass")
    #: CORRECT / WRONG (a parsed label), SKIPPED (category 5: no request), FAILED (no label)
    status: VerdictStatus
    #: the judge's `label` value exactly as written (e.g. "correct"); null when none
    label_raw: Optional[str] = None
    #: true when label_raw is exactly CORRECT or WRONG
    label_standard: Optional[bool] = None
    #: Mem0's score: 1 only for exactly CORRECT; null when skipped or failed
    score: Optional[int] = None
    #: `parse` (the reply had no readable label) or `model_call` (no reply after retries)
    failure: Optional[Literal["parse", "model_call"]] = None
    error: Optional[str] = None
    #: Mem0's lexical metrics of this row (null for category 5, which Mem0 skips)
    mem0_f1: Optional[float] = None
    mem0_bleu1: Optional[float] = None
    #: sha256 of the judge template (the pinned ACCURACY_PROMPT)
    judge_prompt_sha256: str
    #: sha256 of the filled user message; null when skipped
    judge_payload_sha256: Optional[str] = None
    #: sha256 of the canonical Chat Completions request (the response-cache key)
    request_sha256: Optional[str] = None
    model_requested: Optional[str] = None
    model_answered: Optional[str] = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class JudgeRequest(Record):
    """The request, stored compactly: the message is `template` filled with `slots`
    (`memorybench.score.judge.build_judge_prompt`); its sha256 is `judge_payload_sha256`."""

    model: str
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    response_format: dict[str, Any]
    #: the one message's role (Mem0 sends no system message)
    role: Literal["user"] = "user"
    #: the template file, relative to the pack
    template: str
    template_sha256: str
    #: question, gold_answer, generated_answer exactly as substituted
    slots: dict[str, str]


class JudgeTrace(Record):
    """One judge call: the request and what came back (every attempt), or the error."""

    schema_: Literal["judge_trace.v1"] = Field("judge_trace.v1", alias="schema")
    question_id: str
    pass_: int = Field(alias="pass")
    judge_prompt_sha256: str
    judge_payload_sha256: str
    request_sha256: str
    model_requested: str
    model_answered: Optional[str] = None
    request: JudgeRequest
    #: null when the call failed after its retries
    response: Optional[ChatResult] = None
    #: the failed call's error and every attempt (a successful call keeps them in `response`)
    error: Optional[str] = None
    attempts: Optional[list[Attempt]] = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AutoraterMeta(Record):
    """What judged this pack; a resumed run must use the same judge."""

    schema_: Literal["autorater_meta.v1"] = Field("autorater_meta.v1", alias="schema")
    run_id: Optional[str] = None
    passes: int
    #: the judge config as composed (operational keys included; no secrets: keys are never in config)
    judge_config: dict[str, Any]
    #: the fields that decide what is asked; a resume with different ones is refused
    judge_identity: dict[str, Any]
    judge: ModelIdentity
    #: the model id sent in every request (for provider=local, the served model's id)
    judge_model_sent: str
    prompt: dict[str, Any]
    response_format: dict[str, Any]
    package_versions: dict[str, str]
    git_commit: Optional[str] = None
    git_dirty: Optional[bool] = None
    started_at: str
    ended_at: Optional[str] = None
    resumed: int = 0
    local_judge: bool = False
    notes: list[str] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

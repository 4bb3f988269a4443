"""Records of the `autorater` stage, written under `autorater/<judge id>/` inside a finished pack.

Each has a `schema` version, like every record of a pack (`memorybench.pack.schemas`).
A judge is named by its `JudgeIdentity` (`judge_identity.v1`): the folder it writes is
`autorater/<JudgeIdentity.judge_id>/`, so several judges of one pack coexist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

from pydantic import Field, model_serializer

from memorybench.hashing import sha256_json
from memorybench.llm.records import Attempt, ChatResult, ModelIdentity
from memorybench.names import MAX_CHARS, path_component
from memorybench.pack.benchmark_block import WithBenchmarkBlock
from memorybench.records import Record

VerdictStatus = Literal["CORRECT", "WRONG", "SKIPPED", "FAILED"]


class AutoraterVerdict(Record, schema="autorater_verdict.v1"):
    """One (question, pass) of one judge: appended to its autorater_verdicts.jsonl once it is decided.

    Nothing here depends on the clock, so a resumed run writes the same bytes as an
    uninterrupted one.
    """

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
    #: the protocol's score: Mem0's 1 only for exactly CORRECT (LoCoMo-Plus's: 1, 0.5 for partial,
    #: 0); null when skipped or failed
    score: Optional[Union[int, float]] = None
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


class JudgeRequest(Record):
    """The request, stored compactly: the message is `template` filled with `slots`
    (`memorybench.score.judge.build_judge_prompt`); its sha256 is `judge_payload_sha256`."""

    model: str
    temperature: float
    #: null: none sent (BEAM's judge, as the authors' langchain client sends none)
    max_tokens: Optional[int]
    seed: Optional[int] = None
    #: the response format asked for; null when the protocol asks for none (LongMemEval's judge)
    response_format: Optional[dict[str, Any]] = None
    #: the one message's role (Mem0 sends no system message)
    role: Literal["user"] = "user"
    #: the template file, relative to the judge's folder (`prompts/<file>`): the protocol's
    #: one template (Mem0), or the one it chose for this row (LongMemEval: per type, abstention)
    template: str
    template_sha256: str
    #: the template's fields exactly as substituted (Mem0: question, gold_answer,
    #: generated_answer; LongMemEval: question, answer, response); the protocol's `fill`
    #: rebuilds the message from the template and these
    slots: dict[str, str]
    #: the system message sent before the user message (BEAM's alignment call); absent when none
    system: Optional[str] = None

    @model_serializer(mode="wrap")
    def _without_system(self, handler: Any) -> dict[str, Any]:
        data = handler(self)  # a request with one user message keeps the bytes it has always had
        if data.get("system") is None:
            data.pop("system", None)
        return data


class JudgeTrace(Record, schema="judge_trace.v1"):
    """One judge call: the request and what came back (every attempt), or the error."""

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
    #: which call of a question judged by several (BEAM: `rubric 0`, `align 2 3`, `facts ...`);
    #: absent for a one-call judge
    part: Optional[str] = None

    @model_serializer(mode="wrap")
    def _without_part(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("part") is None:
            data.pop("part", None)
        return data


#: the protocol of a judge identity that names none (what `judge.protocol` defaults to)
_DEFAULT_PROTOCOL = "mem0"
#: hex digits of the identity's sha256 in a judge id
JUDGE_ID_HEX = 8
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _slug(text: str) -> str:
    """`text` with every run of characters a folder name cannot hold as one `-` (readable, not unique)."""
    return _UNSAFE.sub("-", text).strip(".-") or "model"


class JudgeIdentity(Record, schema="judge_identity.v1"):
    """Who a judge is: what decides the verdicts it gives, and so the folder it writes.

    Where it is served (provider, base URL), how it is paced and retried, and how many
    passes it makes are not part of it: the same judge behind another URL is the same judge,
    and adding passes adds to its folder. The model that answered is recorded in the meta
    (`judge.answered`), known only after calls.
    """

    #: the registered judge protocol (memorybench.registry.JUDGES, config `judge.protocol`), e.g. `mem0`
    protocol: str
    #: the model as configured (`judge.model`; for provider=local `auto` or a registry name)
    model: str
    #: sha256 of the judge template (for mem0: the pinned ACCURACY_PROMPT; for a protocol of
    #: several templates, one hash over them, as its protocol computes it)
    prompt_sha256: str
    temperature: float
    #: null when the protocol asks for no response format
    response_format: Optional[dict[str, Any]] = None

    def sha256(self) -> str:
        """sha256 of the canonical JSON of this record (`schema` included)."""
        return sha256_json(self.model_dump(mode="json", by_alias=True))

    @property
    def judge_id(self) -> str:
        """`<protocol>-<model>-<8 hex of sha256()>`, e.g. `mem0-gpt-4o-mini-1a2b3c4d`: readable,
        and one path component (the model's `/`, `:` and the like become `-`; a long model
        name is cut, the hash keeps ids apart)."""
        digest = self.sha256()[:JUDGE_ID_HEX]
        protocol = _slug(self.protocol)
        room = MAX_CHARS - len(protocol) - len(digest) - 2
        model = _slug(self.model)[:room].rstrip(".-") or "model"
        return path_component(f"{protocol}-{model}-{digest}", "judge id", "a judge protocol or model name with other characters")

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, Any], *, prompt_sha256: str, response_format: Mapping[str, Any], model: str
    ) -> JudgeIdentity:
        """The identity of a legacy (`autorater_meta.v1`) judge, from the settings it recorded."""
        return cls(
            protocol=str(settings.get("protocol") or _DEFAULT_PROTOCOL),
            model=str(settings.get("model") or model),
            prompt_sha256=str(settings.get("prompt_sha256") or prompt_sha256),
            temperature=float(settings.get("temperature") or 0.0),
            response_format=dict(settings.get("response_format") or response_format),
        )


class AutoraterMeta(Record, schema="autorater_meta.v2"):
    """`autorater/<judge id>/autorater_meta.json`: which judge this folder is, and how it ran.

    A folder's verdicts all come from one judge: a run that would add verdicts with other
    request settings (`judge_settings`) or another model sent is refused; a folder without
    a verdict is not held to anything (its meta is rewritten by the next start).
    """

    #: the folder's name: `identity.judge_id`
    judge_id: str
    identity: JudgeIdentity
    run_id: Optional[str] = None
    #: passes over every row this folder holds (or is being completed to); `--passes` above it adds passes
    passes: int
    #: the judge config as composed (operational keys included; no secrets: keys are never in config)
    judge_config: dict[str, Any]
    #: what else shapes a request (max_tokens, seed, ...): the config less the identity's fields,
    #: where it is served (name, provider, base_url) and operational settings
    judge_settings: dict[str, Any]
    judge: ModelIdentity
    #: the model id sent in every request (for provider=local, the served model's id)
    judge_model_sent: str
    prompt: dict[str, Any]
    #: null when the protocol asks for no response format
    response_format: Optional[dict[str, Any]] = None
    package_versions: dict[str, str]
    git_commit: Optional[str] = None
    git_dirty: Optional[bool] = None
    started_at: str
    ended_at: Optional[str] = None
    resumed: int = 0
    local_judge: bool = False
    notes: list[str] = Field(default_factory=list)
    #: true for a judge of the flat layout (`autorater/autorater_meta.json`, `autorater_meta.v1`), read as this record
    legacy: bool = False


class AutoraterMetaV1(Record, schema="autorater_meta.v1"):
    """The meta of the flat layout (`autorater/autorater_meta.json`): one judge per pack.
    Still read (`upgrade`), never written."""

    run_id: Optional[str] = None
    passes: int
    judge_config: dict[str, Any]
    #: the config less operational settings, with the prompt's sha256 and the response format
    judge_identity: dict[str, Any]
    judge: ModelIdentity
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

    def upgrade(self) -> AutoraterMeta:
        """This meta as an `autorater_meta.v2` record (`legacy=True`): its identity from what it recorded."""
        identity = JudgeIdentity.from_settings(
            self.judge_identity,
            prompt_sha256=str(self.prompt.get("sha256", "")),
            response_format=self.response_format,
            model=self.judge_model_sent,
        )
        fields = self.model_dump(exclude={"schema_", "judge_identity"})
        return AutoraterMeta(
            **fields, judge_id=identity.judge_id, identity=identity, judge_settings=dict(self.judge_identity), legacy=True
        )


# -- autorater_metrics.json ------------------------------------------------------------------
# Every part keeps the key order and the values the autorater has always written: the file is
# byte-identical to the dict it replaced. Values copied from the judge config stay `Any`.
class JudgeSummary(Record):
    """Who judged: the configured judge, the model sent and the models that answered."""

    name: Any = None
    provider: Any = None
    model_requested: str
    #: the model of the config (for provider=local: `auto` or a registry name)
    model_configured: Optional[str] = None
    models_answered: list[str]
    base_url: Any = None
    temperature: Any = None
    max_tokens: Any = None
    seed: Any = None
    response_format: Optional[dict[str, Any]] = None
    local: bool
    #: provider=local: the GGUF file's sha256 and package
    weights: Optional[dict[str, Any]] = None


class Agreement(Record):
    """Rows judged (with a parsed label) in every pass, and how many of them all passes agree on."""

    rows: int
    unanimous: int
    #: unanimous / rows; null with one pass or no such row
    share: Optional[float] = None


class JScores(Record):
    """Mem0's J: per pass, their mean and sample sd, per category (categories 1-4)."""

    overall: Optional[float] = None
    by_category: dict[str, Optional[float]]
    passes: list[Optional[float]]
    passes_by_category: list[dict[str, Optional[float]]]
    mean: Optional[float] = None
    sd: Optional[float] = None
    agreement: Agreement
    #: with several passes: the interval of J over the benchmark's unit (each question's mean over
    #: the passes, clustered by its sample: `compare.intervals.mean_interval`, a rate), what the
    #: figure's uncertainty is; `sd` above is only the judge's spread from pass to pass
    interval: Optional[dict[str, Any]] = None


class PassCounts(Record):
    pass_: int = Field(alias="pass")
    judged: int
    skipped: int
    failed: int


class JudgeFailure(Record):
    """A FAILED verdict: no readable label (`parse`) or no reply after retries (`model_call`)."""

    question_id: str
    pass_: int = Field(alias="pass")
    failure: Optional[str] = None
    error: Optional[str] = None


class AutoraterCounts(Record):
    rows: int
    judged_rows: int
    skipped_rows: int
    requests: int
    judged: int
    skipped: int
    failed: int
    by_pass: list[PassCounts]
    by_category: dict[str, int]
    failed_question_ids: list[str]
    failures: list[JudgeFailure]
    nonstandard_labels: int
    nonstandard_label_values: dict[str, int]
    #: rows of each category with a readable label in every pass: the n that J is over (a
    #: file written before this field: {}, read as by_category)
    in_j_by_category: dict[str, int] = Field(default_factory=dict)


class CategoryMeans(Record):
    """A per-row score's mean over every judged row, and per category (not a mean of means)."""

    overall: Optional[float] = None
    by_category: dict[str, Optional[float]]


class AutoraterMetrics(WithBenchmarkBlock, schema="autorater_metrics.v1"):
    """`autorater/<judge id>/autorater_metrics.json`: J, Mem0's F1 and BLEU-1, counts and judge usage,
    computed from the stored verdicts and traces only (no model, no clock)."""

    run_id: Optional[str] = None
    questions: int
    is_prefix: Optional[bool] = None
    reader_local_model: Optional[bool] = None
    local_judge: bool
    passes: int
    judge: JudgeSummary
    judge_prompt_sha256: str
    prompt: dict[str, Any]
    category_names: dict[str, str]
    j: JScores
    counts: AutoraterCounts
    mem0_f1: CategoryMeans
    mem0_bleu1: CategoryMeans
    #: {"judge": usage summary + failed_calls}, or {} when no call was answered
    usage: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str]
    notes: list[str] = Field(default_factory=list)
    #: the benchmark of the pack when it is not the default one (absent for LoCoMo, as before);
    #: a benchmark whose figure is its own adds its block after the fields (`WithBenchmarkBlock`:
    #: under its `judge_figures` module's `FIELD`, made by that module's `scores`)
    benchmark: Optional[str] = None

    @classmethod
    def omitted_when_null(cls) -> tuple[str, ...]:
        return ("benchmark",)

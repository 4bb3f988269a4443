"""Every record a pack holds: small pydantic models, each with a `schema` version.

A reader of a pack checks `schema` before anything else; a new field that changes the
meaning of a record gets a new version (`prediction.v2`), never a silent change.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from memorybench.llm.records import ChatResult, ModelIdentity
from memorybench.records import Record


class Prediction(Record, schema="prediction.v1"):
    """One answered question; appended to predictions.jsonl as soon as it is answered.

    Strict: every later stage scores from these rows, so a category `"2"` or an index
    `"0"` written by hand is a schema error naming the line, never coerced."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    question_id: str
    sample_id: str
    #: position in the file-order question list (0-based)
    index: int
    category: int
    question: str
    prediction: str
    #: the raw `answer` of the row (str, int, or null for category 5 rows that have none)
    gold: Union[str, int, None]
    adversarial_answer: Optional[str] = None
    #: sha256 of the filled user message sent to the reader (DESIGN.md 4.3)
    reader_payload_sha256: Optional[str] = None
    memory_sha256: str
    answerer: str
    # A category-5 question posed as LoCoMo's two-way choice (`reader.prompt=locomo`) only;
    # absent from every other row, which reads and serializes as before.
    #: the options by letter as posed: {"a": ..., "b": ...}, "Not mentioned in the conversation"
    #: and the `adversarial_answer`, in the order seeded from the question id
    options: Optional[dict[str, str]] = None
    #: the reader's reply (stripped) before LoCoMo's `get_cat_5_answer` mapped it to `prediction`
    reply: Optional[str] = None
    #: the option `prediction` is; null: the reply was kept, lower-cased, as LoCoMo keeps a
    #: reply of neither one nor three characters
    choice: Optional[Literal["a", "b"]] = None
    #: true when the reply was not a, b, (a) or (b) (any case): LoCoMo's rule still read it
    #: (a one- or three-character reply as (b), any other kept lower-cased)
    malformed_reply: Optional[bool] = None

    @model_serializer(mode="wrap")
    def _without_choice(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        for key in ("options", "reply", "choice", "malformed_reply"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class SlotValue(Record):
    """A slot's value: inline `text`, or `ref`: the sha256 of a text stored once in the pack."""

    text: Optional[str] = None
    ref: Optional[str] = None


class ReaderRequest(Record):
    """The request as sent, with the user message kept as template + slot values.

    The user message is `prompts/<template>` with `{memory}` and `{question}` replaced by
    the slot values (a `ref` resolves through REFERENCE_PIN.json); its sha256 is the
    trace's `reader_payload_sha256`. With a `renderer` (a pinned Mem0 prompt, or `locomo`:
    LoCoMo's own question protocol), the message is instead
    `memorybench.templates.pinned_reader(renderer).render(template text, slot values)`:
    jinja2 with the variables those slots give, or LoCoMo's prompts posed with them.

    `renderer` and `payload_role` are additions a trace without them reads as before (the
    one-pass fill, after the system message), and that an older reader refuses (unknown
    fields are forbidden) rather than misreads: the default reader's traces are unchanged.
    """

    model: str
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    stop: Optional[list[str]] = None
    #: the system message sent before the user message; null when there is none (`payload_role`)
    system: Optional[str] = None
    template: str
    template_sha256: str
    slots: dict[str, SlotValue]
    #: the pinned template that rendered the message (`reader.prompt=mem0_rag`, `locomo`, ...); null: the one-pass fill
    renderer: Optional[str] = None
    #: `system`: the message is the request's only message, sent as the system message (Mem0's
    #: answer prompts); null: a user message after `system` (the only message when `system`
    #: is null, as LoCoMo's protocol sends it)
    payload_role: Optional[Literal["system"]] = None


class ReaderTrace(Record, schema="reader_trace.v1"):
    question_id: str
    sample_id: str
    reader_payload_sha256: str
    request: ReaderRequest
    response: ChatResult
    #: the answer's length before it was cut to `reader.max_answer_chars` (null: not cut);
    #: `response.text` holds the stored cut
    answer_cut_from_chars: Optional[int] = None


class LineageRow(Record, schema="lineage.v1"):
    sample_id: str
    item_id: str
    sources: list[str]


class MemoryManifestRow(Record, schema="memory_manifest.v1"):
    """Written last for a conversation's memory: what was built and where it is stored."""

    sample_id: str
    method: str
    question_dependent: bool
    item_count: int
    #: the question-independent memory text (null for question-dependent methods)
    memory_sha256: Optional[str] = None
    memory_path: Optional[str] = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Reference(Record):
    """Where the text of one `ref` lives in the pack."""

    path: str
    bytes: int


class ReferencePin(Record, schema="reference_pin.v1"):
    how_to_restore: str = (
        "A slot value {'ref': H} in a trace stands for the UTF-8 text of the file at refs[H].path "
        "(relative to the pack); the sha256 of that file's bytes is H. A reader trace's user message is "
        "the text of prompts/<request.template> with '{memory}' and '{question}' replaced by the slot "
        "values, in one pass (memory.replace is not applied to the question); its sha256 is "
        "reader_payload_sha256. memorybench.answer.prompt.fill_template does exactly this."
    )
    refs: dict[str, Reference]


class ClosedFile(Record):
    """One file a `_SUCCESS` closes: what its bytes were when the pack (or stage) finished."""

    sha256: str
    bytes: int


class Success(Record, schema="success.v1"):
    """`_SUCCESS`: the last file of a finished pack, or of a later stage's folder inside it.

    `files` maps the path (relative to the pack, `/`-separated, sorted) of every file the
    marker closes to its sha256 and size; `memorybench.pack.success` says which files a
    marker closes, writes it and checks a pack against it.
    """

    files: dict[str, ClosedFile]


class Coverage(Record):
    """A partial run: which of its questions it holds and which are absent (`RunMeta.partial`).

    Written by `memorybench import --allow-partial` for a released file that covers fewer
    conversations or rows than its format holds (a question of a category the format never
    holds, as Mem0's category 5, is `RunMeta.categories`, not this). Not a prefix: the held
    questions need not be the first ones, so `is_prefix` stays false and the run's questions
    are those of `categories` (or all) less `absent_question_ids`, in file order.
    """

    #: why the run is partial, in words
    reason: str
    #: questions held, and of how many (the questions of `categories`, or the dataset's)
    questions: int
    of: int
    #: the conversations (sample ids) with at least one question held, in file order
    conversations: list[str]
    #: absent questions by conversation (sample id) and by category number ("1".."5"), non-zero only
    absent_by_conversation: dict[str, int]
    absent_by_category: dict[str, int]
    #: every absent question id, in file order
    absent_question_ids: list[str]


class QuestionSelection(Record):
    """How a run chose its questions, other than a prefix (`RunMeta.selection`): the listed
    `question_ids`, or a seeded `question_sample` of each kind (`memorybench.data.selection`).

    The run's questions are `question_ids`, in file order; `is_prefix` is true when they are
    fewer than the dataset's, as for a `max_questions` prefix: a part, not the benchmark.
    """

    #: the config key that chose them: "question_ids" or "question_sample"
    by: str
    #: question_sample: questions of each kind, and the seed of the draw (null for question_ids)
    per_kind: Optional[int] = None
    seed: Optional[int] = None
    #: the questions asked, in file order
    question_ids: list[str]
    #: per kind (category number as a string): [asked, of the kind's questions in the dataset]
    by_kind: dict[str, list[int]]


class RunMeta(Record, schema="run_meta.v1"):
    run_id: str
    name: str
    config_sha256: str
    overrides: list[str]
    choices: dict[str, str]
    git_commit: Optional[str]
    git_dirty: Optional[bool]
    package_versions: dict[str, str]
    data: dict[str, Any]
    #: the benchmark the run's dataset belongs to, recorded (`benchmark.recorded`: name and
    #: version); absent only from packs written before it was (`benchmark_of_pack` then asks `data`)
    benchmark: Optional[dict[str, str]] = None
    prompts: dict[str, str]
    models: list[ModelIdentity]
    started_at: str
    ended_at: Optional[str] = None
    question_count: int
    questions_total: int
    is_prefix: bool
    max_questions: Optional[int]
    #: results from the embedded local model are never comparable with published numbers
    local_model: bool
    notes: list[str] = Field(default_factory=list)
    resumed: int = 0
    #: the LoCoMo categories the run answered, when not all (an import of a file whose format
    #: leaves category 5 out holds [1, 2, 3, 4]); the run's questions are the first
    #: `question_count` of those, in file order. Omitted when every category was answered.
    categories: Optional[list[int]] = None
    #: a partial import: the questions held and those absent (`Coverage`). Omitted otherwise.
    partial: Optional[Coverage] = None
    #: the plugins whose components the run used: name, module, distribution, version,
    #: source_sha256 (they enter the run id); left out of the file when there are none
    plugins: list[dict[str, Any]] = Field(default_factory=list)
    #: the questions chosen by `question_ids` or `question_sample` (`QuestionSelection`);
    #: omitted for every question and for a `max_questions` prefix
    selection: Optional[QuestionSelection] = None

    @model_serializer(mode="wrap")
    def _without_empty_plugins(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if not data.get("plugins"):
            data.pop("plugins", None)
        if data.get("categories") is None:
            data.pop("categories", None)
        if data.get("partial") is None:
            data.pop("partial", None)
        if data.get("selection") is None:
            data.pop("selection", None)
        if data.get("benchmark") is None:
            data.pop("benchmark", None)
        return data


class ScoresReading:
    """The figures of a metrics.json record, read the same from metrics.v2 and metrics.v1
    (`memorybench.score.score_record.scores_of`)."""

    def blocks(self) -> dict[str, dict[str, Any]]:
        from memorybench.score.score_record import scores_of

        return scores_of(self.model_dump(mode="json", by_alias=True))  # type: ignore[attr-defined]

    def overall(self, metric: str) -> float | None:
        return ((self.blocks().get(metric) or {}).get("overall") or {}).get("value")

    def by_kind(self, metric: str, kind: int | str) -> float | None:
        return (((self.blocks().get(metric) or {}).get("by_kind") or {}).get(str(kind)) or {}).get("value")

    def subset(self, metric: str, name: str) -> float | None:
        """A named subset's figure ("1-4" of locomo_f1), None where the record has none."""
        return (((self.blocks().get(metric) or {}).get("subsets") or {}).get(name) or {}).get("value")

    def covers(self) -> str | None:
        """What the overall covers, in words."""
        extra = getattr(self, "model_extra", None) or {}
        if "overall_covers" in extra:  # metrics.v1
            return extra["overall_covers"]
        first = next(iter(self.blocks().values()), {})
        return (first.get("overall") or {}).get("covers")


class _MetricsRecord(ScoresReading, Record):
    """What both metrics.json records share: a `memory` entry left out of the file where the
    method wrote no memory with a model."""

    @model_serializer(mode="wrap")
    def _without_empty_memory(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if data.get("memory") is None:
            data.pop("memory", None)
        return data


class Metrics(_MetricsRecord, schema="metrics.v1"):
    """`metrics.json`: the local scores of a pack, recomputed from its rows by `rescore`.

    Every metric is `{overall, by_category}` (category numbers as strings, LoCoMo's
    names in `category_names`). A scorer that a plugin registers adds its own
    `{overall, by_category}` key.

    `usage` holds what the run's model calls cost, each part present when the pack has
    its files: `reader` (the reader's traces: calls, tokens, cost_usd summed over the
    priced calls and `cost_known`, retries, cache hits, latency); `agent` (the Codex
    agent's processes); `build` (the memory's writer and embedder calls, from
    memory/build_cost.jsonl); `total` (build + reader/agent, with
    `cost_per_question_usd`). In `agent`, `build` and `total`, `cost_usd` is null when a
    price is unknown (`cost_known: false`), never 0. Keys added inside `usage` and the
    `memory` entry are optional: a metrics.v1 file without them still reads.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    run_id: Optional[str]
    questions: int
    is_prefix: Optional[bool]
    local_model: Optional[bool]
    category_names: dict[str, str]
    counts: dict[str, Any]
    labels: dict[str, str]
    locomo_f1: dict[str, Any]
    exact_match: dict[str, Any]
    token_f1: dict[str, Any]
    usage: dict[str, Any] = Field(default_factory=dict)
    #: a memory a writer model wrote: {tasks, failed, failures_file}, its writer tasks and
    #: how many failed twice and were skipped (left out of the file for other methods)
    memory: Optional[dict[str, Any]] = None


class MetricsV2(_MetricsRecord, schema="metrics.v2"):
    """`metrics.json` since every benchmark's scores share one record
    (`memorybench.score.score_record`, which says what each key holds): the benchmark and its
    version, the kinds' names and counts, and per scorer its overall, per-kind, named-subset and
    task-average figures, each with n and units. `usage` and `memory` as in metrics.v1."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    run_id: Optional[str]
    benchmark: dict[str, str]
    questions: int
    is_prefix: Optional[bool]
    local_model: Optional[bool]
    unit: str
    kind_word: str
    kind_names: dict[str, str]
    counts: dict[str, Any]
    labels: dict[str, str]
    scores: dict[str, dict[str, Any]]
    usage: dict[str, Any] = Field(default_factory=dict)
    memory: Optional[dict[str, Any]] = None


def dump_line(record: BaseModel) -> str:
    """One JSONL line, keys in field order, `schema` first.

    Traces leave out null fields (an attempt without an error has no `error` key), which
    keeps a 1,986-question pack small; predictions keep every field, null gold included.
    """
    return record.model_dump_json(by_alias=True, exclude_none=isinstance(record, ReaderTrace)) + "\n"

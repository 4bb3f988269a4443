"""Every record a pack holds: small pydantic models, each with a `schema` version.

A reader of a pack checks `schema` before anything else; a new field that changes the
meaning of a record gets a new version (`prediction.v2`), never a silent change.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from memorybench.llm.records import ChatResult


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Prediction(Record):
    """One answered question; appended to predictions.jsonl as soon as it is answered."""

    schema_: Literal["prediction.v1"] = Field("prediction.v1", alias="schema")
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SlotValue(Record):
    """A slot's value: inline `text`, or `ref`: the sha256 of a text stored once in the pack."""

    text: Optional[str] = None
    ref: Optional[str] = None


class ReaderRequest(Record):
    """The request as sent, with the user message kept as template + slot values.

    The user message is `prompts/<template>` with `{memory}` and `{question}` replaced by
    the slot values (a `ref` resolves through REFERENCE_PIN.json); its sha256 is the
    trace's `reader_payload_sha256`.
    """

    model: str
    temperature: float
    max_tokens: int
    seed: Optional[int] = None
    stop: Optional[list[str]] = None
    system: str
    template: str
    template_sha256: str
    slots: dict[str, SlotValue]


class ReaderTrace(Record):
    schema_: Literal["reader_trace.v1"] = Field("reader_trace.v1", alias="schema")
    question_id: str
    sample_id: str
    reader_payload_sha256: str
    request: ReaderRequest
    response: ChatResult

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LineageRow(Record):
    schema_: Literal["lineage.v1"] = Field("lineage.v1", alias="schema")
    sample_id: str
    item_id: str
    sources: list[str]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MemoryManifestRow(Record):
    """Written last for a conversation's memory: what was built and where it is stored."""

    schema_: Literal["memory_manifest.v1"] = Field("memory_manifest.v1", alias="schema")
    sample_id: str
    method: str
    question_dependent: bool
    item_count: int
    #: the question-independent memory text (null for question-dependent methods)
    memory_sha256: Optional[str] = None
    memory_path: Optional[str] = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Reference(Record):
    """Where the text of one `ref` lives in the pack."""

    path: str
    bytes: int


class ReferencePin(Record):
    schema_: Literal["reference_pin.v1"] = Field("reference_pin.v1", alias="schema")
    how_to_restore: str = (
        "A slot value {'ref': H} in a trace stands for the UTF-8 text of the file at refs[H].path "
        "(relative to the pack); the sha256 of that file's bytes is H. A reader trace's user message is "
        "the text of prompts/<request.template> with '{memory}' and '{question}' replaced by the slot "
        "values, in one pass (memory.replace is not applied to the question); its sha256 is "
        "reader_payload_sha256. memorybench.answer.prompt.fill_template does exactly this."
    )
    refs: dict[str, Reference]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ModelIdentity(Record):
    role: str
    provider: str
    requested: Optional[str]
    answered: list[str] = Field(default_factory=list)
    base_url: Optional[str] = None
    local: bool = False
    #: provider=local: the GGUF file's sha256 and the package it came from
    weights: Optional[dict[str, Any]] = None


class RunMeta(Record):
    schema_: Literal["run_meta.v1"] = Field("run_meta.v1", alias="schema")
    run_id: str
    name: str
    config_sha256: str
    overrides: list[str]
    choices: dict[str, str]
    git_commit: Optional[str]
    git_dirty: Optional[bool]
    package_versions: dict[str, str]
    data: dict[str, Any]
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

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def dump_line(record: BaseModel) -> str:
    """One JSONL line, keys in field order, `schema` first.

    Traces leave out null fields (an attempt without an error has no `error` key), which
    keeps a 1,986-question pack small; predictions keep every field, null gold included.
    """
    return record.model_dump_json(by_alias=True, exclude_none=isinstance(record, ReaderTrace)) + "\n"

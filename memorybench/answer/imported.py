"""The `imported` answerer: answers another project released, read from its file by `memorybench import`.

Nothing is asked here. `memorybench.stages.import_results` maps the released rows onto
the dataset's questions and writes the pack; this module says what such a pack holds
beyond a qa pack's files, so that `memorybench verify` checks it as it checks any pack:

- no reader traces (`traces_file` is None): no call was made here;
- its own records under `imported/` (`records`), each validated against its schema:

      imported/source.json        import_source.v1: the released files (sha256), format, --source
      imported/rows.jsonl         imported_row.v1: one row per released row, its own scores
                                  (`reported_*`) beside ours
      imported/reproduction.json  reproduction.v1: per metric, the rows whose recomputed score
                                  equals the file's, and the per-category figures side by side
                                  (a LongMemEval judged file: also print_qa_metrics.py's text)

The records live here (the answer layer) rather than with the stage, so that verify (the
pack layer) reaches them through the answerer registry without importing a stage.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import Field

from memorybench.errors import UserError
from memorybench.pack.benchmark_block import WithBenchmarkBlock
from memorybench.pack.schemas import Coverage
from memorybench.records import Record
from memorybench.registry import ANSWERERS

__all__ = [
    "IMPORTED_DIR",
    "REPRODUCTION",
    "ROWS",
    "SOURCE",
    "CategoryFigure",
    "ImportSource",
    "ImportedAnswerer",
    "ImportedRow",
    "MetricReproduction",
    "Mismatch",
    "Reproduction",
    "RowAgreement",
    "SourceFile",
    "SourceRef",
]

IMPORTED_DIR = "imported"
SOURCE = f"{IMPORTED_DIR}/source.json"
ROWS = f"{IMPORTED_DIR}/rows.jsonl"
REPRODUCTION = f"{IMPORTED_DIR}/reproduction.json"

#: a per-row value as a released file writes it (LoCoMo writes 1, 0 and 0.667; Zep true/false)
Value = Union[bool, int, float, str, None]
#: a score as written: an int stays an int (LoCoMo writes category 5's 1 and 0 so)
Number = Union[int, float]


class SourceFile(Record):
    """One released file the pack was imported from."""

    #: `results` (the answers), `stats` (LoCoMo's `_stats.json`), `responses` (Zep's timings)
    role: Literal["results", "stats", "responses"]
    #: the file's name as given (its folder is machine-specific, so it is not kept)
    name: str
    sha256: str
    bytes: int


class SourceRef(Record):
    """Where the results file was published (`--source REPOSITORY@COMMIT:PATH`)."""

    repository: str
    commit: str
    path: str


class ImportSource(Record, schema="import_source.v1"):
    """`imported/source.json`: what was imported and how its rows met the dataset."""

    #: the released format (`memorybench import --format`)
    format: str
    #: the model key of a file that holds several (LoCoMo's `<model>_prediction`); null otherwise
    model_key: Optional[str] = None
    files: list[SourceFile]
    source: Optional[SourceRef] = None
    #: rows in the results file, every one mapped onto a question (a row that is not is an error)
    rows: int
    #: the file's conversation keys and the dataset conversation their questions name
    conversations: dict[str, str]
    #: rows whose question text names several questions of its conversation (LoCoMo repeats
    #: 12), settled by gold, then category, then order
    tie_broken: int
    #: questions of the dataset the file has no row for, by category: the format leaves them
    #: out (mem0's evals.py and Zep drop category 5); their prediction rows are empty
    absent: dict[str, int] = Field(default_factory=dict)
    absent_question_ids: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    #: a partial file (`memorybench import --allow-partial`): questions its format holds that the
    #: file has no row (or no answer) for, as run_meta's `partial`; null for a full file
    partial: Optional[Coverage] = None


class ImportedRow(Record, schema="imported_row.v1"):
    """One released row: where it is in the file, the file's own scores and ours beside them."""

    question_id: str
    sample_id: str
    category: int
    #: the row's conversation key in the file and its position under that key (0-based)
    file_key: str
    file_index: int
    prediction: str
    #: LoCoMo F1: the file's (LoCoMo's `<model>_f1`, written at 3 dp) and ours, recomputed;
    #: null for a LongMemEval row (LoCoMo's F1 is not its score)
    reported_locomo_f1: Optional[Number] = None
    locomo_f1: Optional[float] = None
    #: Mem0's lexical F1 and BLEU-1: the file's (`f1_score`, `bleu_score`) and ours (null for
    #: category 5, which Mem0 does not score)
    reported_mem0_f1: Optional[Number] = None
    mem0_f1: Optional[float] = None
    reported_mem0_bleu1: Optional[Number] = None
    mem0_bleu1: Optional[float] = None
    #: the file's judge label exactly as written (`llm_score` 1/0, `grade` true/false) and its J score
    reported_label: Value = None
    reported_j: Optional[int] = None
    #: the row's other fields, as the file has them (latency, token usage, memories...)
    reported_extra: dict[str, Any] = Field(default_factory=dict)


class Mismatch(Record):
    """A row whose recomputed score differs from the file's."""

    question_id: str
    category: int
    prediction: str
    gold: Optional[str] = None
    reported: Value = None
    ours: Optional[float] = None


class RowAgreement(Record):
    """Row by row: how many released scores our recomputation gives back."""

    #: the file's field (`honcho_f1`, `bleu_score`, `llm_score`, `grade`)
    reported_field: str
    #: how the two are compared
    compared: str
    rows: int
    equal: int
    mismatched: int
    #: up to 5, in file order
    examples: list[Mismatch] = Field(default_factory=list)


class CategoryFigure(Record):
    """One category's (or the overall) figure: ours next to the file's."""

    #: released rows of this category
    rows: int
    #: our mean over those rows (J: our judge folder's, from the file's labels)
    ours: Optional[float] = None
    #: LoCoMo F1 only: our mean with each row rounded as LoCoMo's save_eval writes it (3 dp),
    #: the values a LoCoMo stats file sums
    ours_rounded: Optional[float] = None
    #: the mean of the file's own per-row values
    reported: Optional[float] = None
    #: the figure a stats file shipped with the results states (LoCoMo's `_stats.json`:
    #: cum_accuracy_by_category / category_counts), and the rows it counts
    stated: Optional[float] = None
    stated_rows: Optional[int] = None
    #: false when the stated figure counts other rows than `rows` (a partial file beside a
    #: stats file of the whole run): it is kept as stated, never set beside ours; null when
    #: nothing is stated
    stated_comparable: Optional[bool] = None


class MetricReproduction(Record):
    label: str
    #: null when the file has no per-row value of this metric (ours stands alone)
    rows: Optional[RowAgreement] = None
    #: by category number ("1".."5"; never by name: projects name the numbers differently)
    by_category: dict[str, CategoryFigure]
    #: over `overall_categories`: a mean over rows, not of category means
    overall: CategoryFigure
    overall_categories: list[int]


class Reproduction(WithBenchmarkBlock, schema="reproduction.v1"):
    """`imported/reproduction.json`: does a released file's table come out of its rows?"""

    run_id: str
    format: str
    results_sha256: str
    #: the judge folder that holds the file's labels (`autorater/<judge id>/`); null without labels
    judge_id: Optional[str] = None
    #: `locomo_f1`, `mem0_f1`, `mem0_bleu1`, and `j` when the file has judge labels
    metrics: dict[str, MetricReproduction]
    notes: list[str] = Field(default_factory=list)
    #: a partial file: the figures are over the questions it holds (`Coverage`); null for a full file
    partial: Optional[Coverage] = None
    #: a benchmark's own table beside `metrics`, as its importer writes it (a record of that
    #: importer's, dumped with its own `schema`; its `format_reproduction` reads and prints it:
    #: BEAM's runs and stated figures); null for a file whose table `metrics` holds whole. An
    #: importer may instead write its block under its module's `FIELD` (`WithBenchmarkBlock`:
    #: LongMemEval's print_qa_metrics.py text beside the pack's)
    own: Optional[dict[str, Any]] = None

    @classmethod
    def omitted_when_null(cls) -> tuple[str, ...]:
        return ("own",)  # a LoCoMo file's record reads and serializes as before


@ANSWERERS.register("imported")
class ImportedAnswerer:
    """The answerer of a pack `memorybench import` wrote: it answers nothing itself."""

    name: ClassVar[str] = "imported"
    #: no reader call was made, so there is no reader/traces.jsonl to expect
    traces_file: ClassVar[Optional[str]] = None
    #: files of its own a pack of this answerer has, and the record each holds (verify checks them)
    records: ClassVar[dict[str, type[Record]]] = {SOURCE: ImportSource, ROWS: ImportedRow, REPRODUCTION: Reproduction}

    @staticmethod
    def check(cfg: Any) -> None:
        raise UserError(
            "answerer=imported does not answer questions: its packs are written from another project's released "
            "answers by `memorybench import FILE --format F`; choose answerer=reader or answerer=codex for qa"
        )

"""What every released LoCoMo format is read into: rows with their own scores, and stated figures.

A format reader (`ReleasedFormat`) turns its files into `Released`: one `ReleasedRow` per
answer, in file order, holding the question, the gold and the category as the file writes
them (checked against the dataset when the rows are mapped), the prediction, and the
file's own per-row scores keyed by our metric names (`locomo_f1`, `mem0_f1`,
`mem0_bleu1`, and `label` for a judge's label). Nothing here knows the dataset; how a file
is read safely is the core's (`memorybench.stages.importers._base`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from memorybench.errors import UserError

__all__ = ["JudgeLabels", "Released", "ReleasedFormat", "ReleasedRow", "Stated", "category_of"]


@dataclass(frozen=True)
class ReleasedRow:
    #: the file's conversation key (`"3"`, `locomo_experiment_user_3`, `conv-43`) and the row's
    #: position under it (0-based): where the row is, for error messages and audit rows
    key: str
    index: int
    question: str
    #: the gold as the file writes it (mem0's evals.py writes `str(answer)`; Zep keeps ints)
    gold: Any
    category: int
    prediction: str
    #: the file's own per-row scores by our metric name: `locomo_f1`, `mem0_f1`, `mem0_bleu1`,
    #: `label` (a judge's label as written); absent when the file has none
    reported: dict[str, Any] = field(default_factory=dict)
    #: the row's other fields, kept as they are
    extra: dict[str, Any] = field(default_factory=dict)
    #: the dataset's question id where the file names it (AMB's `conv-26_q3` is LoCoMo's qa[3] of
    #: conv-26): the row is joined by it, not by its text, and its text, gold and category checked
    question_id: str | None = None


@dataclass(frozen=True)
class Stated:
    """A figure a stats file states for one category: its row count and score total."""

    rows: int
    total: float


@dataclass(frozen=True)
class JudgeLabels:
    """How a format's judge labels read: the field, and the label's J score (1 correct, 0 not)."""

    #: the file's field (`llm_score`, `grade`)
    field: str
    #: who gave the labels, in words, for the judge folder's notes
    described: str


@dataclass
class Released:
    rows: list[ReleasedRow]
    #: (role, path) of every file read: `results` first, then `stats`, `responses`
    files: list[tuple[str, Path]]
    #: the model key the rows were read under (LoCoMo's `<model>_prediction`), if any
    model_key: str | None = None
    #: metric -> category -> what a stats file states
    stated: dict[str, dict[int, Stated]] = field(default_factory=dict)
    #: the file's judge labels (`label` in each row's `reported`), if it has any
    labels: JudgeLabels | None = None
    #: the file's per-row score fields, by our metric name (`{"mem0_bleu1": "bleu_score"}`)
    fields: dict[str, str] = field(default_factory=dict)
    #: categories whose questions the format leaves out (mem0's evals.py and Zep drop 5)
    drops: tuple[int, ...] = ()
    #: rows the file has but did not answer (LoCoMo's qa rows without `<model>_prediction`: a run
    #: that stopped), where each is (`conv-26 qa[3]`); their questions are absent, so the file is
    #: partial: imported only with --allow-partial
    unanswered: list[str] = field(default_factory=list)
    #: what the format says of the file beyond its rows (a judged file's runs and their mean, a known
    #: release's nature): printed under the reproduction table, kept in imported/source.json's notes
    notes: list[str] = field(default_factory=list)
    #: the figures the file states beyond per-category stats (AMB's accuracy, correct, averages),
    #: recomputed beside the judge folder's: (its autorater_metrics or None, its verdict score per
    #: question id, the pack's coverage of a partial file or None, the dataset's question count) ->
    #: the record kept as reproduction.json's `own`; None: `metrics` hold the whole table
    own: Callable[[Any, Mapping[str, int], Any, int], Any] | None = None


class ReleasedFormat(Protocol):
    """One released format: `memorybench import --format NAME`."""

    name: ClassVar[str]
    #: the shape, in one line, for the help text and for errors
    shape: ClassVar[str]

    def read(self, files: Sequence[Path], model_key: str | None) -> Released: ...


def category_of(value: Any, path: Path, where: str) -> int:
    """A row's category as an int (mem0's evals.py writes it as a string), or a UserError."""
    try:
        category = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        category = None
    if category not in (1, 2, 3, 4, 5) or isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise UserError(f"{path}: {where} has category {value!r}; LoCoMo's categories are 1, 2, 3, 4, 5")
    return category

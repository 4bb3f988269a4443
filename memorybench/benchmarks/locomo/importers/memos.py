"""MemOS/EverMemOS evaluation output (`memos_eval`): answers judged several times per row.

`{total_questions, correct, accuracy, detailed_results: {"<conversation key>": [{question_id,
question, golden_answer, generated_answer, llm_judgments: {judgment_1: bool, judgment_2: ...},
category}]}}`, category 5 left out. The judge was run several times over the same answers
(three in the files we know), each run's label kept per row; the file states one figure:

- `accuracy` is the mean of the runs' accuracies (each run: its trues over the rows), not
  the majority vote; the mean of the per-run accuracies, in that order, is the file's float
  exactly (the total of trues over runs x rows can differ in the last bit);
- `correct` is that mean times `total_questions`, rounded: no row count of any run.

The import keeps every run's label in the row (`llm_judgments` in `reported_extra`), takes
the majority vote (more than half the runs true) as the row's label (the pack's judge
folder: J), and states the runs beside it: `judgment_runs` computes each run, the mean, the
majority vote, and whether the mean is the file's `accuracy` exactly; the import prints
them under its table and keeps them in imported/source.json's notes.

dial481/locomo-audit released two such files (pinned: `AUDIT_SPECIFIC_SCORED`,
`AUDIT_VAGUE_SCORED`): deliberately wrong answers to the 1,540 questions of
categories 1-4 judged by gpt-4o-mini under a Mem0-style prompt (published 10.61% and
62.81%, the means). A pack imported from one of them says so in its notes: its J is the
rate at which that judge accepts a wrong answer, not a memory system's score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from memorybench.benchmarks.locomo.pins import AUDIT_SPECIFIC_SCORED, AUDIT_VAGUE_SCORED
from memorybench.errors import UserError
from memorybench.hashing import sha256_bytes
from memorybench.benchmarks.locomo.importers.released import JudgeLabels, Released, ReleasedRow, category_of
from memorybench.stages.importers._base import read_json, shape_error

__all__ = ["KNOWN_RELEASES", "JudgmentRuns", "MemosEval", "RunFigure", "judgment_runs"]

JUDGMENTS = "llm_judgments"
ROW_FIELDS = ("question", "golden_answer", "generated_answer", JUDGMENTS, "category")
TOP_FIELDS = ("total_questions", "correct", "accuracy", "detailed_results")

#: released files of this format that are not a memory system's answers, by sha256: what the pack says
KNOWN_RELEASES: dict[str, str] = {
    AUDIT_SPECIFIC_SCORED.sha256: (
        "DELIBERATELY WRONG ANSWERS: dial481/locomo-audit's specific-but-wrong answers (ap-baseline v1) to the 1,540 "
        "questions of categories 1-4, judged 3 times by gpt-4o-mini under a Mem0-style prompt; J here is the rate at "
        "which that judge accepts a wrong answer (a calibration set), not a memory system's score"
    ),
    AUDIT_VAGUE_SCORED.sha256: (
        "DELIBERATELY WRONG ANSWERS: dial481/locomo-audit's vague-but-topical wrong answers (ap-baseline v2) to the "
        "1,540 questions of categories 1-4, judged 3 times by gpt-4o-mini under a Mem0-style prompt; J here is the rate "
        "at which that judge accepts a wrong answer (a calibration set), not a memory system's score"
    ),
}


@dataclass(frozen=True)
class RunFigure:
    """Trues over rows for one judgment run (or the majority vote)."""

    name: str
    correct: int
    rows: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.rows if self.rows else 0.0


@dataclass(frozen=True)
class JudgmentRuns:
    """A judged file's runs, their mean and majority vote, beside what the file states."""

    rows: int
    runs: tuple[RunFigure, ...]
    #: the mean of the runs' accuracies (the file's `accuracy`, as its evaluation computes it)
    mean: float
    #: more than half the runs true, per row
    majority: RunFigure
    stated_total: Any
    stated_correct: Any
    stated_accuracy: Any
    #: per category (as a string): its own runs, mean and majority
    by_category: dict[str, JudgmentRuns] = field(default_factory=dict)

    @property
    def reproduced(self) -> bool:
        """Whether the mean is the file's `accuracy` exactly (as a float, every digit)."""
        return self.stated_accuracy == self.mean

    @property
    def correct_reproduced(self) -> bool:
        """Whether the file's `correct` is the mean times the total, rounded."""
        return self.stated_correct == round(self.mean * self.rows) and self.stated_total == self.rows

    def lines(self) -> list[str]:
        """What the import prints under its table: each run, the mean, the majority vote, the check."""
        runs = ", ".join(f"{r.name} {r.accuracy:.4f} ({r.correct})" for r in self.runs)
        lines = [
            f"judgment runs ({JUDGMENTS}, {len(self.runs)} per row, {self.rows} rows): {runs}",
            f"mean over the {len(self.runs)} runs {self.mean:.4f} (the published figure: the file's accuracy is this mean"
            + (
                f", reproduced exactly: {self.mean!r})"
                if self.reproduced
                else f"; the file states {self.stated_accuracy!r}, NOT reproduced)"
            ),
            f"majority vote {self.majority.accuracy:.4f} ({self.majority.correct} of {self.rows}): each row's label, the J above",
            (
                f"the file's correct {self.stated_correct} = round(mean x {self.rows}), no run's count"
                if self.correct_reproduced
                else f"the file's correct {self.stated_correct!r} of total_questions {self.stated_total!r} is not round(mean x {self.rows})"
            ),
        ]
        per = "; ".join(f"{c} {f.mean:.4f}/{f.majority.accuracy:.4f}" for c, f in self.by_category.items())
        if per:
            lines.append(f"per category, mean/majority: {per}")
        return lines


def _runs(labels: Sequence[Mapping[str, bool]], names: Sequence[str]) -> tuple[tuple[RunFigure, ...], float, RunFigure]:
    n = len(labels)
    runs = tuple(RunFigure(name, sum(1 for row in labels if row[name]), n) for name in names)
    mean = sum(r.accuracy for r in runs) / len(runs)  # the mean of the runs' accuracies, in this order
    majority = RunFigure("majority", sum(1 for row in labels if 2 * sum(bool(row[k]) for k in names) > len(names)), n)
    return runs, mean, majority


def judgment_runs(path: Path, data: Any | None = None) -> JudgmentRuns:
    """Each judgment run of a `memos_eval` file, their mean and majority vote, and the file's figures."""
    data = read_json(path) if data is None else data
    rows = _check(path, data)
    names = sorted(rows[0][2][JUDGMENTS], key=_run_order)
    labels = [item[JUDGMENTS] for _, _, item in rows]
    runs, mean, majority = _runs(labels, names)
    by_category: dict[str, JudgmentRuns] = {}
    for c in sorted({str(item["category"]) for _, _, item in rows}, key=str):
        these = [item[JUDGMENTS] for _, _, item in rows if str(item["category"]) == c]
        c_runs, c_mean, c_majority = _runs(these, names)
        by_category[c] = JudgmentRuns(len(these), c_runs, c_mean, c_majority, None, None, None)
    return JudgmentRuns(len(rows), runs, mean, majority, data["total_questions"], data["correct"], data["accuracy"], by_category)


def _run_order(name: str) -> tuple[int, str]:
    tail = name.rsplit("_", 1)[-1]
    return (int(tail), name) if tail.isdigit() else (10**9, name)


def _check(path: Path, data: Any) -> list[tuple[str, int, dict[str, Any]]]:
    """The rows of a `memos_eval` file, every judgment a bool and every row judged by the same runs, or one line."""
    if not isinstance(data, dict) or any(k not in data for k in TOP_FIELDS) or not isinstance(data["detailed_results"], dict):
        found = (
            f"an object without {', '.join(k for k in TOP_FIELDS if k not in data)}"
            if isinstance(data, dict)
            else f"a JSON {type(data).__name__}"
        )
        raise shape_error(path, MemosEval.name, MemosEval.shape, found)
    out = []
    names: list[str] | None = None
    for key, items in data["detailed_results"].items():
        if not isinstance(items, list):
            raise UserError(
                f"{path}: detailed_results[{key!r}] is a {type(items).__name__}, not a list of rows; pass the file as released"
            )
        for index, item in enumerate(items):
            where = f"row {key}[{index}]"
            missing = [k for k in ROW_FIELDS if not isinstance(item, dict) or k not in item]
            if missing:
                raise UserError(
                    f"{path}: {where} has no {', '.join(missing)}; a {MemosEval.name} row has {', '.join(ROW_FIELDS)}"
                )
            judgments = item[JUDGMENTS]
            if not isinstance(judgments, dict) or not judgments or any(type(v) is not bool for v in judgments.values()):
                raise UserError(
                    f"{path}: {where} has {JUDGMENTS} {judgments!r}; each run's judgment is true or false, e.g. "
                    '{"judgment_1": true, "judgment_2": false, "judgment_3": true}'
                )
            if names is None:
                names = sorted(judgments)
            elif sorted(judgments) != names:
                raise UserError(
                    f"{path}: {where} was judged by runs {', '.join(sorted(judgments))}, the first row by "
                    f"{', '.join(names)}; every row of one file carries the same runs"
                )
            out.append((str(key), index, item))
    if not out:
        raise UserError(f"{path} has no row under detailed_results; nothing to import")
    return out


class MemosEval:
    name: ClassVar[str] = "memos_eval"
    shape: ClassVar[str] = (
        '{total_questions, correct, accuracy, detailed_results: {"<conv key>": [{question, golden_answer, '
        "generated_answer, llm_judgments: {judgment_1, ...}, category}]}}"
    )

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        if model_key is not None:
            raise UserError(f"--model {model_key} is for locomo_task_eval files; a {self.name} file holds one system's answers")
        if len(files) != 1:
            raise UserError(
                f"a {self.name} import reads one file, got {len(files)} ({', '.join(p.name for p in files)}); import each on its own"
            )
        path = files[0]
        data = read_json(path)
        figures = judgment_runs(path, data)
        names = [r.name for r in figures.runs]
        rows = []
        for key, index, item in _check(path, data):
            judgments = item[JUDGMENTS]
            majority = 2 * sum(judgments[k] for k in names) > len(names)
            rows.append(
                ReleasedRow(
                    key=key,
                    index=index,
                    question=str(item["question"]),
                    gold=item["golden_answer"],
                    category=category_of(item["category"], path, f"row {key}[{index}]"),
                    prediction=str(item["generated_answer"] or ""),
                    reported={"label": majority},
                    extra={k: v for k, v in item.items() if k not in ROW_FIELDS or k == JUDGMENTS},
                )
            )
        known = KNOWN_RELEASES.get(sha256_bytes(path.read_bytes()))
        return Released(
            rows=rows,
            files=[("results", path)],
            labels=JudgeLabels(
                JUDGMENTS,
                f"the majority vote of the file's {len(names)} judgment runs ({JUDGMENTS}: "
                f"{', '.join(names)}); the file's own accuracy is their mean",
            ),
            drops=(5,),
            notes=[*([known] if known else []), *figures.lines()],
        )

"""LoCoMo's own `task_eval` output (`locomo_task_eval`), and its `_stats.json`.

The results file is locomo10.json's conversations, each `{sample_id, qa: [...]}`, every
qa row with `<model>_prediction` and `<model>_f1` added (LoCoMo's evaluate_qa.py writes
`round(f1, 3)`; category 1's F1 is numpy's mean, so its rounding is numpy's) and category
5 rows' `answer` set to their `adversarial_answer`. One file may hold several models:
`--model KEY` names one (a key may hold `/`). Its stats file (`task_eval/evaluation_stats.py`,
`analyze_aggr_acc`) is `{model: {category_counts, cum_accuracy_by_category, ...}}`: per
category, the row count and the sum of the rows' `<model>_f1`; LoCoMo's table is their
quotient. The by-memory and by-context-length breakdowns of the stats file are not read.

A file of some conversations only (LoCoMo's pull request 7 ships one run per conversation),
or with qa rows left unanswered (no `<model>_prediction`: a run that stopped), is partial:
the rows without an answer are `Released.unanswered`, and `import --allow-partial` takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from memorybench.errors import UserError
from memorybench.benchmarks.locomo.importers.released import Released, ReleasedRow, Stated, category_of
from memorybench.stages.importers._base import read_json, shape_error

__all__ = ["LocomoTaskEval"]

PREDICTION = "_prediction"
F1 = "_f1"
#: the dataset's own fields of a qa row: checked against the dataset, not kept twice
DATASET_FIELDS = ("question", "answer", "category", "evidence", "adversarial_answer")


def _is_stats(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and all(isinstance(v, dict) and "category_counts" in v for v in data.values())


def _model_keys(results: list[Any]) -> list[str]:
    keys = {
        k[: -len(PREDICTION)]
        for sample in results
        for row in sample.get("qa", [])
        if isinstance(row, dict)
        for k in row
        if k.endswith(PREDICTION) and len(k) > len(PREDICTION)
    }
    return sorted(keys)


class LocomoTaskEval:
    name: ClassVar[str] = "locomo_task_eval"
    shape: ClassVar[str] = (
        '[{sample_id, qa: [{question, answer, category, evidence, "<model>_prediction", "<model>_f1"}]}] (+ its _stats.json)'
    )

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        results: list[tuple[Path, Any]] = []
        stats: list[tuple[Path, Any]] = []
        for path in files:
            data = read_json(path)
            if isinstance(data, list):
                results.append((path, data))
            elif _is_stats(data):
                stats.append((path, data))
            else:
                raise shape_error(path, self.name, self.shape, f"a JSON {type(data).__name__} that is neither")
        if len(results) != 1 or len(stats) > 1:
            raise UserError(
                f"a locomo_task_eval import reads one results file and at most one _stats.json, got {len(results)} results "
                f"and {len(stats)} stats files ({', '.join(p.name for p in files)})"
            )
        path, data = results[0]
        for i, sample in enumerate(data):
            if not isinstance(sample, dict) or not isinstance(sample.get("qa"), list):
                raise shape_error(path, self.name, self.shape, f"item {i} without a qa list")
        key = self._model(path, data, model_key)
        rows, unanswered = self._rows(path, data, key)
        stated: dict[str, dict[int, Stated]] = {}
        read = [("results", path)]
        if stats:
            stats_path, stats_data = stats[0]
            if key not in stats_data:
                raise UserError(
                    f"{stats_path} has no figures of model {key!r} (it has {', '.join(sorted(stats_data))}); pass its own stats file"
                )
            stated["locomo_f1"] = self._stated(stats_path, stats_data[key])
            read.append(("stats", stats_path))
        return Released(
            rows=rows,
            files=read,
            model_key=key,
            stated=stated,
            unanswered=unanswered,
            fields={"locomo_f1": key + F1} if any("locomo_f1" in r.reported for r in rows) else {},
        )

    @staticmethod
    def _model(path: Path, data: list[Any], model_key: str | None) -> str:
        keys = _model_keys(data)
        if model_key is None:
            if len(keys) != 1:
                have = ", ".join(keys) if keys else "none"
                raise UserError(f"{path} holds the predictions of {len(keys)} models ({have}); name one with --model KEY")
            return keys[0]
        if model_key not in keys:
            raise UserError(
                f"{path} has no {model_key}{PREDICTION} field; its models are {', '.join(keys) or 'none'} (--model KEY)"
            )
        return model_key

    @staticmethod
    def _rows(path: Path, data: list[Any], key: str) -> tuple[list[ReleasedRow], list[str]]:
        """The answered rows, and where each row without a `<key>_prediction` is (the stage
        refuses those unless the import is --allow-partial)."""
        rows, missing = [], []
        for sample in data:
            sample_key = str(sample.get("sample_id"))
            for index, row in enumerate(sample["qa"]):
                where = f"{sample_key} qa[{index}]"
                if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                    raise UserError(f"{path}: {where} is not a qa row with a question")
                prediction = row.get(key + PREDICTION)
                if prediction is None:
                    missing.append(where)
                    continue
                if not isinstance(prediction, str):
                    raise UserError(f"{path}: {where}: {key}{PREDICTION} is a {type(prediction).__name__}, not a string")
                reported = {"locomo_f1": row[key + F1]} if row.get(key + F1) is not None else {}
                # the model's other fields (context, recall...) are kept; other models' are not this import's
                extra = {k: v for k, v in row.items() if k.startswith(key + "_") and k not in (key + PREDICTION, key + F1)}
                rows.append(
                    ReleasedRow(
                        key=sample_key,
                        index=index,
                        question=row["question"],
                        gold=row.get("answer"),
                        category=category_of(row.get("category"), path, where),
                        prediction=prediction,
                        reported=reported,
                        extra=extra,
                    )
                )
        return rows, missing

    @staticmethod
    def _stated(path: Path, figures: Any) -> dict[int, Stated]:
        counts = figures.get("category_counts") if isinstance(figures, dict) else None
        totals = figures.get("cum_accuracy_by_category") if isinstance(figures, dict) else None
        if not isinstance(counts, dict) or not isinstance(totals, dict):
            raise UserError(
                f"{path}: a model's figures need category_counts and cum_accuracy_by_category (LoCoMo's evaluation_stats.py)"
            )
        return {
            category_of(c, path, f"category_counts key {c!r}"): Stated(rows=int(n), total=float(totals.get(c, 0)))
            for c, n in counts.items()
        }

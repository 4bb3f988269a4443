"""Scores of a pack's stored answers: one row's local scores, the CSV and the metrics.

Pure functions of the rows (no model, no clock, no files), so a rescore is byte-identical
on every run. Reading the rows from a pack is `memorybench.pack.scores`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.score import CATEGORY_NAMES
from memorybench.score.scorers import scorers
from memorybench.stats import mean

ROW_COLUMNS = ("question_id", "sample_id", "category", "category_name", "question", "prediction", "gold", "adversarial_answer")


def score_row(row: Mapping[str, Any]) -> dict[str, float]:
    """Every qa-stage scorer's score of one prediction row."""
    return {s.name: s(row) for s in scorers("qa")}


def local_metrics(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any]) -> dict[str, Any]:
    """`metrics.json` without usage, from scored rows (each a prediction row plus `score_row`)."""
    metrics: dict[str, Any] = {
        "schema": "metrics.v1",
        "run_id": meta.get("run_id"),
        "questions": len(rows),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "category_names": {str(k): v for k, v in CATEGORY_NAMES.items()},
        "counts": {"total": len(rows), "by_category": {}},
        "labels": {s.name: s.label for s in scorers("qa")},
    }
    for metric in (s.name for s in scorers("qa")):
        by_category = {str(c): mean([r[metric] for r in rows if r["category"] == c]) for c in CATEGORY_NAMES}
        metrics[metric] = {"overall": mean([r[metric] for r in rows]), "by_category": by_category}
    for category in CATEGORY_NAMES:
        metrics["counts"]["by_category"][str(category)] = sum(1 for r in rows if r["category"] == category)
    if meta.get("partial"):  # a partial import (RunMeta.partial): what it holds and what is absent
        metrics["partial"] = meta["partial"]
    return metrics


def predictions_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [s.name for s in scorers("qa")]
    writer.writerow((*ROW_COLUMNS, *names))
    for r in rows:
        writer.writerow([
            r["question_id"], r["sample_id"], r["category"], CATEGORY_NAMES[r["category"]], r["question"],
            r["prediction"], "" if r["gold"] is None else str(r["gold"]), r.get("adversarial_answer") or "",
            *(repr(r[name]) for name in names),
        ])
    return buffer.getvalue()

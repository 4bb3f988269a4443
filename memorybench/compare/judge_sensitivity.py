"""The report's `judge_sensitivity` table: the same answers under each judge of a report.

"The judge is the benchmark": a lenient judge accepts answers a strict one rejects, and the
order of the systems can change with it. For each judge and each condition it judged, the
judge's figure (its mean over the kinds the benchmark's judge scores: LoCoMo's 1-4) with its
interval over the benchmark's unit, the condition's rank under that judge (1 the highest,
ties share the better rank), how many places the condition moves between the judges that
judged it (`places_moved`: its worst rank minus its best), and beside them what the judge
accepts of answers known to be wrong (`memorybench judge-check`'s sets: the specific and
vague wrong answers, and the right ones), empty where the judge was never checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from memorybench.compare.report_tables import _rate_interval, benchmark_of_rows, judged_conditions, judges_of
from memorybench.compare.summary import judge_key

__all__ = ["COLUMNS", "judge_sensitivity"]

COLUMNS = [
    "condition",
    "judge",
    "figure",
    "ci_low",
    "ci_high",
    "interval",
    "n",
    "rank",
    "of",
    "places_moved",
    "specific_wrong_accepted",
    "vague_wrong_accepted",
    "gold_accepted",
    "calibration",
]


def _figure(rows: pd.DataFrame, judge: str, confidence: float) -> tuple[float, float, float, str, int]:
    """(figure, low, high, interval, n) of one condition under one judge: each question's score
    is its mean over the judge's passes and the condition's packs, over the kinds it judges."""
    bench = benchmark_of_rows(rows)
    column = judge_key("j_score", judge)
    scored = rows[rows["category"].map(bench.judges)].dropna(subset=[column])
    per_question = scored.groupby(["question_id", "sample_id"], sort=False)[column].mean()
    if per_question.empty:
        return math.nan, math.nan, math.nan, "no judged question", 0
    low, high, method = _rate_interval(
        per_question, per_question.index.get_level_values("sample_id").to_series(), bench.unit, confidence
    )
    return float(per_question.mean()), low, high, method, len(per_question)


def judge_sensitivity(
    frame: pd.DataFrame, calibration_of: Callable[[str], Any] | None = None, confidence: float = 0.95
) -> pd.DataFrame:
    """One row per judge and condition it judged (see the module docstring); `calibration_of(judge)`
    gives the judge's judge-check record (`pack.judge_calibration.Calibration`) or None."""
    out: list[dict[str, Any]] = []
    for judge in judges_of(frame):
        with_judge = judged_conditions(frame, judge)
        found = calibration_of(judge) if calibration_of is not None else None
        judged = []
        for condition, rows in frame.groupby("condition", sort=False):
            if not with_judge.get(condition, False):
                continue
            value, low, high, method, n = _figure(rows, judge, confidence)
            judged.append(
                {
                    "condition": condition,
                    "judge": judge,
                    "figure": value,
                    "ci_low": low,
                    "ci_high": high,
                    "interval": method,
                    "n": n,
                    "specific_wrong_accepted": _accepted(found, "specific_wrong"),
                    "vague_wrong_accepted": _accepted(found, "vague_wrong"),
                    "gold_accepted": _accepted(found, found.right_set if found is not None else "gold"),
                    "calibration": found.summary() if found is not None else "not calibrated",
                }
            )
        ranks = pd.Series([r["figure"] for r in judged], dtype=float).rank(ascending=False, method="min")
        for row, rank in zip(judged, ranks):
            row["rank"] = None if math.isnan(rank) else int(rank)
            row["of"] = len(judged)
        out.extend(judged)
    table = pd.DataFrame(out, columns=[c for c in COLUMNS if c != "places_moved"])
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    spread = (
        table.dropna(subset=["rank"]).groupby("condition")["rank"].agg(lambda r: int(r.max() - r.min()) if len(r) > 1 else None)
    )
    table["places_moved"] = table["condition"].map(spread)
    table = table.astype({"rank": "Int64", "of": "Int64", "places_moved": "Int64", "n": "Int64"})
    return table[COLUMNS]


def _accepted(found: Any, name: str) -> float:
    """A set's overall acceptance in a judge-check record (`accepted`, or the plain fields of
    a record read from an older file); nan where the judge was never checked."""
    if found is None:
        return math.nan
    value = (found.accepted or {}).get(name)
    if value is None:
        value = getattr(found, f"{'gold' if name == found.right_set else name}_accepted", None)
    return math.nan if value is None else float(value)

"""The report's scores and their intervals: the lexical F1 and J per condition and kind with the
overalls, every condition against the first, paired by question, and another benchmark's own
figure per question kind (`accuracy_by_type`: LongMemEval's accuracy). The kinds, their names,
the overalls and the kinds a judge scores are the record's of the rows' benchmark
(`memorybench.benchmark`: LoCoMo's categories 1-5, its overalls 1-4 and 1-5, J over 1-4).

Every interval and test is `memorybench.compare.intervals`'s, as in `compare`: the main
one resamples conversations (cluster-robust t for a score; for a rate, J or category 5's
refusal F1, an interval that stays in [0, 1]: `metric_kind`), and the question-level
bootstrap beside it is labelled conditional on these conversations and gives no p-value.
`paired_differences` tests each category too, its p-values Holm-adjusted over the category
tests of one metric in one pair (`Bootstrap.adjust`), and names that family in `family`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from memorybench.compare.intervals import (
    Interval,
    Resampling,
    format_p,
    holm,
    mean_interval,
    paired_difference,
    question_bootstrap_interval,
    question_paired_bootstrap,
)
from memorybench.benchmark import Benchmark
from memorybench.compare.report_tables import (
    benchmark_of_rows,
    in_category,
    judged_conditions,
    category_name,
    judged_subsets,
    judges_of,
    overall_shown,
    rows_where,
)
from memorybench.compare.category_tests import metric_kind
from memorybench.compare.gold_overlay import CORRECTED
from memorybench.compare.rates import stratified_rate_interval
from memorybench.compare.summary import judge_key
from memorybench.score.rows import covers_label
from memorybench.score.scorers import LEXICAL

__all__ = ["Bootstrap", "accuracy_by_type", "bootstrap_interval", "j_failed_wrong", "paired_differences", "scores_by_category"]


class Bootstrap(BaseModel):
    """The design's `bootstrap:` settings: the confidence of every interval, and the
    resamples and seed of the question-level (conditional) bootstraps beside the main,
    conversation-level ones (`memorybench.compare.intervals`)."""

    model_config = ConfigDict(extra="forbid")

    #: resamples of the questions per conditional interval
    resamples: int = Field(10_000, ge=100)
    seed: int = 0
    confidence: float = Field(0.95, gt=0, lt=1)
    #: how `paired_differences` adjusts the p-values of its category tests, over the family of
    #: one metric's category tests in one pair: Holm's step-down method, or none
    adjust: Literal["holm", "none"] = "holm"

    def resampling(self) -> Resampling:
        return Resampling(resamples=self.resamples, seed=self.seed, confidence=self.confidence)


# -- statistics -----------------------------------------------------------------------
def bootstrap_interval(values: np.ndarray, boot: Bootstrap, *key: Any) -> tuple[float, float]:
    """The question-level percentile interval of the mean, conditional on the conversations
    the questions come from (`intervals.question_bootstrap_interval`); (nan, nan) for fewer
    than two values."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return math.nan, math.nan
    found = question_bootstrap_interval(values, [0] * len(values), boot.resampling(), *key)
    return float(found.low), float(found.high)  # type: ignore[arg-type]


def _interval(
    values: np.ndarray, clusters: np.ndarray, boot: Bootstrap, unit: str = "conversation", kind: str = "score"
) -> Interval:
    """The main interval of a mean over the questions' clusters (`unit`): cluster-robust t for a
    score, one that stays in [0, 1] for a rate (`intervals.mean_interval`)."""
    return mean_interval(values, clusters, confidence=boot.confidence, unit=unit, kind=kind)


def unit_of(rows: pd.DataFrame) -> str:
    """The resampling unit of the rows' benchmark (their `dataset` column; LoCoMo's without one)."""
    return benchmark_of_rows(rows).unit


def _covers_category(frame: pd.DataFrame, condition: str, category: int | str, bench: Benchmark) -> bool:
    """Whether a kind's or an overall's row has a number for this condition (`overall_shown`: a 1-5
    overall of a pack that never asked category 5 would be a 1-4 overall under a 1-5 label)."""
    if category not in bench.subsets:
        return True
    return overall_shown(bench.subsets[str(category)], set(frame.loc[frame["condition"] == condition, "category"].unique()))


def _per_question(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A question's score in a condition: its mean over the condition's packs."""
    rows = frame.dropna(subset=[metric])
    keys = ["condition", "question_id", "sample_id", "category"]
    return rows.groupby(keys, sort=False, observed=True)[metric].mean().reset_index()


def _replicate_sd(frame: pd.DataFrame, metric: str, condition: str, category: int | str, bench: Benchmark) -> float:
    """The sd over a condition's runs (its replicates) of each run's mean; nan for one run."""
    rows = frame[(frame["condition"] == condition) & in_category(frame, category, bench)]
    per_run = rows.dropna(subset=[metric]).groupby("pack", sort=False)[metric].mean()
    return float(per_run.std(ddof=1)) if len(per_run) > 1 else math.nan


def j_failed_wrong(frame: pd.DataFrame, judge: str) -> pd.Series:
    """Per row, J with the judge's failed verdicts counted as WRONG: the parsed passes'
    mean weighted by parsed / (parsed + failed); a row with failures only scores 0."""
    score, passes = frame[judge_key("j_score", judge)], frame[judge_key("j_passes", judge)].fillna(0)
    failed = frame[judge_key("j_failed", judge)].fillna(0)
    total = passes + failed
    out = (score.fillna(0) * passes / total.where(total > 0)).where(total > 0)
    return out.where(frame[judge_key("j_passes", judge)].notna())


def _judge_failed(frame: pd.DataFrame, judge: str) -> bool:
    return bool(frame[judge_key("j_failed", judge)].fillna(0).gt(0).any())


def _bounds(found: Interval) -> tuple[float, float]:
    return (math.nan, math.nan) if found.low is None else (float(found.low), float(found.high))  # type: ignore[arg-type]


def scores_by_category(frame: pd.DataFrame, boot: Bootstrap) -> pd.DataFrame:
    """The lexical F1 (`locomo_f1`) per condition and kind of its benchmark (1-5), then its
    overalls (`Benchmark.subsets`: 1-4 and 1-5), with its interval over the benchmark's unit;
    beside it, per judge, J (`j/<judge id>`, over the kinds the benchmark's judge scores: 1-4)
    where every pack of the condition has that judge, and J with failures counted WRONG
    (`j_failed_wrong/<judge id>`) where the judge failed on any row."""
    f1 = _per_question(frame, LEXICAL)
    corrected = None
    if CORRECTED in frame.columns:
        fixed = _per_question(frame, CORRECTED)
        corrected = {c: fixed[fixed["condition"] == c] for c in fixed["condition"].unique()}
    if "wrong_gold" in frame.columns:
        wrong = set(frame.loc[frame["wrong_gold"].fillna(False).astype(bool), "question_id"])
        f1 = f1.assign(wrong_gold=f1["question_id"].isin(wrong))
    runs = frame.groupby("condition", sort=False)["pack"].nunique()
    judges = judges_of(frame)
    judged: dict[str, tuple[pd.Series, dict[str, pd.DataFrame], pd.DataFrame]] = {}
    for judge in judges:
        with_j = judged_conditions(frame, judge)
        rows = frame[frame["condition"].map(with_j) & rows_where(frame, Benchmark.judges)]
        metrics = {"j": _per_question(rows, judge_key("j_score", judge))}
        if _judge_failed(rows, judge):
            metrics["j_failed_wrong"] = _per_question(
                rows.assign(**{judge_key("j_fw", judge): j_failed_wrong(rows, judge)}), judge_key("j_fw", judge)
            )
        judged[judge] = with_j, metrics, rows
    out = []
    for condition in frame["condition"].unique():
        bench = benchmark_of_rows(frame[frame["condition"] == condition])
        for category in [*bench.category_names, *bench.subsets]:
            row: dict[str, Any] = {"condition": condition, "category": category, "category_name": category_name(category, bench)}
            shown = _covers_category(frame, condition, category, bench)
            sel = f1[(f1["condition"] == condition) & in_category(f1, category, bench)] if shown else f1.iloc[0:0]
            kind = metric_kind(LEXICAL, bench.name, [category] if category not in bench.subsets else [])
            found = _interval(sel[LEXICAL].to_numpy(), sel["sample_id"].to_numpy(), boot, unit_of(sel), kind)
            low, high = _bounds(found)
            row.update(
                {
                    "runs": int(runs[condition]),
                    "n": found.n,
                    "conversations": found.clusters,
                    LEXICAL: found.estimate if found.estimate is not None else math.nan,
                    "f1_sd_runs": _replicate_sd(frame, LEXICAL, condition, category, bench) if shown else math.nan,
                    "f1_ci_low": low,
                    "f1_ci_high": high,
                }
            )
            if "wrong_gold" in frame.columns:  # the known gold errors' overlay applies to these packs
                row.update(_gold_columns(sel, corrected.get(condition) if corrected is not None else None, category, boot, kind))
            for judge, (with_j, metrics, rows) in judged.items():
                for name, per_question in metrics.items():
                    score = per_question.columns[-1]
                    if not (category in bench.subsets or bench.judges(category)) or not with_j.get(condition, False):
                        jsel = per_question.iloc[0:0]  # a kind its judge does not score (5): no J
                    else:
                        jsel = per_question[(per_question["condition"] == condition) & in_category(per_question, category, bench)]
                    jfound = _interval(jsel[score].to_numpy(), jsel["sample_id"].to_numpy(), boot, unit_of(jsel), "rate")
                    jl, jh = _bounds(jfound)
                    row.update(
                        {
                            judge_key(f"{name}_n" if name != "j" else "j_n", judge): jfound.n,
                            judge_key(name, judge): jfound.estimate if jfound.estimate is not None else math.nan,
                            judge_key(f"{name}_ci_low", judge): jl,
                            judge_key(f"{name}_ci_high", judge): jh,
                        }
                    )
                    if name == "j":
                        j_sd = (
                            _replicate_sd(rows, judge_key("j_score", judge), condition, category, bench) if jfound.n else math.nan
                        )
                        row[judge_key("j_sd_runs", judge)] = j_sd
            row["interval"] = found.method if found.note is None else f"{found.method}: {found.note}"
            out.append(row)
    return pd.DataFrame(out)


def _gold_columns(
    sel: pd.DataFrame, corrected: pd.DataFrame | None, category: int | str, boot: Bootstrap, kind: str = "score"
) -> dict[str, Any]:
    """LoCoMo F1 on the questions without a known wrong gold answer (`n_no_gold_error`,
    `f1_no_gold_error` and its interval), and with the audit's corrected answers scored by
    LoCoMo's rules where the design asks (`f1_corrected_gold`)."""
    clean = sel[~sel["wrong_gold"]]
    found = _interval(clean[LEXICAL].to_numpy(), clean["sample_id"].to_numpy(), boot, unit_of(clean), kind)
    low, high = _bounds(found)
    out: dict[str, Any] = {
        "n_no_gold_error": found.n,
        "f1_no_gold_error": _nan(found.estimate),
        "f1_no_gold_error_ci_low": low,
        "f1_no_gold_error_ci_high": high,
    }
    if corrected is not None:
        fixed = corrected[corrected["question_id"].isin(sel["question_id"])] if len(sel) else corrected.iloc[0:0]
        out["f1_corrected_gold"] = fixed[CORRECTED].mean() if len(fixed) else math.nan
    return out


def paired_differences(frame: pd.DataFrame, boot: Bootstrap, pairs: Sequence[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Every condition against the first (the baseline), or each (baseline, condition) of
    `pairs` (condition labels the frame holds), paired by question over the
    questions both hold, per overall of the baseline's benchmark (`Benchmark.subsets`: 1-4,
    and 1-5 where both asked category 5; J only over those its judge scores every kind of) and then
    per kind, and per metric (the lexical F1; J of each judge both conditions have): the mean
    difference, its interval and p-value over conversations, the minimum detectable difference
    (80% power, alpha 0.05), and the question-level interval conditional on these
    conversations (no p-value). The category rows' `p_adjusted` is Holm's over the category
    tests of that metric and pair (`boot.adjust`), named in `family`; an overall row is one
    test, not adjusted."""
    conditions = list(frame["condition"].unique())
    out: list[dict[str, Any]] = []
    if pairs is None:
        pairs = [(conditions[0], c) for c in conditions[1:]]
    if not pairs:
        return pd.DataFrame(out, columns=_PAIRED_COLUMNS)
    metrics = [(LEXICAL, LEXICAL, None)]
    for judge in judges_of(frame):
        metrics.append((judge_key("j", judge), judge_key("j_score", judge), judge))
    for base, condition in pairs:
        for metric, column, judge in metrics:
            if judge is not None:
                with_j = judged_conditions(frame, judge)
                if not (with_j.get(base, False) and with_j.get(condition, False)):
                    continue
            per_question = _per_question(frame, column)
            a = per_question[per_question["condition"] == base].set_index("question_id")
            b = per_question[per_question["condition"] == condition].set_index("question_id")
            bench = benchmark_of_rows(frame[frame["condition"] == base])
            unit = bench.unit
            common = [q for q in a.index if q in b.index]
            for overall, subset in (bench.subsets if judge is None else judged_subsets(bench)).items():
                if not (_covers_category(frame, base, overall, bench) and _covers_category(frame, condition, overall, bench)):
                    continue
                ids = [q for q in common if a.at[q, "category"] in subset.kinds]
                row = _paired_row(a, b, ids, column, metric, judge, unit, boot)
                out.append(
                    {
                        "baseline": base,
                        "condition": condition,
                        "metric": metric,
                        "categories": overall,
                        **row,
                        "p_adjusted": row["p"],
                        "family": "one test (an overall): not adjusted",
                        "protocols": _protocols(frame, base, condition),
                    }
                )
            held = sorted({int(a.at[q, "category"]) for q in common if judge is None or bench.judges(a.at[q, "category"])})
            rows = [
                _paired_row(a, b, [q for q in common if a.at[q, "category"] == c], column, metric, judge, unit, boot)
                for c in held
            ]
            ps = [None if math.isnan(r["p"]) else r["p"] for r in rows]
            adjusted = holm(ps) if boot.adjust == "holm" else ps
            family = (
                f"Holm over the {len(rows)} category tests of {metric}, {base} vs {condition}"
                if boot.adjust == "holm"
                else f"unadjusted ({len(rows)} category tests of {metric})"
            )
            for category, row, p in zip(held, rows, adjusted):
                out.append(
                    {
                        "baseline": base,
                        "condition": condition,
                        "metric": metric,
                        "categories": str(category),
                        **row,
                        "p_adjusted": _nan(p),
                        "family": family,
                        "protocols": _protocols(frame, base, condition),
                    }
                )
    return pd.DataFrame(out, columns=_PAIRED_COLUMNS)


def _paired_row(
    a: pd.DataFrame, b: pd.DataFrame, ids: list[str], column: str, metric: str, judge: str | None, unit: str, boot: Bootstrap
) -> dict[str, Any]:
    """One paired test over `ids`: B minus A with its interval, p and MDD over the clusters, and
    the question-level interval conditional on them (keyed as `compare` keys it)."""
    x, y = a.loc[ids, column].to_numpy(float), b.loc[ids, column].to_numpy(float)
    clusters = a.loc[ids, "sample_id"].to_numpy()
    found = paired_difference(x, y, clusters, confidence=boot.confidence, unit=unit)
    conditional = None
    if len(ids) >= 2:
        # keyed as `compare` keys it (metric, what it covers), so both print one interval
        covers = covers_label(sorted({int(c) for c in a.loc[ids, "category"]}))
        key = "j" if judge is not None else metric
        conditional = question_paired_bootstrap(x, y, clusters, boot.resampling(), key, covers, "difference", unit=unit)
    return {
        "questions": len(ids),
        "conversations": found.clusters,
        "a": _nan(found.a),
        "b": _nan(found.b),
        "difference": _nan(found.difference),
        "ci_low": _nan(found.low),
        "ci_high": _nan(found.high),
        "p": _nan(found.p_two_sided),
        "p_text": format_p(found.p_two_sided, found.p_resolution),
        "mdd": _nan(found.mdd),
        # whether the observed difference reaches what this design detects with 80% power
        "exceeds_mdd": math.nan if found.mdd is None or found.difference is None else bool(abs(found.difference) >= found.mdd),
        "conditional_ci_low": _nan(conditional.low) if conditional else math.nan,
        "conditional_ci_high": _nan(conditional.high) if conditional else math.nan,
        "method": found.method if found.note is None else f"{found.method}: {found.note}",
    }


_PAIRED_COLUMNS = [
    "baseline",
    "condition",
    "metric",
    "categories",
    "questions",
    "conversations",
    "a",
    "b",
    "difference",
    "ci_low",
    "ci_high",
    "p",
    "p_text",
    "p_adjusted",
    "family",
    "mdd",
    "exceeds_mdd",
    "conditional_ci_low",
    "conditional_ci_high",
    "method",
    "protocols",
]


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _protocols(frame: pd.DataFrame, base: str, condition: str) -> str:
    """`same (<protocol>)`, or `differ: <base's>; <condition's>` (a benchmark's own reader prompt
    poses some kinds unlike an open-ended prompt: `Benchmark.protocol_note`)."""
    if "question_protocol" not in frame.columns:
        return "-"

    def of(name: str) -> str:
        return ", ".join(sorted(frame.loc[frame["condition"] == name, "question_protocol"].dropna().astype(str).unique())) or "-"

    mine, theirs = of(base), of(condition)
    return f"same ({mine})" if mine == theirs else f"differ: {mine}; {theirs}"


#: the columns of `accuracy_by_type` (also of an empty one)
_BY_TYPE_COLUMNS = (
    "condition",
    "benchmark",
    "judge",
    "type",
    "type_name",
    "runs",
    "n",
    "accuracy",
    "ci_low",
    "ci_high",
    "interval",
)


def accuracy_by_type(frame: pd.DataFrame, boot: Bootstrap) -> pd.DataFrame:
    """Another benchmark's own figure (LongMemEval's accuracy), per condition and judge: the judge's
    accuracy per question kind, numbered and named by the benchmark record
    (`Benchmark.category_names`), with n and its interval over the benchmark's unit; the mean of the
    kinds where the benchmark reports one (`task_averaged`; only when every kind has questions, as
    print_qa_metrics.py's mean of six means); overall; and each subset its question ids mark
    (`id_marks`: LongMemEval's abstention). A question's score is its judge score (the mean over its
    labelled passes) averaged over the condition's packs. A LoCoMo condition has no row: its
    figures are `scores_by_category`'s."""
    out: list[dict[str, Any]] = []
    judges = {judge: judged_conditions(frame, judge) for judge in judges_of(frame)}
    runs = frame.groupby("condition", sort=False)["pack"].nunique()
    for condition, rows in frame.groupby("condition", sort=False):
        bench = benchmark_of_rows(rows)
        if bench.own_lexical_rules:
            continue
        for judge, with_j in judges.items():
            if not with_j.get(condition, False):
                continue
            score = judge_key("j_score", judge)
            scores = _per_question(rows, score)
            base = {"condition": condition, "benchmark": bench.name, "judge": judge, "runs": int(runs[condition])}

            def row(
                kind: str, name: str, sel: pd.DataFrame, score: str = score, bench: Any = bench, base: dict[str, Any] = base
            ) -> dict[str, Any]:
                found = _interval(sel[score].to_numpy(), sel["sample_id"].to_numpy(), boot, bench.unit, "rate")
                low, high = _bounds(found)
                return {
                    **base,
                    "type": kind,
                    "type_name": name,
                    "n": found.n,
                    "accuracy": _nan(found.estimate),
                    "ci_low": low,
                    "ci_high": high,
                    "interval": found.method if found.note is None else f"{found.method}: {found.note}",
                }

            kinds = [
                row(str(number), name, scores[scores["category"] == number]) for number, name in bench.category_names.items()
            ]
            out += [k for k in kinds if k["n"]]  # a kind without questions has no row (the task average names it)
            if bench.task_averaged:
                every = all(k["n"] for k in kinds)
                missing = ", ".join(k["type_name"] for k in kinds if not k["n"])
                typed = scores[scores["category"].isin(list(bench.category_names))]
                averaged = (
                    stratified_rate_interval(
                        typed[score].to_numpy(), typed["category"].to_numpy(), confidence=boot.confidence, unit=bench.unit
                    )
                    if every
                    else None
                )
                out.append(
                    {
                        **base,
                        "type": "task-averaged",
                        "n": sum(k["n"] for k in kinds),
                        "type_name": f"mean of the {len(kinds)} per-{bench.kind_word} accuracies"
                        + ("" if every else f" (none: no question of {missing})"),
                        "accuracy": _nan(averaged.estimate) if averaged else math.nan,
                        "ci_low": _nan(averaged.low) if averaged else math.nan,
                        "ci_high": _nan(averaged.high) if averaged else math.nan,
                        "interval": averaged.method if averaged else None,
                    }
                )
            out.append(row("overall", "every judged question", scores))
            for subset, mark in bench.id_marks.items():
                out.append(
                    row(
                        subset,
                        f"questions whose id holds {mark!r} (also in their {bench.kind_word})",
                        scores[scores["question_id"].str.contains(mark, regex=False)],
                    )
                )
    return pd.DataFrame(out, columns=list(_BY_TYPE_COLUMNS))


def detectable_notes(table: pd.DataFrame, unit: str) -> list[str]:
    """One line per metric and overall of `paired_differences`: which pairs' observed differences
    reach the design's minimum detectable difference, and that the others are below what these
    samples detect (not evidence of no difference)."""
    lines = []
    overall = table[table["family"].astype(str).str.startswith("one test")]
    for (metric, covers), rows in overall.groupby(["metric", "categories"], sort=False):
        rows = rows[rows["mdd"].notna() & rows["difference"].notna()]
        if rows.empty:
            continue
        over = rows[rows["exceeds_mdd"].astype(bool)]
        shown = "; ".join(
            f"{r.condition} - {r.baseline} {r.difference:+.4f} (MDD {r.mdd:.4f}, p {r.p_text})" for r in over.itertuples()
        )
        units = int(rows["conversations"].max())
        lines.append(
            f"Detectable differences ({metric}, overall {covers}): {len(over)} of {len(rows)} pair(s) differ by at least "
            f"their minimum detectable difference{': ' + shown if shown else ''}; "
            + (
                f"the other {len(rows) - len(over)} are smaller than what {units} {unit}(s) detect with 80% power "
                "(not evidence that they do not differ)."
                if len(over) < len(rows)
                else "every pair does."
            )
        )
    return lines

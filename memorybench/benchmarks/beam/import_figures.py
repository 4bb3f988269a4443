"""The figures a BEAM release states, recomputed from its files with its own arithmetic, beside the packs'.

Cognee: aggregate_cross_run.py's pooling (each run's scores grouped by question type, the runs
concatenated) and numpy's mean, as its `bootstrap_ci` returns it; the run sd `statistics.stdev`
of the runs' means. AMB: runner.py's accuracy (the mean of the rows' scores, rows without one
left out; correct / total in a file without scores). Ours: each pack's judge folder (`j`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memorybench.benchmarks.beam.data import ABILITIES
from memorybench.benchmarks.beam.import_plan import COGNEE, Figure, ImportPlan, ImportRun, RunFigure, StatedFigures
from memorybench.benchmarks.beam.released_files import AmbFile, BeamRow, CogneeSummary

__all__ = ["ROUNDING", "amb_stated", "cognee_stated", "mean_of", "run_figure"]

#: a recomputed figure and a stated one closer than this are "rounding" (summed in another order), not "differs"
ROUNDING = 1e-12


def _agreement(stated: float | None, recomputed: float | None) -> str:
    if stated is None:
        return "not stated"
    if recomputed is None:
        return "differs"
    if stated == recomputed:
        return "equal"
    return "rounding" if abs(stated - recomputed) <= ROUNDING else "differs"


def _figure(stated: float | None, recomputed: float | None, ours: float | None) -> Figure:
    return Figure(
        stated=stated,
        recomputed=recomputed,
        ours=ours,
        agreement=_agreement(stated, recomputed),
        ours_agreement=None if ours is None else _agreement(stated, ours),
    )


def mean_of(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _sd(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.stdev(present) if len(present) >= 2 and len(present) == len(values) else None


def run_figure(plan: ImportPlan, run: ImportRun, sha: str, rid: str, metrics: Any) -> RunFigure:
    scored = [r.score for r in run.rows if r.score is not None]
    taus = [r.side for r in run.rows if plan.fmt == COGNEE and r.side is not None]
    return RunFigure(
        run_idx=run.run_idx,
        file=run.path.name,
        sha256=sha,
        run_id=rid,
        questions=len(run.rows),
        scored=len(scored),
        mean_recomputed=mean_of(scored),
        mean_ours=metrics.j.overall if metrics else None,
        kendall_tau_recomputed=mean_of(taus) if plan.fmt == COGNEE else None,
    )


def _npmean_of(values: Sequence[float]) -> float:
    """numpy's mean (pairwise summation), as Cognee's bootstrap_ci returns it."""
    import numpy as np

    return float(np.mean(np.asarray(values, dtype=float)))


def _cognee_pooled(
    plan: ImportPlan, metric: Callable[[BeamRow], float | None], ability: str | None
) -> tuple[list[float], list[float]]:
    """aggregate_cross_run.py's pooling of one metric: per run its scores grouped by question type
    (types in order of first appearance, rows in file order), all runs concatenated; and each
    run's mean (`sum(scores) / len(scores)` over its grouped scores), for runs with a score."""
    types: list[str] = []
    for run in plan.runs:
        for r in run.rows:
            if r.ability not in types:
                types.append(str(r.ability))
    pooled, means = [], []
    for run in plan.runs:
        grouped: dict[str, list[float]] = {}
        for r in run.rows:
            value = metric(r)
            if value is not None:
                grouped.setdefault(str(r.ability), []).append(value)
        scores = [v for t in types if ability in (None, t) for v in grouped.get(t, [])]
        pooled.extend(scores)
        if scores:
            means.append(sum(scores) / len(scores))
    return pooled, means


def cognee_stated(
    plan: ImportPlan, summary: CogneeSummary | None, figures: list[RunFigure], metrics: list[Any]
) -> tuple[dict[str, StatedFigures], dict[str, dict[str, StatedFigures]], list[str]]:
    getters: dict[str, Callable[[BeamRow], float | None]] = {"beam_rubric": lambda r: r.score, "kendall_tau": lambda r: r.side}
    run_ours = [f.mean_ours for f in figures]

    def one(metric: str, ability: str | None, stated: Mapping[str, float | None] | None) -> StatedFigures | None:
        pooled, means = _cognee_pooled(plan, getters[metric], ability)
        if not pooled and stated is None:
            return None
        if metric == "beam_rubric":
            if ability is None:
                ours_runs = run_ours
            else:
                number = str(ABILITIES.index(ability) + 1)
                ours_runs = [m.j.by_category.get(number) if m else None for m in metrics]
            ours_mean = mean_of([v for v in ours_runs if v is not None]) if all(v is not None for v in ours_runs) else None
            ours_sd = _sd(ours_runs)
        else:  # Cognee's kendall_tau (tau_b_norm x F1 of LLM-extracted events) is no figure of the pack
            ours_mean = ours_sd = None
        recomputed_mean = _npmean_of(pooled) if pooled else None
        recomputed_sd = statistics.stdev(means) if len(means) >= 2 else None
        stated = stated or {}
        questions = sum(1 for r in plan.runs[0].rows if ability in (None, r.ability))
        ci = [stated.get("ci_lower"), stated.get("ci_upper")] if stated else None
        return StatedFigures(
            questions=questions,
            mean=_figure(stated.get("mean"), recomputed_mean, ours_mean),
            run_sd=_figure(stated.get("run_std"), recomputed_sd, ours_sd),
            ci_stated=ci,
        )

    overall: dict[str, StatedFigures] = {}
    for metric in getters:
        figures_of = one(metric, None, summary.overall.get(metric) if summary else None)
        if figures_of is not None:
            overall[metric] = figures_of
    by_ability: dict[str, dict[str, StatedFigures]] = {}
    abilities = list(dict.fromkeys(str(r.ability) for r in plan.runs[0].rows))
    for ability in sorted(set(abilities) | set(summary.by_type if summary else ())):
        entry = (summary.by_type.get(ability) or {}) if summary else {}
        cells = {}
        for metric in getters:
            got = one(metric, ability, entry.get(metric))
            if got is not None:
                cells[metric] = got
        by_ability[ability] = cells
    notes = [
        "recomputed: aggregate_cross_run.py's arithmetic over the files' per-question values (each run's scores grouped "
        "by question type, the runs pooled, numpy's mean; run sd: statistics.stdev of the runs' means); ours: each "
        "pack's judge folder (`j`: the plain mean of its verdicts), their mean and sd over the runs",
        "ci_lower / ci_upper are a bootstrap of 10,000 resamples of the pooled questions with an unseeded np.random "
        "(metrics_calculator.py bootstrap_ci): kept as stated, not reproducible; they resample repeated runs of 20 "
        "questions of one conversation, not conversations (no between-conversation uncertainty here)",
        "kendall_tau is Cognee's own (metrics/kendall_tau.py: tau_b_norm x F1 of LLM-extracted events aligned by one "
        "LLM call), not compute_metrics.py's tau_norm: kept per row in imported/rows.jsonl and reproduced from the "
        "files; the pack has no figure of it",
    ]
    if summary is None:
        notes.append("no cross-run summary was given: the recomputed figures stand without a stated one")
    elif summary.num_runs != len(plan.runs):
        notes.append(f"the summary is over {summary.num_runs} runs, {len(plan.runs)} were given: its figures cannot come back")
    bad = [
        f"{scope} {metric} {kind}"
        for scope, cells in [("overall", overall), *by_ability.items()]
        for metric, cell in cells.items()
        for kind, fig in (("mean", cell.mean), ("run sd", cell.run_sd))
        if fig is not None and fig.agreement == "differs"
    ]
    if bad:
        notes.append(f"NOT reproduced: {', '.join(bad)} (the recomputed figure differs from the stated one)")
    return overall, by_ability, notes


def amb_stated(
    released: AmbFile, figures: list[RunFigure], metrics: list[Any]
) -> tuple[dict[str, StatedFigures], dict[str, dict[str, StatedFigures]], list[str]]:
    scored = [r.score for r in released.rows if r.score is not None]
    # runner.py: the mean of the rows' scores (rows with none left out), else correct / total
    recomputed = (
        (sum(scored) / len(scored) if scored else 0.0)
        if released.scored
        else (sum(1 for r in released.rows if r.side) / len(released.rows))
    )
    stated = released.stated

    def number(v: Any) -> float | None:
        return None if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) else float(v)

    overall = {
        "accuracy": StatedFigures(
            questions=len(released.rows), mean=_figure(number(stated.get("accuracy")), recomputed, figures[0].mean_ours)
        ),
        "correct": StatedFigures(
            questions=len(released.rows),
            mean=_figure(number(stated.get("correct")), float(sum(1 for r in released.rows if r.side)), None),
        ),
        "total_queries": StatedFigures(
            questions=len(released.rows),
            mean=_figure(number(stated.get("total_queries")), float(len(released.rows)), float(len(released.rows))),
        ),
    }
    by_ability: dict[str, dict[str, StatedFigures]] = {}
    for ability in ABILITIES:
        these = [r.score for r in released.rows if r.ability == ability and r.score is not None]
        if not these:
            continue
        ours = metrics[0].j.by_category.get(str(ABILITIES.index(ability) + 1)) if metrics[0] else None
        by_ability[ability] = {
            "accuracy": StatedFigures(
                questions=sum(1 for r in released.rows if r.ability == ability), mean=_figure(None, sum(these) / len(these), ours)
            )
        }
    notes = [
        "recomputed: runner.py's arithmetic over the file's rows (accuracy: the mean of the rows' scores, rows without "
        "one left out; in a file without scores, correct / total_queries); ours: the pack's judge folder (`j`)",
        "AMB states no per-ability figure: per ability the recomputed mean stands beside ours alone",
    ]
    bad = [k for k, cell in overall.items() if cell.mean.agreement == "differs"]
    if bad:
        notes.append(f"NOT reproduced: {', '.join(bad)} (the recomputed figure differs from the stated one)")
    return overall, by_ability, notes

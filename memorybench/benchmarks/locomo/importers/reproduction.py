"""The reproduction table: a released file's scores, row by row and per category, against ours.

For each metric the file carries (LoCoMo F1, Mem0 F1 and BLEU-1, its judge's labels as
J), it counts the rows whose score we recompute exactly (LoCoMo F1: equal, or equal at
3 dp as LoCoMo's save_eval writes `round(f1, 3)`, numpy's rounding for category 1, whose
F1 is a numpy mean), lists up to 5 that differ, and puts per category (by number) our
mean next to the mean of the file's own values and, when a stats file came with it, the
figure that file states. A metric the file has no per-row value of is shown with ours
alone. Every number comes from the rows: nothing published is held here.

A format whose file states figures of its own beyond per-category stats (AMB's accuracy,
correct count and averages) gives a record of them recomputed (`Released.own`): kept as
reproduction.json's `own` and printed under the tables.

A partial file (`import --allow-partial`) is computed over the questions it holds, and its
table says so first. A stated figure that counts other rows than the file holds (a stats
file of the whole run beside a file of some conversations) is kept but marked not
comparable (`stated_comparable: false`, printed `n/c`), never set beside ours.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from memorybench.answer.imported import CategoryFigure, ImportedRow, MetricReproduction, Mismatch, Reproduction, RowAgreement
from memorybench.pack.schemas import Coverage
from memorybench.pack.autorater_schemas import AutoraterMetrics
from memorybench.benchmarks.locomo import BENCHMARK
from memorybench.benchmarks.locomo.importers.amb import AmbFigures
from memorybench.benchmarks.locomo.importers.released import Released
from memorybench.records import Record

__all__ = ["build_reproduction", "format_reproduction", "locomo_equal", "locomo_rounded"]

#: examples of mismatched rows kept per metric
EXAMPLES = 5
#: Mem0's metrics (and J) are over categories 1-4: Mem0 does not score 5
MEM0_CATEGORIES = (1, 2, 3, 4)
LABELS = {
    "locomo_f1": "LoCoMo F1",
    "mem0_f1": "Mem0 F1",
    "mem0_bleu1": "Mem0 BLEU-1",
    "j": "J (the file's own judge labels)",
}
COMPARED = {
    "locomo_f1": "equal, or equal at 3 dp as LoCoMo's save_eval writes round(f1, 3) (numpy's rounding for category 1)",
    "mem0_f1": "equal as floats",
    "mem0_bleu1": "equal as floats",
    "j": "the file's label (1/true: 1) equals our judge folder's verdict score",
}


def locomo_rounded(ours: float, category: int) -> float:
    """Our LoCoMo F1 as LoCoMo's save_eval writes it: `round(f1, 3)`. Category 1's F1 is
    np.mean(...), a numpy float, whose round() is numpy's (scale, rint, unscale), not always
    Python's correctly rounded result."""
    return float(np.round(np.float64(ours), 3)) if category == 1 else round(ours, 3)


def locomo_equal(reported: Any, ours: float, category: int) -> bool:
    """Whether a released LoCoMo F1 is ours: as is, or as LoCoMo's save_eval wrote it."""
    if isinstance(reported, bool) or not isinstance(reported, (int, float)):
        return False
    return reported == ours or reported == locomo_rounded(ours, category)


def _mean(values: Sequence[float]) -> float | None:
    # a plain sum, as autorater_metrics computes J and Mem0's means
    return sum(values) / len(values) if values else None


def _figure(
    pairs: Sequence[tuple[float | None, Any]], stated: tuple[int, float] | None = None, rounded: Sequence[float] | None = None
) -> CategoryFigure:
    ours = [o for o, _ in pairs if o is not None]
    reported = [float(r) for _, r in pairs if r is not None]
    return CategoryFigure(
        rows=len(pairs),
        ours=_mean(ours),
        ours_rounded=None if rounded is None else _mean(rounded),
        reported=_mean(reported),
        stated=None if stated is None or not stated[0] else stated[1] / stated[0],
        stated_rows=None if stated is None else stated[0],
        # a figure over other rows than these (a partial file beside its whole run's stats) is not theirs
        stated_comparable=None if stated is None else stated[0] == len(pairs),
    )


def _metric(
    name: str,
    rows: Sequence[ImportedRow],
    ours: Callable[[ImportedRow], float | None],
    reported: Callable[[ImportedRow], Any],
    equal: Callable[[Any, float, int], bool],
    field: str | None,
    categories: Sequence[int],
    released: Released,
    golds: Mapping[str, str | None],
    ours_by_category: Mapping[str, float | None] | None = None,
    ours_overall: float | None = None,
) -> MetricReproduction:
    scope = [r for r in rows if r.category in categories]
    agreement = None
    if field is not None:
        compared = [r for r in scope if reported(r) is not None]
        bad = [r for r in compared if ours(r) is None or not equal(reported(r), ours(r), r.category)]  # type: ignore[arg-type]
        agreement = RowAgreement(
            reported_field=field,
            compared=COMPARED[name],
            rows=len(compared),
            equal=len(compared) - len(bad),
            mismatched=len(bad),
            examples=[
                Mismatch(
                    question_id=r.question_id,
                    category=r.category,
                    prediction=r.prediction,
                    gold=golds.get(r.question_id),
                    reported=reported(r),
                    ours=ours(r),
                )
                for r in bad[:EXAMPLES]
            ],
        )
    stated = released.stated.get(name, {})
    present = sorted({r.category for r in scope})
    by_category = {}
    # LoCoMo's stats sum the rows as its save_eval wrote them: our rows rounded the same way
    as_written = (lambda rs: [locomo_rounded(r.locomo_f1, r.category) for r in rs]) if name == "locomo_f1" else (lambda rs: None)
    for c in present:
        s = stated.get(c)
        these = [r for r in scope if r.category == c]
        figure = _figure([(ours(r), reported(r)) for r in these], None if s is None else (s.rows, s.total), as_written(these))
        if ours_by_category is not None:
            figure = figure.model_copy(update={"ours": ours_by_category.get(str(c))})
        by_category[str(c)] = figure
    in_stats = [stated[c] for c in present if c in stated]
    overall = _figure(
        [(ours(r), reported(r)) for r in scope],
        (sum(s.rows for s in in_stats), sum(s.total for s in in_stats)) if in_stats else None,
        as_written(scope),
    )
    if ours_by_category is not None:
        overall = overall.model_copy(update={"ours": ours_overall})
    return MetricReproduction(
        label=LABELS[name], rows=agreement, by_category=by_category, overall=overall, overall_categories=present
    )


def build_reproduction(
    rows: Sequence[ImportedRow],
    released: Released,
    *,
    run_id: str,
    format_name: str,
    results_sha256: str,
    judge_id: str | None,
    judge: AutoraterMetrics | None,
    verdict_scores: Mapping[str, int],
    golds: Mapping[str, str | None],
    notes: Sequence[str] = (),
    partial: Coverage | None = None,
    own: Record | None = None,
) -> Reproduction:
    """The `reproduction.v1` record of one import, from its rows (and its judge folder's metrics);
    of a partial file (`partial`), over the questions it holds; `own`: the format's stated figures."""
    every = tuple(sorted({r.category for r in rows}))
    metrics = {
        "locomo_f1": _metric(
            "locomo_f1",
            rows,
            lambda r: r.locomo_f1,
            lambda r: r.reported_locomo_f1,
            locomo_equal,
            released.fields.get("locomo_f1"),
            every,
            released,
            golds,
        ),
    }
    for name in ("mem0_f1", "mem0_bleu1"):
        metrics[name] = _metric(
            name,
            rows,
            lambda r, n=name: getattr(r, n),
            lambda r, n=name: getattr(r, f"reported_{n}"),
            lambda a, b, c: a == b,
            released.fields.get(name),
            MEM0_CATEGORIES,
            released,
            golds,
        )
    if judge is not None and released.labels is not None:
        metrics["j"] = _metric(
            "j",
            rows,
            lambda r: verdict_scores.get(r.question_id),
            lambda r: r.reported_j,
            lambda a, b, c: a == b,
            released.labels.field,
            MEM0_CATEGORIES,
            released,
            golds,
            ours_by_category=judge.j.by_category,
            ours_overall=judge.j.overall,
        )
    notes = list(notes)
    for metric in metrics.values():
        for key, f in [*metric.by_category.items(), ("overall", metric.overall)]:
            if f.stated_comparable is False:
                notes.append(
                    f"{metric.label}, {'category ' + key if key != 'overall' else 'overall'}: the figure stated is over "
                    f"{f.stated_rows} rows, the file holds {f.rows} here: not comparable (n/c), kept in reproduction.json only."
                )
    return Reproduction(
        run_id=run_id,
        format=format_name,
        results_sha256=results_sha256,
        judge_id=judge_id,
        metrics=metrics,
        notes=notes,
        partial=partial,
        own=None if own is None else json.loads(own.dump()),
    )


#: the records a format keeps as reproduction.json's `own`, by schema: each prints its `lines()`
OWN = {"amb_locomo_figures.v1": AmbFigures}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def format_reproduction(rep: Reproduction) -> str:
    """The table `memorybench import` prints: per metric, rows reproduced, then per category."""
    lines = [f"reproduction ({rep.format}, results sha256 {rep.results_sha256[:12]}): ours beside the file's own"]
    if rep.partial is not None:
        p = rep.partial
        lines.append(
            f"PARTIAL: over the {p.questions} of {p.of} questions the file holds ({len(p.conversations)} conversations); "
            f"absent: {sum(p.absent_by_category.values())} (by category "
            + ", ".join(f"{c}: {n}" for c, n in p.absent_by_category.items())
            + "); "
            "figures published for the whole set are not comparable with these"
        )
    for metric in rep.metrics.values():
        lines.append("")
        if metric.rows is None:
            lines.append(f"{metric.label}: the file has no per-row value; ours only")
        else:
            agreement = metric.rows
            lines.append(
                f"{metric.label} ({agreement.reported_field}): {agreement.equal} of {agreement.rows} rows equal ours"
                + (f", {agreement.mismatched} differ" if agreement.mismatched else "")
            )
            for m in agreement.examples:
                lines.append(
                    f"  differs: {m.question_id} (cat {m.category}) prediction {m.prediction!r}: file {m.reported!r}, ours {m.ours!r}"
                )
        stated = any(f.stated is not None for f in [*metric.by_category.values(), metric.overall])
        rounded = metric.overall.ours_rounded is not None and metric.rows is not None
        header = (
            f"  {'cat':<4}{'name':<13}{'n':>5}  {'ours':>7}"
            + (f"  {'ours@3dp':>8}" if rounded else "")
            + f"  {'file':>7}"
            + (f"  {'stated':>7}" if stated else "")
        )
        lines.append(header)
        figures = [(c, BENCHMARK.category_names[int(c)], f) for c, f in metric.by_category.items()]
        span = (
            "-".join(str(c) for c in (metric.overall_categories[0], metric.overall_categories[-1]))
            if metric.overall_categories
            else "-"
        )
        figures.append((span, "overall", metric.overall))
        for key, label, f in figures:
            line = (
                f"  {key:<4}{label:<13}{f.rows:>5}  {_fmt(f.ours):>7}"
                + (f"  {_fmt(f.ours_rounded):>8}" if rounded else "")
                + f"  {_fmt(f.reported):>7}"
            )
            shown = "n/c" if f.stated_comparable is False else _fmt(f.stated)
            lines.append(line + (f"  {shown:>7}" if stated else ""))
    own = OWN.get(str(rep.own.get("schema"))) if rep.own is not None else None
    if own is not None:
        lines += ["", *own.model_validate(rep.own).lines()]
    lines += rep.notes
    return "\n".join(lines)

"""A comparison's tests per category, with the family's adjusted p-values, and which kind
of interval a metric gets (`memorybench.compare.conditions`).

Where the compared questions span several categories, `compare --vs` tests each one
(B minus A on that category's questions, cluster-robust t as the overall) and adjusts the
p-values over the family it names: the category tests of one metric in one comparison
(Holm's step-down method by default, `intervals.holm`; `--adjust none` leaves them as
they are). The overall lines are single tests and are not adjusted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memorybench.benchmark import benchmark_named
from memorybench.compare.intervals import holm
from memorybench.compare.intervals import paired_difference as paired_test
from memorybench.score.scorers import LEXICAL

__all__ = ["by_category", "metric_kind"]


def metric_kind(metric: str, benchmark: str | None, categories: Iterable[int]) -> str:
    """`rate` or `score` (`intervals.KINDS`), from what the metric is: a judge's figure is a
    rate; a benchmark's own F1 on its refusal kinds alone (`Benchmark.refusal_kinds`:
    category 5) is its refusal rate; any other F1 is a score."""
    if metric != LEXICAL:
        return "rate"
    held, bench = set(categories), benchmark_named(benchmark)
    return "rate" if bench.own_lexical_rules and held and held <= set(bench.refusal_kinds) else "score"


def by_category(
    first: Any,
    metric: str,
    common: Sequence[str],
    x: Sequence[float],
    y: Sequence[float],
    clusters: Sequence[str],
    confidence: float,
    adjust: str,
) -> dict[str, Any] | None:
    """B minus A per category of the compared questions (`first`: condition A's
    `conditions.PackScores`), with the family's adjusted p-values; None where the questions hold
    one category (the overall is then that category's test)."""
    bench = benchmark_named(first.benchmark)
    held = sorted({first.categories[q] for q in common})
    if len(held) < 2:
        return None
    tests = []
    for category in held:
        keep = [i for i, q in enumerate(common) if first.categories[q] == category]
        found = paired_test(
            [x[i] for i in keep], [y[i] for i in keep], [clusters[i] for i in keep], confidence=confidence, unit=first.unit
        )
        tests.append({"category": category, "name": bench.category_names.get(category, str(category)), **found.as_dict()})
    adjusted = holm([t["p_two_sided"] for t in tests]) if adjust == "holm" else [t["p_two_sided"] for t in tests]
    for test, p in zip(tests, adjusted):
        test["p_adjusted"] = p
    figure = {
        LEXICAL: bench.lexical_figure,
        "j_failed_wrong": f"{bench.judge_figure}, failures WRONG",
    }.get(metric, bench.judge_figure)
    family = (
        f"Holm over the {len(tests)} {bench.kind_word} tests of {figure} in this comparison"
        if adjust == "holm"
        else f"unadjusted: {len(tests)} {bench.kind_word} tests of {figure}, each read alone"
    )
    return {"adjust": adjust, "family": family, "kind_word": bench.kind_word, "tests": tests}

"""metrics.json's score record, one shape for every benchmark (`metrics.v2`), and the one reading
of it that also reads the LoCoMo-shaped `metrics.v1` of older packs.

Per qa scorer (`memorybench.score.scorers`), from the scored rows:

    scores.<scorer>.role          "score" (the benchmark's own figure: LoCoMo's category F1) or
                                  "diagnostic" (a lexical score beside another benchmark's judge)
    scores.<scorer>.overall       {value, n, units, covers}: the mean over every row
    scores.<scorer>.by_kind       {kind: {value, n, units}}: per question kind, the benchmark's
                                  kinds (`kind_names`), null where a kind has no question
    scores.<scorer>.subsets       {name: {value, n, units, covers}}: the benchmark's named subsets
                                  (`Benchmark.subsets`: LoCoMo's "1-4" and "1-5"), null where the
                                  kinds it needs were not asked
    scores.<scorer>.task_average  {value, n, covers}: the mean of the per-kind figures, only for a
                                  benchmark that reports one (LongMemEval), null unless every
                                  kind has questions

`n` is the questions a figure is over and `units` the benchmark's resampling units among them
(`unit`: conversations for LoCoMo, questions for LongMemEval). Its interval over that unit is
given by `se`, the cluster-robust (CR1) standard error with the units as clusters, and `df`
(units - 1): the 95% interval is value +/- t(0.975, df) * se, cut at [0, 1], exactly the
interval `compare` and `report` print (`memorybench.compare.intervals.mean_interval`, which
applies the t quantile). The quantile is not stored: metrics.json is a pure function of the rows
that `verify` recomputes in plain Python, without numpy or scipy. Fewer than two units: `se`
and `df` are null (no spread between units can be estimated). The record names its benchmark
and that benchmark's version, so no reader infers either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.benchmark import Benchmark
from memorybench.score.scorers import scorers
from memorybench.stats import mean

__all__ = ["SCHEMA", "cluster_se", "covers", "kind_counts_of", "kind_names_of", "local_metrics", "scores_of"]

SCHEMA = "metrics.v2"


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def covers(benchmark: Benchmark, held: Sequence[int], of: Sequence[int] | None = None) -> str:
    """What a figure over these kinds covers, in words: "categories 1-5", "categories 1-4
    (category 5 not asked)", "types 1, 2 (3, 4, 5, 6 absent)"; `of` the kinds it could cover
    (default: all the benchmark's)."""
    word = benchmark.kind_word
    every = sorted(of if of is not None else benchmark.category_names)
    have = sorted(set(int(c) for c in held) & set(every))
    if not have:
        return "no questions"
    if have == every:
        return f"{_plural(word)} {every[0]}-{every[-1]}"
    if len(have) == 1:
        span = f"{word} {have[0]}"
    elif len(have) > 2 and have == list(range(have[0], have[-1] + 1)):
        span = f"{_plural(word)} {have[0]}-{have[-1]}"
    else:
        span = f"{_plural(word)} " + ", ".join(map(str, have))
    absent = [c for c in every if c not in have]
    if absent == [every[-1]]:
        return f"{span} ({word} {absent[0]} not asked)"
    return f"{span} ({', '.join(map(str, absent))} absent)"


def cluster_se(values: Sequence[float], clusters: Sequence[Any]) -> float | None:
    """The cluster-robust (CR1) standard error of the mean of `values` with their units as
    clusters, in plain Python: SE^2 = G / (G - 1) * sum_g (sum_{i in g} (y_i - mean))^2 / N^2, as
    `memorybench.compare.intervals.mean_interval` computes it; None with fewer than two units."""
    groups: dict[Any, float] = {}
    if not values:
        return None
    centre = sum(values) / len(values)
    for value, cluster in zip(values, clusters):
        groups[cluster] = groups.get(cluster, 0.0) + (value - centre)
    g = len(groups)
    if g < 2:
        return None
    return (g / (g - 1) * sum(e * e for e in groups.values())) ** 0.5 / len(values)


def _figure(rows: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    units = [r["sample_id"] for r in rows]
    se = cluster_se([float(r[metric]) for r in rows], units)
    g = len(set(units))
    return {
        "value": mean([r[metric] for r in rows]),
        "n": len(rows),
        "units": g,
        # the interval over the benchmark's unit: value +/- t(1 - alpha/2, df) * se, cut at [0, 1]
        "se": se,
        "df": g - 1 if se is not None else None,
    }


def _labels(benchmark: Benchmark) -> dict[str, str]:
    if benchmark.own_lexical_rules:
        return {s.name: s.label for s in scorers("qa")}
    return {
        s.name: f"{s.label}; on {benchmark.name}: a lexical diagnostic (its score is its judge's: {benchmark.scored_by})"
        for s in scorers("qa")
    }


def local_metrics(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], benchmark: Benchmark) -> dict[str, Any]:
    """`metrics.json` (metrics.v2) without usage, from scored rows (each a prediction row plus
    `score.rows.score_row`)."""
    kinds = sorted(benchmark.category_names)
    held = sorted({int(r["category"]) for r in rows})
    of_kind = {k: [r for r in rows if int(r["category"]) == k] for k in kinds}
    metrics: dict[str, Any] = {
        "schema": SCHEMA,
        "run_id": meta.get("run_id"),
        "benchmark": {"name": benchmark.name, "version": benchmark.version},
        "questions": len(rows),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "unit": benchmark.unit,
        "kind_word": benchmark.kind_word,
        "kind_names": {str(k): v for k, v in benchmark.category_names.items()},
        "counts": {
            "total": len(rows),
            "units": len({r["sample_id"] for r in rows}),
            "by_kind": {str(k): len(of_kind[k]) for k in kinds},
        },
        "labels": _labels(benchmark),
        "scores": {},
    }
    for scorer in scorers("qa"):
        metric = scorer.name
        block: dict[str, Any] = {
            # the benchmark's own figure (LoCoMo's category F1), or a lexical diagnostic beside it
            "role": "score" if benchmark.own_lexical_rules and scorer.owner == benchmark.name else "diagnostic",
            "overall": {**_figure(rows, metric), "covers": covers(benchmark, held)},
            "by_kind": {str(k): _figure(of_kind[k], metric) for k in kinds},
        }
        if benchmark.subsets:
            block["subsets"] = {}
            for name, subset in benchmark.subsets.items():
                inside = [r for r in rows if int(r["category"]) in subset.kinds]
                asked = all(of_kind.get(k) for k in subset.asked)
                if asked and inside:
                    block["subsets"][name] = {**_figure(inside, metric), "covers": covers(benchmark, held, subset.kinds)}
                else:  # its defining kinds were not asked: no figure under its name
                    missing = [k for k in subset.kinds if not of_kind.get(k)]
                    said = ", ".join(map(str, [k for k in subset.asked if not of_kind.get(k)] or missing))
                    block["subsets"][name] = {
                        "value": None,
                        "n": 0,
                        "units": 0,
                        "covers": f"{benchmark.kind_word} {said} not asked",
                    }
        if benchmark.task_averaged:  # the mean of the per-kind figures, only where every kind has questions
            values = [block["by_kind"][str(k)]["value"] for k in kinds if of_kind[k]]
            every = len(values) == len(kinds)
            block["task_average"] = {
                "value": mean(values) if every else None,
                "n": len(values),
                "covers": f"the mean of {len(values)} of {len(kinds)} {_plural(benchmark.kind_word)}"
                + ("" if every else ": only over every one"),
            }
        metrics["scores"][metric] = block
    if meta.get("partial"):  # a partial import (RunMeta.partial): what it holds and what is absent
        metrics["partial"] = meta["partial"]
    if meta.get("selection"):  # questions chosen by id or by a seeded sample (RunMeta.selection)
        metrics["selection"] = meta["selection"]
    return metrics


# -- reading: metrics.v2, and the LoCoMo-shaped metrics.v1 of older packs ----------------------

#: metrics.v1's LoCoMo overalls, by the subset name metrics.v2 gives them
_V1_SUBSETS = {"1-4": "overall_1_4", "1-5": "overall_1_5"}


def scores_of(metrics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every qa scorer's block of a metrics.json as metrics.v2 shapes it ({overall, by_kind,
    subsets, task_average} of {value, n, ...}), read from a metrics.v2 or a metrics.v1 file."""
    if metrics.get("schema") == SCHEMA:
        return dict(metrics.get("scores") or {})
    counts = metrics.get("counts") or {}
    by_count = counts.get("by_category") or {}
    out: dict[str, dict[str, Any]] = {}
    for name in (s.name for s in scorers("qa")):
        old = metrics.get(name)
        if not isinstance(old, Mapping):
            continue
        block: dict[str, Any] = {
            "overall": {"value": old.get("overall"), "n": counts.get("total")},
            "by_kind": {k: {"value": v, "n": by_count.get(k)} for k, v in (old.get("by_category") or {}).items()},
        }
        subsets = {s: {"value": old.get(key)} for s, key in _V1_SUBSETS.items() if key in old}
        if subsets:
            block["subsets"] = subsets
        if "task_averaged" in old:
            block["task_average"] = {"value": old.get("task_averaged")}
        out[name] = block
    return out


def kind_names_of(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The question kinds' names a metrics.json gives (v2's `kind_names`, v1's `category_names`)."""
    return dict(metrics.get("kind_names") or metrics.get("category_names") or {})


def kind_counts_of(metrics: Mapping[str, Any]) -> dict[str, int]:
    """Questions per kind (v2's `counts.by_kind`, v1's `counts.by_category`)."""
    counts = metrics.get("counts") or {}
    return dict(counts.get("by_kind") or counts.get("by_category") or {})

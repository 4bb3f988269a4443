"""The board's tables: one per benchmark, its entries marked by contract, the judge-sensitivity
table, and the paired differences the forest plot draws.

An **entry** is one pack under one of its judges (a pack without a judge is one entry with its
lexical figure only): a pack judged twice is two entries, each with its judge in its contract, so
a column never holds two judges' figures without the mark `judge`. Each entry's `marks` are the
contract fields that differ from the table's reference contract (`memorybench.board.contract`).

**Judge sensitivity** (`judge_sensitivity`): for each judge that judged a pack of the benchmark,
each system's figure under it and its rank among the packs that judge judged (1 the highest, ties
share the better rank), and how many places the system moves between the judges that judged it
(its worst rank minus its best): the rule of the report's `judge_sensitivity` table
(`memorybench.compare.judge_sensitivity`), over each pack's figure as the board holds it.

**Paired differences** (`paired_from_units`): B minus A over the units (conversations, questions)
whose question sets agree in both packs, from the per-unit sums each figure keeps: the mean of
the per-question differences and its cluster-robust (CR1) standard error with t on units - 1 df,
exactly `memorybench.compare.intervals.paired_difference` over those questions (the residual of a
unit is the sum of its differences less its size times the mean difference). The page's script
computes the same from the same sums for the baseline a reader picks, with the t quantiles the
page carries (`t_quantiles`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.board.contract import FIELDS, MEASURED, marks, reference
from memorybench.board.row import BoardRow, Figure

__all__ = [
    "benchmark_tables",
    "entries_of",
    "judge_sensitivity",
    "page_name",
    "paired_from_units",
    "t_quantiles",
]

#: the confidence of every interval on the board
CONFIDENCE = 0.95


def page_name(kind: str, name: str) -> str:
    """A page's file name: `benchmark-locomo.html`, `system-<key>.html`, `run-<key>.html` (the
    name reduced to letters, digits, `_` and `-`, so no text of a pack names a path)."""
    return f"{kind}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:80]}.html"


def _figure(figure: Figure | None, units: bool) -> dict[str, Any] | None:
    if figure is None:
        return None
    out = figure.model_dump(mode="json", exclude={"by_unit"})
    if units:
        out["by_unit"] = {u: list(v) for u, v in figure.by_unit.items()}
    return out


def entries_of(rows: Sequence[BoardRow], *, units: bool = False) -> list[dict[str, Any]]:
    """Every entry of these rows (one per pack and judge), each with its contract; per-unit sums
    only with `units` (the benchmark's page: its forest plot pairs on them)."""
    out = []
    for row in rows:
        judges = row.judges or [None]
        for i, judge in enumerate(judges):
            contract = dict(row.contract)
            contract["judge"] = judge.judge if judge else "no judge"
            contract["calibration"] = judge.calibration if judge else "no judge"
            contract["context_tokens"] = "unknown" if row.context_tokens is None else f"{row.context_tokens:.0f}"
            length = "unknown" if row.answer_length_mean is None else f"{row.answer_length_mean:.1f}"
            contract["answer_length"] = f"mean {length}, p95 {row.answer_length_p95}"
            out.append(
                {
                    "id": f"{row.key}-{i}",
                    "key": row.key,
                    "system": row.system,
                    "run_id": row.run_id,
                    "uri": row.uri,
                    "imported": row.imported,
                    "judge_id": judge.judge_id if judge else None,
                    "judge": contract["judge"],
                    "far_specific": judge.specific_wrong_accepted if judge else None,
                    "far_vague": judge.vague_wrong_accepted if judge else None,
                    "gold_accepted": judge.gold_accepted if judge else None,
                    "judge_failed": judge.failed if judge else None,
                    "figure": _figure(judge.figure if judge else None, units),
                    "lexical": _figure(row.lexical, units),
                    "cost": row.cost_per_question_usd,
                    "latency_p50": row.latency_p50_s,
                    "latency_p95": row.latency_p95_s,
                    "context_tokens": row.context_tokens,
                    "answer_length_mean": row.answer_length_mean,
                    "answer_length_p95": row.answer_length_p95,
                    "questions": row.questions,
                    "gold_wrong": row.gold_wrong,
                    "contract": {f: contract.get(f) for f in FIELDS},
                    "system_page": page_name("system", row.key),
                    "run_page": page_name("run", row.key),
                }
            )
    return out


def benchmark_tables(rows: Sequence[BoardRow], *, units: bool = False) -> list[dict[str, Any]]:
    """One table per benchmark (in the order first seen): its entries with their marks, its
    reference contract, and the values each protocol field takes (the page's filters)."""
    by_bench: dict[str, list[BoardRow]] = {}
    for row in rows:
        by_bench.setdefault(row.benchmark, []).append(row)
    tables = []
    for name, members in by_bench.items():
        entries = entries_of(members, units=units)
        ref = reference(entries)
        for entry in entries:
            entry["marks"] = marks(entry, ref)
        values = {f: sorted({str(e["contract"][f]) for e in entries}) for f in FIELDS}
        tables.append(
            {
                "benchmark": name,
                "title": members[0].benchmark_title,
                "page": page_name("benchmark", name),
                "figure_name": next((j.figure.name for r in members for j in r.judges), None),
                "lexical_name": next((r.lexical.name for r in members if r.lexical), None),
                "reference": {f: (None if ref[f] is None else str(ref[f])) for f in FIELDS},
                "fields": FIELDS,
                "filters": {f: v for f, v in values.items() if len(v) > 1 and f not in MEASURED},
                "entries": entries,
            }
        )
    return tables


def _ranks(values: Mapping[str, float | None]) -> dict[str, int | None]:
    """1 for the highest; ties share the better rank (pandas' `rank(method="min")`)."""
    known = [v for v in values.values() if v is not None and not math.isnan(v)]
    return {k: (None if v is None or math.isnan(v) else 1 + sum(1 for o in known if o > v)) for k, v in values.items()}


def judge_sensitivity(rows: Sequence[BoardRow]) -> dict[str, Any]:
    """Per judge of these rows (one benchmark's), each system's figure and rank (module docstring)."""
    judges: dict[str, str] = {}
    figures: dict[str, dict[str, Figure]] = {}
    systems: dict[str, str] = {}
    for row in rows:
        systems[row.key] = row.system
        for judge in row.judges:
            judges.setdefault(judge.judge_id, judge.judge)
            figures.setdefault(judge.judge_id, {})[row.key] = judge.figure
    ranks = {j: _ranks({k: f.value for k, f in by_key.items()}) for j, by_key in figures.items()}
    out_rows = []
    for key, system in systems.items():
        cells = {}
        for judge in judges:
            figure = figures[judge].get(key)
            if figure is not None:
                cells[judge] = {
                    "value": figure.value,
                    "low": figure.low,
                    "high": figure.high,
                    "n": figure.n,
                    "rank": ranks[judge][key],
                    "of": len(figures[judge]),
                }
        held = [c["rank"] for c in cells.values() if c["rank"] is not None]
        out_rows.append(
            {
                "key": key,
                "system": system,
                "cells": cells,
                "places_moved": max(held) - min(held) if len(held) > 1 else None,
            }
        )
    return {"judges": [{"id": j, "judge": words} for j, words in judges.items()], "rows": out_rows}


def t_quantiles(max_df: int, confidence: float = CONFIDENCE) -> list[float]:
    """t(1 - alpha/2, df) for df = 0 .. max_df (index 0 unused: 0), for the page's script."""
    # scipy.stats.t.ppf is this function (`t_gen._ppf`); scipy.special alone imports in a third of the time
    from scipy.special import stdtrit

    top = max(1, min(int(max_df), 2000))
    return [0.0, *[float(v) for v in stdtrit(range(1, top + 1), (1 + confidence) / 2)]]


def paired_from_units(
    a: Mapping[str, Sequence[Any]], b: Mapping[str, Sequence[Any]], confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """B minus A from two figures' per-unit [sum, n, digest]: over the units both hold with the same
    questions, the mean difference, its CR1 standard error and t interval (module docstring)."""
    from memorybench.compare.interval_math import _t_quantile

    common = sorted(u for u in a if u in b and a[u][2] == b[u][2] and a[u][1] == b[u][1])
    left_out = sorted(u for u in a if u in b and u not in common)
    n = sum(int(a[u][1]) for u in common)
    out: dict[str, Any] = {"units": len(common), "n": n, "left_out": left_out, "difference": None, "low": None, "high": None}
    if not n:
        out["note"] = "no unit with the same questions in both"
        return out
    sums = [float(b[u][0]) - float(a[u][0]) for u in common]
    mean = sum(sums) / n
    out["difference"] = mean
    g = len(common)
    if g < 2:
        out["note"] = "one unit in common: no interval"
        return out
    residuals = [s - int(a[u][1]) * mean for s, u in zip(sums, common)]
    se = math.sqrt(g / (g - 1) * sum(r * r for r in residuals)) / n
    half = _t_quantile((1 + confidence) / 2, g - 1) * se
    out.update(low=mean - half, high=mean + half, se=se, df=g - 1)
    return out

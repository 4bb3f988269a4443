"""Intervals for rates: shares of yes/no events that may sit near 0 or 1, and Cohen's kappa.

A *rate* is a metric whose every value is the share of a yes/no event: a judge's CORRECT
(J, LongMemEval's accuracy), a judge's acceptance of known-wrong answers, LoCoMo's
category-5 refusal. Which metrics are rates is fixed by the metric, never read off the
values (`memorybench.compare.intervals.mean_interval(kind="rate")`): an F1 that happened to
be 0 on every question is still a score and keeps the t interval.

**Independent units** (every cluster one question: LongMemEval) get the Wilson score
interval (`wilson`). **Clustered units** (LoCoMo's questions in conversations) get the
Clopper-Pearson interval on an effective sample size, Korn and Graubard's interval for a
proportion from a clustered sample (Survey Methodology 24(2), 1998; the rule NCHS uses):

    deff = V_CR1 / (p (1 - p) / n), floored at 1 (also where p is 0 or 1: no variance seen)
    n*   = n / deff * (z(1 - alpha/2) / t(1 - alpha/2, G - 1))^2
    x*   = p n*;  low = Beta(alpha/2; x*, n* - x* + 1), high = Beta(1 - alpha/2; x* + 1, n* - x*)

It stays inside [0, 1], keeps a width at 0 or 1 (0 of 150 wrong answers accepted in 10
conversations: [0, 0.032]), widens by the design effect the conversations show, and pays
for few conversations through t(G - 1), where a symmetric t interval of a rate near 0
covers too little (`bench/interval_coverage.py`).

**The mean of several rates** (`stratified_rate_interval`: LongMemEval's task-averaged
accuracy, the mean of six per-type accuracies of independent questions): its variance is
sum_k v_k / (K^2 n_k) with v_k the type's p_k (1 - p_k); the Wilson interval is taken on
the effective size p (1 - p) / V, at most Kish's K^2 / sum_k 1 / n_k (the size of equal
rates), so types at 0 or 1 correct do not make it certain.

**Cohen's kappa** (`kappa_interval`): the leave-one-cluster-out jackknife (a conversation,
or a question where that is the unit) with t(G - 1), cut at [-1, 1]; none where kappa is
undefined in any leave-out (one label throughout).
"""

from __future__ import annotations

from typing import Any

import math
from collections.abc import Hashable, Sequence

import numpy as np

from memorybench.compare.interval_math import Interval, _codes, _cr1, _plural, _t_quantile, _values

__all__ = ["clustered_rate_interval", "kappa_interval", "stratified_rate_interval", "wilson"]


def _z(confidence: float) -> float:
    from scipy.special import ndtri  # scipy.stats.norm.ppf's own function (`norm_gen._ppf`), without scipy.stats

    return float(ndtri((1 + confidence) / 2))


def wilson(p: float, n: float, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a share `p` of `n` (n may be an effective, non-whole size)."""
    z = _z(confidence)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    return max(0.0, centre - half), min(1.0, centre + half)


def _beta_ppf() -> Any:
    """scipy.stats.beta.ppf's own function (`beta_gen._ppf`: the Boost ufunc of scipy.special),
    without importing scipy.stats; scipy.stats's where a scipy release moves it."""
    try:
        from scipy.special._ufuncs import _beta_ppf

        return _beta_ppf
    except ImportError:  # pragma: no cover - another scipy layout
        from scipy import stats

        return lambda q, a, b: stats.beta.ppf(q, a, b)


def _clopper_pearson(x: float, n: float, confidence: float) -> tuple[float, float]:
    ppf = _beta_ppf()
    alpha = 1 - confidence
    low = 0.0 if x <= 0 else float(ppf(alpha / 2, x, n - x + 1))
    high = 1.0 if x >= n else float(ppf(1 - alpha / 2, x + 1, n - x))
    return low, high


def clustered_rate_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    confidence: float,
    unit: str = "conversation",
) -> Interval:
    """A rate's interval (`values`: each question's share, 0 or 1 for one verdict): Wilson's
    where every cluster is one question (independent), else Korn-Graubard's (the module's
    docstring). Needs n >= 1 and, for clustered units, at least two clusters (the caller
    says why not otherwise)."""
    data = _values(values)
    codes, groups = _codes(clusters, data.size)
    n, p = int(data.size), float(data.mean())
    if groups == n:
        low, high = wilson(p, n, confidence)
        return Interval(p, low, high, n, n, confidence, f"Wilson score, {_plural(n, unit)} (right or wrong, independent)")
    _, se = _cr1(data, codes, groups)
    binomial = p * (1 - p) / n
    deff = max(1.0, se * se / binomial) if binomial > 0 else 1.0
    t = _t_quantile((1 + confidence) / 2, groups - 1)
    effective = n / deff * (_z(confidence) / t) ** 2
    low, high = _clopper_pearson(p * effective, effective, confidence)
    method = f"Korn-Graubard (Clopper-Pearson, design effect {deff:.2f}, t {groups - 1} df), {_plural(groups, unit)} (a rate)"
    return Interval(p, low, high, n, groups, confidence, method)


def stratified_rate_interval(
    values: Sequence[float],
    strata: Sequence[Hashable],
    *,
    confidence: float,
    unit: str = "question",
) -> Interval:
    """The mean of the per-stratum means of independent rates (LongMemEval's task average):
    Wilson's interval on the effective size p (1 - p) / V, at most Kish's (module docstring)."""
    data = _values(values)
    codes, k = _codes(strata, data.size)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    means = np.bincount(codes, weights=data, minlength=k) / sizes
    p = float(means.mean())
    variance = float(np.sum(means * (1 - means) / sizes)) / (k * k)
    kish = k * k / float(np.sum(1 / sizes))
    effective = min(kish, p * (1 - p) / variance) if variance > 0 and 0 < p < 1 else kish
    low, high = wilson(p, effective, confidence)
    method = (
        f"Wilson score on the effective size {effective:.1f} of {_plural(int(data.size), unit)} in {k} strata "
        "(mean of rates; independent)"
    )
    return Interval(p, low, high, int(data.size), int(data.size), confidence, method)


def _kappa(table: np.ndarray) -> float | None:
    """Cohen's kappa of a 2x2 count table [[both yes, a yes b no], [a no b yes, both no]]."""
    n = table.sum()
    if n <= 0:
        return None
    observed = (table[0, 0] + table[1, 1]) / n
    a_yes, b_yes = table[0].sum() / n, table[:, 0].sum() / n
    expected = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
    return None if expected >= 1 - 1e-15 else float((observed - expected) / (1 - expected))


def kappa_interval(
    a: Sequence[bool],
    b: Sequence[bool],
    clusters: Sequence[Hashable],
    *,
    confidence: float,
    unit: str = "conversation",
) -> Interval:
    """Cohen's kappa of two judges' yes/no labels of the same rows (`a[i]`, `b[i]` of row i in
    cluster `clusters[i]`) with its leave-one-cluster-out jackknife interval over t(G - 1)."""
    x, y = np.asarray(list(a), dtype=bool), np.asarray(list(b), dtype=bool)
    codes, groups = _codes(clusters, x.size)
    cells = np.stack([x & y, x & ~y, ~x & y, ~x & ~y], axis=1).astype(np.float64)
    per_cluster = np.zeros((groups, 4))
    np.add.at(per_cluster, codes, cells)
    total = per_cluster.sum(axis=0)
    kappa = _kappa(total.reshape(2, 2))
    method = f"leave-one-{unit}-out jackknife, t {groups - 1} df, {_plural(groups, unit)}"
    if kappa is None or groups < 2:
        note = "one label throughout: kappa undefined" if kappa is None else f"one {unit}: no interval"
        return Interval(kappa, None, None, int(x.size), groups, confidence, method, note)
    leave_out = [_kappa((total - per_cluster[g]).reshape(2, 2)) for g in range(groups)]
    if any(k is None for k in leave_out):
        return Interval(
            kappa,
            None,
            None,
            int(x.size),
            groups,
            confidence,
            method,
            f"kappa is undefined without one {unit}: no jackknife interval",
        )
    values = np.asarray(leave_out, dtype=np.float64)
    se = math.sqrt((groups - 1) / groups * float(np.sum((values - values.mean()) ** 2)))
    half = _t_quantile((1 + confidence) / 2, groups - 1) * se
    return Interval(kappa, max(-1.0, kappa - half), min(1.0, kappa + half), int(x.size), groups, confidence, method)

"""What every interval of `memorybench.compare` is made of: the `Interval` record, the checks
on the values and their clusters, the cluster-robust (CR1) standard error and the t quantile.
`intervals` (means and differences) and `rates` (shares that must stay in [0, 1]) both build
on these, so neither needs the other's internals."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Interval", "_codes", "_cr1", "_plural", "_t_quantile", "_values"]


@dataclass(frozen=True)
class Interval:
    """A mean with its interval; `low`/`high` are None where no interval can be estimated."""

    #: the mean over questions (None with no values)
    estimate: float | None
    low: float | None
    high: float | None
    #: questions
    n: int
    #: conversations (clusters) the questions sit in
    clusters: int
    confidence: float
    #: how the interval was made, with the number of conversations
    method: str
    #: why an interval is missing or what limits it; None when there is nothing to say
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _values(values: Sequence[float], name: str = "values") -> np.ndarray:
    data = np.asarray(list(values), dtype=np.float64)
    if data.ndim != 1:
        raise ValueError(f"{name} must be one score per question, got shape {data.shape}")
    bad = int(np.count_nonzero(~np.isfinite(data)))
    if bad:
        raise ValueError(f"{name} hold {bad} missing or non-finite scores; leave those questions out first")
    return data


def _codes(clusters: Sequence[Hashable], n: int) -> tuple[np.ndarray, int]:
    """Cluster labels -> integer codes 0..G-1 (in order of first appearance) and G."""
    labels = list(clusters)
    if len(labels) != n:
        raise ValueError(f"clusters has {len(labels)} labels for {n} values; give one per question")
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.intp, count=n)
    return codes, len(index)


def _plural(count: int, unit: str = "conversation") -> str:
    return f"{count} {unit}" + ("" if count == 1 else "s")


def _cr1(data: np.ndarray, codes: np.ndarray, groups: int) -> tuple[float, float]:
    """(mean, CR1 standard error) of `data` in `groups` clusters; needs groups >= 2."""
    n = data.size
    mean = float(data.mean())
    per_cluster = np.bincount(codes, weights=data - mean, minlength=groups)
    variance = groups / (groups - 1) * float(np.dot(per_cluster, per_cluster)) / (n * n)
    return mean, math.sqrt(variance)


def _t_quantile(q: float, df: int) -> float:
    # scipy.stats.t.ppf is this function (`t_gen._ppf`); scipy.special alone imports in half the
    # time of scipy.stats, which a command that reads a pack (the board) pays on every start
    from scipy.special import stdtrit

    return float(stdtrit(df, q))

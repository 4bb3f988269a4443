"""Order-independent summary statistics shared by scores, usage and reports."""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None for no values. fsum is exact, so the result does not depend on the
    order of the rows (a resumed run and an uninterrupted one agree to the last bit)."""
    return math.fsum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def nearest_rank(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank percentile of sorted values: always one of them (a request count
    stays a whole number), so a table and the pack's COMPARISON.md show the same figure."""
    return float(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))])


def spread(values: Sequence[float]) -> dict[str, float] | None:
    """p50, p95 (nearest rank) and max of `values`, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return {"p50": nearest_rank(ordered, 0.5), "p95": nearest_rank(ordered, 0.95), "max": float(ordered[-1])}

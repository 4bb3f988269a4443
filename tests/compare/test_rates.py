"""memorybench.compare.rates: Wilson's interval, the mean of rates, Cohen's kappa with its jackknife."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memorybench.compare.rates import kappa_interval, stratified_rate_interval, wilson
from memorybench.score.agreement import judge_agreement


def test_wilson_textbook_values() -> None:
    # Newcombe (1998), example: 81 of 263, Wilson 95% interval (0.2553, 0.3662)
    assert wilson(81 / 263, 263, 0.95) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    # 0 of 10: (0, z^2 / (10 + z^2)) = (0, 3.841459 / 13.841459) = (0, 0.277533); 10 of 10: its mirror
    assert wilson(0.0, 10, 0.95) == pytest.approx((0.0, 0.277533), abs=1e-6)
    assert wilson(1.0, 10, 0.95) == pytest.approx((0.722467, 1.0), abs=1e-6)


def test_the_mean_of_rates_by_hand() -> None:
    # two types: 3 of 4 and 1 of 2; task average (0.75 + 0.5) / 2 = 0.625
    # V = (0.75 * 0.25 / 4 + 0.5 * 0.5 / 2) / 4 = (0.046875 + 0.125) / 4 = 0.04296875
    # effective size p (1 - p) / V = 0.234375 / 0.04296875 = 5.4545; Kish's 4 / (1/4 + 1/2) = 5.3333: the smaller
    values = [1, 1, 1, 0, 1, 0]
    types = [1, 1, 1, 1, 2, 2]
    got = stratified_rate_interval(values, types, confidence=0.95)
    assert got.estimate == pytest.approx(0.625)
    assert (got.low, got.high) == pytest.approx(wilson(0.625, 16 / 3, 0.95), rel=1e-12)
    assert "effective size 5.3 of 6 questions in 2 strata" in got.method
    # every type at 1 correct: no variance seen, still an interval with a width (Kish's size)
    every = stratified_rate_interval([1] * 6, types, confidence=0.95)
    assert every.estimate == 1.0 and every.high == 1.0 and every.low == pytest.approx(wilson(1.0, 16 / 3, 0.95)[0])
    assert every.low < 1


def test_kappa_and_its_jackknife_by_hand() -> None:
    a = [True, True, False, False, True, False, True, True]
    b = [True, False, False, False, True, True, True, True]
    clusters = ["x", "x", "y", "y", "z", "z", "w", "w"]
    got = kappa_interval(a, b, clusters, confidence=0.9)
    assert got.estimate == pytest.approx(judge_agreement(a, b).kappa)
    # leave each conversation out, kappa of the rest; jackknife se with (G-1)/G
    leave = []
    for left in "xyzw":
        keep = [i for i, c in enumerate(clusters) if c != left]
        leave.append(judge_agreement([a[i] for i in keep], [b[i] for i in keep]).kappa)
    values = np.array(leave)
    se = math.sqrt(3 / 4 * float(np.sum((values - values.mean()) ** 2)))
    from scipy import stats

    half = stats.t.ppf(0.95, 3) * se
    assert (got.low, got.high) == pytest.approx((max(-1, got.estimate - half), min(1, got.estimate + half)))
    assert got.method == "leave-one-conversation-out jackknife, t 3 df, 4 conversations"


def test_kappa_undefined_has_no_interval() -> None:
    got = kappa_interval([True] * 4, [True] * 4, ["x", "x", "y", "y"], confidence=0.95)
    assert got.estimate is None and got.low is None and "undefined" in (got.note or "")

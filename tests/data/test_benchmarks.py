"""A dataset belongs to a benchmark, which names its question kinds and its resampling unit;
intervals say that unit."""

from __future__ import annotations

import numpy as np
import pytest

from memorybench.benchmark import LOCOMO, benchmark_of, benchmark_of_meta
from memorybench.compare.intervals import mean_interval, paired_difference
from memorybench.errors import UserError


def test_locomo_is_the_benchmark_of_locomo10_and_of_a_pack_without_a_name():
    assert benchmark_of("locomo10") is LOCOMO and benchmark_of(None) is LOCOMO
    assert benchmark_of_meta({"name": "locomo10"}) is LOCOMO and benchmark_of_meta(None) is LOCOMO
    assert LOCOMO.unit == "conversation" and LOCOMO.units(10) == "10 conversations" and LOCOMO.units(1) == "1 conversation"
    assert LOCOMO.category_names[5] == "adversarial"


def test_an_unknown_dataset_is_one_line_naming_the_known_ones():
    with pytest.raises(UserError, match=r"dataset 'locomo11' belongs to no benchmark .*locomo10"):
        benchmark_of("locomo11")


def test_an_interval_names_the_benchmarks_unit():
    rng = np.random.default_rng(0)
    values = rng.random(20)
    # LoCoMo: 20 questions in 4 conversations
    conversations = [f"conv-{i % 4}" for i in range(20)]
    assert mean_interval(values, conversations).method == "cluster-robust t (CR1), 4 conversations, 3 df"
    # a benchmark whose every question has its own haystack: 20 clusters of one
    questions = [f"q{i}" for i in range(20)]
    found = mean_interval(values, questions, unit="question")
    assert found.method == "cluster-robust t (CR1), 20 questions, 19 df" and found.clusters == 20
    # with clusters of one, CR1 is the ordinary standard error times sqrt(G/(G-1)) * sqrt((n-1)/n) = the sd/sqrt(n)
    se = values.std(ddof=1) / np.sqrt(20)
    from scipy import stats

    assert found.high - found.estimate == pytest.approx(stats.t.ppf(0.975, 19) * se)
    one = paired_difference([0.1, 0.2], [0.3, 0.5], ["q1", "q1"], unit="question")
    assert one.note == "one question: no between-question uncertainty can be estimated"

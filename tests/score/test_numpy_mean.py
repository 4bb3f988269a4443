"""`locomo.numpy_mean` is `float(numpy.mean(values))` bit for bit: LoCoMo's category-1 F1 is
the mean numpy takes (its pairwise summation), computed without importing numpy (issue 31)."""

from __future__ import annotations

import random

import numpy as np

from memorybench.benchmarks.locomo.score import numpy_mean

#: the values a category-1 mean takes: F1 scores of short answers
F1_LIKE = (0.0, 1.0, 0.5, 2 / 3, 1 / 3, 0.4, 0.8, 0.8571428571428571, 0.2857142857142857, 0.6666666666666666, 0.36363636363636365)


def _lists(rng: random.Random, n: int) -> list[list[float]]:
    return [
        [rng.random() for _ in range(n)],
        [rng.choice(F1_LIKE) for _ in range(n)],
        [rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(-30, 30) for _ in range(n)],
    ]


def test_numpy_mean_is_numpys_mean_bit_for_bit() -> None:
    rng = random.Random(31)
    checked = 0
    for n in range(1, 301):
        for _ in range(4):
            for values in _lists(rng, n):
                assert numpy_mean(values).hex() == float(np.mean(values)).hex(), (n, values)
                checked += 1
    for n in (512, 1000, 1001, 4096, 8191, 8192, 8193, 20_000):  # the recursive split, numpy's buffer size
        for values in _lists(rng, n):
            assert numpy_mean(values).hex() == float(np.mean(values)).hex(), n
    assert checked == 3600


def test_the_sum_differs_from_a_plain_sum_where_numpy_does() -> None:
    """The reason it is not sum()/n: from eight values on the order of the additions shows."""
    rng = random.Random(7)
    differs = [v for v in ([rng.random() for _ in range(9)] for _ in range(2000)) if sum(v) / len(v) != float(np.mean(v))]
    assert differs and all(numpy_mean(v) == float(np.mean(v)) for v in differs)


def test_ints_and_one_value() -> None:
    assert numpy_mean([0, 1]) == float(np.mean([0, 1])) == 0.5
    assert numpy_mean([0.25]) == 0.25 and isinstance(numpy_mean([0]), float)

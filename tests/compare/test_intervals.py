"""memorybench.compare.intervals: cluster-robust intervals, MDD, labelled bootstraps, seeding, p-values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memorybench.compare.intervals import (
    Difference,
    Interval,
    Resampling,
    cluster_bootstrap_interval,
    cluster_paired_bootstrap,
    cluster_robust_se,
    format_p,
    holm,
    key_digest,
    mean_interval,
    mdd_sentence,
    minimum_detectable_difference,
    p_as_json,
    paired_difference,
    question_bootstrap_interval,
    question_paired_bootstrap,
    resampling_rng,
)
from memorybench.errors import UserError

# Three conversations of unequal size (3, 2 and 4 questions).
VALUES = [1, 0, 1, 0, 0, 1, 1, 1, 0]
CLUSTERS = ["c1", "c1", "c1", "c2", "c2", "c3", "c3", "c3", "c3"]

# t with 2 df has a closed form: F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so the quantile q is
# t = s sqrt(2 / (1 - s^2)) with s = 2q - 1, and the two-sided p of T is 1 - |T| / sqrt(2 + T^2).
T975_2DF = 0.95 * math.sqrt(2 / (1 - 0.95**2))  # 4.302652...
T80_2DF = 0.6 * math.sqrt(2 / (1 - 0.6**2))  # sqrt(1.125) = 1.060660...


def test_cr1_interval_by_hand() -> None:
    # N = 9, sum = 5, mean = 5/9.
    # Residual sums per conversation (sum - size * mean):
    #   c1: 2 - 3 * 5/9 = 3/9;  c2: 0 - 2 * 5/9 = -10/9;  c3: 3 - 4 * 5/9 = 7/9  (they sum to 0)
    # sum of squares = (9 + 100 + 49) / 81 = 158/81
    # CR1: V = G/(G-1) * 158/81 / N^2 = 3/2 * 158/81 / 81 = 237/6561; SE = sqrt(237)/81 = 0.190060
    # 95% interval: 5/9 -/+ t(0.975, 2 df) * SE = 0.555556 -/+ 4.302653 * 0.190060
    se = math.sqrt(237) / 81
    assert cluster_robust_se(VALUES, CLUSTERS) == pytest.approx(se, rel=1e-12)
    # = (-0.262204, 1.373315): outside the scores' range, so the interval is cut at [0, 1] and says so
    assert (5 / 9 - T975_2DF * se, 5 / 9 + T975_2DF * se) == pytest.approx((-0.262204, 1.373315), abs=1e-6)
    got = mean_interval(VALUES, CLUSTERS)
    assert got.estimate == pytest.approx(5 / 9)
    assert (got.low, got.high) == (0.0, 1.0)
    assert (got.n, got.clusters, got.confidence, got.note) == (9, 3, 0.95, "clipped to the scores' range [0, 1]")
    assert got.method == "cluster-robust t (CR1), 3 conversations, 2 df"
    # at 80%: t(0.9, 2 df) = 0.8 sqrt(2 / 0.36) = 1.885618, half-width 0.358383: inside the range, not cut
    narrow = mean_interval(VALUES, CLUSTERS, confidence=0.8)
    half = 0.8 * math.sqrt(2 / (1 - 0.8**2)) * se
    assert (narrow.low, narrow.high) == pytest.approx((5 / 9 - half, 5 / 9 + half), rel=1e-9) and narrow.note is None


def test_equal_scores_give_no_width_and_the_note_says_why() -> None:
    got = mean_interval([1.0, 1.0, 1.0, 1.0], ["c1", "c1", "c2", "c2"])
    assert (got.estimate, got.low, got.high) == (1.0, 1.0, 1.0)
    assert got.note == "every score is 1: no spread between conversations, so the t interval has no width"


def test_a_rate_of_independent_questions_gets_wilsons_interval() -> None:
    # 4 of 4 right, z = 1.959964: Wilson's low is n / (n + z^2) = 4 / 7.841459 = 0.510109, high 1
    got = mean_interval([1, 1, 1, 1], ["q1", "q2", "q3", "q4"], unit="question", kind="rate")
    assert got.estimate == 1.0 and got.high == pytest.approx(1.0) and got.low == pytest.approx(0.510109, abs=1e-6)
    assert got.method == "Wilson score, 4 questions (right or wrong, independent)" and got.note is None
    # 17 of 20: p 0.85, the textbook Wilson 95% interval (0.6396, 0.9476)
    some = mean_interval([1] * 17 + [0] * 3, [f"q{i}" for i in range(20)], unit="question", kind="rate")
    assert (some.low, some.high) == pytest.approx((0.639581, 0.947631), abs=1e-6)
    # one question is still a rate with an interval: 1 of 1, low 1 / (1 + z^2) = 0.206549
    one = mean_interval([1], ["q1"], unit="question", kind="rate")
    assert (one.low, one.high) == pytest.approx((0.206549, 1.0), abs=1e-6)


def test_the_interval_follows_the_metrics_kind_not_the_values_seen() -> None:
    # a diagnostic F1 that was 0 on 20 questions is a score: the t interval (no width, said so), never Wilson's
    zeros = mean_interval([0.0] * 20, [f"q{i}" for i in range(20)], unit="question")
    assert zeros.method.startswith("cluster-robust") and zeros.note is not None and "no width" in zeros.note
    assert mean_interval([0.0] * 20, [f"q{i}" for i in range(20)], unit="question", kind="rate").method.startswith("Wilson")
    assert mean_interval([0.5, 1, 0.25, 1], ["q1", "q2", "q3", "q4"], unit="question").method.startswith("cluster-robust")
    with pytest.raises(ValueError, match="kind='share'"):
        mean_interval([0, 1], ["a", "b"], kind="share")


def test_a_clustered_rate_gets_korn_graubards_interval_by_hand() -> None:
    from scipy import stats

    # 0 of 150 wrong answers accepted in 10 conversations: no variance seen, design effect 1;
    # n* = 150 (z / t(0.975, 9))^2 = 150 (1.959964 / 2.262157)^2 = 112.60; Clopper-Pearson's high for
    # 0 of n* is 1 - 0.025^(1/n*) = 0.032230
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, 9)
    n_star = 150 * (z / t) ** 2
    assert n_star == pytest.approx(112.60, abs=0.01)
    got = mean_interval([0.0] * 150, [f"conv-{i % 10}" for i in range(150)], kind="rate")
    assert (got.estimate, got.low) == (0.0, 0.0) and got.high == pytest.approx(1 - 0.025 ** (1 / n_star), rel=1e-9)
    assert got.high == pytest.approx(0.032230, abs=1e-6)
    assert got.method == "Korn-Graubard (Clopper-Pearson, design effect 1.00, t 9 df), 10 conversations (a rate)"
    # the VALUES example: p 5/9 of 9 in 3 conversations, CR1 variance 237/6561, binomial 20/729:
    # deff = (237/6561) / (20/729) = 237/180 = 1.316667; n* = 9 / deff * (z / t(0.975, 2))^2
    deff = (237 / 6561) / ((5 / 9) * (4 / 9) / 9)
    assert deff == pytest.approx(237 / 180)
    n_star = 9 / deff * (z / stats.t.ppf(0.975, 2)) ** 2
    x = 5 / 9 * n_star
    low, high = stats.beta.ppf(0.025, x, n_star - x + 1), stats.beta.ppf(0.975, x + 1, n_star - x)
    rate = mean_interval(VALUES, CLUSTERS, kind="rate")
    assert (rate.low, rate.high) == pytest.approx((low, high), rel=1e-9)
    assert 0 < rate.low < 5 / 9 < rate.high < 1 and "design effect 1.32, t 2 df" in rate.method
    # one conversation: still no between-conversation uncertainty
    assert mean_interval([0, 1, 1], ["c"] * 3, kind="rate").low is None


def test_cluster_labels_need_not_be_contiguous() -> None:
    order = [4, 0, 7, 2, 8, 1, 6, 3, 5]
    shuffled = mean_interval([VALUES[i] for i in order], [CLUSTERS[i] for i in order])
    assert (shuffled.low, shuffled.high) == pytest.approx(
        (mean_interval(VALUES, CLUSTERS).low, mean_interval(VALUES, CLUSTERS).high)
    )


@pytest.mark.parametrize("groups", [2, 3, 5, 10])
def test_t_has_clusters_minus_one_degrees_of_freedom(groups: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(groups)
    clusters = [f"conv-{g}" for g in range(groups) for _ in range(7)]
    values = rng.random(len(clusters))
    got = mean_interval(values, clusters, confidence=0.9)
    se = cluster_robust_se(values, clusters)
    assert se is not None
    ratio = (got.high - got.estimate) / se
    assert ratio == pytest.approx(stats.t.ppf(0.95, groups - 1), rel=1e-9)
    assert ratio != pytest.approx(stats.t.ppf(0.95, groups), rel=1e-6)
    assert got.method.endswith(f"{groups} conversations, {groups - 1} df")


def test_one_conversation_says_no_between_conversation_uncertainty() -> None:
    got = mean_interval([1, 0, 1], ["conv-26"] * 3)
    assert (got.estimate, got.low, got.high, got.clusters) == (pytest.approx(2 / 3), None, None, 1)
    assert got.note == "one conversation: no between-conversation uncertainty can be estimated"
    diff = paired_difference([0, 0, 1], [1, 0, 1], ["conv-26"] * 3)
    assert diff.difference == pytest.approx(1 / 3)
    assert (diff.low, diff.high, diff.p_two_sided, diff.mdd) == (None, None, None, None)
    assert diff.note == got.note
    assert cluster_robust_se([1, 0, 1], ["conv-26"] * 3) is None
    assert cluster_bootstrap_interval([1, 0], ["c"] * 2, Resampling(resamples=50)).note == got.note


def test_no_values() -> None:
    got = mean_interval([], [])
    assert (got.estimate, got.low, got.high, got.n, got.clusters) == (None, None, None, 0, 0)
    assert got.note is not None and "no values" in got.note
    diff = paired_difference([], [], [])
    assert (diff.a, diff.b, diff.difference, diff.p_two_sided) == (None, None, None, None)
    assert question_bootstrap_interval([], [], Resampling()).estimate is None


def test_paired_difference_is_the_interval_of_the_differences() -> None:
    rng = np.random.default_rng(3)
    clusters = [f"conv-{g}" for g, size in enumerate([5, 9, 3, 7, 6]) for _ in range(size)]
    a = rng.random(len(clusters))
    b = a + 0.1 + rng.normal(0, 0.2, len(clusters))
    diff = paired_difference(a, b, clusters)
    alone = mean_interval(b - a, clusters)
    assert diff.difference == pytest.approx(alone.estimate)
    assert (diff.low, diff.high) == pytest.approx((alone.low, alone.high))
    assert (diff.a, diff.b) == pytest.approx((a.mean(), b.mean()))
    assert diff.difference == pytest.approx(diff.b - diff.a)
    assert diff.p_resolution is None


def test_pairing_by_question_matters() -> None:
    # B = A + 0.05 on every question: paired, the difference is exact (SE 0, p 0, a degenerate
    # test said so). The same B values paired with other conversations' questions are not.
    # (Swapping B inside one conversation would change nothing: CR1 sees per-conversation sums.)
    a = [0.1, 0.2, 0.5, 0.6, 0.8, 0.9]
    b = [x + 0.05 for x in a]
    clusters = ["x", "x", "y", "y", "z", "z"]
    got = paired_difference(a, b, clusters)
    assert got.difference == pytest.approx(0.05)
    assert got.high - got.low == pytest.approx(0, abs=1e-12)
    assert got.p_two_sided == 0.0 and format_p(got.p_two_sided, got.p_resolution) == "< 0.0001"
    assert got.note is not None and "degenerate" in got.note
    mispaired = paired_difference(a, b[::-1], clusters)
    assert mispaired.difference == pytest.approx(0.05)
    assert mispaired.high - mispaired.low > 0.1 and mispaired.p_two_sided > 0.05


def test_p_value_by_hand_two_df() -> None:
    # differences B - A per question: c1 [1, 0, 0], c2 [0, 0], c3 [1, 1, 1, 0]: the VALUES example
    a = [0] * 9
    got = paired_difference(a, VALUES, CLUSTERS)
    se = math.sqrt(237) / 81
    t = (5 / 9) / se  # 2.923...
    assert got.p_two_sided == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9)  # 0.09982
    assert got.p_two_sided == pytest.approx(0.09982, abs=1e-5)


def test_minimum_detectable_difference_formula() -> None:
    se = math.sqrt(237) / 81
    expected = (T975_2DF + T80_2DF) * se  # (4.302653 + 1.060660) * 0.190060 = 1.019348
    assert expected == pytest.approx(1.019348, abs=1e-6)
    assert paired_difference([0] * 9, VALUES, CLUSTERS).mdd == pytest.approx(expected, rel=1e-9)
    assert minimum_detectable_difference(se, 3) == pytest.approx(expected, rel=1e-9)
    # power 0.5 adds t(0.5) = 0: the MDD is the interval's half-width
    half = paired_difference([0] * 9, VALUES, CLUSTERS, power=0.5)
    assert half.mdd == pytest.approx(half.high - half.difference)
    assert minimum_detectable_difference(se, 1) is None
    assert minimum_detectable_difference(None, 10) is None
    with pytest.raises(UserError, match="power=1.5"):
        minimum_detectable_difference(se, 3, power=1.5)


def test_seeding_is_deterministic_and_per_key() -> None:
    assert key_digest("A", 1, "f1") == 12628618068819197471  # stable across runs and machines
    resampling = Resampling(resamples=200, seed=5)
    first = resampling_rng(resampling, "A", "f1").integers(0, 1 << 30, 8)
    again = resampling_rng(resampling, "A", "f1").integers(0, 1 << 30, 8)
    expected = np.random.default_rng(np.random.SeedSequence([5, key_digest("A", "f1")])).integers(0, 1 << 30, 8)
    assert np.array_equal(first, again) and np.array_equal(first, expected)
    assert not np.array_equal(first, resampling_rng(resampling, "B", "f1").integers(0, 1 << 30, 8))
    other_seed = resampling_rng(Resampling(resamples=200, seed=6), "A", "f1")
    assert not np.array_equal(first, other_seed.integers(0, 1 << 30, 8))


def test_adding_a_condition_does_not_move_the_others() -> None:
    rng = np.random.default_rng(11)
    clusters = [f"conv-{g}" for g in range(4) for _ in range(25)]
    scores = {name: rng.random(100) for name in ("A", "B", "C")}
    resampling = Resampling(resamples=500)

    def table(names: list[str]) -> dict[str, tuple[Interval, Interval]]:
        return {
            name: (
                question_bootstrap_interval(scores[name], clusters, resampling, name, "f1"),
                cluster_bootstrap_interval(scores[name], clusters, resampling, name, "f1"),
            )
            for name in names
        }

    two, three = table(["A", "B"]), table(["C", "A", "B"])
    assert two["A"] == three["A"] and two["B"] == three["B"]
    assert table(["A"])["A"] == two["A"]  # same data and key: same interval in compare and report
    assert two["A"][0] != question_bootstrap_interval(scores["A"], clusters, resampling, "A", "j")


def test_question_bootstrap_is_the_plain_percentile_bootstrap() -> None:
    # scipy's bootstrap must give exactly what a hand-written question resampler gives
    rng_values = np.random.default_rng(2)
    values = rng_values.random(301)
    clusters = ["c"] * 150 + ["d"] * 151
    resampling = Resampling(resamples=2500, seed=9)
    rng = resampling_rng(resampling, "A", "f1")
    means = np.concatenate(
        [values[rng.integers(0, values.size, size=(size, values.size))].mean(axis=1) for size in (1000, 1000, 500)]
    )
    low, high = np.quantile(means, [0.025, 0.975])
    got = question_bootstrap_interval(values, clusters, resampling, "A", "f1")
    assert (got.low, got.high) == (float(low), float(high))
    paired = question_paired_bootstrap(np.zeros(301), values, clusters, resampling, "A", "f1")
    assert (paired.low, paired.high) == (float(low), float(high))
    # an interval only: no p-value from questions resampled as if independent
    assert paired.p_two_sided is None and paired.p_resolution is None


def test_question_level_label_says_conditional() -> None:
    resampling = Resampling(resamples=100)
    clusters = [f"conv-{g}" for g in range(10) for _ in range(3)]
    got = question_bootstrap_interval([0, 1, 1] * 10, clusters, resampling)
    assert "conditional on these 10 conversations" in got.method
    assert "question-level" in got.method
    paired = question_paired_bootstrap([0, 1, 0] * 10, [0, 1, 1] * 10, clusters, resampling)
    assert "conditional on these 10 conversations" in paired.method
    assert paired.mdd is None and paired.p_two_sided is None
    assert "conditional" not in mean_interval([0, 1, 1] * 10, clusters).method
    assert "conditional" not in cluster_bootstrap_interval([0, 1, 1] * 10, clusters, resampling).method


def test_cluster_bootstrap_resamples_whole_conversations() -> None:
    # brute force: expand each drawn conversation into its questions and average
    values = np.array(VALUES, dtype=float)
    labels = np.array(CLUSTERS)
    order = ["c1", "c2", "c3"]  # codes follow first appearance
    resampling = Resampling(resamples=300, seed=4)
    rng = resampling_rng(resampling, "k")
    draws = rng.integers(0, 3, size=(300, 3))
    means = [np.concatenate([values[labels == order[g]] for g in row]).mean() for row in draws]
    low, high = np.quantile(means, [0.025, 0.975])
    got = cluster_bootstrap_interval(VALUES, CLUSTERS, resampling, "k")
    assert (got.low, got.high) == pytest.approx((low, high), rel=1e-12)
    assert got.method == "conversation-level percentile bootstrap (300 resamples), 3 conversations"
    paired = cluster_paired_bootstrap([0] * 9, VALUES, CLUSTERS, resampling, "k")
    assert (paired.low, paired.high) == pytest.approx((low, high), rel=1e-12)
    assert paired.p_two_sided == pytest.approx(min(1.0, 2 * min(np.mean(np.array(means) <= 0), np.mean(np.array(means) >= 0))))


def test_main_interval_is_wider_than_question_level_on_clustered_data() -> None:
    rng = np.random.default_rng(0)
    sizes = [199, 105, 193, 260, 242, 158, 190, 239, 196, 204]  # LoCoMo's conversations
    clusters = [f"conv-{g}" for g, size in enumerate(sizes) for _ in range(size)]
    levels = np.repeat(rng.normal(0.6, 0.08, len(sizes)), sizes)  # a conversation effect
    values = (rng.random(len(clusters)) < levels).astype(float)
    main = mean_interval(values, clusters)
    question = question_bootstrap_interval(values, clusters, Resampling(resamples=2000), "A")
    assert main.low < question.low and main.high > question.high
    assert (main.high - main.low) > 1.5 * (question.high - question.low)
    assert main.method == "cluster-robust t (CR1), 10 conversations, 9 df"


@pytest.mark.parametrize(
    ("p", "resolution", "text"),
    [
        (0.0, 1 / 10000, "< 1/10000"),
        (0.0, 1 / 2000, "< 1/2000"),
        (0.001, 1 / 2000, "0.0010"),
        (0.0004, 1 / 2000, "< 1/2000"),
        (0.5, 1 / 10000, "0.5000"),
        (3e-7, None, "< 0.0001"),
        (0.0, None, "< 0.0001"),
        (0.04567, None, "0.0457"),
        (1.0, None, "1.0000"),
        (None, None, "n/a"),
    ],
)
def test_format_p(p: float | None, resolution: float | None, text: str) -> None:
    assert format_p(p, resolution) == text


def test_p_in_json_is_never_zero_for_a_resampled_p() -> None:
    assert p_as_json(0.0, 1 / 10000) == {
        "p_two_sided": 1 / 10000,
        "p_upper_bound": True,
        "p_resolution": 1 / 10000,
        "p_text": "< 1/10000",
    }
    assert p_as_json(0.25, 1 / 10000)["p_two_sided"] == 0.25
    assert p_as_json(1e-9, None) == {"p_two_sided": 1e-9, "p_upper_bound": False, "p_resolution": None, "p_text": "< 0.0001"}
    diff = cluster_paired_bootstrap([0] * 40, [1] * 40, ["a", "b"] * 20, Resampling(resamples=1000))
    assert diff.p_two_sided == 0.0
    data = diff.as_dict()
    assert data["p_two_sided"] == 1 / 1000 and data["p_upper_bound"] and data["p_text"] == "< 1/1000"
    assert isinstance(diff, Difference)


def test_as_dict_is_plain_json() -> None:
    import json

    got = mean_interval(VALUES, CLUSTERS)
    assert json.loads(json.dumps(got.as_dict()))["method"] == got.method
    diff = paired_difference([0] * 9, VALUES, CLUSTERS).as_dict()
    assert set(diff) >= {
        "a",
        "b",
        "difference",
        "low",
        "high",
        "p_two_sided",
        "p_resolution",
        "mdd",
        "n",
        "clusters",
        "confidence",
        "method",
        "note",
    }
    json.dumps(diff)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="1 labels for 2 values"):
        mean_interval([0, 1], ["a"])
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([0, 1], [1], ["a", "b"])
    with pytest.raises(ValueError, match="non-finite"):
        mean_interval([0, float("nan")], ["a", "b"])
    with pytest.raises(UserError, match="confidence=95"):
        mean_interval([0, 1], ["a", "b"], confidence=95)
    with pytest.raises(UserError, match="resamples=0"):
        Resampling(resamples=0)


def test_holm_by_hand() -> None:
    # the audit's two category results at p 0.0225 and 0.03 among four categories: 4 x 0.0225 = 0.09,
    # 3 x 0.03 = 0.09 (never below the one before), then 2 x 0.2 = 0.4 and 1 x 0.5
    assert holm([0.0225, 0.03, 0.5, 0.2]) == pytest.approx([0.09, 0.09, 0.5, 0.4])
    # monotone and capped at 1; a missing p is left out of the family
    assert holm([0.01, 0.04, 0.03, 0.9]) == pytest.approx([0.04, 0.09, 0.09, 0.9])
    assert holm([0.6, None, 0.7]) == pytest.approx([1.0, None, 1.0]) and holm([]) == []
    assert holm([0.0225]) == [0.0225]  # a family of one is the test itself


def test_the_mdd_says_what_it_is_and_never_calls_a_significant_difference_noise() -> None:
    # memobase 0709 -> 0710, category 1 (the outside audit): +0.0481, p 0.0225, MDD 0.0545
    text = mdd_sentence(0.0481, 0.0225, 0.0545, 10)
    assert text == (
        "minimum detectable difference 0.0545: the true difference this design (10 conversations) detects "
        "with 80% power at two-sided alpha 0.05; this difference is significant although smaller than it"
    )
    assert "noise" not in text and "cannot be told" not in text
    assert mdd_sentence(0.08, 0.001, 0.0545, 10).endswith("; this difference is significant")
    assert "does not show there is none" in mdd_sentence(0.01, 0.4, 0.0545, 10)
    assert mdd_sentence(None, None, 0.03, 500, unit="question").endswith(
        "(500 questions) detects with 80% power at two-sided alpha 0.05"
    )

"""Judge agreement: the share of equal labels and Cohen's kappa, checked on hand-computed examples."""

from __future__ import annotations

import pytest

from memorybench.score.agreement import judge_agreement, paired


def table(both_yes: int, a_yes_b_no: int, a_no_b_yes: int, both_no: int) -> tuple[list[str], list[str]]:
    """Two judges' labels from a 2x2 contingency table."""
    a = ["CORRECT"] * both_yes + ["CORRECT"] * a_yes_b_no + ["WRONG"] * a_no_b_yes + ["WRONG"] * both_no
    b = ["CORRECT"] * both_yes + ["WRONG"] * a_yes_b_no + ["CORRECT"] * a_no_b_yes + ["WRONG"] * both_no
    return a, b


def test_the_textbook_example():
    # 50 rows: both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # p_o = 35/50 = 0.7; A says yes 25/50 = 0.5, B 30/50 = 0.6;
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    result = judge_agreement(*table(20, 5, 10, 15))
    assert (result.rows, result.agreed, result.unlabelled) == (50, 35, 0)
    assert result.share == 0.7 and result.expected == 0.5
    assert result.kappa == 0.4  # exact fractions: no rounding on the way


def test_a_second_hand_computed_table():
    # 100 rows: 45, 15, 25, 15. p_o = 0.6; A yes 0.6, B yes 0.7; p_e = 0.42 + 0.12 = 0.54;
    # kappa = 0.06 / 0.46 = 3/23
    result = judge_agreement(*table(45, 15, 25, 15))
    assert result.share == 0.6 and result.expected == pytest.approx(0.54)
    assert result.kappa == pytest.approx(3 / 23)


def test_perfect_agreement_and_perfect_disagreement():
    a, b = table(3, 0, 0, 2)
    assert judge_agreement(a, b).kappa == 1.0 and judge_agreement(a, b).share == 1.0
    a, b = table(0, 3, 3, 0)  # always opposite, both balanced: p_o = 0, p_e = 0.5
    result = judge_agreement(a, b)
    assert result.share == 0.0 and result.kappa == -1.0


def test_one_label_throughout_leaves_kappa_undefined():
    # both judges say CORRECT to every row: p_o = p_e = 1 and kappa is 0/0
    result = judge_agreement(["CORRECT"] * 4, ["CORRECT"] * 4)
    assert result.share == 1.0 and result.expected == 1.0 and result.kappa is None
    # one judge constant, the other not: p_e < 1, kappa is defined (and 0: no better than chance)
    result = judge_agreement(["CORRECT"] * 4, ["CORRECT", "CORRECT", "WRONG", "CORRECT"])
    assert result.share == 0.75 and result.kappa == 0.0


def test_unlabelled_rows_are_left_out_and_counted():
    result = judge_agreement(["CORRECT", None, "WRONG", "WRONG"], ["CORRECT", "WRONG", None, "WRONG"])
    assert (result.rows, result.agreed, result.unlabelled) == (2, 2, 2)
    assert result.kappa == 1.0
    empty = judge_agreement([None], ["WRONG"])
    assert (empty.rows, empty.share, empty.expected, empty.kappa) == (0, None, None, None)
    assert judge_agreement([], []).rows == 0


def test_labels_may_be_scores_and_rows_are_paired_by_key():
    a = {("q-1", 1): 1, ("q-2", 1): 0, ("q-3", 1): 1}
    b = {("q-3", 1): 1, ("q-1", 1): 0, ("q-4", 1): 1}
    labels_a, labels_b = paired(a, b)
    assert (labels_a, labels_b) == ([1, 1], [0, 1])
    assert judge_agreement(labels_a, labels_b).agreed == 1


def test_rows_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="same rows: got 2 and 1"):
        judge_agreement(["CORRECT", "WRONG"], ["CORRECT"])

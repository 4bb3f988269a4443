"""Agreement between two judges on the same rows: the share of equal labels and Cohen's kappa.

    judge_agreement(["CORRECT", "WRONG", ...], ["CORRECT", "CORRECT", ...])
    judge_agreement(*paired(verdicts_a, verdicts_b))   # two {row key: label} maps, on their shared keys

Kappa corrects the share for the agreement two judges would reach by chance with their
own label frequencies (Cohen 1960):

    p_o = agreed / n        p_e = sum over labels k of (n_a(k) / n) * (n_b(k) / n)
    kappa = (p_o - p_e) / (1 - p_e)

Computed in exact fractions, so a textbook example gives its textbook value. When
p_e is 1 (both judges gave one and the same label to every row) kappa is 0 / 0: it is
undefined, reported as None, and the share (then 1) says what there is to say. A row
without a label on either side (None: a judge failure, never a WRONG) is left out and
counted. No model, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

__all__ = ["JudgeAgreement", "judge_agreement", "paired"]


@dataclass(frozen=True)
class JudgeAgreement:
    """How two judges agree on the rows both labelled."""

    #: rows with a label from both judges
    rows: int
    #: of those, rows with the same label
    agreed: int
    #: rows left out because one judge (or both) gave no label
    unlabelled: int
    #: agreed / rows; None without a row
    share: Optional[float]
    #: the chance agreement p_e; None without a row
    expected: Optional[float]
    #: Cohen's kappa; None without a row, or when p_e is 1 (undefined)
    kappa: Optional[float]


def paired(a: Mapping[Hashable, Hashable | None], b: Mapping[Hashable, Hashable | None]) -> tuple[list, list]:
    """The labels of the keys both maps have (e.g. (question_id, pass) -> label), in `a`'s key order."""
    keys = [k for k in a if k in b]
    return [a[k] for k in keys], [b[k] for k in keys]


def judge_agreement(a: Sequence[Hashable | None], b: Sequence[Hashable | None]) -> JudgeAgreement:
    """Share of equal labels and Cohen's kappa of two judges' labels of the same rows, row i with row i."""
    if len(a) != len(b):
        raise ValueError(f"two judges' labels must be of the same rows: got {len(a)} and {len(b)} labels")
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    unlabelled = len(a) - len(pairs)
    n = len(pairs)
    if n == 0:
        return JudgeAgreement(rows=0, agreed=0, unlabelled=unlabelled, share=None, expected=None, kappa=None)
    agreed = sum(1 for x, y in pairs if x == y)
    count_a = Counter(x for x, _ in pairs)
    count_b = Counter(y for _, y in pairs)
    observed = Fraction(agreed, n)
    expected = sum((Fraction(count_a[k], n) * Fraction(count_b[k], n) for k in count_a), Fraction(0))
    # p_e == 1 only when both judges used one and the same label throughout: kappa is 0/0
    kappa = None if expected == 1 else float((observed - expected) / (1 - expected))
    return JudgeAgreement(
        rows=n, agreed=agreed, unlabelled=unlabelled, share=float(observed), expected=float(expected), kappa=kappa
    )

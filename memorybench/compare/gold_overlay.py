"""LoCoMo's known gold errors as the comparison layer applies them: beside every figure on
all questions, the same figure on the questions without a known wrong gold answer (with
n), and where asked the figure with the audit's corrected answers scored by LoCoMo's own
rules. The overlay (`memorybench.data.gold_errors`, the pinned locomo-audit errors.json)
is never an edit of the data: it joins the pinned locomo10.json by question id, so it
applies only to packs of that exact file (their data sha256), and says so otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memorybench.data.gold_errors import GoldError, known_gold_errors, overlay_provenance
from memorybench.data.pins import LOCOMO10
from memorybench.errors import UserError

__all__ = ["Overlay", "corrected_f1", "load_overlay"]


@dataclass(frozen=True)
class Overlay:
    """The known gold errors for a set of packs, or why none apply."""

    #: question id -> finding; None where the overlay does not apply (`note` says why)
    errors: dict[str, GoldError] | None
    note: str
    provenance: dict[str, Any] | None = None

    def wrong_gold(self, question_ids: Iterable[str]) -> set[str]:
        """The ids among `question_ids` whose gold answer is known to be wrong."""
        if self.errors is None:
            return set()
        return {q for q in question_ids if q in self.errors and self.errors[q].wrong_answer}


def load_overlay(data_sha256s: Iterable[str | None]) -> Overlay:
    """The overlay for packs whose datasets have these sha256s: applied only when every one
    is the pinned locomo10.json, and only when the pinned errors.json can be read."""
    found = set(data_sha256s)
    if found != {LOCOMO10.sha256}:
        return Overlay(
            None,
            "known gold errors not applied: they join the pinned locomo10.json, and these packs' data "
            "differs (a fixture, another dataset)",
        )
    try:
        errors = known_gold_errors()
    except UserError as e:  # not fetched, or not the pinned file: said, never fatal for a comparison
        return Overlay(None, f"known gold errors not applied: {e}")
    provenance = overlay_provenance(errors)
    return Overlay(
        errors,
        f"known gold errors: {provenance['answer']} wrong gold answers and {provenance['evidence']} wrong "
        f"citations (dial481/locomo-audit errors.json, sha256 {provenance['sha256'][:12]}...)",
        provenance,
    )


def corrected_f1(prediction: str, error: GoldError, category: int) -> float:
    """LoCoMo F1 of `prediction` against the audit's corrected answer, by LoCoMo's rules."""
    from memorybench.score.locomo import locomo_score

    return float(locomo_score(prediction, error.scoring_answer, category))

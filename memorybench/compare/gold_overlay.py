"""A benchmark's known gold errors as the comparison layer applies them: beside every figure on
all questions, the same figure on the questions without a known wrong gold answer (with n),
and where asked the figure with the audit's corrected answers scored by the benchmark's own
rules. The audit is the benchmark's own (its record's `gold_audit`: LoCoMo's is the pinned
locomo-audit errors.json); it is never an edit of the data: it joins the pinned file by
question id, so it applies only to packs of that exact file (their data sha256), and says so
otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memorybench.benchmark import benchmarks, imported
from memorybench.errors import UserError
from memorybench.score.scorers import LEXICAL

__all__ = ["CORRECTED", "Overlay", "corrected_f1", "gold_audit_of", "load_overlay"]

#: the examples frame's column of each answer scored against the audit's corrected gold
CORRECTED = f"{LEXICAL}_corrected"

#: why no overlay applies where no benchmark offers a gold audit of these packs' data
_NO_AUDIT = "known gold errors not applied: no benchmark has a gold audit of these packs' data"


@dataclass(frozen=True)
class Overlay:
    """The known gold errors for a set of packs, or why none apply."""

    #: question id -> finding (the audit module's record: `kind`, `wrong_answer`,
    #: `scoring_answer`, corrected evidence, reasoning); None where the overlay does not apply
    #: (`note` says why)
    errors: dict[str, Any] | None
    note: str
    provenance: dict[str, Any] | None = None
    #: the audit module (the benchmark's `gold_audit`) whose findings these are
    audit: Any = None

    def wrong_gold(self, question_ids: Iterable[str]) -> set[str]:
        """The ids among `question_ids` whose gold answer is known to be wrong."""
        if self.errors is None:
            return set()
        return {q for q in question_ids if q in self.errors and self.errors[q].wrong_answer}


def gold_audit_of(data_sha256: str | None) -> Any:
    """The gold-audit module (a benchmark's `gold_audit`) that joins a dataset file of this
    sha256, or None."""
    for bench in benchmarks().values():
        if bench.gold_audit:
            audit = imported(bench.gold_audit)
            if audit.applies_to(data_sha256):
                return audit
    return None


def load_overlay(data_sha256s: Iterable[str | None]) -> Overlay:
    """The overlay for packs whose datasets have these sha256s: applied only when every one is
    the one file a benchmark's gold audit joins, and only when its pinned findings can be read."""
    found = set(data_sha256s)
    audits = {gold_audit_of(sha) for sha in found}
    audit = next(iter(audits)) if len(found) == 1 else None
    if audit is None:
        notes = [imported(b.gold_audit).NOT_APPLIED for b in benchmarks().values() if b.gold_audit]
        return Overlay(None, notes[0] if len(notes) == 1 else _NO_AUDIT)
    try:
        errors = audit.known_gold_errors()
    except UserError as e:  # not fetched, or not the pinned file: said, never fatal for a comparison
        return Overlay(None, f"known gold errors not applied: {e}")
    provenance = audit.overlay_provenance(errors)
    return Overlay(errors, audit.described(provenance), provenance, audit)


def corrected_f1(overlay: Overlay, prediction: str, error: Any, category: int) -> float:
    """The benchmark's own score of `prediction` against the audit's corrected answer (LoCoMo:
    LoCoMo F1 by its rules)."""
    return float(overlay.audit.corrected_score(prediction, error, category))

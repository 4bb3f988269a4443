"""The protocol contract: what every figure on the board was made under, and which fields differ.

A figure is only comparable with another made under the same protocol. Each board entry (one
pack under one judge) carries its contract, one value per field of `FIELDS`:

    dataset          the benchmark, its version and the sha256 of the data file the pack read
    answer_model     the model that answered (an imported pack: the released file's format)
    answer_prompt    how questions were posed (`question_protocol`) and the reader template's sha256
    judge            the judge's protocol, model and prompt sha256 (or "no judge")
    calibration      what `memorybench judge-check` found the judge accepts of known-wrong answers
    retrieval        top-k of the memory's search ("no search" for a whole-history memory)
    context_tokens   the answerer's prompt tokens per question (measured)
    abstention       the category-5 / abstention policy: which unjudged kinds were asked, as what
    answer_length    answer length in whitespace tokens, mean and p95 (measured)
    questions        the questions the figure covers (n and kinds; a prefix or partial import said)
    gold_errors      how known gold errors are handled (the benchmark's audit applied or not)

Text fields differ when their text differs. The two measured fields differ when their value is
more than `RATIO` (2x) from the table's reference or one side is unknown: `compare` warns at the
same ratio for answer length. A table's reference contract is the most frequent value of each
field among its entries (the median of a measured field), so a mark names what sets an entry
apart from most of its column (`marks`).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FIELDS", "MEASURED", "RATIO", "marks", "reference"]

#: every field of a contract, in the order the board shows them, with its label
FIELDS: dict[str, str] = {
    "dataset": "dataset and revision",
    "answer_model": "answer model",
    "answer_prompt": "answer prompt",
    "judge": "judge model and prompt",
    "calibration": "judge calibration",
    "retrieval": "top-k",
    "context_tokens": "context tokens per question",
    "abstention": "category-5 / abstention policy",
    "answer_length": "answer length (mean, p95)",
    "questions": "questions covered",
    "gold_errors": "known-gold-error handling",
}
#: fields measured rather than chosen: compared by ratio, from these numeric keys of an entry
MEASURED = {"context_tokens": "context_tokens", "answer_length": "answer_length_mean"}
#: two measured values further apart than this factor differ
RATIO = 2.0


def _measured_reference(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def reference(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The reference contract of a table: per text field its most frequent value (ties: the one
    seen first), per measured field the median of the known values (None where none is known).
    Each entry is {"contract": {field: text}, <measured keys>: number or None}."""
    out: dict[str, Any] = {}
    for field in FIELDS:
        if field in MEASURED:
            out[field] = _measured_reference([e.get(MEASURED[field]) for e in entries])
            continue
        counts = Counter(e["contract"].get(field) for e in entries)
        out[field] = max(counts, key=lambda v: counts[v]) if counts else None  # first of the most frequent
    return out


def _measured_differs(value: float | None, ref: float | None) -> bool:
    if ref is None:
        return False
    if value is None:
        return True
    low, high = sorted((abs(value), abs(ref)))
    return high > 0 and (low == 0 or high / low > RATIO)


def marks(entry: Mapping[str, Any], ref: Mapping[str, Any]) -> list[str]:
    """The fields of `entry`'s contract that differ from the reference `ref`, in `FIELDS` order."""
    out = []
    for field in FIELDS:
        if field in MEASURED:
            if _measured_differs(entry.get(MEASURED[field]), ref.get(field)):
                out.append(field)
        elif entry["contract"].get(field) != ref.get(field):
            out.append(field)
    return out

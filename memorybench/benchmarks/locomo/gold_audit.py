"""LoCoMo's known gold errors, as an overlay on the pinned data: never an edit of it (LoCoMo's
`gold_audit`, which the core's overlay, `show`, `view` and blame ask through the record).

An outside audit of locomo10.json (dial481/locomo-audit, `errors.json`, pinned by its own
sha256 in `memorybench.data.pins`) lists 156 findings for the exact file we pin:

- 99 of kind `answer`: the gold answer is wrong (error types HALLUCINATION 33,
  TEMPORAL_ERROR 26, ATTRIBUTION_ERROR 24, AMBIGUOUS 13, INCOMPLETE 3; all in categories
  1-4). Each has the audit's corrected answer and its reasoning.
- 57 of kind `evidence` (error type WRONG_CITATION): the gold answer is right, its
  evidence ids are not. Each has the corrected evidence ids; its `correct_answer` field is
  the gold again, sometimes with a remark ("... (answer is correct, citation is wrong)"),
  so it is never a gold to score against: `GoldError.scoring_answer` is the dataset's gold.

The audit's ids are `locomo_{conversation index}_qa{qa index}`, both 0-based in file
order; ours are `{sample_id}-q-{qa index}`. `known_gold_errors` joins them through the
pinned locomo10.json and refuses (one line) a finding whose question text, gold, category
or cited evidence is not the dataset row's: the join is checked, never assumed.

How a figure uses the overlay (the comparison layer calls these, through the record's hook:
`applies_to`, `known_gold_errors`, `overlay_provenance`, `described`, `corrected_score`):

- answer accuracy (LoCoMo F1, J, ...) on "the questions without a known gold error":
  `without_gold_errors(question_ids)`. Only kind `answer` removes a question: an
  `evidence` finding leaves the gold answer right, so the question stays.
- the corrected answers scored by the same rules: `GoldError.scoring_answer` (the
  corrected answer for kind `answer`, the dataset's gold for kind `evidence`).
- evidence diagnostics (memory recall of the evidence turns, hops to evidence):
  `evidence_for(question)`, the audit's corrected evidence where it has a finding of
  either kind, else the dataset's own ids.
- provenance: `overlay_provenance()` (the pin, its sha256, the counts).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memorybench.benchmark import LOCOMO
from memorybench.benchmarks.locomo.pins import AUDIT_ERRORS
from memorybench.benchmarks.locomo.pins import LOCOMO10
from memorybench.data.pins import pin_path
from memorybench.data.records import Question
from memorybench.errors import DataError
from memorybench.hashing import sha256_bytes

__all__ = [
    "ANSWER_ERROR_TYPES",
    "EVIDENCE_ERROR_TYPES",
    "NOT_APPLIED",
    "GoldError",
    "GoldErrorKind",
    "applies_to",
    "corrected_score",
    "described",
    "evidence_for",
    "known_gold_errors",
    "overlay_provenance",
    "overlay_sha256",
    "without_gold_errors",
]

GoldErrorKind = Literal["answer", "evidence"]
#: the audit's findings file, as a line names it
SOURCE = "dial481/locomo-audit errors.json"
#: the audit's error types whose gold answer is wrong
ANSWER_ERROR_TYPES = ("HALLUCINATION", "TEMPORAL_ERROR", "ATTRIBUTION_ERROR", "AMBIGUOUS", "INCOMPLETE")
#: the audit's error type whose gold answer is right and whose evidence ids are not
EVIDENCE_ERROR_TYPES = ("WRONG_CITATION",)
_AUDIT_ID = re.compile(r"^locomo_(\d+)_qa(\d+)$")
_FIELDS = (
    "question_id",
    "question",
    "golden_answer",
    "category",
    "error_type",
    "cited_evidence",
    "correct_evidence",
    "reasoning",
    "correct_answer",
)


@dataclass(frozen=True, slots=True)
class GoldError:
    """One finding of the audit, joined to our question id."""

    #: ours: `{sample_id}-q-{qa index}`
    question_id: str
    #: the audit's: `locomo_{conversation index}_qa{qa index}`
    audit_id: str
    #: `answer`: the gold answer is wrong; `evidence`: only its evidence ids are
    kind: GoldErrorKind
    #: the audit's type: one of ANSWER_ERROR_TYPES or EVIDENCE_ERROR_TYPES
    error_type: str
    category: int
    question: str
    #: the dataset's gold, as the audit writes it (`str(answer)`, checked against the dataset)
    gold_answer: str
    #: the audit's `correct_answer`; for kind `evidence` the gold again, maybe with a remark
    corrected_answer: str
    #: the dataset's evidence ids (checked) and the audit's corrected ones
    cited_evidence: tuple[str, ...]
    corrected_evidence: tuple[str, ...]
    #: the audit's reasoning, as written
    reasoning: str

    @property
    def where(self) -> str:
        """Where the finding is written, for a line: the audit's file, its id and its type."""
        return f"{SOURCE} {self.audit_id}, {self.error_type}"

    @property
    def wrong_answer(self) -> bool:
        """Whether the gold answer is wrong (kind `answer`): the question leaves an answer-accuracy figure."""
        return self.kind == "answer"

    @property
    def scoring_answer(self) -> str:
        """The gold to score against in the corrected column: the corrected answer for kind
        `answer`, the dataset's gold for kind `evidence` (its `correct_answer` may carry a remark)."""
        return self.corrected_answer if self.kind == "answer" else self.gold_answer


#: why the overlay applies to no pack of a set whose data is not the pinned file
NOT_APPLIED = (
    "known gold errors not applied: they join the pinned locomo10.json, and these packs' data "
    "differs (a fixture, another dataset)"
)


def applies_to(data_sha256: str | None) -> bool:
    """Whether the audit joins a pack whose dataset file has this sha256: the pinned locomo10.json only."""
    return data_sha256 == LOCOMO10.sha256


def described(provenance: Mapping[str, Any]) -> str:
    """The overlay in one clause, for a comparison's notes."""
    return (
        f"known gold errors: {provenance['answer']} wrong gold answers and {provenance['evidence']} wrong "
        f"citations ({SOURCE}, sha256 {provenance['sha256'][:12]}...)"
    )


def corrected_score(prediction: str, error: GoldError, category: int) -> float:
    """LoCoMo F1 of `prediction` against the audit's corrected answer, by LoCoMo's rules."""
    from memorybench.benchmarks.locomo.score import locomo_score

    return float(locomo_score(prediction, error.scoring_answer, category))


def overlay_sha256() -> str:
    """The sha256 of the pinned errors.json: the overlay's identity, for a pack's provenance."""
    return AUDIT_ERRORS.sha256


def overlay_provenance(errors: Mapping[str, GoldError] | None = None) -> dict[str, Any]:
    """What a pack or a report records of the overlay: the pin, its sha256, the counts by kind."""
    errors = known_gold_errors() if errors is None else errors
    kinds = [e.kind for e in errors.values()]
    return {
        "name": "locomo-audit errors.json",
        "repository": AUDIT_ERRORS.repository,
        "commit": AUDIT_ERRORS.commit,
        "source_path": AUDIT_ERRORS.source_path,
        "sha256": AUDIT_ERRORS.sha256,
        "findings": len(kinds),
        "answer": kinds.count("answer"),
        "evidence": kinds.count("evidence"),
    }


def known_gold_errors(
    path: str | os.PathLike[str] | None = None,
    *,
    pins: str | os.PathLike[str] | None = None,
    dataset: str | os.PathLike[str] | None = None,
) -> dict[str, GoldError]:
    """Our question id -> its finding, for every finding of the audit (156), in the audit's order.

    `path` is the errors.json to read (default: the pinned one in the pins folder); it must
    have the pinned sha256 either way. `dataset` is the locomo10.json the ids are joined
    through (default: the pinned one). A file that does not join is one DataError line."""
    errors_path = pin_path(AUDIT_ERRORS, pins) if path is None else Path(path).expanduser().resolve()
    data_path = pin_path(LOCOMO10, pins) if dataset is None else Path(dataset).expanduser().resolve()
    return dict(_load(errors_path, data_path))


@functools.lru_cache(maxsize=4)
def _load(errors_path: Path, data_path: Path) -> tuple[tuple[str, GoldError], ...]:
    try:
        raw_bytes = errors_path.read_bytes()
    except FileNotFoundError:
        raise DataError(
            f"gold-error overlay {errors_path} does not exist; run `memorybench fetch` or pass the pinned errors.json"
        ) from None
    except OSError as e:
        raise DataError(
            f"gold-error overlay {errors_path} cannot be read ({e.strerror}); check the path and its permissions"
        ) from None
    actual = sha256_bytes(raw_bytes)
    if actual != AUDIT_ERRORS.sha256:
        raise DataError(
            f"gold-error overlay {errors_path} has sha256 {actual}, expected {AUDIT_ERRORS.sha256} "
            f"({SOURCE}); use the pinned file (`memorybench fetch`)"
        )
    findings = json.loads(raw_bytes.decode("utf-8"))
    conversations = LOCOMO.load(data_path)
    out: dict[str, GoldError] = {}
    for n, item in enumerate(findings):
        error = _join(item, n, conversations, errors_path)
        if error.question_id in out:
            raise DataError(f"{errors_path}: finding {error.audit_id} occurs twice; use the pinned errors.json")
        out[error.question_id] = error
    return tuple(out.items())


def _join(item: Any, n: int, conversations: Sequence[Any], path: Path) -> GoldError:
    """One finding joined to the dataset row its id names, every field it repeats checked."""
    missing = [k for k in _FIELDS if not isinstance(item, dict) or k not in item]
    if missing:
        raise DataError(f"{path}: finding [{n}] has no {', '.join(missing)}; use the pinned errors.json")
    audit_id = str(item["question_id"])
    match = _AUDIT_ID.match(audit_id)
    if match is None:
        raise DataError(
            f"{path}: finding [{n}] has id {audit_id!r}, not locomo_<conversation>_qa<question>; use the pinned errors.json"
        )
    c, i = int(match[1]), int(match[2])
    if c >= len(conversations) or i >= len(conversations[c].questions):
        raise DataError(
            f"{path}: finding {audit_id} names no question of the dataset ({len(conversations)} conversations); "
            "join it with the pinned locomo10.json"
        )
    q: Question = conversations[c].questions[i]
    error_type = str(item["error_type"])
    if error_type in ANSWER_ERROR_TYPES:
        kind: GoldErrorKind = "answer"
    elif error_type in EVIDENCE_ERROR_TYPES:
        kind = "evidence"
    else:
        raise DataError(
            f"{path}: finding {audit_id} has error_type {error_type!r}; known: "
            f"{', '.join(ANSWER_ERROR_TYPES + EVIDENCE_ERROR_TYPES)}"
        )
    checks = {
        "question": (item["question"], q.question),
        "golden_answer": (item["golden_answer"], str(q.answer)),
        "category": (item["category"], q.category),
        "cited_evidence": (list(item["cited_evidence"]), list(q.evidence)),
    }
    for name, (theirs, ours) in checks.items():
        if theirs != ours:
            raise DataError(
                f"{path}: finding {audit_id} has {name} {theirs!r}, but {q.question_id} of {conversations[c].sample_id} "
                f"has {ours!r}; join it with the pinned locomo10.json"
            )
    return GoldError(
        question_id=q.question_id,
        audit_id=audit_id,
        kind=kind,
        error_type=error_type,
        category=q.category,
        question=q.question,
        gold_answer=str(item["golden_answer"]),
        corrected_answer=str(item["correct_answer"]),
        cited_evidence=tuple(str(e) for e in item["cited_evidence"]),
        corrected_evidence=tuple(str(e) for e in item["correct_evidence"]),
        reasoning=str(item["reasoning"]),
    )


def without_gold_errors(question_ids: Iterable[str], errors: Mapping[str, GoldError] | None = None) -> list[str]:
    """`question_ids`, in their order, less those whose gold answer is known to be wrong (kind
    `answer`). A citation-only finding (kind `evidence`) keeps its question: its gold answer is
    right, so an answer-accuracy figure counts it; evidence diagnostics use `evidence_for`."""
    errors = known_gold_errors() if errors is None else errors
    return [qid for qid in question_ids if not (qid in errors and errors[qid].wrong_answer)]


def evidence_for(question: Question, errors: Mapping[str, GoldError] | None = None) -> tuple[str, ...]:
    """The evidence ids an evidence diagnostic should use for `question`: the audit's corrected
    ones where it has a finding (either kind), else the dataset's own."""
    errors = known_gold_errors() if errors is None else errors
    found = errors.get(question.question_id)
    return found.corrected_evidence if found is not None else question.evidence

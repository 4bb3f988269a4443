"""LoCoMo's `judge-check` sets (the record's `judge_sets`): three answers to each question of
categories 1-4 (those Mem0's judge judges), built from pinned files only.

    specific_wrong   the LoCoMo audit's deliberately wrong but specific answers (1,540)
    vague_wrong      the audit's deliberately wrong, vague-but-topical answers (1,540)
    gold             LoCoMo's gold answers themselves (1,540)

The two wrong sets come from the LoCoMo audit dial481/locomo-audit (pinned files
`locomo-audit/ap_v1_specific_wrong.json`, `ap_v2_vague_wrong.json`; `memorybench fetch`).
Their rows `locomo_{conversation index}_qa{qa index}` (both 0-based in file order) join our
question ids `{sample_id}-q-{qa index}`; every row's question and gold answer are checked
against the pinned locomo10.json. Mem0's judge labels an answer: it accepts the answers it
labels CORRECT.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorybench.benchmark import LOCOMO
from memorybench.data import iter_questions
from memorybench.benchmarks.locomo.pins import AUDIT_SPECIFIC_WRONG, AUDIT_VAGUE_WRONG
from memorybench.benchmarks.locomo.pins import LOCOMO10
from memorybench.data.pins import Pin, pin_path
from memorybench.data.records import Question
from memorybench.errors import UserError
from memorybench.records import load_json
from memorybench.stages.judge_check import CalibrationSets, CheckRow, CheckSet

__all__ = ["CHECKED_CATEGORIES", "WHERE", "WRONG_SETS", "audit_answers", "calibration_sets"]

#: the categories the audit's sets cover (and Mem0's judge judges)
CHECKED_CATEGORIES = (1, 2, 3, 4)
#: the pinned file of each wrong set
WRONG_SETS: dict[str, Pin] = {"specific_wrong": AUDIT_SPECIFIC_WRONG, "vague_wrong": AUDIT_VAGUE_WRONG}
#: what a judge of another benchmark is told it was asked to judge (`check_benchmark`)
WHERE = "judge-check's audit set"
#: each set: its table label and summary words (the summary names vague, specific, gold in that order)
_NAMES = {
    "specific_wrong": ("specific wrong", "specific ones"),
    "vague_wrong": ("vague wrong", "vague wrong answers"),
    "gold": ("gold", "gold"),
}


def audit_answers(pin: Pin, questions: Mapping[tuple[int, int], Question], pins: Any = None) -> dict[str, str]:
    """The generated answers of one of the audit's sets, by our question id. Each row's id
    `locomo_{conversation index}_qa{qa index}` must name a question of the pinned file with the
    same text, category and gold answer; anything else is a broken pin, said in one line."""
    path = pin_path(pin, pins)
    try:
        data = load_json(path.read_bytes())
        groups = data["detailed_results"]
        rows = [row for group in groups.values() for row in group]
    except (ValueError, KeyError, AttributeError, TypeError) as e:
        raise UserError(f"{path} is not the audit's answer file ({e}); delete it and run `memorybench fetch`") from None
    answers: dict[str, str] = {}
    for row in rows:
        qid = str(row.get("question_id", ""))
        try:
            conversation, index = qid.removeprefix("locomo_").split("_qa")
            question = questions[(int(conversation), int(index))]
        except (ValueError, KeyError):
            raise UserError(
                f"{path}: row {qid!r} names no question of locomo10.json; delete it and run `memorybench fetch`"
            ) from None
        if (
            row.get("question") != question.question
            or str(row.get("category")) != str(question.category)
            or row.get("golden_answer") != str(question.answer)
        ):
            raise UserError(
                f"{path}: row {qid} does not match {question.question_id} of locomo10.json "
                "(question, category or gold answer); delete it and run `memorybench fetch`"
            )
        if question.question_id in answers:
            raise UserError(f"{path}: {qid} appears twice; delete it and run `memorybench fetch`")
        answers[question.question_id] = str(row["generated_answer"])
    return answers


def _source(name: str) -> dict[str, Any]:
    if name == "gold":
        return {
            "made": "the gold answer of each question, judged against itself",
            "file": LOCOMO10.relpath,
            "sha256": LOCOMO10.sha256,
        }
    pin = WRONG_SETS[name]
    return {
        "file": pin.relpath,
        "sha256": pin.sha256,
        "repository": pin.repository,
        "commit": pin.commit,
        "source_path": pin.source_path,
        "licence": pin.licence,
    }


def calibration_sets(pins: Any = None, max_questions: int | None = None, dataset: str | None = None) -> CalibrationSets:
    """The three sets, in LoCoMo's file order: the questions of categories 1-4 among the first
    `max_questions` questions (all of them with None)."""
    conversations = LOCOMO.load(pin_path(LOCOMO10, pins))
    by_index = {(c, q.qa_index): q for c, conv in enumerate(conversations) for q in conv.questions}
    every = list(iter_questions(conversations))
    asked = [q for q in every[:max_questions] if q.category in CHECKED_CATEGORIES]
    answers = {name: audit_answers(pin, by_index, pins) for name, pin in WRONG_SETS.items()}
    checked = {q.question_id for q in every if q.category in CHECKED_CATEGORIES}
    for name, by_id in answers.items():
        if set(by_id) != checked:
            raise UserError(
                f"{pin_path(WRONG_SETS[name], pins)} covers {len(by_id)} questions, not the {len(checked)} of "
                "categories 1-4; delete it and run `memorybench fetch`"
            )
    sets = tuple(
        CheckSet(
            name,
            label,
            words,
            _source(name),
            tuple(
                CheckRow(
                    name,
                    q.question_id,
                    q.sample_id,
                    q.category,
                    q.question,
                    q.answer,
                    str(q.answer) if name == "gold" else answers[name][q.question_id],
                )
                for q in asked
            ),
        )
        for name, (label, words) in _NAMES.items()
    )
    return CalibrationSets(
        benchmark=LOCOMO.name,
        title=LOCOMO.title,
        dataset={"name": dataset or LOCOMO.datasets[0].name, "file": LOCOMO10.relpath, "sha256": LOCOMO10.sha256},
        kinds=CHECKED_CATEGORIES,
        kind_word="category",
        sets=sets,
        right="gold",
        summary_order=("vague_wrong", "specific_wrong", "gold"),
    )

"""Released rows onto the dataset's question ids: by conversation, question text, gold, order.

A file names its conversations its own way (mem0: an index, Zep: a user, LoCoMo: the
sample id), so each of its conversation keys is matched to the dataset conversation that
holds most of its questions' texts. Within it a row takes the first question of the same
text not taken yet; LoCoMo repeats 12 questions within a conversation, so several
candidates are narrowed by gold, then by category, then taken in order. A row that finds
no question (unmapped) or whose gold or category differs from the dataset's
(contradicting) is never dropped: every such row is counted in one error, with examples.

A file that names each row's question id (AMB's `conv-26_q3`: `ReleasedRow.question_id`) is
joined by it instead: the id must be one of the dataset's, taken once, and the row's question
text, gold and category must be that question's, each fault counted in the same one error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorybench.data import Conversation, Question
from memorybench.errors import UserError
from memorybench.benchmarks.locomo.importers.released import ReleasedRow

__all__ = ["Mapped", "map_rows", "same_gold"]

#: examples an error shows
EXAMPLES = 5


@dataclass(frozen=True)
class Mapped:
    #: the question id of each released row, in file order
    question_ids: list[str]
    #: the file's conversation keys -> the dataset's sample ids
    conversations: dict[str, str]
    #: rows whose text names several questions of its conversation
    tie_broken: int
    #: the dataset's questions no row maps to, in file order
    absent: list[Question]


def same_gold(gold: Any, question: Question) -> bool:
    """Whether a row's gold is the dataset's: `str(answer)` as mem0 writes it, ints as Zep
    keeps them, whitespace at the ends aside; a category 5 row may carry the adversarial
    answer (LoCoMo's task_eval sets `answer` to it) or no gold at all."""
    if question.category == 5 and (gold is None or gold == ""):
        return True
    if gold is None or isinstance(gold, bool):
        return False
    options = [str(question.answer)] if question.answer is not None else []
    if question.category == 5 and question.adversarial_answer is not None:
        options.append(question.adversarial_answer)
    text = str(gold)
    return any(text == o or text.strip() == o.strip() for o in options)


def _conversation_of(rows: Sequence[ReleasedRow], texts: dict[str, set[str]]) -> tuple[str | None, str]:
    """The sample id whose questions the rows ask most often, or (None, why not)."""
    asked = Counter(r.question for r in rows)
    hits = {sample: sum(n for q, n in asked.items() if q in own) for sample, own in texts.items()}
    best = max(hits.values(), default=0)
    if best == 0:
        return None, "no conversation of the dataset asks its questions"
    leaders = sorted(s for s, n in hits.items() if n == best)
    if len(leaders) > 1:
        return None, f"its questions match {' and '.join(leaders)} equally"
    return leaders[0], ""


def map_rows(rows: Sequence[ReleasedRow], conversations: Sequence[Conversation], path: Path) -> Mapped:
    """The question id of every row, or one UserError counting every row that has none or contradicts the dataset."""
    if rows and all(r.question_id is not None for r in rows):
        return _map_ids(rows, conversations, path)
    by_text: dict[str, dict[str, list[Question]]] = {}
    for conversation in conversations:
        own: dict[str, list[Question]] = {}
        for question in conversation.questions:
            own.setdefault(question.question, []).append(question)
        by_text[conversation.sample_id] = own
    texts = {sample: set(own) for sample, own in by_text.items()}

    groups: dict[str, list[ReleasedRow]] = {}
    for row in rows:
        groups.setdefault(row.key, []).append(row)
    samples: dict[str, str] = {}
    why_not: dict[str, str] = {}
    for key, members in groups.items():
        sample, reason = _conversation_of(members, texts)
        if sample is None:
            why_not[key] = reason
        else:
            samples[key] = sample

    taken: set[str] = set()
    ids: list[str] = []
    problems: list[tuple[str, str, ReleasedRow]] = []  # (kind, detail, row)
    tie_broken = 0
    for row in rows:
        sample = samples.get(row.key)
        if sample is None:
            problems.append(("unmapped", f"conversation {row.key!r}: {why_not[row.key]}", row))
            continue
        candidates = by_text[sample].get(row.question) or by_text[sample].get(row.question.strip()) or []
        free = [q for q in candidates if q.question_id not in taken]
        if not candidates:
            problems.append(("unmapped", f"the question is not one of {sample}'s", row))
            continue
        if not free:
            problems.append(("unmapped", f"more rows than {sample} has questions of this text", row))
            continue
        gold_matches = [q for q in free if same_gold(row.gold, q)]
        if not gold_matches:
            want = " or ".join(repr(q.answer if q.answer is not None else q.adversarial_answer) for q in free)
            problems.append(("contradicting", f"gold {row.gold!r}, {sample} has {want}", row))
            continue
        chosen = next((q for q in gold_matches if q.category == row.category), gold_matches[0])
        if chosen.category != row.category:
            problems.append(
                ("contradicting", f"category {row.category}, {chosen.question_id} is category {chosen.category}", row)
            )
            continue
        tie_broken += len(candidates) > 1
        taken.add(chosen.question_id)
        ids.append(chosen.question_id)
    _refuse(problems, rows, path)
    absent = [q for c in conversations for q in c.questions if q.question_id not in taken]
    return Mapped(question_ids=ids, conversations={k: samples[k] for k in groups}, tie_broken=tie_broken, absent=absent)


def _refuse(problems: Sequence[tuple[str, str, ReleasedRow]], rows: Sequence[ReleasedRow], path: Path) -> None:
    """One UserError counting every row that maps to no question or contradicts it, with examples."""
    if not problems:
        return
    kinds = Counter(kind for kind, _, _ in problems)
    examples = "; ".join(f"{r.key}[{r.index}] {r.question!r}: {detail}" for _, detail, r in problems[:EXAMPLES])
    raise UserError(
        f"{len(problems)} of {len(rows)} rows of {path.name} do not map onto the pinned LoCoMo questions "
        f"({kinds['unmapped']} unmapped, {kinds['contradicting']} contradicting its gold or category): {examples}; "
        "import the file as released, against the dataset it was run on"
    )


def _map_ids(rows: Sequence[ReleasedRow], conversations: Sequence[Conversation], path: Path) -> Mapped:
    """Rows joined by the question id they name; their text (whitespace at the ends aside), gold
    and category checked against that question's, each fault counted as `map_rows` counts it."""
    by_id = {q.question_id: q for c in conversations for q in c.questions}
    taken: set[str] = set()
    problems: list[tuple[str, str, ReleasedRow]] = []
    samples: dict[str, str] = {}
    for row in rows:
        q = by_id.get(str(row.question_id))
        if q is None:
            problems.append(("unmapped", f"question id {row.question_id} is none of the dataset's", row))
        elif q.question_id in taken:
            problems.append(("unmapped", f"question id {q.question_id} is named by an earlier row too", row))
        elif row.question != q.question and row.question.strip() != q.question.strip():
            problems.append(("unmapped", f"the question is not {q.question_id}'s, which asks {q.question!r}", row))
        elif not same_gold(row.gold, q):
            want = q.answer if q.answer is not None else q.adversarial_answer
            problems.append(("contradicting", f"gold {row.gold!r}, {q.question_id} has {want!r}", row))
        elif row.category != q.category:
            problems.append(("contradicting", f"category {row.category}, {q.question_id} is category {q.category}", row))
        else:
            taken.add(q.question_id)
            samples.setdefault(row.key, q.sample_id)  # the reader keys a row by the conversation its id names
    _refuse(problems, rows, path)
    absent = [q for c in conversations for q in c.questions if q.question_id not in taken]
    return Mapped(question_ids=[str(r.question_id) for r in rows], conversations=samples, tie_broken=0, absent=absent)

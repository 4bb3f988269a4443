"""Which of a dataset's questions a run asks: all, a file-order prefix, a list of ids, or a
seeded sample of each kind.

Three top-level config keys choose them (`memorybench.config.Config`); at most one is set:

- `max_questions: N`: the first N questions in file order (a smoke test).
- `question_ids: [ID, ...]`: exactly these questions, by the ids `plan --questions` and
  predictions.jsonl name them (LoCoMo's `conv-26-q-0`, LongMemEval's `question_id`), asked
  in file order whatever the order of the list. An id listed twice, or one the dataset
  does not have, is one line before any call.
- `question_sample: {per_kind: N, seed: S}`: a stratified sample: for each kind of
  question (`Question.category`: LoCoMo's category, LongMemEval's type, LoCoMo-Plus's
  relation, BEAM's ability) the N questions that rank first by sha256 of
  `"<seed>:<question_id>"` (every question of a kind with N or fewer), asked in file order.
  The rank is a seeded draw that depends on nothing but the seed and the ids: the same
  questions on any machine, Python or numpy version, and a question keeps its rank when the
  file gains others. Another seed is another draw.

A run of a selection is labelled as a prefix is (`run_meta.is_prefix`: its questions are
not the whole set, so it is no benchmark result), and `run_meta.selection` says which
questions it asked and how they were chosen (`selection_record`).

An unset key is left out of `config.resolved.yaml` and of the run's identity
(`without_unset`), so a config written before these keys existed keeps its run id byte for
byte; a set one enters it (`question_ids` as a sorted list: the order of the list does not
change what is asked).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorybench.errors import UserError

__all__ = [
    "SELECTION_KEYS",
    "Selection",
    "check_selection",
    "for_identity",
    "sample_per_kind",
    "select_questions",
    "selection_of",
    "selection_record",
    "without_unset",
]

#: the top-level keys that choose questions besides `max_questions`
SELECTION_KEYS = ("question_ids", "question_sample")


@dataclass(frozen=True)
class Selection:
    """A run's choice of questions other than a prefix (`selection_of`)."""

    #: the config key that chose them: "question_ids" or "question_sample"
    by: str
    #: question_ids: the ids as listed
    question_ids: tuple[str, ...] = ()
    #: question_sample: questions per kind and the seed of the draw
    per_kind: int | None = None
    seed: int | None = None

    def describe(self) -> str:
        """The selection as the override that makes it, e.g. `question_sample.per_kind=2 question_sample.seed=0`."""
        if self.by == "question_ids":
            return f"question_ids ({len(self.question_ids)} listed)"
        return f"question_sample.per_kind={self.per_kind} question_sample.seed={self.seed}"


def _get(cfg: Any, key: str) -> Any:
    return cfg.get(key) if hasattr(cfg, "get") else None


def _sample_node(cfg: Any) -> Mapping[str, Any]:
    node = _get(cfg, "question_sample")
    return node if hasattr(node, "get") else {}


def selection_of(cfg: Any) -> Selection | None:
    """The selection a resolved config (a DictConfig or plain data, a pack's config.resolved.yaml
    included) makes, or None: every question, or a `max_questions` prefix."""
    ids = _get(cfg, "question_ids")
    if ids is not None:
        return Selection("question_ids", question_ids=tuple(str(i) for i in ids))
    node = _sample_node(cfg)
    if node.get("per_kind") is not None:
        return Selection("question_sample", per_kind=int(node["per_kind"]), seed=int(node.get("seed") or 0))
    return None


def check_selection(cfg: Any) -> None:
    """The selection keys make sense together, before the dataset is read; else one line naming
    the value and the fix."""
    ids = _get(cfg, "question_ids")
    node = _sample_node(cfg)
    per_kind, seed = node.get("per_kind"), node.get("seed")
    limit = _get(cfg, "max_questions")
    if ids is not None:
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise UserError(
                f"question_ids={ids!r} is not a list; write question_ids=[ID,ID,...] "
                "(the ids `memorybench plan --questions` lists)"
            )
        listed = [str(i) for i in ids]
        if not listed:
            raise UserError(
                "question_ids=[] names no question; list at least one id, or leave question_ids out for every question"
            )
        seen: set[str] = set()
        for qid in listed:
            if qid in seen:
                raise UserError(f"question_ids lists {qid!r} twice; list each question once")
            seen.add(qid)
    if per_kind is not None and int(per_kind) < 1:
        raise UserError(f"question_sample.per_kind={per_kind} must be at least 1 (or null for no sample)")
    if per_kind is None and seed not in (None, 0):
        raise UserError(
            f"question_sample.seed={seed} draws nothing without question_sample.per_kind; "
            "add question_sample.per_kind=N (questions of each kind)"
        )
    chosen = [
        k
        for k, on in (
            ("max_questions", limit is not None),
            ("question_ids", ids is not None),
            ("question_sample.per_kind", per_kind is not None),
        )
        if on
    ]
    if len(chosen) > 1:
        named = f"{', '.join(chosen[:-1])} and {chosen[-1]}"
        raise UserError(
            f"{named} are set together, and each chooses the run's questions; keep one and set "
            f"{'the other' if len(chosen) == 2 else 'the others'} to null (e.g. {chosen[0]}=null)"
        )


def sample_per_kind(questions: Sequence[Any], per_kind: int, seed: int) -> list[Any]:
    """A seeded stratified sample: of each kind (`category`), the `per_kind` questions first
    by sha256 of `"<seed>:<question_id>"`; the result in the order of `questions`."""
    by_kind: dict[Any, list[Any]] = {}
    for q in questions:
        by_kind.setdefault(q.category, []).append(q)
    chosen: set[str] = set()
    for members in by_kind.values():
        ranked = sorted(members, key=lambda q: (_rank(seed, q.question_id), q.question_id))
        chosen.update(q.question_id for q in ranked[:per_kind])
    return [q for q in questions if q.question_id in chosen]


def _rank(seed: int, question_id: str) -> str:
    return hashlib.sha256(f"{seed}:{question_id}".encode()).hexdigest()


def select_questions(questions: Sequence[Any], cfg: Any) -> list[Any]:
    """The run's questions from every question of the dataset in file order (`iter_questions`):
    all of them, the first `max_questions`, the listed `question_ids`, or a `question_sample`;
    always in file order. An id the dataset does not have is one line naming it and the fix."""
    check_selection(cfg)
    selection = selection_of(cfg)
    if selection is None:
        limit = _get(cfg, "max_questions")
        return list(questions[: int(limit)]) if limit else list(questions)
    if selection.by == "question_ids":
        known = {q.question_id for q in questions}
        for qid in selection.question_ids:
            if qid not in known:
                raise UserError(_unknown_id(qid, [q.question_id for q in questions], cfg))
        wanted = set(selection.question_ids)
        return [q for q in questions if q.question_id in wanted]
    assert selection.per_kind is not None and selection.seed is not None
    return sample_per_kind(questions, selection.per_kind, selection.seed)


def _unknown_id(qid: str, ids: list[str], cfg: Any) -> str:
    dataset = _get(_get(cfg, "dataset") or {}, "name")
    of = f"dataset {dataset}" if dataset else "the dataset"
    close = difflib.get_close_matches(qid, ids, n=1)
    hint = f"Did you mean {close[0]!r}? " if close else ""
    return (
        f"question_ids: {qid!r} is not a question id of {of} ({len(ids)} questions, the first {ids[0]}). {hint}"
        "Take the ids from `memorybench plan --questions` (quote an id that Hydra would read as a number: "
        "question_ids='[\"1e5\"]')"
    )


def selection_record(cfg: Any, every: Sequence[Any], chosen: Sequence[Any]) -> dict[str, Any] | None:
    """What run_meta.json records of a selection (`pack.schemas.QuestionSelection`): the key
    that chose, its values, the ids asked in file order, and per kind [asked, of the kind's
    questions in the dataset]; None without a selection (a prefix is `max_questions`)."""
    selection = selection_of(cfg)
    if selection is None:
        return None
    held: dict[str, list[int]] = {}
    for q in every:
        held.setdefault(str(q.category), [0, 0])[1] += 1
    for q in chosen:
        held[str(q.category)][0] += 1
    kinds = dict(sorted(held.items(), key=lambda kv: (len(kv[0]), kv[0])))  # "1" < "2" < "10"
    return {
        "by": selection.by,
        "per_kind": selection.per_kind,
        "seed": selection.seed,
        "question_ids": [q.question_id for q in chosen],
        "by_kind": kinds,
    }


def without_unset(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` (a resolved config as plain data) less the selection keys left unset: no
    `question_ids: null`, no `question_sample` without `per_kind`; a config from before these
    keys existed is unchanged. A `question_sample` whose `per_kind` is set stays whole."""
    out = dict(data)
    if out.get("question_ids", 0) is None:
        del out["question_ids"]
    sample = out.get("question_sample", 0)
    if sample is None or (isinstance(sample, Mapping) and sample.get("per_kind") is None):
        del out["question_sample"]
    return out


def for_identity(data: Mapping[str, Any]) -> dict[str, Any]:
    """`without_unset`, and `question_ids` sorted: listing the same questions in another order
    asks the same questions (in file order), so it is the same run."""
    out = without_unset(data)
    ids = out.get("question_ids")
    if isinstance(ids, (list, tuple)):
        out["question_ids"] = sorted(str(i) for i in ids)
    return out

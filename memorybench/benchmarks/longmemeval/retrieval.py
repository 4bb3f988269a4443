"""LongMemEval's retrieval metrics, as the authors compute, name and average them.

A port of the pinned src/retrieval/eval_utils.py (`dcg`, `ndcg`, `evaluate_retrieval`,
`evaluate_retrieval_turn2session`) and of what src/retrieval/run_retrieval.py does around
them (xiaowu0162/LongMemEval @ 9e0b455; tests compare each with the pinned functions):

- The corpus (`process_item_flat_index`): at session level one item per session, its id the
  session id; at turn level one item per *user* turn (assistant turns are not indexed), its
  id `<session id>_<turn number>`, the number 1-based over all of the session's turns. An id
  holds `answer` only for evidence: a session id containing `answer` whose user turns carry
  no `has_answer: true`, and every turn of such a session that is not flagged, get
  `answer` replaced by `noans`. The correct documents are the ids that still hold `answer`.
- A ranking is a list of corpus positions, best first. `question_metrics` gives, for k in
  1, 3, 5, 10, 30, 50, `recall_any@k` (any correct id in the top k), `recall_all@k` (all of
  them) and `ndcg_any@k` (binary relevance; the ideal ranking puts every correct item
  first) under `session` or `turn`; a turn ranking also gets `session` metrics by
  `evaluate_retrieval_turn2session`: ids cut to their session (the last `_` part dropped)
  and k widened until the top k turns cover k distinct sessions (or the corpus ends).
- The average over questions (`average_metrics`) skips abstention questions (`_abs` in the
  id: they have no evidence), as both scripts do; run_retrieval.py also skips questions
  whose user turns carry no `has_answer` flag ("no target turns from the user side": the
  evidence of a single-session-assistant question is the assistant's turn, which the
  corpus does not index), print_retrieval_metrics.py does not. Both are given (`script`);
  `PRINTED` names the cut print_retrieval_metrics.py prints.

A ranking from our retrievers (`ranking_from_keys`) names items by key: a session id, or
(session id, 0-based turn index). Keys the authors' corpus lacks (an assistant turn) are
passed over, and a key ranked twice counts at its best rank, so that a retriever of chunks
ranks sessions. A ranking shorter than the corpus is scored as given: the metrics at k
beyond its length count only what it ranked (`ranked` says how many).

numpy is imported when a metric is computed (the authors' arithmetic, summation included).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memorybench.errors import UserError

__all__ = [
    "KS",
    "LEVELS",
    "PRINTED",
    "Corpus",
    "QuestionRetrieval",
    "RetrievalAverage",
    "authors_retrieval_report",
    "average_metrics",
    "build_corpus",
    "dcg",
    "evaluate_retrieval",
    "evaluate_retrieval_turn2session",
    "metric_names",
    "ndcg",
    "question_metrics",
    "ranking_from_keys",
]

#: run_retrieval.py: `for k in [1, 3, 5, 10, 30, 50]`
KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
LEVELS: tuple[str, ...] = ("session", "turn")
#: what print_retrieval_metrics.py prints, per level
PRINTED: dict[str, tuple[str, ...]] = {
    "session": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"),
    "turn": ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10", "recall_all@50", "ndcg_any@50"),
}
Granularity = Literal["session", "turn"]
Key = Any  # a session id (str) or (session id, 0-based turn index)


def metric_names(ks: Sequence[int] = KS) -> list[str]:
    """`recall_any@k`, `recall_all@k`, `ndcg_any@k` for each k, in run_retrieval.py's order."""
    return [f"{name}@{k}" for k in ks for name in ("recall_any", "recall_all", "ndcg_any")]


# -- eval_utils.py ------------------------------------------------------------------------------


def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted cumulative gain at k (eval_utils.dcg)."""
    import numpy as np

    rel = np.asarray(relevances, dtype=np.float64)[:k]  # np.asfarray, gone from numpy 2
    if rel.size:
        return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))
    return 0.0


def ndcg(rankings: Sequence[int], correct_docs: Iterable[str], corpus_ids: Sequence[str], k: int = 10) -> float:
    """Normalized DCG at k (eval_utils.ndcg)."""
    correct = set(correct_docs)
    relevances = [1 if doc_id in correct else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_dcg = dcg(sorted(relevances, reverse=True), k)
    actual_dcg = dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.0
    return actual_dcg / ideal_dcg


def evaluate_retrieval(
    rankings: Sequence[int], correct_docs: Sequence[str], corpus_ids: Sequence[str], k: int = 10
) -> tuple[float, float, float]:
    """(recall_any, recall_all, ndcg_any) at k (eval_utils.evaluate_retrieval). No correct
    document: recall_any 0, recall_all 1 (all of none), ndcg 0."""
    recalled = {corpus_ids[idx] for idx in rankings[:k]}
    recall_any = float(any(doc in recalled for doc in correct_docs))
    recall_all = float(all(doc in recalled for doc in correct_docs))
    return recall_any, recall_all, ndcg(rankings, correct_docs, corpus_ids, k)


def _strip_turn_id(doc_id: str) -> str:
    return "_".join(doc_id.split("_")[:-1])


def evaluate_retrieval_turn2session(
    rankings: Sequence[int], correct_docs: Sequence[str], corpus_ids: Sequence[str], k: int = 10
) -> tuple[float, float, float]:
    """A turn ranking scored at session level (eval_utils.evaluate_retrieval_turn2session)."""
    correct = list({_strip_turn_id(x) for x in correct_docs})
    sessions = [_strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique = {sessions[idx] for idx in rankings[:effective_k]}
    while effective_k <= len(sessions) and len(unique) < k:
        effective_k += 1
        unique = {sessions[idx] for idx in rankings[:effective_k]}
    return evaluate_retrieval(rankings, correct, sessions, k=effective_k)


# -- run_retrieval.py: the corpus, one question's metrics ---------------------------------------


@dataclass(frozen=True)
class Corpus:
    """One question's retrieval corpus, as process_item_flat_index builds it."""

    granularity: Granularity
    #: the authors' corpus ids, in corpus order (haystack order; user turns only at turn level)
    ids: tuple[str, ...]
    #: our key of each item: the session id, or (session id, 0-based turn index)
    keys: tuple[Key, ...]

    @property
    def correct_docs(self) -> list[str]:
        """run_retrieval.py: `list(set([doc_id for doc_id in corpus_ids if "answer" in doc_id]))`
        (sorted here: no metric depends on the order)."""
        return sorted({doc_id for doc_id in self.ids if "answer" in doc_id})


def _has_answer(turn: Mapping[str, Any]) -> bool:
    return bool(turn.get("has_answer"))


def build_corpus(session_ids: Sequence[str], sessions: Sequence[Sequence[Mapping[str, Any]]], granularity: Granularity) -> Corpus:
    """The corpus of one haystack: `sessions` are lists of turns with `role` and, where the file
    has it, `has_answer` (gold: scorer-side only). A turn without the flag is not evidence (the
    authors' code requires the flag on every user turn of an `answer` session; the released
    files have it)."""
    if granularity not in LEVELS:
        raise UserError(f"retrieval granularity {granularity!r} is not one of {', '.join(LEVELS)}")
    if len(session_ids) != len(sessions):
        raise UserError(f"{len(session_ids)} session ids for {len(sessions)} sessions; pass one id per session")
    ids: list[str] = []
    keys: list[Key] = []
    for sid, turns in zip(session_ids, sessions):
        user = [t for t in turns if t["role"] == "user"]
        if granularity == "session":
            noans = "answer" in sid and all(not _has_answer(t) for t in user)
            ids.append(sid.replace("answer", "noans") if noans else sid)
            keys.append(sid)
            continue
        for i_turn, turn in enumerate(turns):
            if turn["role"] != "user":
                continue
            turn_id = f"{sid}_{i_turn + 1}"
            ids.append(turn_id if "answer" not in sid or _has_answer(turn) else turn_id.replace("answer", "noans"))
            keys.append((sid, i_turn))
    return Corpus(granularity=granularity, ids=tuple(ids), keys=tuple(keys))


def ranking_from_keys(corpus: Corpus, ranked: Iterable[Key]) -> list[int]:
    """Corpus positions of `ranked` (our retriever's keys, best first): keys outside the corpus
    (assistant turns) passed over, a repeated key kept at its first rank."""
    where = {key: i for i, key in enumerate(corpus.keys)}
    out: list[int] = []
    seen: set[int] = set()
    for key in ranked:
        key = tuple(key) if isinstance(key, list) else key
        i = where.get(key)
        if i is not None and i not in seen:
            seen.add(i)
            out.append(i)
    return out


def question_metrics(corpus: Corpus, ranking: Sequence[int], ks: Sequence[int] = KS) -> dict[str, dict[str, float]]:
    """run_retrieval.py's `retrieval_results.metrics` of one question: `{"session": {...}, "turn": {...}}`
    (a session ranking leaves `turn` empty, as the script does)."""
    if len(set(ranking)) != len(ranking) or any(not 0 <= i < len(corpus.ids) for i in ranking):
        raise UserError(
            f"a ranking must name distinct corpus positions 0..{len(corpus.ids) - 1}; build it with ranking_from_keys"
        )
    correct = corpus.correct_docs
    metrics: dict[str, dict[str, float]] = {"session": {}, "turn": {}}
    for k in ks:
        recall_any, recall_all, ndcg_any = evaluate_retrieval(ranking, correct, corpus.ids, k=k)
        metrics[corpus.granularity].update(
            {f"recall_any@{k}": recall_any, f"recall_all@{k}": recall_all, f"ndcg_any@{k}": ndcg_any}
        )
        if corpus.granularity == "turn":
            recall_any, recall_all, ndcg_any = evaluate_retrieval_turn2session(ranking, correct, corpus.ids, k=k)
            metrics["session"].update({f"recall_any@{k}": recall_any, f"recall_all@{k}": recall_all, f"ndcg_any@{k}": ndcg_any})
    return metrics


# -- the averages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionRetrieval:
    """One question's metrics and what decides whether the authors average it."""

    question_id: str
    metrics: Mapping[str, Mapping[str, float]]
    #: whether any user turn of its haystack has `has_answer: true` (run_retrieval.py's test)
    has_user_target: bool
    #: how many corpus items the ranking named, and the corpus size
    ranked: int = 0
    corpus_size: int = 0


@dataclass(frozen=True)
class RetrievalAverage:
    """The mean of each metric over the questions a script averages."""

    #: "run_retrieval.py" or "print_retrieval_metrics.py"
    script: str
    #: level -> metric name -> mean (the names of the first averaged question, as run_retrieval.py)
    metrics: dict[str, dict[str, float]]
    n: int
    skipped_abstention: tuple[str, ...] = field(default=())
    skipped_no_target: tuple[str, ...] = field(default=())

    def printed(self) -> dict[str, dict[str, float]]:
        """The cut print_retrieval_metrics.py prints (levels and names it has)."""
        return {
            level: {name: self.metrics[level][name] for name in names if name in self.metrics.get(level, {})}
            for level, names in PRINTED.items()
            if self.metrics.get(level)
        }


SCRIPTS = ("run_retrieval.py", "print_retrieval_metrics.py")


def average_metrics(rows: Sequence[QuestionRetrieval], script: str = "run_retrieval.py") -> RetrievalAverage:
    """The average the named script reports: abstention questions skipped by both, questions
    without a user-side target also by run_retrieval.py."""
    if script not in SCRIPTS:
        raise UserError(f"retrieval averages follow {' or '.join(SCRIPTS)}, not {script!r}")
    import numpy as np

    abstention = tuple(r.question_id for r in rows if "_abs" in r.question_id)
    kept = [r for r in rows if "_abs" not in r.question_id]
    no_target: tuple[str, ...] = ()
    if script == "run_retrieval.py":
        no_target = tuple(r.question_id for r in kept if not r.has_user_target)
        kept = [r for r in kept if r.has_user_target]
    averaged: dict[str, dict[str, float]] = {level: {} for level in LEVELS}
    if kept:
        for level in LEVELS:
            for name in kept[0].metrics.get(level, {}):
                values = [r.metrics[level][name] for r in kept if name in r.metrics.get(level, {})]
                if len(values) == len(kept):
                    averaged[level][name] = float(np.mean(values))
    return RetrievalAverage(
        script=script, metrics=averaged, n=len(kept), skipped_abstention=abstention, skipped_no_target=no_target
    )


def authors_retrieval_report(average: RetrievalAverage) -> str:
    """The text print_retrieval_metrics.py prints for the questions `average` holds (it must be
    that script's average): per level, its printed names `name = round(mean, 4)` (numpy's round),
    joined by `, ` and each led by a tab; a level whose metrics the log lacks prints nothing
    after its heading, as the script's `except: pass`."""
    if average.script != "print_retrieval_metrics.py":
        raise UserError(
            "authors_retrieval_report prints print_retrieval_metrics.py's average; "
            "pass average_metrics(rows, script='print_retrieval_metrics.py')"
        )
    import numpy as np

    lines = []
    for level, heading in (("session", "Session-level metrics:"), ("turn", "Turn-level metrics:")):
        lines.append(heading)
        values = average.metrics.get(level, {})
        if average.n == 0:  # np.mean([]) is nan, printed as such
            values = {name: float("nan") for name in PRINTED[level]}
        if all(name in values for name in PRINTED[level]):
            lines.append(", ".join("\t{} = {}".format(name, round(np.float64(values[name]), 4)) for name in PRINTED[level]))
    return "\n".join(lines) + "\n"

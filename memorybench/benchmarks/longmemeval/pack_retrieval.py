"""LongMemEval's retrieval metrics of a pack: what its memory method retrieved, scored as the authors score it.

A retrieving method (rag, raw_chunks, the mem0 clones, ...) records, per question, the items
it handed the reader, best first (`memory/<method>/retrievals.jsonl`: `hits`), and each
item's source turns (`memory/lineage.jsonl`: `SESSION_ID:N` on LongMemEval). A question's
ranking is those turns in hit order (an item's turns in their own order, a turn ranked twice
kept at its first rank), read at turn level against the authors' corpus of user turns
(`memorybench.benchmarks.longmemeval.retrieval.build_corpus`): turn metrics, and session metrics
by the authors' turn-to-session conversion. The correct documents come from the dataset's
`has_answer` turns (scorer-side: joined here, after answering). The averages are the two
scripts' (`average_metrics`): abstention questions skipped, and, for run_retrieval.py, the
questions with no user-side target.

A method that hands the reader one text for every question (full_context, summaries)
retrieves nothing: `pack_retrieval` says so (None).
"""

from __future__ import annotations

import os
from typing import Any

from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.reader import PackReader


def _turn_key(dia_id: str) -> tuple[str, int] | None:
    session, _, n = str(dia_id).rpartition(":")
    return (session, int(n)) if session and n.isdigit() else None


def pack_retrieval(pack_root: str | os.PathLike[str], script: str = "print_retrieval_metrics.py") -> Any:
    """The authors' retrieval averages over a LongMemEval pack's retrievals (a
    `RetrievalAverage`), or None when the pack's method retrieves nothing per question."""
    from memorybench.benchmark import LONGMEMEVAL, benchmark_of_pack
    from memorybench.pack.walk import dataset_of
    from memorybench.benchmarks.longmemeval.retrieval import (
        QuestionRetrieval,
        average_metrics,
        build_corpus,
        question_metrics,
        ranking_from_keys,
    )

    pack = PackReader.open(pack_root)
    meta = pack.json_object(layout.RUN_META)
    if benchmark_of_pack(meta) is not LONGMEMEVAL:
        raise UserError(f"{pack_root} is not a LongMemEval pack; LongMemEval's retrieval metrics need one")
    method = str((meta.get("choices") or {}).get("memory") or "")
    relpath = f"memory/{method}/retrievals.jsonl"
    if not method or not pack.exists(relpath):
        return None
    haystacks, _, note = dataset_of(meta.get("data") or {})
    if haystacks is None:
        raise UserError(f"{pack_root}: {note}")
    sources: dict[tuple[str, str], list[str]] = {}
    for row in pack.rows(layout.LINEAGE):
        sources[(str(row["sample_id"]), str(row["item_id"]))] = [str(s) for s in row.get("sources") or ()]
    rows = []
    for hit_row in pack.rows(relpath):
        qid, sample = str(hit_row["question_id"]), str(hit_row["sample_id"])
        haystack = haystacks.get(sample)
        if haystack is None:
            continue
        (question,) = haystack.questions
        evidence = set(question.evidence)
        session_ids = [s.session_id or f"session_{s.index}" for s in haystack.sessions]
        turns = [[{"role": t.speaker, "has_answer": t.dia_id in evidence} for t in s.turns] for s in haystack.sessions]
        corpus = build_corpus(session_ids, turns, "turn")
        keys = [
            key
            for hit in hit_row.get("hits") or ()
            for d in sources.get((sample, str(hit["item_id"])), ())
            if (key := _turn_key(d)) is not None
        ]
        ranking = ranking_from_keys(corpus, keys)
        user_target = any(t["has_answer"] for session in turns for t in session if t["role"] == "user")
        rows.append(QuestionRetrieval(qid, question_metrics(corpus, ranking), user_target, len(ranking), len(corpus.ids)))
    return average_metrics(rows, script=script)


def retrieval_table(frame: Any, boot: Any = None) -> Any:
    """The report's `retrieval` table: per condition of LongMemEval packs whose method
    retrieves, the mean of each pack's print_retrieval_metrics.py averages (its printed
    cut: recall_all and ndcg_any at 5 and 10, session and turn level) and how many questions
    they average; LoCoMo packs and methods that retrieve nothing are left out."""
    import pandas as pd

    from memorybench.benchmark import LONGMEMEVAL, benchmark_of

    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        datasets = set(rows["dataset"].dropna()) if "dataset" in rows else set()
        if not datasets or any(benchmark_of(str(d)) is not LONGMEMEVAL for d in datasets):  # its authors' metrics
            continue
        found = [a for a in (pack_retrieval(p) for p in rows["pack"].unique()) if a is not None]
        if not found:
            continue
        row: dict[str, Any] = {
            "condition": condition,
            "runs": len(found),
            "questions": found[0].n,
            "skipped_abstention": len(found[0].skipped_abstention),
        }
        for level in ("session", "turn"):
            for name in ("recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10"):
                values = [a.metrics[level][name] for a in found if name in a.metrics.get(level, {})]
                row[f"{level}_{name}"] = sum(values) / len(values) if values else None
        out.append(row)
    return pd.DataFrame(out)

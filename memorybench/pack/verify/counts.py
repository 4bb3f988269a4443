"""Counts and order: the pack's rows are exactly the run's questions of the dataset, in file order.

The run's questions are the first `max_questions` of the dataset in file order (of its
`categories` only, when run_meta names some: an import of a file without category 5), or
those a selection chose (`question_ids`, `question_sample`: drawn again here from
config.resolved.yaml and the dataset, and run_meta's `selection` checked against the draw),
in file order; a part of the dataset's questions is labelled `is_prefix` either way. run_meta
and metrics.json count them, predictions and traces hold one row each (no duplicate, no
gap, `index` = position), and memory has one manifest row per conversation of the run,
with as many lineage rows as its items. Every other journal holds each of its keys once
(`check_journal_keys`): lineage by item, the agent's rows, each judge's verdicts and
traces by (question, pass); two writers at once are the one way to get a key twice.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.journal_keys import JOURNAL_KEYS, JUDGE_JOURNAL_KEYS, repeated_rows
from memorybench.pack.verify.context import NOT_RECORDS, Context
from memorybench.pack.verify.findings import Findings
from memorybench.records import jsonl_lines, load_json

__all__ = ["check_counts", "check_journal_keys"]

#: journals whose repeats `_check_sequence` / `_check_memory_rows` report, with their order,
#: when the dataset is there to check them against
_IN_SEQUENCE = frozenset({layout.PREDICTIONS, layout.READER_TRACES, layout.MEMORY_MANIFEST})


def check_counts(ctx: Context, out: Findings) -> None:
    """run_meta's counts, then every row against the run's questions (into `ctx.questions`);
    and no journal with a key twice."""
    check_journal_keys(ctx, out)
    ctx.questions = _counts(ctx, out)
    ctx.question_text = {q.question_id: q.question for q in ctx.questions or ()}


def _counts(ctx: Context, out: Findings) -> list[Any] | None:
    if ctx.conversations is None or ctx.meta is None:
        return None
    from memorybench.data import iter_questions

    meta = ctx.meta
    every = list(iter_questions(ctx.conversations))
    total = len(every)
    categories = meta.get("categories")
    # a run that answered some categories only (RunMeta.categories): its questions are theirs
    selected = [q for q in every if q.category in categories] if categories else every
    partial = meta.get("partial")
    if partial:  # a partial import (RunMeta.partial): the questions its file holds, not a prefix
        absent = set(partial.get("absent_question_ids") or ())
        selected = [q for q in selected if q.question_id not in absent]
    max_q = meta["max_questions"]
    chosen = _selected(ctx, out, selected)
    expected = chosen if chosen is not None else selected[:max_q] if max_q else selected
    n = len(expected)
    if meta["questions_total"] != total:
        out.add("count", layout.RUN_META, f"questions_total={meta['questions_total']}, the dataset has {total}")
    of = f"the {len(selected)} questions of categories {categories}" if categories else f"the dataset's {total} questions"
    if partial:
        of = f"the {len(selected)} questions its partial file holds"
    how = _how(ctx) if chosen is not None else f"max_questions={max_q}"
    if meta["question_count"] != n:
        out.add("count", layout.RUN_META, f"question_count={meta['question_count']}, but {how} over {of} gives {n}")
    # a selection of fewer questions than the dataset's is labelled as a prefix is: a part, not the benchmark
    prefix = n < len(selected)
    if meta["is_prefix"] != prefix:
        what = "a part (is_prefix)" if chosen is not None else "a prefix"
        out.add("count", layout.RUN_META, f"is_prefix={meta['is_prefix']} but {n} of {of} is {'' if prefix else 'not '}{what}")
    if ctx.metrics_doc is not None:
        if ctx.metrics_doc.get("questions") != n or ctx.metrics_doc.get("is_prefix") != prefix:
            out.add(
                "count",
                "metrics.json",
                f"questions={ctx.metrics_doc.get('questions')}, is_prefix={ctx.metrics_doc.get('is_prefix')};"
                f" the run has {n} of {of}",
            )

    ids = [q.question_id for q in expected]
    run_questions = f"chosen by {how}, in file order" if chosen is not None else f"the first {len(ids)} in file order"
    _check_sequence(ctx, out, "predictions.jsonl", ids, check_index=True, run_questions=run_questions)
    by_id = {q.question_id: q for q in expected}
    for line, row in ctx.rows["predictions.jsonl"]:
        q = by_id.get(row["question_id"])
        if q is None:
            continue
        for field, want in (
            ("sample_id", q.sample_id),
            ("category", q.category),
            ("question", q.question),
            ("gold", q.answer),
            ("adversarial_answer", q.adversarial_answer),
        ):
            got = row.get(field)
            if got != want or type(got) is not type(want):
                out.grouped(
                    "row.mismatch",
                    "predictions.jsonl",
                    line,
                    f"{field} of {q.question_id} is {got!r}, the dataset row has {want!r}",
                    field,
                )
    if (ctx.root / "reader/traces.jsonl").is_file():
        _check_sequence(ctx, out, "reader/traces.jsonl", ids, check_index=False, run_questions=run_questions)
    _check_memory_rows(ctx, out, [q.sample_id for q in expected])
    return expected


def check_journal_keys(ctx: Context, out: Findings) -> None:
    """No journal holds a key twice (`JOURNAL_KEYS`; per judge folder `JUDGE_JOURNAL_KEYS`):
    the memory lineage by item, the agent's rows, each judge's verdicts and traces by
    (question, pass). Predictions, reader traces and the memory manifest are checked with
    their order against the dataset (`_check_sequence`, `_check_memory_rows`), or here when
    the dataset is not available."""
    with_dataset = ctx.conversations is not None and ctx.meta is not None
    journals = [(rel, fields) for rel, fields in JOURNAL_KEYS.items() if not (with_dataset and rel in _IN_SEQUENCE)]
    for rel in sorted(ctx.rel.values()):
        name = posixpath.basename(rel)
        if (
            rel.startswith(layout.AUTORATER + "/")
            and not rel.startswith(NOT_RECORDS)
            and name in JUDGE_JOURNAL_KEYS
            and rel.count("/") in (1, 2)
        ):  # autorater/<file> (the flat layout) or autorater/<judge id>/<file>
            journals.append((rel, JUDGE_JOURNAL_KEYS[name]))
    for relpath, fields in journals:
        if relpath in ctx.rows:
            rows: list[tuple[int, Any]] = ctx.rows[relpath]
        elif (ctx.root / relpath).is_file():
            rows = _decoded(ctx.root / relpath)
        else:
            continue
        for repeat in repeated_rows(rows, fields):
            out.grouped("duplicate.row", relpath, repeat.line, repeat.describe(), "dup")


def _decoded(path: Path) -> list[tuple[int, Any]]:
    """(line, row) of each line that is JSON; the others are the json check's findings."""
    rows = []
    for number, line in jsonl_lines(path.read_bytes()):
        try:
            rows.append((number, load_json(line)))
        except ValueError:
            continue
    return rows


def _selected(ctx: Context, out: Findings, questions: list[Any]) -> list[Any] | None:
    """The questions a selection chose (`question_ids` or `question_sample`, memorybench.data.selection),
    drawn again from the dataset by config.resolved.yaml, and run_meta's `selection` checked
    against that draw; None for a run without a selection (every question, or a prefix)."""
    from memorybench.data.selection import selection_of, selection_record, select_questions

    meta = ctx.meta or {}
    recorded = meta.get("selection")
    cfg = ctx.cfg if hasattr(ctx.cfg, "get") else None
    if cfg is None:  # no config to draw from (its own finding): run_meta's list, checked against the dataset
        if not recorded:
            return None
        known = {q.question_id: q for q in questions}
        return [known[qid] for qid in dict.fromkeys(recorded.get("question_ids") or ()) if qid in known] or None
    if selection_of(cfg) is None:
        if recorded:
            out.add(
                "count",
                layout.RUN_META,
                f"selection by {recorded.get('by')} but config.resolved.yaml sets neither "
                "question_ids nor question_sample.per_kind",
            )
        return None
    try:
        chosen = select_questions(questions, cfg)
    except UserError as e:
        out.add("count", "config.resolved.yaml", f"its question selection cannot be drawn from the dataset: {e}")
        return None
    want = selection_record(cfg, questions, chosen)
    if recorded != want:
        got = recorded.get("question_ids") if isinstance(recorded, dict) else None
        differ = (
            "no selection"
            if not recorded
            else (f"{len(got or ())} question ids" if got != (want or {}).get("question_ids") else "other counts or settings")
        )
        out.add(
            "count",
            layout.RUN_META,
            f"selection records {differ}; {_how(ctx)} over the dataset gives "
            f"{len(chosen)} questions (first: {chosen[0].question_id if chosen else '-'})",
        )
    return chosen


def _how(ctx: Context) -> str:
    """The run's selection as its config says it (`Selection.describe`)."""
    from memorybench.data.selection import selection_of

    cfg = ctx.cfg if hasattr(ctx.cfg, "get") else None
    selection = selection_of(cfg) if cfg is not None else None
    if selection is not None:
        return selection.describe()
    recorded = (ctx.meta or {}).get("selection") or {}
    return f"the selection by {recorded.get('by')} run_meta records"


def _check_sequence(
    ctx: Context, out: Findings, relpath: str, ids: list[str], *, check_index: bool, run_questions: str = ""
) -> None:
    """Rows are exactly `ids`, in that order: duplicates, strangers, order, gaps."""
    run_questions = run_questions or f"the first {len(ids)} in file order"
    position = {qid: i for i, qid in enumerate(ids)}
    seen: dict[str, int] = {}
    present: list[tuple[int, str]] = []
    for line, row in ctx.rows[relpath]:
        qid = row["question_id"]
        if qid in seen:
            out.grouped("duplicate.row", relpath, line, f"{qid} already has a row at line {seen[qid]}", "dup")
            continue
        seen[qid] = line
        if qid not in position:
            out.grouped(
                "count", relpath, line, f"{qid} is not among the run's {len(ids)} questions ({run_questions})", "stranger"
            )
            continue
        if check_index and row.get("index") != position[qid]:
            out.grouped(
                "order",
                relpath,
                line,
                f"{qid} has index {row.get('index')}, its position in file order is {position[qid]}",
                "index",
            )
        present.append((line, qid))
    for (_, before), (line, qid) in zip(present, present[1:]):
        if position[qid] < position[before]:
            out.add("order", relpath, f"{qid} comes after {before}, but is earlier in the dataset's file order", line)
            break
    if relpath in ctx.bad_files:
        return  # rows that did not parse are already findings; gaps would repeat them
    missing = [qid for qid in ids if qid not in seen]
    if missing:
        out.add(
            "count",
            relpath,
            f"{len(missing)} of the run's {len(ids)} questions have no row (first: {missing[0]}); "
            f"{'rerun `memorybench qa` to resume' if not (ctx.root / layout.SUCCESS).exists() else 'rows were lost'}",
        )


def _check_memory_rows(ctx: Context, out: Findings, question_samples: list[str]) -> None:
    """One manifest row per conversation of the run, and as many lineage rows as its items."""
    samples = list(dict.fromkeys(question_samples))
    manifest = ctx.rows["memory/manifest.jsonl"]
    seen: dict[str, int] = {}
    for line, row in manifest:
        sid = row["sample_id"]
        if sid in seen:
            out.grouped(
                "duplicate.row",
                "memory/manifest.jsonl",
                line,
                f"memory of {sid} already has a manifest row at line {seen[sid]}",
                "dup",
            )
            continue
        seen[sid] = line
        if sid not in samples:
            out.grouped(
                "count",
                "memory/manifest.jsonl",
                line,
                f"memory of {sid} was built but none of its questions is in the run",
                "stranger",
            )
    if "memory/manifest.jsonl" not in ctx.bad_files:
        missing = [s for s in samples if s not in seen]
        if missing:
            out.add(
                "count",
                "memory/manifest.jsonl",
                f"no manifest row for {len(missing)} conversation(s) of the run (first: {missing[0]})",
            )
    lineage_counts: dict[str, int] = {}
    for line, row in ctx.rows["memory/lineage.jsonl"]:
        lineage_counts[row["sample_id"]] = lineage_counts.get(row["sample_id"], 0) + 1
        if row["sample_id"] not in seen:
            out.grouped(
                "count", "memory/lineage.jsonl", line, f"lineage row of {row['sample_id']}, which has no manifest row", "stranger"
            )
    if "memory/lineage.jsonl" in ctx.bad_files:
        return
    for line, row in manifest:
        got = lineage_counts.get(row["sample_id"], 0)
        if row["item_count"] != got and seen.get(row["sample_id"]) == line:
            out.grouped(
                "count",
                "memory/manifest.jsonl",
                line,
                f"item_count={row['item_count']} for {row['sample_id']}, memory/lineage.jsonl has {got} rows",
                "items",
            )

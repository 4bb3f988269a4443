"""How a LoCoMo import writes its pack: the files, the file's own labels as a judge folder, TRACE.md.

`memorybench.benchmarks.locomo.importers.import_released` reads and maps the rows; this writes
them, in a temp folder the core's `built_whole` renames into place whole (the layout is in the
package's docstring). Our scores are recomputed per row: LoCoMo F1 over every category, Mem0's
F1 and BLEU-1 over 1-4 (Mem0 does not score 5); the file's labels become
`autorater/<judge id>/`, the autorater's records with no call made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


from memorybench.answer.imported import ROWS, SOURCE, ImportedRow, ImportSource, Reproduction, SourceFile
from memorybench.benchmark import LOCOMO
from memorybench.benchmarks.locomo.importers.released import Released
from memorybench.benchmarks.locomo.importers.reproduction import build_reproduction
from memorybench.data import Conversation, Question, iter_questions
from memorybench.llm.records import ModelIdentity
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeIdentity
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack
from memorybench.pack.schemas import MemoryManifestRow, ReferencePin, dump_line
from memorybench.progress import Progress
from memorybench.provenance import package_versions, utc_now
from memorybench.stages.importers._pack import (
    IMPORTED,
    close_import,
    imported_prediction,
    trace_head,
    write_import_meta,
    write_imported_judge,
)

__all__ = ["ANSWERER", "MEM0_CATEGORIES", "MEMORY", "config", "write_pack"]

ANSWERER = IMPORTED
#: the pack's memory: the released file holds answers, not the memory they came from
MEMORY = IMPORTED
#: the categories Mem0's metrics and J are over (Mem0 does not score 5)
MEM0_CATEGORIES = (1, 2, 3, 4)


def config(name: str, fmt: str, model_key: str | None, read: Sequence[SourceFile], packs: Path, pins: Any) -> dict[str, Any]:
    """The pack's config: what identifies the import (format, model key, files by sha256;
    a role read from several files, as CORE's one file per conversation, by their sorted
    sha256s, so the order they were given in does not matter)."""
    by_role: dict[str, list[str]] = {}
    for f in read:
        by_role.setdefault(f.role, []).append(f.sha256)
    files = {role: shas[0] if len(shas) == 1 else sorted(shas) for role, shas in by_role.items()}
    return {
        "name": name,
        "max_questions": None,
        "dataset": {"name": "locomo10", "path": None},
        "memory": {"name": MEMORY},
        "answerer": {
            "name": ANSWERER,
            "format": fmt,
            # what the run id names after `imported-imported-`: the file's model key, else its format
            "model": model_key or fmt,
            "model_key": model_key,
            "files": files,
        },
        "paths": {"packs": str(packs), "pins": None if pins is None else str(pins)},
    }


def _scores(prediction: str, question: Question) -> dict[str, float | None]:
    """Ours: LoCoMo F1 (every category), Mem0's F1 and BLEU-1 of `str(gold)` (categories 1-4)."""
    from memorybench.benchmarks.locomo.score import locomo_score  # nltk: only when importing
    from memorybench.score.lexical import mem0_bleu1, mem0_f1

    scores: dict[str, float | None] = {"locomo_f1": locomo_score(prediction, question.answer, question.category)}
    mem0 = question.category in MEM0_CATEGORIES
    scores["mem0_f1"] = mem0_f1(prediction, str(question.answer)) if mem0 else None
    scores["mem0_bleu1"] = mem0_bleu1(prediction, str(question.answer)) if mem0 else None
    return scores


def write_pack(
    root: Path,
    cfg: dict[str, Any],
    rid: str,
    config_sha: str,
    data_path: Path,
    data_info: dict[str, Any],
    conversations: Sequence[Conversation],
    released: Released,
    question_ids: Sequence[str],
    source: ImportSource,
) -> Reproduction:
    from memorybench.stages.rescore import rescore

    pack = RunPack(root)
    every = list(iter_questions(conversations))
    # a format that leaves categories out (mem0 and Zep drop 5) gives a pack of the others:
    # never an empty answer scored 0 in a category the file did not answer
    categories = sorted({q.category for q in every} - set(released.drops)) if source.absent else None
    questions = [q for q in every if q.category in categories] if categories else every
    # a partial file (--allow-partial): the questions it answers, never an empty answer scored 0
    partial = source.partial
    if partial is not None:
        gone = set(partial.absent_question_ids)
        questions = [q for q in questions if q.question_id not in gone]
    held = {q.sample_id for q in questions}
    row_of = dict(zip(question_ids, released.rows))
    results = released.files[0][1]
    notes = [
        f"Imported from {results.name} ({source.format}, sha256 {source.files[0].sha256}): answers another "
        "project released; no model call was made here.",
        *source.notes,
    ]
    meta = write_import_meta(
        pack,
        cfg,
        run_id=rid,
        config_sha256=config_sha,
        dataset="locomo10",
        data=data_info,
        benchmark=LOCOMO,
        question_count=len(questions),
        questions_total=len(every),
        notes=notes,
        partial=partial,
        categories=categories,
    )
    started, commit, dirty = meta.started_at, meta.git_commit, meta.git_dirty

    predictions, imported, golds = [], [], {}
    scores: dict[str, dict[str, float | None]] = {}
    bar = Progress("import", len(questions), label=source.format, unit="rows", rate_unit="row")
    for index, q in enumerate(bar.iterate(questions)):  # the bar closes with the loop
        row = row_of.get(q.question_id)
        prediction = row.prediction if row is not None else ""
        predictions.append(imported_prediction(q, index, prediction))
        golds[q.question_id] = None if q.answer is None else str(q.answer)
        if row is None:
            continue
        scores[q.question_id] = ours = _scores(prediction, q)
        label = row.reported.get("label")
        imported.append(
            ImportedRow(
                question_id=q.question_id,
                sample_id=q.sample_id,
                category=q.category,
                file_key=row.key,
                file_index=row.index,
                prediction=prediction,
                reported_locomo_f1=row.reported.get("locomo_f1"),
                locomo_f1=ours["locomo_f1"],  # type: ignore[arg-type]
                reported_mem0_f1=row.reported.get("mem0_f1"),
                mem0_f1=ours["mem0_f1"],
                reported_mem0_bleu1=row.reported.get("mem0_bleu1"),
                mem0_bleu1=ours["mem0_bleu1"],
                reported_label=label,
                reported_j=None if label is None else int(label),
                reported_extra=row.extra,
            )
        )
    # the rows in file order (the file's own order is the audit's), predictions in the dataset's
    position = {qid: i for i, qid in enumerate(question_ids)}
    imported.sort(key=lambda r: position[r.question_id])
    pack.write_text(layout.PREDICTIONS, "".join(dump_line(p) for p in predictions))
    pack.write_text(
        layout.MEMORY_MANIFEST,
        "".join(
            dump_line(
                MemoryManifestRow(
                    sample_id=c.sample_id,
                    method=MEMORY,
                    question_dependent=False,
                    item_count=0,
                    metadata={"note": "the released file holds answers, not the memory they were made from"},
                )
            )
            for c in conversations
            if c.sample_id in held
        ),
    )
    pack.write_text(layout.LINEAGE, "")
    pack.write_text(ROWS, "".join(dump_line(r) for r in imported))
    pack.write_text(SOURCE, source.dump())
    rescore(root)  # predictions.csv and metrics.json, as for any pack
    pack.write_json(layout.REFERENCE_PIN, ReferencePin(refs={}))

    judge_id = judge = None
    verdict_scores: dict[str, int] = {}
    if released.labels is not None:
        judge_id, verdict_scores = _write_judge(root, rid, questions, row_of, scores, released, source, started, commit, dirty)
        judge = PackReader.open(root).autorater_metrics(judge_id)
    own = released.own(judge, verdict_scores, partial, len(every)) if released.own is not None else None
    reproduction = build_reproduction(
        imported,
        released,
        run_id=rid,
        format_name=source.format,
        results_sha256=source.files[0].sha256,
        judge_id=judge_id,
        judge=judge,
        verdict_scores=verdict_scores,
        golds=golds,
        notes=source.notes,
        partial=partial,
        own=own,
    )
    by_id = all(r.question_id is not None for r in released.rows)
    close_import(
        root, pack, meta, reproduction, lambda: _trace_md(PackReader.open(root), rid, data_path, source, judge_id, by_id)
    )
    return reproduction


def _write_judge(
    root: Path,
    rid: str,
    questions: Sequence[Question],
    row_of: dict[str, Any],
    scores: dict[str, dict[str, float | None]],
    released: Released,
    source: ImportSource,
    started: str,
    commit: str | None,
    dirty: bool | None,
) -> tuple[str, dict[str, int]]:
    """The file's labels as a judge of their own: `autorater/<judge id>/`, the autorater's records.

    Its identity is protocol `imported`, the format as its model, and the results file's
    sha256 where a judge's prompt sha256 would be: the labels were given, not asked, so the
    file they come from is what names this judge (two files' labels never share a folder).
    """
    assert released.labels is not None
    results_sha = source.files[0].sha256
    identity = JudgeIdentity(
        protocol="imported", model=source.format, prompt_sha256=results_sha, temperature=0.0, response_format={}
    )
    judge_id = identity.judge_id
    field = released.labels.field
    meta = AutoraterMeta(
        judge_id=judge_id,
        identity=identity,
        run_id=rid,
        passes=1,
        judge_config={"name": "imported", "protocol": "imported", "format": source.format, "label_field": field},
        judge_settings={},
        judge=ModelIdentity(role="judge", provider="imported", requested=None),
        judge_model_sent="unknown",
        prompt={"name": f"{field} of {source.files[0].name}", "sha256": results_sha, "stored_at": None},
        response_format={},
        package_versions=package_versions(),
        git_commit=commit,
        git_dirty=dirty,
        started_at=started,
        ended_at=utc_now(),
        notes=[
            f"J from the released file's own labels ({released.labels.described}); no judge was called here: the "
            "model and prompt are the file's, not recorded in it. Mem0 F1 and BLEU-1 are ours, recomputed."
        ],
    )
    verdicts = []
    verdict_scores: dict[str, int] = {}
    for index, q in enumerate(questions):
        base = dict(
            question_id=q.question_id,
            sample_id=q.sample_id,
            index=index,
            category=q.category,
            pass_=1,
            judge_prompt_sha256=results_sha,
        )
        row = row_of.get(q.question_id)
        if q.category not in MEM0_CATEGORIES:
            verdicts.append(AutoraterVerdict(**base, status="SKIPPED"))
            continue
        lexical = {k: scores[q.question_id][k] for k in ("mem0_f1", "mem0_bleu1")} if q.question_id in scores else {}
        label = None if row is None else row.reported.get("label")
        if label is None:  # a row the file has no label for: a failure, counted and listed, never WRONG
            verdicts.append(
                AutoraterVerdict(
                    **base, status="FAILED", failure="parse", error=f"the released file has no {field} for this row", **lexical
                )
            )
            continue
        score = int(label)
        verdict_scores[q.question_id] = score
        verdicts.append(
            AutoraterVerdict(
                **base,
                status="CORRECT" if score else "WRONG",
                label_raw="CORRECT" if score else "WRONG",
                label_standard=True,
                score=score,
                **lexical,
            )
        )
    write_imported_judge(root, meta, verdicts)
    return judge_id, verdict_scores


def _trace_md(
    pack: PackReader, rid: str, data_path: Path, source: ImportSource, judge_id: str | None, by_id: bool = False
) -> str:
    """TRACE.md: the first imported row walked from the released file to every pack file (`by_id`:
    the file named each row's question id, as AMB's does)."""
    rows = list(pack.records(ROWS, ImportedRow))
    if not rows:
        return "# Trace\n\nNo row was imported.\n"
    first = rows[0]
    predictions = [r.question_id for r in pack.predictions()]
    line = predictions.index(first.question_id) + 1
    results = source.files[0]
    qa_index = first.question_id.rsplit("-q-", 1)[1]
    lines = [
        *trace_head(rid, source, first.question_id),
        "## 1. Released row",
        f"- `{results.name}`, conversation key `{first.file_key}`, row {first.file_index}: prediction {first.prediction!r}.",
        "",
        "## 2. Mapped onto the dataset",
        f"- The key's questions are asked by `{first.sample_id}` (`imported/source.json`: `conversations`); the row's question "
        + (
            f"id names `qa[{qa_index}]` of `{data_path.name}`, whose text, gold and category it has: question id "
            f"`{first.question_id}`."
            if by_id
            else f"text, gold and category give `qa[{qa_index}]` of `{data_path.name}`: question id `{first.question_id}`."
        ),
        "",
        "## 3. Stored",
        f"- `predictions.jsonl` line {line}; `imported/rows.jsonl` line 1: the file's own scores (`reported_*`) beside ours.",
        f"- `predictions.csv` and `metrics.json`: our LoCoMo F1 {first.locomo_f1!r} (rescore, as for any pack).",
    ]
    if judge_id is not None:
        lines.append(
            f"- The file's judge label: `autorater/{judge_id}/autorater_verdicts.jsonl` line {line} (J in its autorater_metrics.json)."
        )
    lines += [
        "",
        "## 4. Reproduction",
        "- `imported/reproduction.json`: per metric, rows reproduced, and per category ours beside the file's.",
        "",
    ]
    return "\n".join(lines)

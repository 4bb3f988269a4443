"""How a BEAM import writes its packs (`importer.py`): one per released run, the LongMemEval import's layout.

Each pack is built in a temp folder beside its place (`importers._pack.built_whole`) and moved
there whole once its reproduction is written; the reproduction's cross-run figures need every
run's judge folder, so all of an import's packs are built before any is closed. An import run
again finds the finished packs and writes nothing.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


from memorybench.answer.imported import (
    REPRODUCTION,
    ROWS,
    SOURCE,
    CategoryFigure,
    ImportedRow,
    ImportSource,
    MetricReproduction,
    Mismatch,
    Reproduction,
    RowAgreement,
    SourceFile,
    SourceRef,
)
from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.import_figures import mean_of, run_figure
from memorybench.benchmarks.beam.import_plan import ANSWERER, MEMORY, PROFILES, BeamImport, ImportPlan, ImportRun, category_of
from memorybench.benchmarks.beam.released_files import BeamRow
from memorybench.data import Question
from memorybench.hashing import sha256_file
from memorybench.llm.records import ModelIdentity
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeIdentity
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack, pack_path
from memorybench.pack.schemas import Coverage, MemoryManifestRow, ReferencePin, RunMeta, dump_line
from memorybench.pack.success import write_success
from memorybench.provenance import package_versions, utc_now
from memorybench.run_id import run_identity
from memorybench.stages.importers._base import bounded_rows
from memorybench.stages.importers._pack import (
    built_whole,
    finished_pack,
    imported_prediction,
    trace_head,
    write_import_meta,
    write_imported_judge,
)

__all__ = ["write_all"]


def write_all(
    plan: ImportPlan, *, name: str, source: SourceRef | None, packs: Any, pins: Any
) -> tuple[Path, ImportSource, Reproduction, bool]:
    packs_root = Path(packs).expanduser().resolve()
    side = [{"role": role, "name": p.name, "sha256": sha256_file(p)} for role, p in plan.side]
    shas = [sha256_file(r.path) for r in plan.runs]
    specs = []
    for run, sha in zip(plan.runs, shas):
        cfg = {
            "name": name,
            "max_questions": None,
            "dataset": {"name": plan.dataset, "path": None if plan.data_info.get("pinned") else str(plan.data_path)},
            "memory": {"name": MEMORY},
            "answerer": {
                "name": ANSWERER,
                "format": plan.fmt,
                "model": plan.fmt,
                "model_key": None,
                "run": run.run_idx,
                "profile": plan.profile,
                "judge_model": plan.judge_model,
                # every file read: the identity of an import is all of it
                "files": {"results": sha, "runs": shas, "side": {s["role"]: s["sha256"] for s in side}},
            },
            "paths": {"packs": str(packs_root), "pins": None if pins is None else str(pins)},
        }
        rid, config_sha = run_identity(cfg)
        specs.append((run, sha, cfg, rid, config_sha, pack_path(packs_root, name, rid)))
    created = False
    with contextlib.ExitStack() as stack:
        built: list[tuple[Any, ...]] = []
        readers = []
        for run, sha, cfg, rid, config_sha, final in specs:
            done = finished_pack(final)
            if done is not None:
                readers.append((done, _judge_identity(plan, sha).judge_id))
                built.append(())
                continue
            work = stack.enter_context(built_whole(final, rid))
            record, meta, judge_id = _write_pack(work, plan, run, sha, cfg, rid, config_sha, source, side)
            readers.append((PackReader.open(work), judge_id))
            built.append((work, record, meta, judge_id))
            created = True
        metrics = [reader.autorater_metrics(judge_id) for reader, judge_id in readers]
        figures = [run_figure(plan, run, sha, rid, m) for (run, sha, _, rid, _, _), m in zip(specs, metrics)]
        overall, by_ability, stated_notes = plan.stated(plan, figures, metrics)
        for (run, sha, _, rid, _, _), entry, m in zip(specs, built, metrics):
            if not entry:
                continue
            work, record, meta, judge_id = entry
            own = BeamImport(
                format=plan.fmt,
                profile=plan.profile,
                profile_note=PROFILES[plan.profile],
                judge_model=plan.judge_model,
                judge_note=plan.judge_note,
                dataset=plan.dataset,
                system=plan.system,
                conversations=run.mapped.conversations,
                runs=figures,
                overall=overall,
                by_ability=by_ability,
                files=[
                    *side,
                    *({"role": "run", "name": r.path.name, "sha256": s} for r, s in zip(plan.runs, shas) if r is not run),
                ],
                notes=stated_notes,
            )
            reproduction = _reproduction(work, plan, run, sha, rid, judge_id, m, record, own)
            RunPack(work).write_text(REPRODUCTION, reproduction.dump())
            RunPack(work).write_text(layout.TRACE_MD, _trace_md(plan, run, rid, record, judge_id))
            RunPack(work).write_json(layout.RUN_META, meta.model_copy(update={"ended_at": utc_now()}))
            write_success(work)  # last: the sha256 of every file above
    first = specs[0][5]
    if not created:
        print(f"{plan.fmt} files already imported: {first} is finished; its table below", file=sys.stderr)
    reader = PackReader.open(first)
    return first, reader.record(SOURCE, ImportSource), reader.record(REPRODUCTION, Reproduction), created


def _judge_identity(plan: ImportPlan, sha: str) -> JudgeIdentity:
    """The file's scores as a judge: protocol `imported`, the release's judge model, and where a judge's
    prompt sha256 would be, the pinned file of the release's judge prompt (Cognee's four runs are one
    judge), else the results file's sha256 (the scores were given, not asked: the file names the judge)."""
    return JudgeIdentity(
        protocol="imported",
        model=plan.judge_model,
        prompt_sha256=plan.judge_prompt_sha256 or sha,
        temperature=0.0,
        response_format=None,
    )


def _clean(rows: Sequence[BeamRow]) -> tuple[list[BeamRow], list[str]]:
    """Other fields with NaN or Infinity made null, answers cut to reader.max_answer_chars (`bounded_rows`)."""
    return bounded_rows(rows, id_field="file_id", answer_field="prediction")


def _write_pack(
    root: Path,
    plan: ImportPlan,
    run: ImportRun,
    sha: str,
    cfg: dict[str, Any],
    rid: str,
    config_sha: str,
    source: SourceRef | None,
    side: list[dict[str, str]],
) -> tuple[ImportSource, RunMeta, str]:
    """Every file of one run's pack but its reproduction, TRACE.md and _SUCCESS."""
    from memorybench.stages.rescore import rescore

    rows, notes = _clean(run.rows)
    files = [SourceFile(role="results", name=run.path.name, sha256=sha, bytes=run.path.stat().st_size)]
    files += [
        SourceFile(role="stats", name=p.name, sha256=sha256_file(p), bytes=p.stat().st_size)
        for role, p in plan.side
        if role == "summary"
    ]
    record = ImportSource(
        format=plan.fmt,
        files=files,
        source=source,
        rows=len(rows),
        conversations=run.mapped.conversations,
        tie_broken=0,
        notes=[*plan.notes, *notes],
        partial=plan.partial,
    )
    pack = RunPack(root)
    held_ids = {q.question_id for q in run.mapped.questions.values()}
    held = [q for c in plan.tier.conversations for q in c.questions if q.question_id in held_ids]
    total = len(plan.tier.questions)
    label = (
        f"scores: profile {plan.profile}, judge {plan.judge_model} (imported/reproduction.json `own`; "
        f"autorater/ holds them as the judge `imported`)"
    )
    meta = write_import_meta(
        pack,
        cfg,
        run_id=rid,
        config_sha256=config_sha,
        dataset=plan.dataset,
        data=plan.data_info,
        benchmark=BENCHMARK,
        question_count=len(held),
        questions_total=total,
        notes=[
            f"Imported from {run.path.name} ({plan.fmt}"
            + (f", run {run.run_idx}" if run.run_idx is not None else "")
            + f", sha256 {sha}): no model call was made here.",
            label,
            *record.notes,
            *_partial_notes(plan.partial),
        ],
        partial=plan.partial,
    )
    started, commit, dirty = meta.started_at, meta.git_commit, meta.git_dirty
    row_of = {run.mapped.questions[r.index].question_id: r for r in rows}
    pack.write_text(
        layout.PREDICTIONS,
        "".join(dump_line(imported_prediction(q, i, row_of[q.question_id].prediction)) for i, q in enumerate(held)),
    )
    samples = list(dict.fromkeys(q.sample_id for q in held))
    pack.write_text(
        layout.MEMORY_MANIFEST,
        "".join(
            dump_line(
                MemoryManifestRow(
                    sample_id=s,
                    method=MEMORY,
                    question_dependent=False,
                    item_count=0,
                    metadata={
                        "note": "the released file holds answers (and their retrieved context, kept in imported/rows.jsonl), not the "
                        "memory they were made from"
                    },
                )
            )
            for s in samples
        ),
    )
    pack.write_text(layout.LINEAGE, "")
    imported = [
        ImportedRow(
            question_id=run.mapped.questions[r.index].question_id,
            sample_id=run.mapped.questions[r.index].sample_id,
            category=category_of(run.mapped.questions[r.index]),
            file_key=r.key,
            file_index=r.index,
            prediction=r.prediction,
            reported_label=r.score,
            reported_j=None,
            reported_extra={**r.extra, "question": r.question},
        )
        for r in rows
    ]
    pack.write_text(ROWS, "".join(dump_line(r) for r in imported))
    pack.write_text(SOURCE, record.dump())
    rescore(root)  # predictions.csv and metrics.json, as for any pack
    pack.write_json(layout.REFERENCE_PIN, ReferencePin(refs={}))
    judge_id = _write_judge(root, plan, rid, held, row_of, sha, run, started, commit, dirty)
    return record, meta, judge_id


def _partial_notes(partial: Coverage | None) -> list[str]:
    if partial is None:
        return []
    return [
        f"Partial: {partial.reason}. The pack holds {partial.questions} of {partial.of} questions (run_meta.partial lists "
        "the others); its figures are over the questions held."
    ]


def _write_judge(
    root: Path,
    plan: ImportPlan,
    rid: str,
    held: Sequence[Question],
    row_of: Mapping[str, BeamRow],
    sha: str,
    run: ImportRun,
    started: str,
    commit: str | None,
    dirty: bool | None,
) -> str:
    """The file's scores as a judge of their own: `autorater/<judge id>/`, the autorater's records."""
    identity = _judge_identity(plan, sha)
    judge_id = identity.judge_id
    meta = AutoraterMeta(
        judge_id=judge_id,
        identity=identity,
        run_id=rid,
        passes=1,
        judge_config={
            "name": "imported",
            "protocol": "imported",
            "format": plan.fmt,
            "score_field": plan.score_field,
            "profile": plan.profile,
            "model": plan.judge_model,
        },
        judge_settings={},
        judge=ModelIdentity(role="judge", provider="imported", requested=plan.judge_model),
        judge_model_sent=plan.judge_model,
        prompt={"name": f"{plan.score_field} of {run.path.name}", "sha256": identity.prompt_sha256, "stored_at": None},
        response_format=None,
        package_versions=package_versions(),
        git_commit=commit,
        git_dirty=dirty,
        started_at=started,
        ended_at=utc_now(),
        notes=[
            f"Scores from the file's own {plan.score_field} (judge {plan.judge_note}); no judge was called here.",
            f"Profile {PROFILES[plan.profile]}.",
            "A verdict's score is the question's score as written; CORRECT where it is 1, else WRONG; a row without a "
            "score is FAILED (counted, outside the mean, as the release leaves it out of its own).",
        ],
    )
    verdicts = []
    for index, q in enumerate(held):
        row = row_of[q.question_id]
        base = dict(
            question_id=q.question_id, sample_id=q.sample_id, index=index, category=q.category, pass_=1, judge_prompt_sha256=sha
        )
        if row.score is None:
            verdicts.append(
                AutoraterVerdict(
                    **base,
                    status="FAILED",
                    failure="parse",
                    label_raw=row.label,
                    error=f"the released file has no {plan.score_field} for this row",
                )
            )
            continue
        verdicts.append(
            AutoraterVerdict(**base, status="CORRECT" if row.score == 1 else "WRONG", label_raw=row.label, score=row.score)
        )
    write_imported_judge(root, meta, verdicts)
    return judge_id


def _reproduction(
    root: Path,
    plan: ImportPlan,
    run: ImportRun,
    sha: str,
    rid: str,
    judge_id: str,
    metrics: Any,
    record: ImportSource,
    own: BeamImport,
) -> Reproduction:
    """Per ability the file's scores beside the judge folder's; rows whose score its own words give back."""
    verdicts = {v.question_id: v.score for v in PackReader.open(root).verdicts(judge_id)}
    bad = []
    for r in run.rows:
        q = run.mapped.questions[r.index]
        if not plan.row_check(r, q) or verdicts.get(q.question_id) != r.score:
            bad.append((r, q))
    present = sorted({category_of(run.mapped.questions[r.index]) for r in run.rows})
    by_category = {}
    for c in present:
        these = [r.score for r in run.rows if category_of(run.mapped.questions[r.index]) == c and r.score is not None]
        by_category[str(c)] = CategoryFigure(
            rows=sum(1 for r in run.rows if category_of(run.mapped.questions[r.index]) == c),
            ours=metrics.j.by_category.get(str(c)),
            reported=mean_of(these),
        )
    scored = [r.score for r in run.rows if r.score is not None]
    stated_overall = own.overall.get("accuracy")
    score = MetricReproduction(
        label=f"BEAM score per ability ({plan.score_field}; profile {plan.profile}, judge {plan.judge_model}): the file's "
        "per-question scores beside the judge folder's",
        rows=RowAgreement(
            reported_field=plan.score_field,
            compared=plan.row_check_words + "; and the judge folder's verdict is the file's score",
            rows=len(run.rows),
            equal=len(run.rows) - len(bad),
            mismatched=len(bad),
            examples=[
                Mismatch(
                    question_id=q.question_id,
                    category=category_of(q),
                    prediction=r.prediction[:500],
                    reported=r.score,
                    ours=r.counts.paper if r.counts else None,
                )
                for r, q in bad[:5]
            ],
        ),
        by_category=by_category,
        overall=CategoryFigure(
            rows=len(run.rows),
            ours=metrics.j.overall,
            reported=mean_of(scored),
            stated=stated_overall.mean.stated if stated_overall else None,
            stated_rows=len(scored) if stated_overall else None,
            stated_comparable=None if stated_overall is None else plan.partial is None,
        ),
        overall_categories=present,
    )
    return Reproduction(
        run_id=rid,
        format=plan.fmt,
        results_sha256=sha,
        judge_id=judge_id,
        metrics={"score": score},
        notes=list(record.notes),
        partial=plan.partial,
        own=json.loads(own.dump()),
    )


def _trace_md(plan: ImportPlan, run: ImportRun, rid: str, source: ImportSource, judge_id: str) -> str:
    """TRACE.md: the file's first row walked to every pack file."""
    first = run.rows[0]
    q = run.mapped.questions[first.index]
    held_ids = {x.question_id for x in run.mapped.questions.values()}
    order = [x.question_id for c in plan.tier.conversations for x in c.questions if x.question_id in held_ids]
    line = order.index(q.question_id) + 1
    lines = [
        *trace_head(rid, source, q.question_id),
        "## 1. Released row",
        f"- `{run.path.name}` row {first.index} ({first.file_id}): conversation {first.key!r}, ability {first.ability}, "
        f"answer {first.prediction[:200]!r}, score {first.score!r} ({plan.score_field}).",
        "",
        "## 2. Found in the tier",
        f"- Its question text is that of `{q.question_id}` in `{plan.dataset}` (run_meta.json `data`), ability "
        f"{category_of(q)} ({q.ability}); file conversation {first.key!r} is `{q.sample_id}` (`imported/source.json`: `conversations`).",
        "",
        "## 3. Stored",
        f"- `predictions.jsonl` line {line}; `imported/rows.jsonl` line 1 (the row as the file has it, `reported_label` its score).",
        f"- The score: `autorater/{judge_id}/autorater_verdicts.jsonl` line {line}, profile {plan.profile}, judge "
        f"{plan.judge_model}.",
        "",
        "## 4. Reproduction",
        "- `imported/reproduction.json`: per ability the file's scores beside the judge folder's; `own`: the runs and the "
        "figures the release states, beside the same arithmetic over the files and beside the packs.",
    ]
    return "\n".join(lines) + "\n"

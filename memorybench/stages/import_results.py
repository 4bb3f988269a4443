"""The `import` stage: another project's released LoCoMo answers -> a pack, and its reproduction table.

    memorybench import FILE [FILE...] --format F [--model KEY] [--name NAME] [--allow-partial]
                       [--source REPOSITORY@COMMIT:PATH] [--packs DIR] [--pins DIR] [--json]

No model call. The format's reader (`memorybench.stages.importers`) reads the files; every
row is mapped onto a question id of the pinned LoCoMo (by conversation, question text,
gold, order: a row that maps to none or contradicts the dataset stops the import, all
counted in one error). The pack is a qa pack's layout, `<packs>/<name>/runs/<run id>/`,
the run id hashing the format, the model key and the sha256 of every file read:

    config.resolved.yaml, run_meta.json   answerer `imported`, memory `imported`, the pinned data
    predictions.jsonl                     one row per question the file answers, in the dataset's
                                          file order; a category the format leaves out (mem0, Zep and
                                          CORE drop 5) is not the pack's (run_meta.categories)
    predictions.csv, metrics.json         our LoCoMo F1 (rescore), as for any pack
    memory/manifest.jsonl, lineage.jsonl  one row per conversation held, no item: the file holds no memory
    imported/source.json                  the files (sha256), format, --source, how rows were mapped
    imported/rows.jsonl                   per released row: the file's own scores (`reported_*`) beside ours
    imported/reproduction.json            the table printed: rows reproduced, figures per category
    autorater/<judge id>/                 the file's judge labels as a judge of their own (J), with our
                                          Mem0 F1 and BLEU-1 per row, in the autorater's records
    TRACE.md, REFERENCE_PIN.json, _SUCCESS

A partial file, one without a row (or an answer) for some questions its format holds (a
release of some conversations, LoCoMo's one run per conversation, a run that stopped), is
refused in one line naming `--allow-partial`; with it, the pack holds the questions the file
answers and says so: run_meta.json and metrics.json carry `partial` (questions held of how
many, conversations held, absent questions by conversation and by category, their ids), and
the reproduction table is over those questions, a stats file's figure over other rows being
marked not comparable. `is_prefix` stays false: the questions held need not be the first.

The pack is written in a temporary folder beside its place and moved there whole, so a
pack at its place is always finished; importing the same files again finds it and prints
its table. Every later stage reads it: rescore, autorater with our own judge (another
folder under autorater/), compare, aggregate, report, track, verify. The LongMemEval authors'
files (`--format longmemeval_hypotheses|longmemeval_judged --dataset NAME [--dataset-path DATA]`)
are imported by `memorybench.benchmarks.longmemeval.importer` into the same layout.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memorybench.answer.imported import (
    REPRODUCTION,
    ROWS,
    SOURCE,
    ImportedRow,
    ImportSource,
    Reproduction,
    SourceFile,
    SourceRef,
)
from memorybench.benchmark import LOCOMO, benchmark_of_format, benchmarks
from memorybench.data.source import resolve_dataset
from memorybench.data import Conversation, Question, iter_questions
from memorybench.errors import OneLineParser, UserError, did_you_mean, printable
from memorybench.hashing import sha256_file, sha256_text
from memorybench.llm.records import ModelIdentity
from memorybench.names import path_component
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeIdentity
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack, pack_path
from memorybench.pack.schemas import Coverage, MemoryManifestRow, Prediction, ReferencePin, RunMeta, dump_line
from memorybench.pack.success import write_success
from memorybench.progress import Progress
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.run_id import plugins_used, run_identity
from memorybench.stages.importers._pack import AlreadyImported, built_whole, finished_pack, trace_head, write_imported_judge
from memorybench.stages.importers._base import finite, is_finite_number
from memorybench.stages.importers import FORMATS, Released, build_reproduction, format_reproduction, map_rows, released_format

__all__ = ["ImportResult", "import_main", "import_results", "parse_source"]

ANSWERER = "imported"
#: the pack's memory: the released file holds answers, not the memory they came from
MEMORY = "imported"
#: no memory text is known: each row names the empty text's sha256
NO_MEMORY_SHA256 = sha256_text("")
DEFAULT_PACKS = "outputs/packs"
DEFAULT_NAME = "imported"
#: the categories Mem0's metrics and J are over (Mem0 does not score 5)
MEM0_CATEGORIES = (1, 2, 3, 4)


@dataclass(frozen=True)
class ImportResult:
    pack_root: Path
    source: ImportSource
    reproduction: Reproduction
    #: false when the same files were imported before and the pack was found finished
    created: bool


def parse_source(text: str | None) -> SourceRef | None:
    """`--source REPOSITORY@COMMIT:PATH` as a record (None when not given)."""
    if text is None:
        return None
    repository, at, rest = text.partition("@")
    commit, colon, path = rest.partition(":")
    if not (at and colon and repository and commit and path):
        raise UserError(
            f"--source {text!r} must be REPOSITORY@COMMIT:PATH, e.g. "
            "memodb-io/memobase@358c16bbc6d687937d79bc2f984a11c3be8da901:docs/experiments/locomo-benchmark/fixture/memobase/x.json"
        )
    return SourceRef(repository=repository, commit=commit, path=path)


def import_results(
    files: Sequence[str | os.PathLike[str]],
    fmt: str,
    *,
    model_key: str | None = None,
    name: str = DEFAULT_NAME,
    source: SourceRef | str | None = None,
    packs: str | os.PathLike[str] = DEFAULT_PACKS,
    pins: str | os.PathLike[str] | None = None,
    allow_partial: bool = False,
    dataset: str | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
) -> ImportResult:
    """Import released files of format `fmt` into a pack; return it and its reproduction table.

    A file without a row for some questions its format holds is refused unless
    `allow_partial`: then the pack holds the questions it answers, labelled partial. The
    formats of another benchmark (its record's `released_formats`, read by its `importer`) name
    their `dataset` (and `dataset_path` for a local copy); the LoCoMo formats map onto the
    pinned locomo10."""
    owner = benchmark_of_format(fmt)
    if fmt not in FORMATS and owner is None:
        raise UserError(f"unknown --format {fmt!r}. {did_you_mean(fmt, [*FORMATS, *_other_formats()])}")
    name = path_component(name, "experiment name", "pass --name NAME")
    ref = parse_source(source) if isinstance(source, str) or source is None else source
    paths = [Path(f).expanduser().absolute() for f in files]  # not resolved: a link given as FILE is refused, not followed
    if not paths:
        raise UserError("memorybench import needs the released file(s) to import")
    if owner is not None:
        if model_key is not None:
            raise UserError(
                f"--model {model_key} is for locomo_task_eval files, which hold several models; a {fmt} file holds one"
            )
        root, record, rep, created = owner.own("importer", "import_released")(
            paths,
            fmt,
            dataset=dataset,
            dataset_path=dataset_path,
            name=name,
            source=ref,
            packs=packs,
            pins=pins,
            allow_partial=allow_partial,
        )
        return ImportResult(root, record, rep, created=created)
    if dataset is not None or dataset_path is not None:
        raise UserError(
            f"--dataset and --dataset-path are for {', '.join(_other_formats())}; a {fmt} file maps onto the pinned locomo10"
        )
    reader = released_format(fmt)
    released = _answers_bounded(_finite_only(reader.read(paths, model_key)))
    if not released.rows:
        raise UserError(f"{paths[0]} holds no answered row; nothing to import")
    results_path = released.files[0][1]
    data_path, data_info = resolve_dataset(OmegaConf.create({"name": "locomo10", "path": None}), pins)
    conversations = LOCOMO.load(data_path)
    mapped = map_rows(released.rows, conversations, results_path)
    dropped = [q for q in mapped.absent if q.category in released.drops]  # the format never holds them: not partial
    partial = _partial(mapped.absent, released, conversations, results_path, fmt, allow_partial)

    read = [
        SourceFile(role=role, name=path.name, sha256=sha256_file(path), bytes=path.stat().st_size)  # type: ignore[arg-type]
        for role, path in released.files
    ]
    packs_root = Path(packs).expanduser().resolve()
    cfg = _config(name, fmt, released.model_key, read, packs_root, pins)
    rid, config_sha = run_identity(cfg)
    final = pack_path(packs_root, name, rid)
    done = finished_pack(final)
    if done is not None:
        print(f"{fmt} files already imported: {final} is finished; its table below", file=sys.stderr)
        return ImportResult(final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), created=False)
    try:
        with built_whole(final, rid) as work:
            source_record = ImportSource(
                format=fmt,
                model_key=released.model_key,
                files=read,
                source=ref,
                rows=len(released.rows),
                conversations=mapped.conversations,
                tie_broken=mapped.tie_broken,
                absent={str(c): n for c, n in sorted(Counter(q.category for q in dropped).items())},
                absent_question_ids=[q.question_id for q in dropped],
                notes=[*released.notes, *_absent_notes(dropped, fmt), *_partial_notes(partial, fmt)],
                partial=partial,
            )
            reproduction = _write_pack(
                work, cfg, rid, config_sha, data_path, data_info, conversations, released, mapped.question_ids, source_record
            )
    except AlreadyImported:  # another import of the same files finished first: its pack, as a rerun finds it
        done = PackReader.open(final)
        print(
            f"{fmt} files already imported: {final} is finished (by another import at the same time); its table below",
            file=sys.stderr,
        )
        return ImportResult(final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), created=False)
    return ImportResult(final, source_record, reproduction, created=True)


def _finite_only(released: Released) -> Released:
    """The rows with each NaN or Infinity a file holds made null, since strict JSON (every pack file)
    cannot hold them, and a note naming the rows that held them; stated figures likewise dropped."""
    rows, held = [], []
    for row in released.rows:
        reported, bad_scores = finite(row.reported)
        extra, bad_extra = finite(row.extra)
        if bad_scores or bad_extra:
            fields = sorted(k for k, v in row.reported.items() if finite(v)[1]) + (["other fields"] if bad_extra else [])
            held.append(f"{row.key}[{row.index}] ({', '.join(fields)})")
            row = dataclasses.replace(row, reported=reported, extra=extra)
        rows.append(row)
    stated = {m: {c: s for c, s in by.items() if is_finite_number(s.total)} for m, by in released.stated.items()}
    dropped = sum(len(by) for by in released.stated.values()) - sum(len(by) for by in stated.values())
    notes = list(released.notes)
    if held:
        notes.append(
            f"{len(held)} rows hold NaN or Infinity, kept as null (no value): "
            + ", ".join(held[:10])
            + (f" and {len(held) - 10} more" if len(held) > 10 else "")
        )
    if dropped:
        notes.append(f"{dropped} stated figures were NaN or Infinity and are left out")
    if not held and not dropped:
        return released
    return dataclasses.replace(released, rows=rows, stated=stated, notes=notes)


def _answers_bounded(released: Released) -> Released:
    """Each answer cut to reader.max_answer_chars's default, as a qa answer is, with a note counting them."""
    from memorybench.answer.reader import DEFAULT_MAX_ANSWER_CHARS

    cut = [r for r in released.rows if len(r.prediction) > DEFAULT_MAX_ANSWER_CHARS]
    if not cut:
        return released
    first = cut[0]
    note = (
        f"{len(cut)} answers longer than {DEFAULT_MAX_ANSWER_CHARS:,} characters (reader.max_answer_chars, as a qa answer) "
        f"were cut to it; first {first.key}[{first.index}] of {len(first.prediction):,} characters"
    )
    rows = [
        dataclasses.replace(r, prediction=r.prediction[:DEFAULT_MAX_ANSWER_CHARS])
        if len(r.prediction) > DEFAULT_MAX_ANSWER_CHARS
        else r
        for r in released.rows
    ]
    return dataclasses.replace(released, rows=rows, notes=[*released.notes, note])


def _counts(counter: Counter[Any]) -> dict[str, int]:
    return {str(k): n for k, n in counter.items() if n}


def _partial(
    absent: Sequence[Question],
    released: Released,
    conversations: Sequence[Conversation],
    path: Path,
    fmt: str,
    allow_partial: bool,
) -> Coverage | None:
    """The questions the format holds but the file has no row (or no answer) for: None when
    there are none (a full file); with `allow_partial` what the partial pack holds and lacks;
    else one line naming the flag. A category the format leaves out (`released.drops`) is
    never partial: the pack is of the other categories (run_meta.categories)."""
    missing = [q for q in absent if q.category not in released.drops]
    if not missing:
        return None
    by_category = _counts(Counter(q.category for q in sorted(missing, key=lambda q: q.category)))
    by_conversation = _counts(Counter(q.sample_id for q in missing))
    if not allow_partial:
        categories = ", ".join(f"category {c}: {n}" for c, n in by_category.items())
        convs = ", ".join(f"{s}: {n}" for s, n in by_conversation.items())
        unanswered = (
            f"; {len(released.unanswered)} of them rows left unanswered, first {released.unanswered[0]}"
            if released.unanswered
            else ""
        )
        raise UserError(
            f"{path.name} has no row for {len(missing)} questions of the pinned LoCoMo that a {fmt} file holds ({categories}; "
            f"by conversation {convs}; first: {missing[0].question_id} {missing[0].question!r}{unanswered}): a partial file; "
            "pass --allow-partial to import it as a pack labelled partial over the questions it holds, or import the file of a full run"
        )
    dropped = any(q.category in released.drops for q in absent)
    pool = [q for c in conversations for q in c.questions if not (dropped and q.category in released.drops)]
    gone = {q.question_id for q in missing}
    held = [q for q in pool if q.question_id not in gone]
    samples = list(dict.fromkeys(q.sample_id for q in held))
    unanswered = f", {len(released.unanswered)} of them rows it left unanswered" if released.unanswered else ""
    return Coverage(
        reason=(
            f"the {fmt} file has no row for {len(missing)} of the {len(pool)} questions its format holds{unanswered} "
            f"(it answers questions of {len(samples)} of the {len(conversations)} conversations; imported with --allow-partial)"
        ),
        questions=len(held),
        of=len(pool),
        conversations=samples,
        absent_by_conversation=by_conversation,
        absent_by_category=by_category,
        absent_question_ids=[q.question_id for q in missing],
    )


def _partial_notes(partial: Coverage | None, fmt: str) -> list[str]:
    if partial is None:
        return []
    categories = ", ".join(f"category {c}: {n}" for c, n in partial.absent_by_category.items())
    convs = ", ".join(f"{s}: {n}" for s, n in partial.absent_by_conversation.items())
    return [
        f"Partial: {partial.reason}. The pack holds {partial.questions} of {partial.of} questions ({len(partial.conversations)} "
        f"conversations); absent by conversation {convs}; by category {categories} (run_meta.partial lists them). Its metrics and "
        "reproduction table are over the questions held: a figure published for the whole set is not comparable with them."
    ]


def _absent_notes(absent: Sequence[Question], fmt: str) -> list[str]:
    if not absent:
        return []
    counts = ", ".join(f"category {c}: {n}" for c, n in sorted(Counter(q.category for q in absent).items()))
    return [
        f"The {fmt} file has no row for {len(absent)} questions ({counts}), which its format leaves out: the pack holds "
        "the other categories only (run_meta.categories), so metrics.json's overall is over them, as the file's own is."
    ]


def _config(name: str, fmt: str, model_key: str | None, read: Sequence[SourceFile], packs: Path, pins: Any) -> dict[str, Any]:
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
    from memorybench.score import locomo_score, mem0_bleu1, mem0_f1  # nltk: only when importing

    scores: dict[str, float | None] = {"locomo_f1": locomo_score(prediction, question.answer, question.category)}
    mem0 = question.category in MEM0_CATEGORIES
    scores["mem0_f1"] = mem0_f1(prediction, str(question.answer)) if mem0 else None
    scores["mem0_bleu1"] = mem0_bleu1(prediction, str(question.answer)) if mem0 else None
    return scores


def _write_pack(
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
    commit, dirty = git_state()
    started = utc_now()
    results = released.files[0][1]
    notes = [
        f"Imported from {results.name} ({source.format}, sha256 {source.files[0].sha256}): answers another "
        "project released; no model call was made here.",
        *source.notes,
    ]
    meta = RunMeta(
        run_id=rid,
        name=str(cfg["name"]),
        config_sha256=config_sha,
        overrides=[],
        choices={"dataset": "locomo10", "memory": MEMORY, "answerer": ANSWERER},
        git_commit=commit,
        git_dirty=dirty,
        package_versions=package_versions(),
        data=data_info,
        prompts={},
        models=[],
        started_at=started,
        question_count=len(questions),
        questions_total=len(every),
        is_prefix=False,
        max_questions=None,
        local_model=False,
        notes=notes,
        plugins=plugins_used(cfg),
        categories=categories,
        partial=partial,
    )
    pack.write_text(layout.CONFIG, OmegaConf.to_yaml(OmegaConf.create(cfg)))
    pack.write_json(layout.RUN_META, meta)

    predictions, imported, golds = [], [], {}
    scores: dict[str, dict[str, float | None]] = {}
    bar = Progress("import", len(questions), label=source.format, unit="rows", rate_unit="row")
    for index, q in enumerate(bar.iterate(questions)):  # the bar closes with the loop
        row = row_of.get(q.question_id)
        prediction = row.prediction if row is not None else ""
        predictions.append(
            Prediction(
                question_id=q.question_id,
                sample_id=q.sample_id,
                index=index,
                category=q.category,
                question=q.question,
                prediction=prediction,
                gold=q.answer,
                adversarial_answer=q.adversarial_answer,
                memory_sha256=NO_MEMORY_SHA256,
                answerer=ANSWERER,
            )
        )
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
    )
    pack.write_text(REPRODUCTION, reproduction.dump())
    pack.write_text(layout.TRACE_MD, _trace_md(PackReader.open(root), rid, data_path, source, judge_id))
    pack.write_json(layout.RUN_META, meta.model_copy(update={"ended_at": utc_now()}))
    write_success(root)  # last: the sha256 of every file above
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


def _trace_md(pack: PackReader, rid: str, data_path: Path, source: ImportSource, judge_id: str | None) -> str:
    """TRACE.md: the first imported row walked from the released file to every pack file."""
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
        f"text, gold and category give `qa[{qa_index}]` of `{data_path.name}`: question id `{first.question_id}`.",
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


# -- command line -----------------------------------------------------------------------
def _other_formats() -> dict[str, str]:
    """The released formats other benchmarks' importers read: name -> shape."""
    return {name: shape for b in benchmarks().values() if b.importer for name, shape in b.own("importer", "FORMATS").items()}


def _parser() -> OneLineParser:
    shapes = {**{name: cls.shape for name, cls in FORMATS.items()}, **_other_formats()}
    parser = OneLineParser(
        prog="memorybench import",
        description="Import another project's released LoCoMo results, or the LongMemEval authors' hypothesis or judged file, "
        "into a pack, and print how far its table reproduces.",
        epilog="formats: " + "; ".join(f"{name}: {shape}" for name, shape in shapes.items()),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="the released file(s): results first or in any order (stats, responses)"
    )
    parser.add_argument("--format", required=True, dest="fmt", metavar="F", help=f"one of {', '.join(shapes)}")
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help="longmemeval formats: the dataset the answers were made over "
        "(longmemeval_oracle, longmemeval_s, longmemeval_m; the pin, as dataset=NAME)",
    )
    parser.add_argument(
        "--dataset-path",
        metavar="DATA",
        help="longmemeval formats: a local copy of that dataset (recorded with its sha256, as dataset.path=FILE)",
    )
    parser.add_argument(
        "--model", dest="model_key", metavar="KEY", help="locomo_task_eval: the model whose <KEY>_prediction to import"
    )
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help=f"the experiment name, the pack's folder under --packs (default {DEFAULT_NAME})"
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="import a file without a row for some questions its format holds (some conversations, a run that "
        "stopped) as a pack labelled partial, over the questions it holds; refused without it",
    )
    parser.add_argument("--source", metavar="REPOSITORY@COMMIT:PATH", help="where the results file was published (recorded)")
    parser.add_argument("--packs", default=DEFAULT_PACKS, help=f"packs root (paths.packs; default {DEFAULT_PACKS})")
    parser.add_argument(
        "--pins", help="pins folder with the pinned LoCoMo and punkt_tab (default: $MEMORYBENCH_PINS, user cache)"
    )
    parser.add_argument("--json", action="store_true", help="print the reproduction record as JSON instead of the table")
    return parser


def import_main(argv: Sequence[str]) -> int:
    """`memorybench import FILE [FILE...] --format F [...]`: write the pack, print the table and where the pack is."""
    ns = _parser().parse_args(list(argv))
    if ns.pins:
        from memorybench.data.pins import nltk_data_dir
        from memorybench.score.lexical import set_nltk_data_dir

        set_nltk_data_dir(nltk_data_dir(ns.pins))
    result = import_results(
        ns.files,
        ns.fmt,
        model_key=ns.model_key,
        name=ns.name,
        source=ns.source,
        packs=ns.packs,
        pins=ns.pins,
        allow_partial=ns.allow_partial,
        dataset=ns.dataset,
        dataset_path=ns.dataset_path,
    )
    owner = benchmark_of_format(ns.fmt)
    table = owner.own("importer", "format_reproduction") if owner is not None else format_reproduction
    # the table quotes the file's answers and notes: no control character reaches the terminal
    print(printable(result.reproduction.dump() if ns.json else table(result.reproduction)), end="" if ns.json else "\n")
    print(f"pack: {result.pack_root}", file=sys.stderr if ns.json else sys.stdout)
    return 0

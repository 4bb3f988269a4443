"""The LongMemEval authors' answer files as packs: `memorybench import --format longmemeval_*` (issue 32, item 5).

    memorybench import FILE --format longmemeval_hypotheses|longmemeval_judged --dataset NAME [--dataset-path DATA]
                       [--name NAME] [--allow-partial] [--source REPOSITORY@COMMIT:PATH] [--packs DIR] [--pins DIR] [--json]

The two files the authors' code writes (`memorybench.benchmarks.longmemeval.files` reads them): a
hypothesis file, JSON lines of `question_id` and `hypothesis` (run_generation.py's output,
evaluate_qa.py's input), and evaluate_qa.py's judged output, each line with `autoeval_label:
{model, label}` added. The file is read as every released file is (`importers._base.read_bytes`:
a regular file, never through a link, bounded); each row names its question by id, found in the
dataset (`--dataset NAME`: the pin; with `--dataset-path DATA` a local copy, recorded with its
sha256 as `qa dataset.path=` records it). No model call. The pack is the LoCoMo import's layout
(`memorybench.stages.import_results`):

    config.resolved.yaml, run_meta.json   answerer and memory `imported`, the dataset (pin, or path and sha256)
    predictions.jsonl                     one row per question the file answers, in the dataset's file
                                          order: the hypothesis as written (cut, with a note, past
                                          reader.max_answer_chars as any answer is)
    predictions.csv, metrics.json         the lexical diagnostics per type (rescore), as for any LongMemEval pack
    memory/manifest.jsonl, lineage.jsonl  one row per haystack held, no item: the file holds no memory
    imported/source.json                  the file (sha256), format, --source; `conversations` is empty: a
                                          row names its question, which is its own sample
    imported/rows.jsonl                   one row per line, in file order: `file_key` its question id,
                                          `file_index` its 0-based line (item, for a JSON list); a judged
                                          line's label as `reported_label` (true/false) and `reported_j`
    imported/reproduction.json            judged: per type the file's labels beside the judge folder's
                                          accuracy, and print_qa_metrics.py's text over the file's labels
                                          beside the judge folder's report (`longmemeval`)
    autorater/<judge id>/                 judged: the labels as a judge of their own (protocol `imported`,
                                          model the file's autoeval_label.model), every question judged,
                                          true CORRECT (score 1), false WRONG; its autorater_metrics.json
                                          holds the `longmemeval` block as a judged qa pack's does
    TRACE.md, REFERENCE_PIN.json, _SUCCESS

A row whose id the dataset lacks stops the import (one line naming the file, the line and the
fix); a file without a row for some of the dataset's questions is refused unless
`--allow-partial`, as for the LoCoMo formats: then the pack holds the questions it answers and
says so (`partial`). A judged file whose rows name several judge models is refused (a judge
folder holds one judge); one judged by another model than gpt-4o-2024-08-06 imports, labelled
not comparable with the authors' figures.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memorybench.answer.imported import (
    REPRODUCTION,
    ROWS,
    SOURCE,
    CategoryFigure,
    ImportedRow,
    ImportSource,
    MetricReproduction,
    Reproduction,
    RowAgreement,
    SourceFile,
    SourceRef,
)
from memorybench.data.source import load_dataset, resolve_dataset
from memorybench.data import Question, iter_questions
from memorybench.benchmark import LONGMEMEVAL
from memorybench.errors import UserError, did_you_mean
from memorybench.hashing import sha256_file
from memorybench.llm.records import ModelIdentity
from memorybench.names import resolved_path
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeIdentity
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack, pack_path
from memorybench.pack.schemas import Coverage, MemoryManifestRow, ReferencePin, dump_line
from memorybench.provenance import package_versions, utc_now
from memorybench.records import Record
from memorybench.run_id import run_identity
from memorybench.benchmarks.longmemeval.autorater import FIELD as FIGURES
from memorybench.benchmarks.longmemeval.autorater import LongMemEvalScores
from memorybench.benchmarks.longmemeval.score import JudgedQuestion, authors_report, qa_metrics
from memorybench.benchmarks.longmemeval.files import Hypothesis, JudgedHypothesis, judge_models, parse_hypotheses, parse_judged
from memorybench.stages.importers._pack import (
    IMPORTED,
    imported_prediction,
    write_import_meta,
    AlreadyImported,
    built_whole,
    close_import,
    finished_pack,
    trace_head,
    write_imported_judge,
)
from memorybench.stages.importers._base import MAX_RELEASED_DEPTH, bounded_rows, depth_at_most, read_bytes

__all__ = ["FIELD", "FORMATS", "HYPOTHESES", "JUDGED", "LongMemEvalReproduction", "format_reproduction", "import_released"]

#: the key of an import's reproduction.json that holds a judged file's table (`LongMemEvalReproduction`)
FIELD = "longmemeval"


class LongMemEvalReproduction(Record):
    """A LongMemEval judged file's table: print_qa_metrics.py's text over the file's own labels,
    beside the report of the judge folder that holds them (`autorater_metrics.json`)."""

    #: the dataset the question types come from (print_qa_metrics.py reads them from its reference file)
    dataset: str
    #: what print_qa_metrics.py prints over the file's labels (`memorybench.benchmarks.longmemeval.score.authors_report`)
    authors_report: str
    #: the pack's: the judge folder's `longmemeval.passes[0].report`
    report: str
    #: the two texts are the same, byte for byte
    equal: bool
    #: whether the labels are comparable with the authors' published figures, and why (not)
    comparable: bool
    comparability: str


HYPOTHESES = "longmemeval_hypotheses"
JUDGED = "longmemeval_judged"
#: every LongMemEval format `--format` takes, with its shape for the help text and errors
FORMATS = {
    HYPOTHESES: 'JSON lines {"question_id", "hypothesis"} (the LongMemEval authors\' hypothesis file; needs --dataset)',
    JUDGED: 'JSON lines {"question_id", "hypothesis", "autoeval_label": {"model", "label"}} (evaluate_qa.py\'s output; '
    "needs --dataset)",
}
ANSWERER = MEMORY = IMPORTED
LABEL_FIELD = "autoeval_label.label"

Row = Hypothesis | JudgedHypothesis


def import_released(
    paths: Sequence[Path],
    fmt: str,
    *,
    dataset: str | None,
    dataset_path: str | os.PathLike[str] | None,
    name: str,
    source: SourceRef | None,
    packs: str | os.PathLike[str],
    pins: str | os.PathLike[str] | None,
    allow_partial: bool,
) -> tuple[Path, ImportSource, Reproduction, bool]:
    """Import one LongMemEval file of format `fmt` into a pack: (its folder, source record,
    reproduction record, whether it was written now: false when found finished)."""
    if len(paths) != 1:
        raise UserError(
            f"a {fmt} import reads one file, got {len(paths)} ({', '.join(p.name for p in paths)}); import each on its own"
        )
    path = paths[0]
    raw = read_bytes(path)
    listed = fmt == HYPOTHESES and raw.lstrip().startswith(b"[")
    try:
        rows: list[Row] = list(parse_judged(raw, str(path)) if fmt == JUDGED else parse_hypotheses(raw, str(path)))
    except RecursionError:
        raise UserError(
            f"released file {path} nests arrays and objects too deep; the authors' files are flat: pass the file as written"
        ) from None
    model = _judge_model(rows, path) if fmt == JUDGED else None
    data_path, data_info = _dataset(dataset, dataset_path, pins, fmt)
    every = list(iter_questions(load_dataset(data_path, dataset)))
    by_id = {q.question_id: q for q in every}
    unknown = [r for r in rows if r.question_id not in by_id]
    if unknown:
        first = unknown[0]
        more = f" (and {len(unknown) - 1} more rows of questions it lacks)" if len(unknown) > 1 else ""
        raise UserError(
            f"{_where(path, first.line, listed)}: question {first.question_id} is not in {data_path.name} ({dataset}, "
            f"{len(every)} questions){more}; pass the dataset the answers were made over (--dataset NAME, "
            "--dataset-path FILE), or import a file of its questions only"
        )
    answered = {r.question_id for r in rows}
    partial = _partial([q for q in every if q.question_id not in answered], every, path, fmt, dataset, allow_partial)
    rows, notes = _cleaned(rows, path, listed)

    sha = sha256_file(path)
    read = [SourceFile(role="results", name=path.name, sha256=sha, bytes=path.stat().st_size)]
    packs_root = Path(packs).expanduser().resolve()
    cfg = {
        "name": name,
        "max_questions": None,
        "dataset": {"name": dataset, "path": None if dataset_path is None else str(data_path)},
        "memory": {"name": MEMORY},
        "answerer": {"name": ANSWERER, "format": fmt, "model": fmt, "model_key": None, "files": {"results": sha}},
        "paths": {"packs": str(packs_root), "pins": None if pins is None else str(pins)},
    }
    rid, config_sha = run_identity(cfg)
    final = pack_path(packs_root, name, rid)
    done = finished_pack(final)
    if done is not None:
        print(f"{fmt} file already imported: {final} is finished; its table below", file=sys.stderr)
        return final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), False
    try:
        with built_whole(final, rid) as work:
            record = ImportSource(
                format=fmt,
                files=read,
                source=source,
                rows=len(rows),
                conversations={},
                tie_broken=0,
                notes=[*notes, *_partial_notes(partial)],
                partial=partial,
            )
            held = [q for q in every if q.question_id in answered]
            reproduction = _write_pack(
                work, cfg, rid, config_sha, data_info, held, len(every), rows, record, model, listed, dataset
            )
    except AlreadyImported:  # another import of the same file finished first: its pack, as a rerun finds it
        done = PackReader.open(final)
        print(
            f"{fmt} file already imported: {final} is finished (by another import at the same time); its table below",
            file=sys.stderr,
        )
        return final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), False
    return final, record, reproduction, True


def _where(path: Path, line: int, listed: bool) -> str:
    return f"{path}: item {line}" if listed else f"{path}:{line}"


def _judge_model(rows: Sequence[Row], path: Path) -> str:
    """The one judge model a judged file names (a judge folder holds one judge's labels)."""
    models = judge_models(rows)  # type: ignore[arg-type]
    if len(models) > 1:
        other = next(r for r in rows if r.model != rows[0].model)  # type: ignore[union-attr]
        raise UserError(
            f"{path}:{other.line}: question {other.question_id} was judged by {other.model}, line {rows[0].line} by "  # type: ignore[union-attr]
            f"{rows[0].model} ({len(models)} judge models in one file); a pack's judge folder holds one judge's "  # type: ignore[union-attr]
            "labels: split the file by autoeval_label.model and import each part"
        )
    return models[0]


def _dataset(
    dataset: str | None, dataset_path: str | os.PathLike[str] | None, pins: Any, fmt: str
) -> tuple[Path, dict[str, Any]]:
    names = ", ".join(LONGMEMEVAL.dataset_names)
    if dataset is None:
        raise UserError(
            f"a {fmt} import needs --dataset NAME, the LongMemEval file the answers were made over ({names}); "
            "add --dataset-path FILE for a local copy of it"
        )
    if dataset not in LONGMEMEVAL.dataset_names:
        raise UserError(f"--dataset {dataset!r} is not a LongMemEval dataset. {did_you_mean(dataset, LONGMEMEVAL.dataset_names)}")
    if dataset_path is not None and not resolved_path(dataset_path, "--dataset-path").is_file():
        raise UserError(f"--dataset-path {dataset_path} is not a file; pass the {dataset} file the answers were made over")
    return resolve_dataset(OmegaConf.create({"name": dataset, "path": None if dataset_path is None else str(dataset_path)}), pins)


def _partial(
    missing: Sequence[Question], every: Sequence[Question], path: Path, fmt: str, dataset: str | None, allow_partial: bool
) -> Coverage | None:
    """None for a file that answers every question; else one line naming --allow-partial, or with
    it what the pack holds and lacks (each haystack is one question's: a sample is a question)."""
    if not missing:
        return None
    by_type = Counter(q.category for q in sorted(missing, key=lambda q: q.category))
    if not allow_partial:
        types = ", ".join(f"{LONGMEMEVAL.category_names[c]}: {n}" for c, n in by_type.items())
        raise UserError(
            f"{path.name} has no answer for {len(missing)} of the {len(every)} questions of {dataset} ({types}; first: "
            f"{missing[0].question_id} {missing[0].question!r}): a partial file; pass --allow-partial to import it as a pack "
            "labelled partial over the questions it answers, or import the file of a full run"
        )
    gone = {q.question_id for q in missing}
    held = [q.sample_id for q in every if q.question_id not in gone]
    return Coverage(
        reason=f"the {fmt} file has no answer for {len(missing)} of the {len(every)} questions of {dataset} (imported with --allow-partial)",
        questions=len(held),
        of=len(every),
        conversations=held,
        absent_by_conversation={q.sample_id: 1 for q in missing},
        absent_by_category={str(c): n for c, n in by_type.items()},
        absent_question_ids=[q.question_id for q in missing],
    )


def _partial_notes(partial: Coverage | None) -> list[str]:
    if partial is None:
        return []
    types = ", ".join(f"{LONGMEMEVAL.category_names[int(c)]}: {n}" for c, n in partial.absent_by_category.items())
    return [
        f"Partial: {partial.reason}. The pack holds {partial.questions} of {partial.of} questions; absent by type {types} "
        "(run_meta.partial lists them). Its figures are over the questions held: a figure published for all 500 is not "
        "comparable with them."
    ]


def _cleaned(rows: list[Row], path: Path, listed: bool) -> tuple[list[Row], list[str]]:
    """The rows a pack can hold: other fields nested at most MAX_RELEASED_DEPTH deep, NaN and
    Infinity made null (strict JSON holds neither), each hypothesis cut to reader.max_answer_chars
    as a qa answer is (`bounded_rows`); a note for each kind of change."""
    for row in rows:
        if not depth_at_most(dict(row.extra)):
            raise UserError(
                f"{_where(path, row.line, listed)}: question {row.question_id} nests its other fields more than "
                f"{MAX_RELEASED_DEPTH} deep; pass the file as written"
            )
    return bounded_rows(rows, id_field="question_id", answer_field="hypothesis", answers="hypotheses")


def _write_pack(
    root: Path,
    cfg: dict[str, Any],
    rid: str,
    config_sha: str,
    data_info: dict[str, Any],
    held: Sequence[Question],
    total: int,
    rows: Sequence[Row],
    source: ImportSource,
    model: str | None,
    listed: bool,
    dataset: str | None,
) -> Reproduction:
    from memorybench.stages.rescore import rescore

    pack = RunPack(root)
    results = source.files[0]
    meta = write_import_meta(
        pack,
        cfg,
        run_id=rid,
        config_sha256=config_sha,
        dataset=str(dataset),
        data=data_info,
        benchmark=LONGMEMEVAL,
        question_count=len(held),
        questions_total=total,
        notes=[
            f"Imported from {results.name} ({source.format}, sha256 {results.sha256}): the LongMemEval authors' format; no "
            "model call was made here.",
            *source.notes,
        ],
        partial=source.partial,
    )
    started, commit, dirty = meta.started_at, meta.git_commit, meta.git_dirty
    row_of = {r.question_id: r for r in rows}
    pack.write_text(
        layout.PREDICTIONS,
        "".join(dump_line(imported_prediction(q, i, row_of[q.question_id].hypothesis)) for i, q in enumerate(held)),
    )
    pack.write_text(
        layout.MEMORY_MANIFEST,
        "".join(
            dump_line(
                MemoryManifestRow(
                    sample_id=q.sample_id,
                    method=MEMORY,
                    question_dependent=False,
                    item_count=0,
                    metadata={"note": "the released file holds answers, not the memory they were made from"},
                )
            )
            for q in held
        ),
    )
    pack.write_text(layout.LINEAGE, "")
    category = {q.question_id: q.category for q in held}
    imported = [
        ImportedRow(
            question_id=r.question_id,
            sample_id=r.question_id,
            category=category[r.question_id],
            file_key=r.question_id,
            file_index=r.line - 1,
            prediction=r.hypothesis,
            reported_label=getattr(r, "label", None),
            reported_j=None if model is None else int(r.label),  # type: ignore[union-attr]
            reported_extra={**r.extra, **({"autoeval_label": {"model": r.model, "label": r.label}} if model else {})},  # type: ignore[union-attr]
        )
        for r in rows
    ]
    pack.write_text(ROWS, "".join(dump_line(r) for r in imported))
    pack.write_text(SOURCE, source.dump())
    rescore(root)  # predictions.csv and metrics.json, as for any pack
    pack.write_json(layout.REFERENCE_PIN, ReferencePin(refs={}))
    judge_id = None
    if model is not None:
        judge_id = _write_judge(root, rid, held, row_of, source, model, started, commit, dirty)
    reproduction = _reproduction(root, rid, source, imported, held, judge_id, dataset)
    close_import(
        root,
        pack,
        meta,
        reproduction,
        lambda: _trace_md(rid, source, imported[0], [q.question_id for q in held], judge_id, listed, dataset),
    )
    return reproduction


def _write_judge(
    root: Path,
    rid: str,
    held: Sequence[Question],
    row_of: dict[str, Row],
    source: ImportSource,
    model: str,
    started: str,
    commit: str | None,
    dirty: bool | None,
) -> str:
    """The file's labels as a judge of their own: `autorater/<judge id>/`, the autorater's records.

    Protocol `imported`, the judge model the file names, and the file's sha256 where a judge's
    prompt sha256 would be: the labels were given, not asked, so the file names this judge."""
    results = source.files[0]
    identity = JudgeIdentity(
        protocol="imported", model=model, prompt_sha256=results.sha256, temperature=0.0, response_format=None
    )
    judge_id = identity.judge_id
    meta = AutoraterMeta(
        judge_id=judge_id,
        identity=identity,
        run_id=rid,
        passes=1,
        judge_config={
            "name": "imported",
            "protocol": "imported",
            "format": source.format,
            "label_field": LABEL_FIELD,
            "model": model,
        },
        judge_settings={},
        judge=ModelIdentity(role="judge", provider="imported", requested=model),
        judge_model_sent=model,
        prompt={"name": f"{LABEL_FIELD} of {results.name}", "sha256": results.sha256, "stored_at": None},
        response_format=None,
        package_versions=package_versions(),
        git_commit=commit,
        git_dirty=dirty,
        started_at=started,
        ended_at=utc_now(),
        notes=[
            f"Labels from the file's own autoeval_label (evaluate_qa.py's output, judge {model} as the file records it); no "
            "judge was called here. true is CORRECT (score 1), false WRONG, as the longmemeval protocol scores a yes."
        ],
    )
    verdicts = []
    for index, q in enumerate(held):
        label = row_of[q.question_id].label  # type: ignore[union-attr]
        verdicts.append(
            AutoraterVerdict(
                question_id=q.question_id,
                sample_id=q.sample_id,
                index=index,
                category=q.category,
                pass_=1,
                status="CORRECT" if label else "WRONG",
                label_raw="true" if label else "false",
                label_standard=True,
                score=int(label),
                judge_prompt_sha256=results.sha256,
            )
        )

    write_imported_judge(root, meta, verdicts)
    return judge_id


def _mean(values: Sequence[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _reproduction(
    root: Path,
    rid: str,
    source: ImportSource,
    imported: Sequence[ImportedRow],
    held: Sequence[Question],
    judge_id: str | None,
    dataset: str | None,
) -> Reproduction:
    """A hypothesis file has nothing to reproduce (no score); a judged file: per type the file's
    labels beside the judge folder's accuracy, and print_qa_metrics.py's text over its labels
    beside the folder's report."""
    results = source.files[0]
    if judge_id is None:
        return Reproduction(
            run_id=rid,
            format=source.format,
            results_sha256=results.sha256,
            metrics={},
            notes=[
                *source.notes,
                "A hypothesis file holds answers, no score: judge them as the authors do with "
                "`memorybench autorater PACK judge=longmemeval`.",
            ],
            partial=source.partial,
        )
    judge = PackReader.open(root).autorater_metrics(judge_id)
    assert judge is not None and judge.block(FIGURES) is not None
    lme = LongMemEvalScores.model_validate(judge.block(FIGURES))
    qtype = {q.question_id: str(q.question_type) for q in held}
    labels = [JudgedQuestion(r.question_id, qtype[r.question_id], bool(r.reported_label)) for r in imported]
    theirs = authors_report(qa_metrics(labels))
    ours = lme.passes[0].report
    scores = {v.question_id: v.score for v in PackReader.open(root).verdicts(judge_id)}
    bad = [r for r in imported if scores.get(r.question_id) != r.reported_j]
    present = sorted({r.category for r in imported})
    by_category = {}
    for c in present:
        these = [r.reported_j for r in imported if r.category == c]
        by_category[str(c)] = CategoryFigure(
            rows=len(these), ours=lme.accuracy_by_type[LONGMEMEVAL.category_names[c]], reported=_mean(these)
        )  # type: ignore[arg-type]
    j = MetricReproduction(
        label="LongMemEval judge accuracy per question type (a label true: 1)",
        rows=RowAgreement(
            reported_field=LABEL_FIELD,
            compared="the file's label (true: 1) equals the judge folder's verdict score",
            rows=len(imported),
            equal=len(imported) - len(bad),
            mismatched=len(bad),
        ),
        by_category=by_category,
        overall=CategoryFigure(rows=len(imported), ours=lme.overall_accuracy, reported=_mean([r.reported_j for r in imported])),  # type: ignore[misc]
        overall_categories=present,
    )
    return Reproduction(
        run_id=rid,
        format=source.format,
        results_sha256=results.sha256,
        judge_id=judge_id,
        metrics={"j": j},
        notes=list(source.notes),
        partial=source.partial,
        **{
            FIELD: LongMemEvalReproduction(
                dataset=str(dataset),
                authors_report=theirs,
                report=ours,
                equal=theirs == ours,
                comparable=lme.comparable,
                comparability=lme.comparability,
            )
        },
    )


def _trace_md(
    rid: str,
    source: ImportSource,
    first: ImportedRow,
    predictions: Sequence[str],
    judge_id: str | None,
    listed: bool,
    dataset: str | None,
) -> str:
    """TRACE.md: the file's first row walked to every pack file."""
    results = source.files[0]
    line = predictions.index(first.question_id) + 1
    where = f"item {first.file_index + 1}" if listed else f"line {first.file_index + 1}"
    lines = [
        *trace_head(rid, source, first.question_id),
        "## 1. Released row",
        f"- `{results.name}` {where}: question_id `{first.question_id}`, hypothesis {first.prediction!r}"
        + (f", autoeval_label.label {json.dumps(first.reported_label)}." if judge_id else "."),
        "",
        "## 2. Found in the dataset",
        f"- `{first.question_id}` is a question of `{dataset}` (run_meta.json `data`), its own haystack's sample; its type "
        f"is category {first.category} ({LONGMEMEVAL.category_names[first.category]}).",
        "",
        "## 3. Stored",
        f"- `predictions.jsonl` line {line}; `imported/rows.jsonl` line 1 (the row as the file has it).",
        "- `predictions.csv` and `metrics.json`: the lexical diagnostics (rescore, as for any LongMemEval pack).",
    ]
    if judge_id is not None:
        lines += [
            f"- The file's label: `autorater/{judge_id}/autorater_verdicts.jsonl` line {line}; the per-type table in its "
            "autorater_metrics.json (`longmemeval`).",
            "",
            "## 4. Reproduction",
            "- `imported/reproduction.json`: per type the file's labels beside the judge folder's, and print_qa_metrics.py's "
            "text over the file's labels beside the folder's report.",
        ]
    return "\n".join(lines) + "\n"


def format_reproduction(rep: Reproduction) -> str:
    """What `memorybench import` prints for a LongMemEval file: the per-type table and the authors' text."""
    lines = [f"import ({rep.format}, results sha256 {rep.results_sha256[:12]})"]
    if rep.partial is not None:
        lines.append(
            f"PARTIAL: {rep.partial.questions} of {rep.partial.of} questions; figures published for all of them are "
            "not comparable with these"
        )
    j, block = rep.metrics.get("j"), rep.block(FIELD)
    lme = LongMemEvalReproduction.model_validate(block) if block is not None else None
    if j is not None and j.rows is not None and lme is not None:
        lines += [
            "",
            f"{j.label} ({j.rows.reported_field}): {j.rows.equal} of {j.rows.rows} rows equal the judge folder's"
            + (f", {j.rows.mismatched} differ" if j.rows.mismatched else ""),
        ]

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.4f}"

        lines.append(f"  {'type':<30}{'n':>5}  {'ours':>7}  {'file':>7}")
        for c, f in j.by_category.items():
            lines.append(
                f"  {c + ' ' + LONGMEMEVAL.category_names[int(c)]:<30}{f.rows:>5}  {fmt(f.ours):>7}  {fmt(f.reported):>7}"
            )
        lines.append(f"  {'overall':<30}{j.overall.rows:>5}  {fmt(j.overall.ours):>7}  {fmt(j.overall.reported):>7}")
        lines += [
            "",
            f"print_qa_metrics.py over the file's labels (question types from {lme.dataset}):",
            lme.authors_report.rstrip("\n"),
            "",
            "the pack's report (its judge folder's autorater_metrics.json) is "
            + ("the same text, byte for byte" if lme.equal else "DIFFERENT:\n" + lme.report.rstrip("\n")),
            lme.comparability,
        ]
    lines += rep.notes
    return "\n".join(lines)

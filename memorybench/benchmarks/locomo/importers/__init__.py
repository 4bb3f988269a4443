"""LoCoMo's importers of other projects' released results: `memorybench import --format F`, F one of `FORMATS`.

    memorybench import FILE [FILE...] --format F [--model KEY] [--name NAME] [--allow-partial]
                       [--source REPOSITORY@COMMIT:PATH] [--packs DIR] [--pins DIR] [--json]

The benchmark record names this module (`importer`, its `released_formats`): the core's import
stage (`memorybench.stages.import_results`) parses the command and calls `import_released`. No
model call. The format's reader (one module each) reads the files:

    mem0_evals        mem0's evals.py output (scores, judge labels; category 5 dropped)
    mem0_search       mem0's search output, evals.py's input (answers only)
    locomo_task_eval  LoCoMo's task_eval output (`<model>_prediction`, `<model>_f1`) and its _stats.json
    zep               Zep's grades (answers and judge labels) and its responses (durations)
    core              CORE's per-conversation evaluation files (answers, judge labels, stated J)
    memos_eval        MemOS/EverMemOS evaluation output (answers judged several times: each run, their
                      mean (the file's accuracy), the majority vote as the row label)
    amb_locomo        AMB's per-question output (answers, its judge's `correct`, context tokens and
                      retrieval times; its accuracy and averages recomputed: `amb.py`)

Every row is mapped onto a question id of the pinned LoCoMo (`mapping.py`: by conversation,
question text, gold, order; by the id a file names, as AMB's, with its text, gold and category
checked): a row that maps to none or contradicts the dataset stops the import, all counted in
one error. The pack is a qa pack's layout, `<packs>/<name>/runs/<run id>/`, the run id hashing
the format, the model key and the sha256 of every file read (`import_pack.py` writes it):

    config.resolved.yaml, run_meta.json   answerer `imported`, memory `imported`, the pinned data
    predictions.jsonl                     one row per question the file answers, in the dataset's
                                          file order; a category the format leaves out (mem0, Zep,
                                          CORE and AMB drop 5) is not the pack's (run_meta.categories)
    predictions.csv, metrics.json         our LoCoMo F1 (rescore), as for any pack
    memory/manifest.jsonl, lineage.jsonl  one row per conversation held, no item: the file holds no memory
    imported/source.json                  the files (sha256), format, --source, how rows were mapped
    imported/rows.jsonl                   per released row: the file's own scores (`reported_*`) beside ours
    imported/reproduction.json            the table printed: rows reproduced, figures per category
                                          (`reproduction.py`), and a format's own stated figures (`own`)
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

The pack is written in a temporary folder beside its place and moved there whole (the core's
`stages/importers/_pack.py`), so a pack at its place is always finished; importing the same
files again finds it and prints its table. Every later stage reads it: rescore, autorater with
our own judge (another folder under autorater/), compare, aggregate, report, track, verify.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memorybench.answer.imported import REPRODUCTION, SOURCE, ImportSource, Reproduction, SourceFile, SourceRef
from memorybench.benchmark import benchmarks
from memorybench.benchmarks.locomo import BENCHMARK
from memorybench.benchmarks.locomo.importers.amb import AmbLocomo
from memorybench.benchmarks.locomo.importers.core import Core
from memorybench.benchmarks.locomo.importers.import_pack import config, write_pack
from memorybench.benchmarks.locomo.importers.mapping import map_rows
from memorybench.benchmarks.locomo.importers.mem0 import Mem0Evals, Mem0Search
from memorybench.benchmarks.locomo.importers.memos import MemosEval
from memorybench.benchmarks.locomo.importers.released import Released, ReleasedFormat
from memorybench.benchmarks.locomo.importers.reproduction import format_reproduction
from memorybench.benchmarks.locomo.importers.task_eval import LocomoTaskEval
from memorybench.benchmarks.locomo.importers.zep import Zep
from memorybench.data import Conversation, Question
from memorybench.data.source import resolve_dataset
from memorybench.errors import UserError, did_you_mean
from memorybench.hashing import sha256_file
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import pack_path
from memorybench.pack.schemas import Coverage
from memorybench.run_id import run_identity
from memorybench.stages.importers._base import finite, is_finite_number
from memorybench.stages.importers._pack import AlreadyImported, built_whole, finished_pack

__all__ = ["FORMATS", "MODEL_FORMATS", "READERS", "format_reproduction", "import_released", "released_format"]

#: every LoCoMo format `--format` takes, by name: its reader
READERS: dict[str, type[ReleasedFormat]] = {
    f.name: f  # type: ignore[misc]
    for f in (Mem0Evals, Mem0Search, LocomoTaskEval, Zep, Core, MemosEval, AmbLocomo)
}
#: the importer's formats and their shapes, as the core's `--help` lists them (the record's `importer` contract)
FORMATS: dict[str, str] = {name: reader.shape for name, reader in READERS.items()}
#: the formats whose files hold several models' answers (`--model KEY` names one): the core gives
#: this importer `model_key`, and each reader answers a `--model` its format does not take
MODEL_FORMATS = (LocomoTaskEval.name,)


def released_format(name: str) -> ReleasedFormat:
    """The reader of format `name`, or a one-line UserError listing the formats."""
    if name not in READERS:
        raise UserError(f"unknown --format {name!r}. {did_you_mean(name, READERS)}")
    return READERS[name]()


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
    model_key: str | None = None,
) -> tuple[Path, ImportSource, Reproduction, bool]:
    """Import released LoCoMo files of format `fmt` into a pack: (its folder, its source and
    reproduction records, whether it was written now). The rows map onto the pinned locomo10;
    a file without a row for some questions its format holds is refused unless `allow_partial`."""
    if dataset is not None or dataset_path is not None:
        raise UserError(
            f"--dataset and --dataset-path are for {', '.join(_dataset_formats())}; a {fmt} file maps onto the pinned locomo10"
        )
    reader = released_format(fmt)
    released = _answers_bounded(_finite_only(reader.read(paths, model_key)))
    if not released.rows:
        raise UserError(f"{paths[0]} holds no answered row; nothing to import")
    results_path = released.files[0][1]
    data_path, data_info = resolve_dataset(OmegaConf.create({"name": "locomo10", "path": None}), pins)
    conversations = BENCHMARK.load(data_path)
    mapped = map_rows(released.rows, conversations, results_path)
    dropped = [q for q in mapped.absent if q.category in released.drops]  # the format never holds them: not partial
    partial = _partial(mapped.absent, released, conversations, results_path, fmt, allow_partial)

    read = [
        SourceFile(role=role, name=path.name, sha256=sha256_file(path), bytes=path.stat().st_size)  # type: ignore[arg-type]
        for role, path in released.files
    ]
    packs_root = Path(packs).expanduser().resolve()
    cfg = config(name, fmt, released.model_key, read, packs_root, pins)
    rid, config_sha = run_identity(cfg)
    final = pack_path(packs_root, name, rid)
    done = finished_pack(final)
    if done is not None:
        print(f"{fmt} files already imported: {final} is finished; its table below", file=sys.stderr)
        return final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), False
    try:
        with built_whole(final, rid) as work:
            source_record = ImportSource(
                format=fmt,
                model_key=released.model_key,
                files=read,
                source=source,
                rows=len(released.rows),
                conversations=mapped.conversations,
                tie_broken=mapped.tie_broken,
                absent={str(c): n for c, n in sorted(Counter(q.category for q in dropped).items())},
                absent_question_ids=[q.question_id for q in dropped],
                notes=[*released.notes, *_absent_notes(dropped, fmt), *_partial_notes(partial, fmt)],
                partial=partial,
            )
            reproduction = write_pack(
                work, cfg, rid, config_sha, data_path, data_info, conversations, released, mapped.question_ids, source_record
            )
    except AlreadyImported:  # another import of the same files finished first: its pack, as a rerun finds it
        done = PackReader.open(final)
        print(
            f"{fmt} files already imported: {final} is finished (by another import at the same time); its table below",
            file=sys.stderr,
        )
        return final, done.record(SOURCE, ImportSource), done.record(REPRODUCTION, Reproduction), False
    return final, source_record, reproduction, True


def _dataset_formats() -> list[str]:
    """The other benchmarks' released formats: theirs name a dataset (`--dataset`), ours map onto locomo10."""
    return [f for b in benchmarks().values() if b.name != BENCHMARK.name for f in b.released_formats]


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

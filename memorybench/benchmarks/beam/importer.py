"""Others' BEAM results as packs: `memorybench import --format cognee_beam|amb_beam` (issue 42, item 5).

    memorybench import RUN [RUN...] [CONFIG] [SUMMARY] --format cognee_beam [--dataset beam_128k] [--name NAME] ...
    memorybench import FILE --format amb_beam [--dataset NAME --dataset-path DATA] [--allow-partial] ...

`released_files.py` reads the files (`.gz` or not). Each row is found in the tier by its
question text (unique in the pinned tier), and the ability and, for AMB, the position in the
ability's list the file names must be that question's; the rows of one file conversation must
all be one conversation of ours (`beam-100K-2`): every row that is not stops the import, in one
line naming the file, the row and the fix. No model call. The pack is the LongMemEval import's
layout (`memorybench.benchmarks.longmemeval.importer`), one pack per released run:

    config.resolved.yaml, run_meta.json   answerer and memory `imported`; the dataset (beam_128k: the
                                          pin; another tier: --dataset-path, recorded with its sha256)
    predictions.jsonl                     one row per question the file answers, in the tier's order
    predictions.csv, metrics.json         the lexical diagnostics, as for any BEAM pack
    memory/manifest.jsonl, lineage.jsonl  one row per conversation held, no item
    imported/source.json                  the results file (and a summary, role `stats`), --source,
                                          the file conversations and ours
    imported/rows.jsonl                   one row per released row, in file order: `file_key` its
                                          conversation, `reported_label` its score as written,
                                          `reported_extra` every other field
    imported/reproduction.json            per ability, the file's scores beside the judge folder's;
                                          `own`: the runs and the figures the release states, each
                                          beside the same arithmetic over the files and beside the packs
    autorater/<judge id>/                 the file's scores as a judge of their own (protocol `imported`,
                                          the release's judge model), labelled with its profile
    TRACE.md, REFERENCE_PIN.json, _SUCCESS

Cognee (`cognee_beam`): each run file is a pack (the answers are made again each run); the
cross-run summary and the config, given beside the runs, are read and recorded in every
pack's reproduction: the per-run means, and the summary's mean and run sd (overall and per
question type) recomputed with aggregate_cross_run.py's arithmetic from the files' per-question
values, bit for bit, beside the same from the packs' judge folders. Their scores are the
`beam_paper` profile (metrics/beam_rubric.py keeps the judge's 0.5) but not its event ordering
(Cognee scores it with the rubric judge too, not tau_norm) and not its requests (their prompt has
the question filled in, as our `beam` protocol); the judge is openai/gpt-5 (REPORT.md, Appendix
A: neither the run files nor the config name it). The runs are over one conversation of the
tier, so every pack is partial (20 of 400 questions): the format holds one conversation per
file, so no --allow-partial is asked unless a run lacks some of that conversation's questions.

AMB (`amb_beam`): one file, one pack; `--dataset` defaults to the file's split (100k:
beam_128k). Its `score` is AMB's own nugget scoring (dataset/beam.py `score_result`: mem0's
nugget-judge prompt per rubric item, 0.5 kept, event ordering by its rubric items as "should
mention" nuggets, no tau), labelled `mem0_nugget`, its judge the file's `judge_llm`; its
`accuracy` is the mean of the rows' scores, rows without one (AMB scores no answer made from an
empty context) left out, as our judge folder leaves them out (FAILED, counted). A file from
before AMB scored holds only `correct` (its per-ability binary judge): profile `amb_binary`,
scores 1/0. A file that lacks some questions of its tier is refused unless --allow-partial.

Every imported pack is judged again by our judge on request, as a qa pack is:
`memorybench autorater PACK judge=beam_official` reads the rubrics of the tier run_meta names.

Here: the formats, finding the rows in the tier, what each format's import plans. The plan and
the reproduction's records are `import_plan.py`, the stated figures recomputed `import_figures.py`,
the packs written `import_pack.py`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memorybench.answer.imported import ImportSource, Reproduction, SourceRef
from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.data import BeamQuestion, BeamTier, read_tier
from memorybench.benchmarks.beam.import_figures import amb_stated, cognee_stated
from memorybench.benchmarks.beam.import_pack import write_all
from memorybench.benchmarks.beam.import_plan import AMB, COGNEE, BeamImport, ImportPlan, ImportRun, Mapped, format_reproduction
from memorybench.benchmarks.beam.pins import COGNEE_CODE
from memorybench.benchmarks.beam.released_files import AMB_SPLITS, BeamRow, parse_amb, parse_cognee
from memorybench.data.source import resolve_dataset
from memorybench.errors import UserError, did_you_mean
from memorybench.pack.schemas import Coverage
from memorybench.stages.importers._pack import AlreadyImported

__all__ = ["AMB", "COGNEE", "FORMATS", "BeamImport", "format_reproduction", "import_released"]

#: every BEAM format `--format` takes, with its shape for the help text and errors
FORMATS = {
    COGNEE: (
        "Cognee's BEAM run files (JSON lists, .json[.gz]: per question question, answer, question_type, question_idx, "
        "rubric, metrics.beam_rubric {score, reason}), with its *_config.json and *_cross_run_summary.json beside them "
        "(--dataset defaults to beam_128k; one pack per run)"
    ),
    AMB: (
        "AMB's BEAM output (outputs/beam/<system>/<mode>/<split>.json[.gz]: an object with split, accuracy, judge_llm and "
        "results[] {query_id, query, answer, correct, score, meta}; --dataset defaults to the split's tier)"
    ),
}
#: Cognee's judge model on the 128K tier: REPORT.md, Appendix A ("Rubric judge, in a separate call: openai/gpt-5")
COGNEE_JUDGE = "openai/gpt-5"
COGNEE_JUDGE_NOTE = (
    "openai/gpt-5, as Cognee's REPORT.md (Appendix A) states for the 100K runs; neither the run files nor "
    "the packaged config name the judge"
)

# -- mapping the rows onto the tier -------------------------------------------------------------------------


def _map_rows(rows: Sequence[BeamRow], tier: BeamTier, path: Path, dataset: str) -> Mapped:
    """Each row's question of the tier: by its text (then whitespace-insensitive), its ability and
    (AMB) its position in the ability's list; a file conversation's rows all in one of ours."""
    exact: dict[str, list[BeamQuestion]] = {}
    loose: dict[str, list[BeamQuestion]] = {}
    for q in tier.questions.values():
        exact.setdefault(q.question, []).append(q)
        loose.setdefault(" ".join(q.question.split()), []).append(q)
    candidates: dict[int, list[BeamQuestion]] = {}
    unknown: list[BeamRow] = []
    for row in rows:
        found = exact.get(row.question) or loose.get(" ".join(row.question.split())) or []
        found = [
            q
            for q in found
            if (row.ability is None or q.ability == row.ability) and (row.ability_index is None or q.index == row.ability_index)
        ]
        if not found:
            unknown.append(row)
        candidates[row.index] = found
    if unknown:
        first = unknown[0]
        more = f" (and {len(unknown) - 1} more rows)" if len(unknown) > 1 else ""
        text = first.question if len(first.question) <= 80 else first.question[:77] + "..."
        raise UserError(
            f"{path}: row {first.index} ({first.file_id}, {first.ability}) asks {text!r}, which no question of "
            f"{dataset} ({tier.path.name}, {len(tier.questions)} questions) asks with that ability{more}; pass the "
            "tier the answers were made over (--dataset NAME, --dataset-path FOLDER)"
        )
    conversations: dict[str, str] = {}
    for key in dict.fromkeys(r.key for r in rows):
        these = [r for r in rows if r.key == key]
        common = set.intersection(*({q.sample_id for q in candidates[r.index]} for r in these))
        if len(common) != 1:
            names = sorted({q.sample_id for r in these for q in candidates[r.index]})
            raise UserError(
                f"{path}: the rows of conversation {key!r} ask questions of {', '.join(names)}"
                + (" (each of several)" if len(common) > 1 else "")
                + "; a file conversation is one of "
                f"{dataset}'s: pass the file as released, over the tier it was made over"
            )
        conversations[key] = common.pop()
    questions: dict[int, BeamQuestion] = {}
    taken: dict[str, BeamRow] = {}
    for row in rows:
        q = next(q for q in candidates[row.index] if q.sample_id == conversations[row.key])
        if q.question_id in taken:
            raise UserError(
                f"{path}: rows {taken[q.question_id].index} and {row.index} both answer {q.question_id}; "
                "a run answers each question once: pass the file as released"
            )
        taken[q.question_id] = row
        questions[row.index] = q
    notes = []
    loose_rows = [r for r in rows if r.question not in exact]
    if loose_rows:
        notes.append(
            f"{len(loose_rows)} rows' question text differs from the tier's in whitespace only (first row "
            f"{loose_rows[0].index}); found by the text with whitespace collapsed"
        )
    other_rubric = [r for r in rows if r.rubric is not None and r.rubric != questions[r.index].rubric]
    if other_rubric:
        notes.append(
            f"{len(other_rubric)} rows carry a rubric other than the tier's (first {questions[other_rubric[0].index].question_id}); "
            "the pack's questions and any judge of ours use the tier's"
        )
    return Mapped(questions, conversations, notes)


def _coverage(held: set[str], tier: BeamTier, reason: str) -> Coverage | None:
    """What a pack of `held` questions lacks of the tier (None: nothing)."""
    every = [q for c in tier.conversations for q in c.questions]
    missing = [q for q in every if q.question_id not in held]
    if not missing:
        return None
    ability = Counter(q.category for q in sorted(missing, key=lambda q: q.category))
    return Coverage(
        reason=reason,
        questions=len(every) - len(missing),
        of=len(every),
        conversations=list(dict.fromkeys(q.sample_id for q in every if q.question_id in held)),
        absent_by_conversation=dict(Counter(q.sample_id for q in missing)),
        absent_by_category={str(c): n for c, n in ability.items()},
        absent_question_ids=[q.question_id for q in missing],
    )


def _dataset(
    dataset: str | None, dataset_path: str | os.PathLike[str] | None, pins: Any, fmt: str
) -> tuple[Path, dict[str, Any]]:
    names = BENCHMARK.dataset_names
    if dataset not in names:
        raise UserError(f"--dataset {dataset!r} is not a BEAM tier. {did_you_mean(str(dataset), names)}")
    if dataset_path is not None and not Path(dataset_path).expanduser().is_dir():
        raise UserError(
            f"--dataset-path {dataset_path} is not a folder; pass the {dataset} tier folder the answers were made over"
        )
    return resolve_dataset(OmegaConf.create({"name": dataset, "path": None if dataset_path is None else str(dataset_path)}), pins)


# -- the command's entry --------------------------------------------------------------------------------------


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
    """Import BEAM files of format `fmt`: (the first pack's folder, its source and reproduction
    records, whether any pack was written now). Cognee's runs become one pack each; the
    reproduction record of each names the others (`own.runs`)."""
    if fmt == COGNEE:
        plan = _cognee_plan(paths, dataset, dataset_path, pins, allow_partial)
    elif fmt == AMB:
        plan = _amb_plan(paths, dataset, dataset_path, pins, allow_partial)
    else:  # the benchmark record lists only FORMATS
        raise UserError(f"unknown BEAM format {fmt!r}. {did_you_mean(fmt, FORMATS)}")
    try:
        return write_all(plan, name=name, source=source, packs=packs, pins=pins)
    except AlreadyImported:  # another import of the same files finished a pack first: find it and build the rest
        return write_all(plan, name=name, source=source, packs=packs, pins=pins)


def _cognee_plan(paths: Sequence[Path], dataset: str | None, dataset_path: Any, pins: Any, allow_partial: bool) -> ImportPlan:
    runs, summary, config = parse_cognee(paths)
    dataset = dataset or "beam_128k"
    data_path, data_info = _dataset(dataset, dataset_path, pins, COGNEE)
    tier = read_tier(data_path)
    mapped = [_map_rows(run.rows, tier, run.path, dataset) for run in runs]
    held = {q.question_id for m in mapped for q in m.questions.values()}
    for run, m in zip(runs, mapped):
        if {q.question_id for q in m.questions.values()} != held:
            raise UserError(f"{run.path} answers other questions than {runs[0].path}; import runs of one evaluation together")
    conversation = mapped[0].conversations[runs[0].conversation_id]
    ours = next(c for c in tier.conversations if c.sample_id == conversation)
    lacking = [q for q in ours.questions if q.question_id not in held]
    if lacking and not allow_partial:
        raise UserError(
            f"{runs[0].path.name} has no answer for {len(lacking)} of the {len(ours.questions)} questions of its "
            f"conversation {conversation} (first: {lacking[0].question_id} {lacking[0].question!r}): a partial run; "
            "pass --allow-partial to import it as a pack labelled partial, or import the files of a full run"
        )
    notes = [n for m in mapped for n in m.notes]
    notes = list(dict.fromkeys(notes))
    if summary is not None:
        if summary.retriever != runs[0].retriever:
            raise UserError(
                f"{summary.path} summarises retriever {summary.retriever!r}, the runs are {runs[0].retriever!r}; "
                "pass the summary of these runs"
            )
        if summary.num_runs != len(runs):
            notes.append(
                f"the summary is over {summary.num_runs} runs and {len(runs)} were given: its cross-run figures are "
                "set beside these runs', which cannot reproduce them"
            )
    if config is not None and runs[0].retriever not in config.retrievers:
        raise UserError(
            f"{config.path} configures {', '.join(config.retrievers)}, not the runs' retriever {runs[0].retriever!r}; "
            "pass the config of these runs"
        )
    empty = [
        m.questions[r.index].question_id
        for run, m in zip(runs[:1], mapped[:1])
        for r in run.rows
        if not str(r.extra.get("golden_answer") or "")
    ]
    if empty:
        notes.append(
            f"the file's golden_answer is empty for {len(empty)} questions ({', '.join(empty)}): Cognee's loader "
            "reads a field the tier's instruction- and preference-following questions do not have "
            "(their reference is `expected_compliance`); the pack's gold is the tier's"
        )
    coverage = _coverage(
        held,
        tier,
        f"Cognee's runs are over one conversation of the tier ({conversation}, their "
        f"conversation_id {runs[0].conversation_id!r}): {len(held)} of its {len(tier.questions)} "
        "questions; no figure over the whole tier is comparable with theirs",
    )
    side = [("config", config.path)] if config else []
    side += [("summary", summary.path)] if summary else []
    system = {
        "retriever": runs[0].retriever,
        "conversation_id": runs[0].conversation_id,
        "sample_id": conversation,
        **({"config": dict(config.raw)} if config else {}),
    }
    return ImportPlan(
        COGNEE,
        dataset,
        data_path,
        data_info,
        tier,
        [ImportRun(run.path, run.run_idx, run.rows, m) for run, m in zip(runs, mapped)],
        side,
        coverage,
        "beam_paper",
        COGNEE_JUDGE,
        COGNEE_JUDGE_NOTE,
        system,
        notes,
        stated=lambda plan, figures, metrics: cognee_stated(plan, summary, figures, metrics),
        score_field="metrics.beam_rubric.score",
        judge_prompt_sha256=COGNEE_CODE[0].sha256,
        row_check=lambda row, q: (
            row.counts is not None
            and row.counts.criteria == len(q.rubric)
            and row.score is not None
            and row.counts.paper == row.score
        ),
        row_check_words=(
            "the score equals (full + 0.5 x partial) / criteria of its reason, and criteria is the number "
            "of the question's rubric items in the tier"
        ),
    )


def _amb_plan(paths: Sequence[Path], dataset: str | None, dataset_path: Any, pins: Any, allow_partial: bool) -> ImportPlan:
    if len(paths) != 1:
        raise UserError(
            f"an {AMB} import reads one file, got {len(paths)} ({', '.join(p.name for p in paths)}); import each on its own"
        )
    released = parse_amb(paths[0])
    split_dataset = AMB_SPLITS[released.split]
    dataset = dataset or split_dataset
    if dataset != split_dataset:
        raise UserError(
            f"{paths[0]} is AMB's split {released.split} ({split_dataset}), not {dataset}; leave --dataset out or "
            f"pass --dataset {split_dataset}"
        )
    data_path, data_info = _dataset(dataset, dataset_path, pins, AMB)
    tier = read_tier(data_path)
    mapped = _map_rows(released.rows, tier, released.path, dataset)
    held = {q.question_id for q in mapped.questions.values()}
    coverage = _coverage(
        held,
        tier,
        f"the {AMB} file answers {len(held)} of the {len(tier.questions)} questions of {dataset} (imported with --allow-partial)",
    )
    if coverage is not None and not allow_partial:
        first = next(q for c in tier.conversations for q in c.questions if q.question_id not in held)
        raise UserError(
            f"{paths[0].name} has no answer for {coverage.of - coverage.questions} of the {coverage.of} questions of "
            f"{dataset} (first: {first.question_id} {first.question!r}): a partial file; pass --allow-partial to "
            "import it as a pack labelled partial over the questions it answers, or import the file of a full run"
        )
    judge = str(released.stated.get("judge_llm") or "unknown")
    profile = "mem0_nugget" if released.scored else "amb_binary"
    notes = list(mapped.notes)
    unscored = [r for r in released.rows if r.score is None]
    if unscored:
        notes.append(
            f"{len(unscored)} rows have no score (AMB makes none where the memory returned no context: correct false, "
            "left out of its accuracy); the judge folder counts them FAILED, outside its mean as outside AMB's"
        )
    system = {
        k: released.stated.get(k)
        for k in ("memory_provider", "run_name", "mode", "answer_llm", "split", "oracle", "description")
        if k in released.stated
    }
    return ImportPlan(
        AMB,
        dataset,
        data_path,
        data_info,
        tier,
        [ImportRun(released.path, None, released.rows, mapped)],
        [],
        coverage,
        profile,
        judge,
        f"{judge}, the file's judge_llm",
        system,
        notes,
        stated=lambda plan, figures, metrics: amb_stated(released, figures, metrics),
        score_field="score" if released.scored else "correct",
        judge_prompt_sha256=None,
        row_check=(lambda row, q: row.score is None or row.side == (row.score >= 0.5))
        if released.scored
        else (lambda row, q: True),
        row_check_words=(
            "correct equals score >= 0.5 (runner.py's rule); a row without a score is not checked"
            if released.scored
            else "a file without scores: `correct` is the figure, nothing to check"
        ),
    )

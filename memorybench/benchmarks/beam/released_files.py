"""Other projects' released BEAM results, read into rows: Cognee's per-run metrics files and AMB's output files.

Nothing here knows the dataset (`importer.py` finds each row's question in the tier). Each
file is read as every released file is (`importers._base.released_json`: a regular file, never
through a link, at most 64 MiB); a name ending `.gz` is gunzipped, at most
`MAX_UNZIPPED_BYTES`. Every malformed input is one `UserError` line naming the file, the row
and the key.

`cognee_beam` (topoteretes/cognee, `cognee/eval_framework/beam/`): its run_sweep writes one file
per run, `beam_existing_ingestion_metrics_conv<I>_<retriever>_run<N>.json`, a JSON list, one
object per question: `conversation_id`, `question_idx`, `question`, `answer` (the system's),
`golden_answer`, `retrieval_context`, `question_type` (the ability), `retriever_name`,
`run_idx`, `rubric`, `difficulty`, and `metrics`: `beam_rubric` {score, reason} (metrics/
beam_rubric.py: the mean over the rubric items of the judge's 1 / 0.5 / 0, its reason
"BEAM rubric: F full, P partial, N none out of C criteria (score=S)") and `kendall_tau`
{score, reason} (metrics/kendall_tau.py: tau_b_norm x F1 of LLM-extracted events, event ordering
only, else null). Beside the runs, two JSON objects may be given: the packaged reproduction
config (`*_config.json`: `retrievers`, each `name`, `base`, `kwargs`, `qa_prompt_paths`) and
aggregate_cross_run.py's summary (`*_cross_run_summary.json`: `retriever_name`,
`conversation_index`, `num_runs`, `question_count`, `overall` and `by_question_type`, each
metric {mean, run_std, ci_lower, ci_upper}). Which file is which is read from its content.

`amb_beam` (vectorize-io/agent-memory-benchmark, `outputs/beam/<system>/<mode>/<split>.json.gz`):
runner.py's EvalSummary as one JSON object: `dataset` ("beam"), `split` (100k, 500k, 1m,
10m), `memory_provider`, `run_name`, `mode`, `total_queries`, `correct`, `accuracy`,
`answer_llm`, `judge_llm`, ... and `results`, one object per question: `query_id`
(`<conversation>_<ability>_<index>`, dataset/beam.py), `query`, `answer`, `reasoning`, `context`,
`context_tokens`, `retrieve_time_ms`, `gold_answers`, `correct`, `judge_reason`, `score` (the
mean of mem0's nugget judge's 0 / 0.5 / 1 over the rubric items, beam.py `score_result`; null
where no score was made, and absent from files written before it existed), `meta`
(`question_category`, `conversation_id`, `rubric`, ...) and `category_axes`. What every AMB
dataset's file shares (the object, each result's `query_id`, `query`, `answer`, `correct`, the
query ids, the stated settings) is checked by `memorybench.stages.importers.amb`, as LoCoMo's
`amb_locomo` checks it; BEAM's own fields are read here. AMB's LoCoMo file of the same layout is
pinned (`../shared/pins/peers/amb/`); no BEAM file is on our machines, so this reader is written
from runner.py and dataset/beam.py and tested on files the tests write.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.benchmarks.beam.data import ABILITIES
from memorybench.errors import UserError
from memorybench.stages.importers import amb
from memorybench.stages.importers._base import MAX_UNZIPPED_BYTES
from memorybench.stages.importers._base import need as _need
from memorybench.stages.importers._base import released_json as _released_json

__all__ = [
    "AMB_SPLITS",
    "AmbFile",
    "BeamRow",
    "CogneeConfig",
    "CogneeRun",
    "CogneeSummary",
    "MAX_UNZIPPED_BYTES",
    "RubricCounts",
    "parse_amb",
    "parse_cognee",
    "released_json",
]

#: AMB's split names (dataset/beam.py `SPLITS`) -> our datasets
AMB_SPLITS = {"100k": "beam_128k", "500k": "beam_500k", "1m": "beam_1m", "10m": "beam_10m"}
#: beam_rubric.py's reason, as it writes it
_REASON = re.compile(r"BEAM rubric: (\d+) full, (\d+) partial, (\d+) none out of (\d+) criteria \(score=([-+0-9.eE]+|nan|inf)\)")
#: AMB's query id: `{conv_id}_{category}_{idx}` (dataset/beam.py `load_queries`)
_QUERY_ID = re.compile(r"^(?P<conversation>.*)_(?P<ability>" + "|".join(ABILITIES) + r")_(?P<index>\d+)$", re.DOTALL)


@dataclass(frozen=True)
class RubricCounts:
    """beam_rubric.py's reason read back: items judged 1, 0.5 and 0, of how many, and the score it printed."""

    full: int
    partial: int
    none: int
    criteria: int
    printed: str

    @property
    def paper(self) -> float:
        """(full + 0.5 x partial) / criteria: the mean beam_rubric.py takes, the 0.5 kept."""
        return (self.full + 0.5 * self.partial) / self.criteria if self.criteria else math.nan


@dataclass(frozen=True)
class BeamRow:
    """One released answer: where it is, the question as the file writes it, the answer, and
    the file's own score of it."""

    #: the file's conversation key (Cognee's `conversation_id`, AMB's `meta.conversation_id`)
    key: str
    #: 0-based position in the file's list
    index: int
    #: how the file names the row (Cognee's `question_idx`, AMB's `query_id`)
    file_id: str
    question: str
    #: the ability the file names (Cognee's `question_type`, AMB's `meta.question_category`)
    ability: str | None
    #: AMB: the question's position in its ability's list (the query id's last part); None for Cognee
    ability_index: int | None
    prediction: str
    #: the file's per-question score (Cognee's `metrics.beam_rubric.score`, AMB's `score`, else its
    #: `correct` as 1/0 in a file without scores); None where the file gives none
    score: float | int | None
    #: the judge's words for it, as written (Cognee's beam_rubric reason, AMB's judge_reason)
    label: str | None
    #: Cognee: the reason's counts; None where the reason is not beam_rubric.py's
    counts: RubricCounts | None = None
    #: Cognee: metrics.kendall_tau.score (event ordering only); AMB: `correct`
    side: Any = None
    #: the rubric as the file writes it (None: the file has none)
    rubric: tuple[str, ...] | None = None
    #: the row's other fields, as the file has them
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CogneeRun:
    path: Path
    run_idx: int
    retriever: str
    conversation_id: str
    rows: tuple[BeamRow, ...]


@dataclass(frozen=True)
class CogneeSummary:
    """aggregate_cross_run.py's output, as written."""

    path: Path
    retriever: str
    conversation_index: int
    num_runs: int
    question_count: int
    #: metric -> {mean, run_std, ci_lower, ci_upper} (None: no score of that metric)
    overall: Mapping[str, Mapping[str, float | None] | None]
    #: question type -> {question_count, metric -> {...} | None}
    by_type: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class CogneeConfig:
    path: Path
    #: the retrievers' names, in file order
    retrievers: tuple[str, ...]
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class AmbFile:
    path: Path
    split: str
    rows: tuple[BeamRow, ...]
    #: whether the rows carry `score` (beam.py's continuous scoring); else only `correct`
    scored: bool
    #: the file's own figures and settings (`accuracy`, `correct`, `total_queries`, `judge_llm`, ...)
    stated: Mapping[str, Any]


def released_json(path: Path) -> Any:
    """A released BEAM JSON file (gunzipped where its name ends `.gz`), bounded like every released
    file (`memorybench.stages.importers._base.released_json`, shared with AMB's other formats)."""
    return _released_json(path, "released BEAM")


def _number(value: Any) -> float | int | None:
    """A score as written when it is a finite number (not a bool); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _rubric(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


# -- Cognee -----------------------------------------------------------------------------------------------


def parse_cognee(paths: Sequence[Path]) -> tuple[list[CogneeRun], CogneeSummary | None, CogneeConfig | None]:
    """The run files, the cross-run summary and the config among `paths`, told apart by content
    (a list: a run; an object with `retrievers`: the config; with `num_runs`: the summary)."""
    runs: list[CogneeRun] = []
    summary = config = None
    for path in paths:
        data = released_json(path)
        if isinstance(data, list):
            runs.append(_cognee_run(path, data))
        elif isinstance(data, dict) and "retrievers" in data:
            if config is not None:
                raise UserError(f"{path} and {config.path} are both Cognee retriever configs; pass the one of the runs")
            config = _cognee_config(path, data)
        elif isinstance(data, dict) and "num_runs" in data:
            if summary is not None:
                raise UserError(f"{path} and {summary.path} are both cross-run summaries; pass the one of the runs")
            summary = _cognee_summary(path, data)
        else:
            raise UserError(
                f"{path} is not a cognee_beam file: expected a run's JSON list of questions, the retriever config "
                "(an object with 'retrievers') or aggregate_cross_run.py's summary (an object with 'num_runs'); "
                "check --format (memorybench import --help lists the formats and their shapes)"
            )
    if not runs:
        raise UserError(
            "a cognee_beam import needs at least one run file (beam_existing_ingestion_metrics_conv<I>_<retriever>_run<N>"
            ".json[.gz]); the config and the summary alone hold no answer"
        )
    seen: dict[int, Path] = {}
    for run in runs:
        if run.run_idx in seen:
            raise UserError(f"{run.path} and {seen[run.run_idx]} are both run {run.run_idx}; pass each run once")
        seen[run.run_idx] = run.path
    runs.sort(key=lambda r: r.run_idx)
    first = runs[0]
    for run in runs[1:]:
        if (run.retriever, run.conversation_id) != (first.retriever, first.conversation_id):
            raise UserError(
                f"{run.path} is retriever {run.retriever!r} on conversation {run.conversation_id}, {first.path} "
                f"{first.retriever!r} on {first.conversation_id}; import the runs of one retriever and "
                "conversation together (aggregate_cross_run.py refuses the same)"
            )
        if [r.file_id for r in run.rows] != [r.file_id for r in first.rows]:
            raise UserError(
                f"{run.path} and {first.path} do not hold the same questions in the same order (question_idx); "
                "aggregate_cross_run.py refuses such runs: pass runs of one evaluation"
            )
    return runs, summary, config


def _cognee_run(path: Path, data: list[Any]) -> CogneeRun:
    fmt = "cognee_beam"
    if not data:
        raise UserError(f"{path} holds no question (an empty list); pass a run file as released")
    rows = []
    for n, item in enumerate(data):
        where = f"{path}[{n}]"
        if not isinstance(item, dict):
            raise UserError(f"{where}: a question must be a JSON object, got {type(item).__name__}; is this a {fmt} run file?")
        question = _need(item, "question", str, where, fmt)
        answer = item.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise UserError(f"{where}: key 'answer' must be text or null, got {type(answer).__name__}")
        ability = _need(item, "question_type", str, where, fmt)
        idx = _need(item, "question_idx", int, where, fmt)
        conversation = _need(item, "conversation_id", (str, int), where, fmt)
        _need(item, "run_idx", int, where, fmt)
        _need(item, "retriever_name", str, where, fmt)
        metrics = _need(item, "metrics", dict, where, fmt)
        rubric_metric = metrics.get("beam_rubric")
        if not isinstance(rubric_metric, dict):
            raise UserError(
                f"{where}: key 'metrics' has no 'beam_rubric' object; is this a {fmt} run file (run_sweep's metrics output)?"
            )
        reason = rubric_metric.get("reason")
        counts = None
        if isinstance(reason, str) and (m := _REASON.fullmatch(reason)):
            full, partial, none, criteria = (int(g) for g in m.groups()[:4])
            counts = RubricCounts(full, partial, none, criteria, m.group(5))
        tau = metrics.get("kendall_tau") if isinstance(metrics.get("kendall_tau"), dict) else {}
        extra = {k: v for k, v in item.items() if k not in ("question", "answer")}
        rows.append(
            BeamRow(
                key=str(conversation),
                index=n,
                file_id=str(idx),
                question=question,
                ability=ability,
                ability_index=None,
                prediction=answer or "",
                score=_number(rubric_metric.get("score")),
                label=reason if isinstance(reason, str) else None,
                counts=counts,
                side=_number(tau.get("score")),
                rubric=_rubric(item.get("rubric")),
                extra=extra,
            )
        )
    first = data[0]
    for n, item in enumerate(data):
        for key in ("run_idx", "retriever_name", "conversation_id"):
            if item[key] != first[key]:
                raise UserError(
                    f"{path}[{n}]: key {key!r} is {item[key]!r}, item 0's is {first[key]!r}; a run file holds one "
                    "run of one retriever over one conversation: pass the file as released"
                )
    ids = [r.file_id for r in rows]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise UserError(f"{path}: question_idx {twice} occurs twice; a run answers each question once: pass the file as released")
    return CogneeRun(path, int(first["run_idx"]), str(first["retriever_name"]), str(first["conversation_id"]), tuple(rows))


def _figures(value: Any, where: str) -> Mapping[str, float | None] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or "mean" not in value:
        raise UserError(
            f"{where}: a metric's figures must be an object with 'mean', 'run_std', 'ci_lower', 'ci_upper' "
            "(aggregate_cross_run.py's), or null; pass the summary as released"
        )
    return {k: _number(value.get(k)) for k in ("mean", "run_std", "ci_lower", "ci_upper")}


def _cognee_summary(path: Path, data: dict[str, Any]) -> CogneeSummary:
    where = str(path)
    fmt = "cognee_beam summary"
    overall = _need(data, "overall", dict, where, fmt)
    by_type_raw = _need(data, "by_question_type", dict, where, fmt)
    by_type: dict[str, dict[str, Any]] = {}
    for name, entry in by_type_raw.items():
        if not isinstance(entry, dict):
            raise UserError(f"{where}: by_question_type.{name} must be an object; pass the summary as released")
        by_type[name] = {
            "question_count": entry.get("question_count"),
            **{m: _figures(v, f"{where}: by_question_type.{name}.{m}") for m, v in entry.items() if m != "question_count"},
        }
    return CogneeSummary(
        path,
        str(_need(data, "retriever_name", str, where, fmt)),
        int(_need(data, "conversation_index", int, where, fmt)),
        int(_need(data, "num_runs", int, where, fmt)),
        int(_need(data, "question_count", int, where, fmt)),
        {m: _figures(v, f"{where}: overall.{m}") for m, v in overall.items()},
        by_type,
    )


def _cognee_config(path: Path, data: dict[str, Any]) -> CogneeConfig:
    retrievers = data.get("retrievers")
    if not isinstance(retrievers, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in retrievers):
        raise UserError(f"{path}: key 'retrievers' must be a list of objects with a 'name'; pass the config as released")
    return CogneeConfig(path, tuple(r["name"] for r in retrievers), data)


# -- AMB --------------------------------------------------------------------------------------------------


def parse_amb(path: Path) -> AmbFile:
    """An AMB output file of the BEAM dataset: AMB's shared checks (`memorybench.stages.importers.amb`),
    then BEAM's own per row (the query id's ability and index, `meta`, `score`)."""
    fmt = "amb_beam"
    data = amb.read_summary(path, fmt, dataset="beam", title="BEAM", layout="outputs/beam/<system>/<mode>/<split>.json.gz")
    split = _need(data, "split", str, str(path), fmt)
    if split.lower() not in AMB_SPLITS:
        raise UserError(f"{path}: split {split!r} is none of BEAM's ({', '.join(AMB_SPLITS)}); pass the file as released")
    rows = []
    for result in amb.results(path, data, fmt):
        item, at, query_id = result.item, result.at, result.query_id
        meta = item.get("meta") if isinstance(item.get("meta"), dict) else {}
        parsed = _QUERY_ID.match(query_id)
        ability = meta.get("question_category") if isinstance(meta.get("question_category"), str) else None
        if parsed is None and ability is None:
            raise UserError(
                f"{at}: query_id {query_id!r} is not <conversation>_<ability>_<index> (dataset/beam.py's) and "
                "meta names no question_category; is this AMB's BEAM output?"
            )
        if parsed is not None and ability is not None and ability != parsed["ability"]:
            raise UserError(
                f"{at}: query_id {query_id!r} names ability {parsed['ability']}, meta.question_category {ability}; "
                "pass the file as released"
            )
        conversation = meta.get("conversation_id", parsed["conversation"] if parsed else None)
        if conversation is None:
            raise UserError(f"{at}: neither meta.conversation_id nor query_id {query_id!r} names the conversation")
        raw_score = item.get("score")
        if raw_score is not None and _number(raw_score) is None and not (isinstance(raw_score, float) and math.isnan(raw_score)):
            raise UserError(f"{at}: key 'score' must be a number or null, got {raw_score!r}")
        judge_reason = item.get("judge_reason")
        extra = {k: v for k, v in item.items() if k not in ("query", "answer")}
        rows.append(
            BeamRow(
                key=str(conversation),
                index=result.index,
                file_id=query_id,
                question=result.query,
                ability=ability or (parsed["ability"] if parsed else None),
                ability_index=int(parsed["index"]) if parsed else None,
                prediction=result.answer or "",
                score=_number(raw_score),
                label=judge_reason if isinstance(judge_reason, str) else None,
                side=result.correct,
                rubric=_rubric(meta.get("rubric")),
                extra=extra,
            )
        )
    amb.check_ids(path, [r.file_id for r in rows])
    scored = any("score" in r.extra and r.extra["score"] is not None for r in rows)
    if not scored:  # a file from before beam.py scored: its figure is `correct`, 1 or 0
        rows = [BeamRow(**{**r.__dict__, "score": int(bool(r.side))}) for r in rows]
    return AmbFile(path, split.lower(), tuple(rows), scored, amb.stated(data))

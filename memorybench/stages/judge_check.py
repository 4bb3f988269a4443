"""The `judge-check` stage: calibrate a judge against answers known to be wrong, and against right ones.

A judge configuration (the same `judge=...`, `judge.KEY=...` overrides as `autorater`) labels
a benchmark's calibration sets: answers known to be wrong and the right answers themselves. The
benchmark's record names the module that builds them (`Benchmark.judge_sets`, chosen by
`dataset=NAME`; LoCoMo's `locomo10` by default), so this stage never reads a benchmark's files
itself:

    dataset=locomo10 (default)  LoCoMo's questions of categories 1-4: the LoCoMo audit's specific_wrong
                                and vague_wrong answers and the gold answers (benchmarks/locomo/judge_sets.py)
    dataset=beam_128k           BEAM's pinned 128K tier, every ability: specific_wrong, vague_wrong,
                                one_side (contradiction resolution) and the ideal responses
                                (benchmarks/beam/judge_sets.py says how each is made)

The stage reports, per question kind and over all of them, the share of each set the judge
accepts, with a conversation-level interval for a rate
(`memorybench.compare.intervals.mean_interval(kind="rate")`: Korn-Graubard's, Clopper-Pearson
on the effective size after the conversations' design effect, so an acceptance near 0 or 1
keeps an interval inside [0, 1] that covers). A judge that labels (Mem0's) accepts an answer it
labels CORRECT; a judge that scores (BEAM's rubric judge) accepts an answer whose score is at or
above the sets' pass level, which the record and the table state. It writes a calibration
record keyed by the judge's identity (`memorybench.pack.judge_calibration`) beside the response
cache:

    <paths.cache>/judge_check/<judge id>/<scope>/calibration.json   judge_calibration.v2
    <paths.cache>/judge_check/<judge id>/<scope>/prompts/<template>  the templates the traces refer to
    <paths.cache>/judge_check/<judge id>/<scope>/<set>/traces.jsonl    judge_trace.v1, one per call
    <paths.cache>/judge_check/<judge id>/<scope>/<set>/verdicts.jsonl  autorater_verdict.v1, one per answer

`<scope>` is `all`, or `prefix-<N>` with `max_questions=N`: the first N questions of the dataset
in file order (every kind, as `qa`'s max_questions), of which those the sets cover are checked;
the record and the printed table say it is a prefix. A judge judges one benchmark's questions,
so its judge id says which sets its folder holds. Every call goes through the response cache at
`<paths.cache>/responses` (judge.cache is on unless the command sets `judge.cache=false`), so a
re-check of the same judge is free; its folder is rewritten.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memorybench.benchmark import Benchmark, benchmark_of, dataset_named, default_dataset
from memorybench.compare.intervals import DEFAULT_CONFIDENCE, mean_interval
from memorybench.errors import ModelCallError, OneLineParser, UserError
from memorybench.llm.endpoints import check_endpoint_installed, open_endpoint
from memorybench.llm.sizing import estimate_tokens
from memorybench.pack.autorater_schemas import AutoraterVerdict
from memorybench.pack.journal import Journal
from memorybench.pack.judge_calibration import (
    CALIBRATION_FILE,
    Calibration,
    Rate,
    SetRates,
    calibration_folder,
)
from memorybench.pack.judge_calibration import kinds_phrase as _kinds
from memorybench.pack.lock import folder_lock
from memorybench.pack.run_pack import write_atomic
from memorybench.progress import Progress
from memorybench.provenance import utc_now
from memorybench.score.judge import JudgeProtocol
from memorybench.stages.autorater_judge import (
    _judge_one,
    _judge_several,
    _validate_judge,
    check_benchmark,
    configured_judge,
    judge_identity,
    templates_stored_at,
)

__all__ = [
    "CalibrationSets",
    "CheckRow",
    "CheckSet",
    "calibration_rows",
    "calibration_sets",
    "format_calibration",
    "judge_check_main",
    "run_judge_check",
]

_ALLOWED_PREFIXES = ("judge", "paths.", "pricing.", "+pricing.")


@dataclass(frozen=True)
class CheckRow:
    """One answer to judge: what a judge protocol reads of a stored answer (`JudgedRow`)."""

    set: str
    question_id: str
    sample_id: str
    category: int
    question: str
    gold: Any
    prediction: str


@dataclass(frozen=True)
class CheckSet:
    """One calibration set: its answers, in the dataset's order, and how it is named."""

    name: str
    #: its row in the printed table ("specific wrong")
    label: str
    #: its words in the summary line ("vague wrong answers": "accepts 63% of vague wrong answers")
    words: str
    #: where its answers come from (a pinned file, its repository and sha256) or how they are made
    source: dict[str, Any]
    rows: tuple[CheckRow, ...]


@dataclass(frozen=True)
class CalibrationSets:
    """What a benchmark's `judge_sets` module builds for `judge-check`."""

    benchmark: str
    #: the benchmark in a sentence ("LoCoMo"), the dataset's name and its pinned file or folder
    title: str
    dataset: dict[str, Any]
    #: the question kinds the sets cover, and what a kind is called ("category", "ability")
    kinds: tuple[int, ...]
    kind_word: str
    #: in judging order; the right answers' set last
    sets: tuple[CheckSet, ...]
    #: the set of right answers (its acceptance is the judge's acceptance of the right answer)
    right: str
    #: the order the summary line names the sets in
    summary_order: tuple[str, ...]
    #: the table's column heading of a kind ("cat " + number), and each kind's name where the
    #: numbers alone do not say (a legend line under the table)
    kind_header: str = "cat "
    kind_names: dict[str, str] = field(default_factory=dict)
    #: a verdict's score at or above which its answer counts as accepted (a judge that scores);
    #: None: its label says (CORRECT, score 1)
    pass_level: float | None = None
    #: what "accepted" means, in words (stated in the table and the record)
    acceptance: str = "labelled CORRECT"
    #: the folder or file a judge that reads scorer-side gold beyond the rows binds to (BEAM's rubrics)
    bind: Path | None = None
    notes: tuple[str, ...] = ()


# -- the sets ---------------------------------------------------------------------------
def _sets_benchmark(dataset: str | None) -> Benchmark:
    """The benchmark of `dataset` (None: the default), refused in one line when it has no sets."""
    name = dataset or default_dataset().name
    dataset_named(name)  # an unknown dataset: one line naming the known ones
    bench = benchmark_of(name)
    if bench.judge_sets is None:
        from memorybench.benchmark import benchmarks

        having = [d.name for b in benchmarks().values() if b.judge_sets for d in b.datasets[:1]]
        raise UserError(
            f"dataset={name}: judge-check has no calibration sets for {bench.title or bench.name}; "
            f"use dataset={' or dataset='.join(having)}"
        )
    return bench


def calibration_sets(pins: Any = None, max_questions: int | None = None, dataset: str | None = None) -> CalibrationSets:
    """The sets of `dataset`'s benchmark (its record's `judge_sets` module): the questions
    among the first `max_questions` (all of them with None) that its sets cover."""
    bench = _sets_benchmark(dataset)
    return bench.own("judge_sets", "calibration_sets")(pins, max_questions, dataset or default_dataset().name)


def calibration_rows(pins: Any = None, max_questions: int | None = None, dataset: str | None = None) -> dict[str, list[CheckRow]]:
    """The answers to judge, per set, in the dataset's file order (`calibration_sets`'s rows)."""
    return {s.name: list(s.rows) for s in calibration_sets(pins, max_questions, dataset).sets}


# -- the rates ----------------------------------------------------------------------------
def _accepted(score: float | None, pass_level: float | None) -> float:
    """1.0 where a verdict accepts its answer: a label's score as it is (CORRECT is 1), a
    scoring judge's at or above the pass level."""
    if pass_level is None:
        return float(score or 0)
    return float(score is not None and score >= pass_level)


def _rate(verdicts: Sequence[AutoraterVerdict], confidence: float, pass_level: float | None = None) -> Rate:
    judged = [v for v in verdicts if v.score is not None]
    accepted = [_accepted(v.score, pass_level) for v in judged]
    interval = mean_interval(accepted, [v.sample_id for v in judged], confidence=confidence, kind="rate")
    return Rate(
        rate=interval.estimate,
        low=interval.low,
        high=interval.high,
        accepted=round(sum(accepted)),
        judged=len(judged),
        failed=len(verdicts) - len(judged),
        conversations=interval.clusters,
        method=interval.method,
        note=interval.note,
    )


def set_rates(
    verdicts: Sequence[AutoraterVerdict],
    source: dict[str, Any],
    confidence: float = DEFAULT_CONFIDENCE,
    *,
    kinds: Sequence[int] = (1, 2, 3, 4),
    pass_level: float | None = None,
    label: str = "",
    words: str = "",
) -> SetRates:
    """A set's acceptance over every kind checked and per kind, from its verdicts."""
    return SetRates(
        overall=_rate(verdicts, confidence, pass_level),
        by_category={str(c): _rate([v for v in verdicts if v.category == c], confidence, pass_level) for c in kinds},
        source=source,
        label=label,
        words=words,
    )


# -- the run ------------------------------------------------------------------------------
def _cache_on(node: DictConfig, overrides: Sequence[str]) -> DictConfig:
    """The judge node with `cache: true` unless the command set judge.cache itself."""
    if any(o.split("=", 1)[0].lstrip("+") == "judge.cache" for o in overrides):
        return node
    data = OmegaConf.to_container(node, resolve=True)
    assert isinstance(data, dict)
    return OmegaConf.create({**data, "cache": True})


def run_judge_check(
    cfg_judge: DictConfig | Mapping[str, Any],
    *,
    cache_dir: str | Path,
    max_questions: int | None = None,
    pins: Any = None,
    prices: Mapping[str, Any] | None = None,
    progress: bool = False,
    max_consecutive_failures: int = 5,
    confidence: float = DEFAULT_CONFIDENCE,
    dataset: str | None = None,
) -> Calibration:
    """Judge `dataset`'s calibration sets (None: LoCoMo's) with `cfg_judge` (a composed `judge`
    node), write and return its calibration.

    `cache_dir` is `paths.cache`: the response cache (`<cache_dir>/responses`, used when
    judge.cache is true) and the check's folder (`calibration_folder`) live there.
    """
    if max_questions is not None and max_questions < 1:
        raise UserError(f"max_questions={max_questions} must be at least 1 (or null for every question)")
    bench = _sets_benchmark(dataset)
    node = cfg_judge if isinstance(cfg_judge, DictConfig) else OmegaConf.create(dict(cfg_judge))
    judge_cfg, judge, _ = configured_judge(node, pins)
    _validate_judge(node, 1)
    check_benchmark(judge, bench, bench.own("judge_sets", "WHERE"))
    identity = judge_identity(judge_cfg, judge)
    built = calibration_sets(pins, max_questions, dataset)
    rows = {s.name: s.rows for s in built.sets}
    asked = len(rows[built.right])
    if not asked:
        raise UserError(
            f"max_questions={max_questions} holds no question of {_kinds(built.kind_word, list(built.kinds))}; use a larger prefix"
        )
    if built.bind is not None and hasattr(judge, "bind"):  # a judge that reads scorer-side gold (BEAM's rubrics)
        judge.bind(built.bind)
    cache_root = Path(cache_dir).expanduser().resolve()
    out = calibration_folder(identity.judge_id, max_questions, cache_root)
    check_endpoint_installed("judge", node)  # judge=local without the local extra: one line, nothing written
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out, "judge-check folder"):
        for name, template in judge.templates.items():
            write_atomic(out / "prompts" / name, template.encode("utf-8"))
        longest = max(estimate_tokens(judge.prompt_text(r)) for set_rows in rows.values() for r in set_rows)
        verdicts: dict[str, list[AutoraterVerdict]] = {}
        models: set[str] = set()
        requests = cached = 0
        with open_endpoint(
            node, "judge", cache_dir=cache_root, prices=prices or {}, longest_prompt_tokens=longest, log_dir=out
        ) as endpoint:
            bar = Progress(
                "judge-check",
                sum(len(r) for r in rows.values()),
                label=identity.judge_id,
                unit="verdicts",
                rate_unit="verdict",
                enabled=progress,
            )
            try:
                for name, set_rows in rows.items():
                    verdicts[name] = []
                    for verdict, traces in _judge_set(
                        endpoint, judge, judge_cfg, out / name, set_rows, bar, max_consecutive_failures
                    ):
                        verdicts[name].append(verdict)
                        for trace in traces:
                            requests += 1
                            if trace.response is not None:
                                models.add(trace.response.model_answered or "")
                                cached += int(trace.response.cache_hit)
            finally:
                bar.close()
            model_sent, local = endpoint.model, endpoint.is_local
        notes = []
        if max_questions is not None:
            notes.append(
                f"Prefix check: the {asked} questions of {_kinds(built.kind_word, list(built.kinds))} among "
                f"{built.title}'s first {max_questions} (max_questions); not the whole set."
            )
        if local:
            notes.append("Judged by the embedded local model: a local label, not comparable with a hosted judge.")
        notes += built.notes
        sets = {
            s.name: set_rates(
                verdicts[s.name],
                s.source,
                confidence,
                kinds=built.kinds,
                pass_level=built.pass_level,
                label=s.label,
                words=s.words,
            )
            for s in built.sets
        }

        def overall(name: str) -> float | None:
            return sets[name].overall.rate if name in sets else None

        calibration = Calibration(
            judge_id=identity.judge_id,
            identity=identity,
            identity_sha256=identity.sha256(),
            benchmark=built.benchmark,
            title=built.title,
            kind_word=built.kind_word,
            kind_header=built.kind_header,
            kind_names=built.kind_names,
            categories=list(built.kinds),
            questions=asked,
            is_prefix=max_questions is not None,
            max_questions=max_questions,
            sets=sets,
            right_set=built.right,
            summary_order=list(built.summary_order),
            pass_level=built.pass_level,
            acceptance=built.acceptance,
            accepted={name: rates.overall.rate for name, rates in sets.items()},
            specific_wrong_accepted=overall("specific_wrong"),
            vague_wrong_accepted=overall("vague_wrong"),
            gold_accepted=overall(built.right),
            model_sent=model_sent,
            models_answered=sorted(m for m in models if m),
            local_judge=local,
            confidence=confidence,
            judge_config=judge_cfg,
            prompt={**judge.prompt_info(templates_stored_at(judge, "prompts"))},
            dataset=built.dataset,
            requests=requests,
            cached=cached,
            created_at=utc_now(),
            notes=notes,
        )
        write_atomic(out / CALIBRATION_FILE, calibration.dump().encode("utf-8"))
    return calibration


def _judge_set(
    endpoint: Any,
    judge: JudgeProtocol,
    judge_cfg: Mapping[str, Any],
    folder: Path,
    rows: Sequence[CheckRow],
    bar: Progress,
    max_consecutive_failures: int,
) -> Iterator[tuple[AutoraterVerdict, list[Any]]]:
    """Judge one set's answers in order, appending each answer's traces (one per call: a BEAM
    question makes several) and its verdict as it returns; a run of failed answers means the
    endpoint is down: one line (a rerun replays the answered ones from the cache)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("verdicts.jsonl", "traces.jsonl"):  # a re-check rewrites the folder
        (folder / name).unlink(missing_ok=True)
    verdicts, traces = Journal(folder / "verdicts.jsonl"), Journal(folder / "traces.jsonl")
    several = getattr(judge, "several_calls", False)
    streak = 0
    try:
        for index, row in enumerate(rows):
            base = dict(
                question_id=row.question_id,
                sample_id=row.sample_id,
                index=index,
                category=row.category,
                pass_=1,
                judge_prompt_sha256=judge.template_sha256,
            )
            if several:
                calls, verdict = _judge_several(endpoint, judge, row, 1, judge_cfg, base, {})  # type: ignore[arg-type]
            else:
                trace, verdict = _judge_one(endpoint, judge, row, 1, judge_cfg, base, {})  # type: ignore[arg-type]
                calls = [trace]
            for trace in calls:
                traces.append(trace)
            verdicts.append(verdict)
            bar.update(1)
            streak = streak + 1 if verdict.failure == "model_call" else 0
            if streak >= max_consecutive_failures or (streak and streak == index + 1 == len(rows)):
                raise ModelCallError(
                    f"the judge failed {streak} calls in a row, the last: {verdict.error}; fix the endpoint "
                    "and rerun the same command (answered calls come back from the response cache)"
                )
            yield verdict, calls
    finally:
        verdicts.close()
        traces.close()


# -- the table ------------------------------------------------------------------------------
def _cell(rate: Rate) -> str:
    return "n/a" if rate.rate is None else f"{100 * rate.rate:.1f}%"


def _interval(rate: Rate) -> str:
    if rate.low is None or rate.high is None:
        return "(one conversation: none)" if rate.conversations == 1 else "(none)"
    return f"[{100 * max(rate.low, 0.0):.1f}, {100 * min(rate.high, 1.0):.1f}]"


def format_calibration(calibration: Calibration, path: Path | None = None) -> str:
    """The printed table: per set, acceptance per question kind and overall with its interval."""
    kinds = _kinds(calibration.kind_word, calibration.categories)
    scope = (
        f"prefix: the {calibration.questions:,} questions of {kinds} among {calibration.title}'s first "
        f"{calibration.max_questions:,}"
        if calibration.is_prefix
        else f"all {calibration.questions:,} questions of {kinds}"
    )
    conf = f"{100 * calibration.confidence:.0f}%"
    columns = [str(c) for c in calibration.categories]
    width = 9 if len(columns) <= 5 else 7  # ten abilities stay within a terminal's width
    lines = [
        f"judge-check {calibration.judge_id} ({scope})",
        f"{'answers':<16}"
        + "".join(f"{calibration.kind_header + c:>{width}}" for c in columns)
        + f"{'overall':>10}  {conf} interval over conversations  failed",
    ]
    for rates in calibration.sets.values():
        cells = "".join(f"{_cell(rates.by_category[c]) if c in rates.by_category else '-':>{width}}" for c in columns)
        lines.append(
            f"{rates.label:<16}{cells}{_cell(rates.overall):>10}  {_interval(rates.overall):<32}{rates.overall.failed:>6}"
        )
    if calibration.kind_names:  # the kinds' names under the table, each whole, in lines of the table's width
        legend = [f"{calibration.kind_header.strip()}:"]
        for c in (c for c in columns if c in calibration.kind_names):
            entry = f"{c} {calibration.kind_names[c]}"
            if len(legend[-1]) + len(entry) + 2 > len(lines[1]):
                legend.append("")
            legend[-1] += (" " if legend[-1].endswith(":") or not legend[-1] else ", ") + entry
        lines += [line.strip() for line in legend]
    right = calibration.sets[calibration.right_set].label if calibration.right_set in calibration.sets else calibration.right_set
    lines.append(f"a wrong set's figure is the judge's false-acceptance rate; {right}'s is its acceptance of the right answer")
    if calibration.pass_level is not None:
        lines.append(f"an answer counts as accepted when {calibration.acceptance}")
    lines.append(f"{calibration.requests} requests, {calibration.cached} from the response cache")
    lines.append(f"summary: {calibration.summary()}")
    lines += calibration.notes
    if path is not None:
        lines.append(f"judge-check: {path}")
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------------------
def _compose(overrides: Sequence[str]) -> tuple[DictConfig, int | None, str | None]:
    from hydra import initialize_config_dir

    from memorybench import CONF_DIR
    from memorybench.plan import compose_spec

    max_questions: int | None = None
    dataset: str | None = None
    passed = []
    for override in overrides:
        key, _, value = override.partition("=")
        if key == "max_questions":
            if value.lower() in ("null", "none", ""):
                max_questions = None
                continue
            try:
                max_questions = int(value)
            except ValueError:
                raise UserError(
                    f"max_questions={value!r} is not a number; use max_questions=N (e.g. 199, the first conversation)"
                ) from None
            if max_questions < 1:
                raise UserError(f"max_questions={max_questions} must be at least 1; use max_questions=N or leave it out")
            continue
        if key == "dataset" and _:
            # which benchmark's sets: checked here, before any config is composed or file read
            _sets_benchmark(value or None)
            dataset = value or None
            continue
        if not _ or not (key == "judge" or key.startswith(_ALLOWED_PREFIXES)):
            raise UserError(
                f"judge-check takes only judge=NAME, judge.KEY=VALUE, paths.KEY=VALUE, pricing.KEY=VALUE, dataset=NAME or "
                f"max_questions=N overrides, got {override!r}"
            )
        passed.append(override)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="memorybench-judge-check"):
        spec = compose_spec(passed)
    cfg = spec.cfg
    cfg.judge = _cache_on(cfg.judge, passed)
    return cfg, max_questions, dataset


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog="memorybench judge-check",
        description="Calibrate a judge: how often it accepts answers known to be wrong and the right answers, per question "
        "kind: by default the LoCoMo audit's known-wrong answers (specific and vague) and the gold answers, per category "
        "1-4; dataset=beam_128k: BEAM's sets over its pinned 128K tier (writes <paths.cache>/judge_check/<judge id>/).",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="judge=mem0|strict|beam|beam_official|openai_compatible|local, judge.KEY=VALUE, paths.KEY=VALUE, "
        "dataset=locomo10|beam_128k, max_questions=N",
    )
    parser.add_argument(
        "--pins",
        help="pins folder with the dataset's files and, for LoCoMo, the audit's sets (default: paths.pins, "
        "$MEMORYBENCH_PINS, user cache)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def judge_check_main(argv: Sequence[str]) -> int:
    """`memorybench judge-check [judge=NAME judge.KEY=VALUE ... dataset=NAME max_questions=N] [--pins DIR]`."""
    ns = _parser().parse_intermixed_args(list(argv))
    cfg, max_questions, dataset = _compose(ns.overrides)
    pins = ns.pins or cfg.paths.pins
    calibration = run_judge_check(
        cfg.judge,
        cache_dir=cfg.paths.cache,
        max_questions=max_questions,
        pins=pins,
        prices=OmegaConf.to_container(cfg.pricing) if cfg.get("pricing") is not None else {},  # type: ignore[arg-type]
        progress=not ns.quiet,
        dataset=dataset,
    )
    folder = calibration_folder(calibration.judge_id, max_questions, cfg.paths.cache)
    print(format_calibration(calibration, folder))
    return 0


if __name__ == "__main__":
    from memorybench.errors import report

    try:
        sys.exit(judge_check_main(sys.argv[1:]))
    except UserError as e:
        sys.exit(report(e))

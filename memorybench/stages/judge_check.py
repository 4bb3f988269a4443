"""The `judge-check` stage: calibrate a judge against answers known to be wrong, and against gold.

A judge configuration (the same `judge=...`, `judge.KEY=...` overrides as `autorater`) labels
three sets of answers to LoCoMo's questions of categories 1-4:

    specific_wrong   the audit's deliberately wrong but specific answers (1,540)
    vague_wrong      the audit's deliberately wrong, vague-but-topical answers (1,540)
    gold             LoCoMo's gold answers themselves (1,540)

The two wrong sets come from the LoCoMo audit dial481/locomo-audit (pinned files
`locomo-audit/ap_v1_specific_wrong.json`, `ap_v2_vague_wrong.json`; `memorybench fetch`).
Their rows `locomo_{conversation index}_qa{qa index}` (both 0-based in file order) join our
question ids `{sample_id}-q-{qa index}`; every row's question and gold answer are checked
against the pinned locomo10.json. The stage reports, per category and over 1-4, the share
of each set the judge accepts (labels CORRECT) with a conversation-level interval for a rate
(`memorybench.compare.intervals.mean_interval(kind="rate")`: Korn-Graubard's, Clopper-Pearson
on the effective size after the conversations' design effect, so an acceptance near 0 or 1
keeps an interval inside [0, 1] that covers), and writes a calibration record keyed by
the judge's identity (`memorybench.pack.judge_calibration`) beside the response cache:

    <paths.cache>/judge_check/<judge id>/<scope>/calibration.json   judge_calibration.v1
    <paths.cache>/judge_check/<judge id>/<scope>/prompts/<template>  the template the traces refer to
    <paths.cache>/judge_check/<judge id>/<scope>/<set>/traces.jsonl    judge_trace.v1, one per call
    <paths.cache>/judge_check/<judge id>/<scope>/<set>/verdicts.jsonl  autorater_verdict.v1, one per answer

`<scope>` is `all`, or `prefix-<N>` with `max_questions=N`: the first N questions of LoCoMo
in file order (every category, as `qa`'s max_questions), of which those of categories 1-4 are
checked; the record and the printed table say it is a prefix. Every call goes through the
response cache at `<paths.cache>/responses` (judge.cache is on unless the command sets
`judge.cache=false`), so a re-check of the same judge is free; its folder is rewritten.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memorybench.compare.intervals import DEFAULT_CONFIDENCE, mean_interval
from memorybench.data import iter_questions
from memorybench.benchmark import LOCOMO
from memorybench.data.pins import LOCOMO10, LOCOMO_AUDIT_SPECIFIC_WRONG, LOCOMO_AUDIT_VAGUE_WRONG, Pin, pin_path
from memorybench.data.records import Question
from memorybench.errors import ModelCallError, OneLineParser, UserError
from memorybench.llm.endpoints import check_endpoint_installed, open_endpoint
from memorybench.llm.sizing import estimate_tokens
from memorybench.pack.autorater_schemas import AutoraterVerdict
from memorybench.pack.journal import Journal
from memorybench.pack.judge_calibration import (
    CALIBRATION_FILE,
    SETS,
    Calibration,
    Rate,
    SetRates,
    calibration_folder,
)
from memorybench.pack.lock import folder_lock
from memorybench.pack.run_pack import write_atomic
from memorybench.progress import Progress
from memorybench.provenance import utc_now
from memorybench.records import load_json
from memorybench.score.judge import JudgeProtocol
from memorybench.stages.autorater_judge import (
    _judge_one,
    _validate_judge,
    check_benchmark,
    configured_judge,
    judge_identity,
    templates_stored_at,
)

__all__ = [
    "CHECKED_CATEGORIES",
    "CheckRow",
    "audit_answers",
    "calibration_rows",
    "format_calibration",
    "judge_check_main",
    "run_judge_check",
]

#: the categories the audit's sets cover (and Mem0's judge judges)
CHECKED_CATEGORIES = (1, 2, 3, 4)
#: the pinned file of each wrong set
WRONG_SETS: dict[str, Pin] = {"specific_wrong": LOCOMO_AUDIT_SPECIFIC_WRONG, "vague_wrong": LOCOMO_AUDIT_VAGUE_WRONG}
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


# -- the sets ---------------------------------------------------------------------------
def audit_answers(pin: Pin, questions: Mapping[tuple[int, int], Question], pins: Any = None) -> dict[str, str]:
    """The generated answers of one of the audit's sets, by our question id. Each row's id
    `locomo_{conversation index}_qa{qa index}` must name a question of the pinned file with the
    same text, category and gold answer; anything else is a broken pin, said in one line."""
    path = pin_path(pin, pins)
    try:
        data = load_json(path.read_bytes())
        groups = data["detailed_results"]
        rows = [row for group in groups.values() for row in group]
    except (ValueError, KeyError, AttributeError, TypeError) as e:
        raise UserError(f"{path} is not the audit's answer file ({e}); delete it and run `memorybench fetch`") from None
    answers: dict[str, str] = {}
    for row in rows:
        qid = str(row.get("question_id", ""))
        try:
            conversation, index = qid.removeprefix("locomo_").split("_qa")
            question = questions[(int(conversation), int(index))]
        except (ValueError, KeyError):
            raise UserError(
                f"{path}: row {qid!r} names no question of locomo10.json; delete it and run `memorybench fetch`"
            ) from None
        if (
            row.get("question") != question.question
            or str(row.get("category")) != str(question.category)
            or row.get("golden_answer") != str(question.answer)
        ):
            raise UserError(
                f"{path}: row {qid} does not match {question.question_id} of locomo10.json "
                "(question, category or gold answer); delete it and run `memorybench fetch`"
            )
        if question.question_id in answers:
            raise UserError(f"{path}: {qid} appears twice; delete it and run `memorybench fetch`")
        answers[question.question_id] = str(row["generated_answer"])
    return answers


def calibration_rows(pins: Any = None, max_questions: int | None = None) -> dict[str, list[CheckRow]]:
    """The answers to judge, per set, in LoCoMo's file order: the questions of categories 1-4
    among the first `max_questions` questions (all of them with None)."""
    conversations = LOCOMO.load(pin_path(LOCOMO10, pins))
    by_index = {(c, q.qa_index): q for c, conv in enumerate(conversations) for q in conv.questions}
    every = list(iter_questions(conversations))
    asked = [q for q in every[:max_questions] if q.category in CHECKED_CATEGORIES]
    answers = {name: audit_answers(pin, by_index, pins) for name, pin in WRONG_SETS.items()}
    checked = {q.question_id for q in every if q.category in CHECKED_CATEGORIES}
    for name, by_id in answers.items():
        if set(by_id) != checked:
            raise UserError(
                f"{pin_path(WRONG_SETS[name], pins)} covers {len(by_id)} questions, not the {len(checked)} of "
                "categories 1-4; delete it and run `memorybench fetch`"
            )
    out: dict[str, list[CheckRow]] = {}
    for name in SETS:
        out[name] = [
            CheckRow(
                name,
                q.question_id,
                q.sample_id,
                q.category,
                q.question,
                q.answer,
                str(q.answer) if name == "gold" else answers[name][q.question_id],
            )
            for q in asked
        ]
    return out


# -- the rates ----------------------------------------------------------------------------
def _rate(verdicts: Sequence[AutoraterVerdict], confidence: float) -> Rate:
    judged = [v for v in verdicts if v.score is not None]
    interval = mean_interval(
        [float(v.score or 0) for v in judged], [v.sample_id for v in judged], confidence=confidence, kind="rate"
    )
    return Rate(
        rate=interval.estimate,
        low=interval.low,
        high=interval.high,
        accepted=sum(v.score or 0 for v in judged),
        judged=len(judged),
        failed=len(verdicts) - len(judged),
        conversations=interval.clusters,
        method=interval.method,
        note=interval.note,
    )


def set_rates(verdicts: Sequence[AutoraterVerdict], source: dict[str, Any], confidence: float = DEFAULT_CONFIDENCE) -> SetRates:
    """A set's acceptance over categories 1-4 and per category, from its verdicts."""
    return SetRates(
        overall=_rate(verdicts, confidence),
        by_category={str(c): _rate([v for v in verdicts if v.category == c], confidence) for c in CHECKED_CATEGORIES},
        source=source,
    )


def _source(name: str) -> dict[str, Any]:
    if name == "gold":
        return {
            "made": "the gold answer of each question, judged against itself",
            "file": LOCOMO10.relpath,
            "sha256": LOCOMO10.sha256,
        }
    pin = WRONG_SETS[name]
    return {
        "file": pin.relpath,
        "sha256": pin.sha256,
        "repository": pin.repository,
        "commit": pin.commit,
        "source_path": pin.source_path,
        "licence": pin.licence,
    }


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
) -> Calibration:
    """Judge the three sets with `cfg_judge` (a composed `judge` node), write and return its calibration.

    `cache_dir` is `paths.cache`: the response cache (`<cache_dir>/responses`, used when
    judge.cache is true) and the check's folder (`calibration_folder`) live there.
    """
    if max_questions is not None and max_questions < 1:
        raise UserError(f"max_questions={max_questions} must be at least 1 (or null for every question)")
    node = cfg_judge if isinstance(cfg_judge, DictConfig) else OmegaConf.create(dict(cfg_judge))
    judge_cfg, judge, _ = configured_judge(node, pins)
    _validate_judge(node, 1)
    check_benchmark(judge, LOCOMO, "judge-check's audit set")
    identity = judge_identity(judge_cfg, judge)
    rows = calibration_rows(pins, max_questions)
    asked = len(rows["gold"])
    if not asked:
        raise UserError(f"max_questions={max_questions} holds no question of categories 1-4; use a larger prefix")
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
                    for verdict, trace in _judge_set(
                        endpoint, judge, judge_cfg, out / name, set_rows, bar, max_consecutive_failures
                    ):
                        verdicts[name].append(verdict)
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
                f"Prefix check: the {asked} questions of categories 1-4 among LoCoMo's first {max_questions} "
                "(max_questions); not the whole set."
            )
        if local:
            notes.append("Judged by the embedded local model: a local label, not comparable with a hosted judge.")
        sets = {name: set_rates(verdicts[name], _source(name), confidence) for name in rows}
        calibration = Calibration(
            judge_id=identity.judge_id,
            identity=identity,
            identity_sha256=identity.sha256(),
            categories=list(CHECKED_CATEGORIES),
            questions=asked,
            is_prefix=max_questions is not None,
            max_questions=max_questions,
            sets=sets,
            specific_wrong_accepted=sets["specific_wrong"].overall.rate,
            vague_wrong_accepted=sets["vague_wrong"].overall.rate,
            gold_accepted=sets["gold"].overall.rate,
            model_sent=model_sent,
            models_answered=sorted(m for m in models if m),
            local_judge=local,
            confidence=confidence,
            judge_config=judge_cfg,
            prompt={**judge.prompt_info(templates_stored_at(judge, "prompts"))},
            dataset={"file": LOCOMO10.relpath, "sha256": LOCOMO10.sha256},
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
) -> Iterator[tuple[AutoraterVerdict, Any]]:
    """Judge one set's answers in order, appending each trace and verdict as it returns; a run of
    failed calls means the endpoint is down: one line (a rerun replays the answered ones from the cache)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("verdicts.jsonl", "traces.jsonl"):  # a re-check rewrites the folder
        (folder / name).unlink(missing_ok=True)
    verdicts, traces = Journal(folder / "verdicts.jsonl"), Journal(folder / "traces.jsonl")
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
            trace, verdict = _judge_one(endpoint, judge, row, 1, judge_cfg, base, {})  # type: ignore[arg-type]
            traces.append(trace)
            verdicts.append(verdict)
            bar.update(1)
            streak = streak + 1 if verdict.failure == "model_call" else 0
            if streak >= max_consecutive_failures or (streak and streak == index + 1 == len(rows)):
                raise ModelCallError(
                    f"the judge failed {streak} calls in a row, the last: {verdict.error}; fix the endpoint "
                    "and rerun the same command (answered calls come back from the response cache)"
                )
            yield verdict, trace
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
    """The printed table: per set, acceptance per category and overall with its interval."""
    scope = (
        f"prefix: the {calibration.questions:,} questions of categories 1-4 among LoCoMo's first {calibration.max_questions:,}"
        if calibration.is_prefix
        else f"all {calibration.questions:,} questions of categories 1-4"
    )
    conf = f"{100 * calibration.confidence:.0f}%"
    lines = [
        f"judge-check {calibration.judge_id} ({scope})",
        f"{'answers':<16}"
        + "".join(f"{'cat ' + c:>9}" for c in ("1", "2", "3", "4"))
        + f"{'overall':>10}  {conf} interval over conversations  failed",
    ]
    for name, rates in calibration.sets.items():
        label = {"specific_wrong": "specific wrong", "vague_wrong": "vague wrong", "gold": "gold"}[name]
        cells = "".join(f"{_cell(rates.by_category[c]):>9}" for c in ("1", "2", "3", "4"))
        lines.append(f"{label:<16}{cells}{_cell(rates.overall):>10}  {_interval(rates.overall):<32}{rates.overall.failed:>6}")
    lines.append("a wrong set's figure is the judge's false-acceptance rate; gold's is its acceptance of the right answer")
    lines.append(f"{calibration.requests} requests, {calibration.cached} from the response cache")
    lines.append(f"summary: {calibration.summary()}")
    lines += calibration.notes
    if path is not None:
        lines.append(f"judge-check: {path}")
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------------------
def _compose(overrides: Sequence[str]) -> tuple[DictConfig, int | None]:
    from hydra import initialize_config_dir

    from memorybench import CONF_DIR
    from memorybench.plan import compose_spec

    max_questions: int | None = None
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
        if not _ or not (key == "judge" or key.startswith(_ALLOWED_PREFIXES)):
            raise UserError(
                f"judge-check takes only judge=NAME, judge.KEY=VALUE, paths.KEY=VALUE, pricing.KEY=VALUE or "
                f"max_questions=N overrides, got {override!r}"
            )
        passed.append(override)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="memorybench-judge-check"):
        spec = compose_spec(passed)
    cfg = spec.cfg
    cfg.judge = _cache_on(cfg.judge, passed)
    return cfg, max_questions


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog="memorybench judge-check",
        description="Calibrate a judge: how often it accepts the LoCoMo audit's known-wrong answers (specific and vague) "
        "and the gold answers, per category 1-4 (writes <paths.cache>/judge_check/<judge id>/).",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="judge=mem0|strict|openai_compatible|local, judge.KEY=VALUE, paths.KEY=VALUE, max_questions=N",
    )
    parser.add_argument(
        "--pins", help="pins folder with locomo10.json and the audit's sets (default: paths.pins, $MEMORYBENCH_PINS, user cache)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def judge_check_main(argv: Sequence[str]) -> int:
    """`memorybench judge-check [judge=NAME judge.KEY=VALUE ... max_questions=N] [--pins DIR]`."""
    ns = _parser().parse_intermixed_args(list(argv))
    cfg, max_questions = _compose(ns.overrides)
    pins = ns.pins or cfg.paths.pins
    calibration = run_judge_check(
        cfg.judge,
        cache_dir=cfg.paths.cache,
        max_questions=max_questions,
        pins=pins,
        prices=OmegaConf.to_container(cfg.pricing) if cfg.get("pricing") is not None else {},  # type: ignore[arg-type]
        progress=not ns.quiet,
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

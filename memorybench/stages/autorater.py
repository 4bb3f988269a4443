"""The `autorater` stage: Mem0's LLM judge (DESIGN.md 5.2) over a finished pack.

It reads only the pack's stored `predictions.jsonl`, in saved order, and never reruns
the reader. Every category 1-4 row gets one judge call per pass: the pinned
ACCURACY_PROMPT filled as Mem0 fills it, one user message, temperature 0, JSON mode,
no stop sequence (`memorybench.score.judge`). Two request fields Mem0 leaves out are
sent: `max_tokens` (judge.max_tokens; our client always sends it, and the label needs
about ten tokens) and `seed` when judge.seed is set (null for judge=mem0, as Mem0).
Category 5 gets no request, only a SKIPPED verdict (Mem0 skips it). Everything it
writes lies under `<pack>/autorater/`; nothing the `qa` stage wrote is touched:

    autorater/autorater_meta.json       the judge, the prompt pin, passes, times
    autorater/prompts/mem0_accuracy_prompt.txt   the template the traces refer to
    autorater/traces.jsonl              judge_trace.v1: request, ChatResult (attempts...) or error
    autorater/autorater_verdicts.jsonl  autorater_verdict.v1: one row per (question, pass)
    autorater/autorater_metrics.json    autorater_metrics.v1: J, Mem0 F1 / BLEU-1, counts
    autorater/_SUCCESS                  written last, create-only

Verdicts and traces are appended as the calls return (the trace first, the verdict as
the commit), so a rerun after a kill resumes: torn lines are dropped, a trace without
its verdict is dropped and redone, done (question, pass) pairs are skipped, and the
verdict file ends equal to an uninterrupted run's. A call that fails after its retries
(`ModelCallError`) and a reply without a readable label are FAILED verdicts: counted,
listed, excluded from J, never scored WRONG; the stage goes on. Five failed calls in a
row mean the endpoint is down: those are dropped again and the stage stops with one line
(a rerun resumes there), rather than writing a FAILED verdict for every row.

J of a pass is the mean of the parsed verdicts' scores over category 1-4 rows (failures
excluded); with several passes, J is the mean of the passes' J, with their sample
standard deviation and the share of rows whose passes all agree. Mem0's F1 and BLEU-1
are means over every category 1-4 row, not means of category means.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue
from tqdm import tqdm

from memorybench.data.pins import MEM0_ACCURACY_PROMPT, pin_path
from memorybench.errors import ModelCallError, OneLineParser, UserError
from memorybench.llm.endpoints import open_endpoint
from memorybench.llm.records import ChatRequest
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeRequest, JudgeTrace
from memorybench.pack.journal import Journal
from memorybench.pack.run_pack import SUCCESS, require_pack_folder, write_atomic
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.run_id import OPERATIONAL_KEYS
from memorybench.score import CATEGORY_NAMES, mem0_bleu1, mem0_f1
from memorybench.score.judge import (
    RESPONSE_FORMAT,
    build_judge_prompt,
    check_judge_template,
    parse_judge_reply,
    text_sha256,
)
from memorybench.stages.rescore import usage_summary

__all__ = [
    "AUTORATER_DIR",
    "JUDGED_CATEGORIES",
    "autorater_main",
    "compute_autorater_metrics",
    "format_autorater_table",
    "load_verdicts",
    "run_autorater",
]

AUTORATER_DIR = "autorater"
VERDICTS = f"{AUTORATER_DIR}/autorater_verdicts.jsonl"
TRACES = f"{AUTORATER_DIR}/traces.jsonl"
METRICS = f"{AUTORATER_DIR}/autorater_metrics.json"
META = f"{AUTORATER_DIR}/autorater_meta.json"
PROMPT_COPY = f"{AUTORATER_DIR}/prompts/mem0_accuracy_prompt.txt"
DONE = f"{AUTORATER_DIR}/{SUCCESS}"
#: Mem0 judges categories 1-4 and skips 5 (adversarial)
JUDGED_CATEGORIES = (1, 2, 3, 4)
SKIPPED_CATEGORY = 5

LABELS = {
    "j": (
        "Mem0's LLM-as-a-judge J: share of CORRECT labels over judged category 1-4 rows (failures excluded); "
        "with several passes, the mean of the per-pass J and their sample standard deviation (n-1)"
    ),
    "j.agreement": "share of category 1-4 rows judged in every pass whose passes all gave the same score",
    "mem0_f1": "Mem0's lexical F1 (token sets): mean over every category 1-4 row, not a mean of category means",
    "mem0_bleu1": "Mem0's BLEU-1 (NLTK, smoothing method1): mean over every category 1-4 row",
}


# -- reading a pack ---------------------------------------------------------------------
def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open("r", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                raise UserError(f"{path}: line {number} is not JSON; run `memorybench verify` on the pack") from None
    return rows


def load_predictions(pack_root: Path) -> list[dict[str, Any]]:
    """The stored answers of a finished pack, in saved order (read only)."""
    require_pack_folder(pack_root)
    path = pack_root / "predictions.jsonl"
    if not path.is_file():
        raise UserError(f"{pack_root} is not a pack: it has no predictions.jsonl; pass <packs>/<name>/runs/<run_id>")
    if not (pack_root / SUCCESS).is_file():
        raise UserError(
            f"pack {pack_root} is not finished (no {SUCCESS}); rerun its `memorybench qa` command to finish it, then judge it"
        )
    rows = _read_jsonl(path)
    seen: set[str] = set()
    for row in rows:
        if row.get("schema") != "prediction.v1":
            raise UserError(f"{path}: row {row.get('question_id')} has schema {row.get('schema')!r}, expected 'prediction.v1'")
        if row["question_id"] in seen:
            raise UserError(f"{path}: question {row['question_id']} appears twice; run `memorybench verify` on the pack")
        seen.add(row["question_id"])
    return rows


def load_verdicts(pack_root: Path) -> list[dict[str, Any]]:
    path = pack_root / VERDICTS
    return _read_jsonl(path) if path.is_file() else []


def _run_meta(pack_root: Path) -> dict[str, Any]:
    path = pack_root / "run_meta.json"
    return json.loads(path.read_text("utf-8")) if path.is_file() else {}


# -- the judge -------------------------------------------------------------------------
def _judge_container(cfg_judge: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cfg_judge, DictConfig):
        try:
            data = OmegaConf.to_container(cfg_judge, resolve=True, throw_on_missing=True)
        except MissingMandatoryValue as e:
            key = f"judge.{e.key}" if getattr(e, "key", None) else "a judge key"
            raise UserError(f"missing value for {key}; add `{key}=...`") from None
    else:
        data = dict(cfg_judge)
    assert isinstance(data, dict)
    return data


def judge_identity(judge: Mapping[str, Any], prompt_sha256: str) -> dict[str, Any]:
    """What decides the judge's requests: the config minus operational settings, the prompt."""
    identity = {k: v for k, v in judge.items() if k not in OPERATIONAL_KEYS}
    identity["prompt_sha256"] = prompt_sha256
    identity["response_format"] = dict(RESPONSE_FORMAT)
    return identity


def _validate_judge(node: DictConfig, passes: int) -> None:
    from memorybench.validate import _validate_endpoint  # the same checks as the reader's

    if passes < 1:
        raise UserError(f"--passes {passes} must be at least 1")
    _validate_endpoint("judge", node)
    if node.get("cache") and passes > 1:
        raise UserError(
            f"judge.cache=true with --passes {passes} would replay pass 1 from the response cache; "
            "drop judge.cache=true (or use --passes 1)"
        )


def _load_template(pins: str | os.PathLike[str] | None) -> tuple[str, str]:
    path = pin_path(MEM0_ACCURACY_PROMPT, pins)
    data = path.read_bytes()
    template = data.decode("utf-8")
    check_judge_template(template)
    return template, text_sha256(template)


def _estimate_tokens(text: str) -> int:
    # conservative for the embedded models' tokenizers (about 3.2 characters per token)
    return math.ceil(len(text) / 2.8) + 1


def _write_atomic(path: Path, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


def _write_json(path: Path, record: Any) -> None:
    data = record.model_dump(mode="json", by_alias=True) if hasattr(record, "model_dump") else record
    _write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _lexical(row: dict[str, Any]) -> tuple[float, float]:
    """Mem0's evals.py scores str(response) against str(answer)."""
    prediction, gold = str(row["prediction"]), str(row["gold"])
    return mem0_f1(prediction, gold), mem0_bleu1(prediction, gold)


def run_autorater(
    pack_root: str | os.PathLike[str],
    cfg_judge: DictConfig,
    *,
    passes: int = 1,
    pins: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    prices: Mapping[str, Any] | None = None,
    progress: bool = False,
    max_consecutive_failures: int = 5,
) -> dict[str, Any]:
    """Judge a finished pack's stored answers; return `autorater_metrics.json`'s content.

    `cfg_judge` is a composed `judge` node (conf/judge/*.yaml). `pins` is the pins folder
    (None: $MEMORYBENCH_PINS, else the user cache), `cache_dir` the response-cache folder
    (used only with judge.cache=true; default `autorater/cache`), `prices` the price table.
    A rerun resumes; a finished autorater with the same judge and passes is not redone.

    A call that fails after its retries is a FAILED verdict and the stage goes on, unless
    `max_consecutive_failures` calls fail in a row: then the endpoint is down, not the
    row, so those verdicts are dropped again and a `ModelCallError` stops the stage (a
    rerun resumes there).
    """
    root = Path(pack_root).expanduser().resolve()
    rows = load_predictions(root)
    node = cfg_judge if isinstance(cfg_judge, DictConfig) else OmegaConf.create(dict(cfg_judge))
    judge = _judge_container(node)
    _validate_judge(node, passes)
    template, template_sha = _load_template(pins)
    identity = judge_identity(judge, template_sha)
    out = root / AUTORATER_DIR

    meta_path = root / META
    previous = json.loads(meta_path.read_text("utf-8")) if meta_path.is_file() else None
    if previous is not None:
        if previous["judge_identity"] != identity:
            changed = sorted(k for k in set(previous["judge_identity"]) | set(identity)
                             if previous["judge_identity"].get(k) != identity.get(k))
            raise UserError(
                f"{out} was started with another judge (differs in {', '.join(changed)}); rerun with the same judge "
                f"options to resume, or move {out} aside to judge again"
            )
        if int(previous["passes"]) != passes:
            raise UserError(
                f"{out} was started with --passes {previous['passes']}; rerun with --passes {previous['passes']}, "
                f"or move {out} aside to judge again with --passes {passes}"
            )
    if (root / DONE).is_file():
        print(f"autorater of {root} is complete; nothing to do", file=sys.stderr)
        return json.loads((root / METRICS).read_text("utf-8"))

    out.mkdir(parents=True, exist_ok=True)
    verdicts = Journal(root / VERDICTS)
    traces = Journal(root / TRACES)
    verdicts.recover()
    traces.recover()
    ids = {row["question_id"] for row in rows}
    done: set[tuple[str, int]] = set()
    for verdict in verdicts.rows():
        key = (verdict["question_id"], int(verdict["pass"]))
        if key in done:
            raise UserError(f"{verdicts.path} has two verdicts for {key}; move {out} aside and judge again")
        if verdict["question_id"] not in ids or not 1 <= key[1] <= passes:
            raise UserError(f"{verdicts.path} has a verdict {key} that is not in this pack; move {out} aside and judge again")
        done.add(key)
    # a trace written just before a kill, whose verdict never landed, is redone
    traces.retain(lambda r: (r["question_id"], int(r["pass"])) in done)

    if not (root / PROMPT_COPY).is_file() or (root / PROMPT_COPY).read_text("utf-8") != template:
        _write_atomic(root / PROMPT_COPY, template)

    judged_rows = [row for row in rows if row["category"] != SKIPPED_CATEGORY]
    longest = max((_estimate_tokens(build_judge_prompt(template, r["question"], r["gold"], r["prediction"]))
                   for r in judged_rows), default=0)
    run_meta = _run_meta(root)
    started_at = previous["started_at"] if previous else utc_now()
    resumed = int(previous.get("resumed", 0)) + 1 if previous else 0
    cache_path = Path(cache_dir).expanduser().resolve() if cache_dir else out / "cache"
    with open_endpoint(node, "judge", cache_dir=cache_path, prices=prices or {}, longest_prompt_tokens=longest,
                       log_dir=out) as endpoint:
        commit, dirty = git_state()
        local = endpoint.is_local
        meta = AutoraterMeta(
            run_id=run_meta.get("run_id"),
            passes=passes,
            judge_config=judge,
            judge_identity=identity,
            judge=endpoint.identity,
            judge_model_sent=endpoint.model,
            prompt=_prompt_info(template_sha),
            response_format=dict(RESPONSE_FORMAT),
            package_versions=package_versions(),
            git_commit=commit,
            git_dirty=dirty,
            started_at=started_at,
            resumed=resumed,
            local_judge=local,
            notes=_notes(local, run_meta),
        )
        _write_json(meta_path, meta)
        lexical: dict[str, tuple[float, float]] = {}
        total = passes * len(rows)
        bar = tqdm(total=total, initial=len(done), disable=None if progress else True, desc="autorater",
                   unit="verdict", file=sys.stderr)
        # keys appended since the first of the current run of consecutive failed calls
        streak: list[tuple[str, int]] = []
        streak_failures = 0
        try:
            try:
                for n in range(1, passes + 1):
                    for index, row in enumerate(rows):
                        key = (row["question_id"], n)
                        if key in done:
                            continue
                        base = dict(question_id=row["question_id"], sample_id=row["sample_id"], index=index,
                                    category=row["category"], pass_=n, judge_prompt_sha256=template_sha)
                        if row["category"] == SKIPPED_CATEGORY:
                            verdicts.append(AutoraterVerdict(**base, status="SKIPPED"))
                            if streak:
                                streak.append(key)
                        else:
                            if row["question_id"] not in lexical:
                                lexical[row["question_id"]] = _lexical(row)
                            f1, bleu1 = lexical[row["question_id"]]
                            trace, verdict = _judge_one(endpoint, row, n, template, template_sha, judge, base, f1, bleu1)
                            traces.append(trace)
                            verdicts.append(verdict)
                            if verdict.failure == "model_call":
                                streak.append(key)
                                streak_failures += 1
                                if streak_failures >= max_consecutive_failures:
                                    raise _EndpointDown(set(streak), verdict.error or "")
                            else:
                                streak.clear()
                                streak_failures = 0
                        done.add(key)
                        bar.update(1)
            finally:
                bar.close()
                verdicts.close()
                traces.close()
        except _EndpointDown as down:
            # not a row's failure but the endpoint's: drop the run of failures so a rerun redoes it
            verdicts.retain(lambda r: (r["question_id"], int(r["pass"])) not in down.keys)
            traces.retain(lambda r: (r["question_id"], int(r["pass"])) not in down.keys)
            raise ModelCallError(
                f"the judge failed {streak_failures} calls in a row, the last: {down.error}; they are not kept "
                "as verdicts: fix the endpoint and rerun the same command to resume"
            ) from None

    metrics = compute_autorater_metrics(root)
    _write_json(root / METRICS, metrics)
    answered = metrics["judge"]["models_answered"]
    identity_done = meta.judge.model_copy(update={"answered": answered})
    _write_json(meta_path, meta.model_copy(update={"judge": identity_done, "ended_at": utc_now()}))
    with (root / DONE).open("x", encoding="utf-8") as f:
        f.write("")
    return metrics


class _EndpointDown(Exception):
    def __init__(self, keys: set[tuple[str, int]], error: str) -> None:
        super().__init__(error)
        self.keys = keys
        self.error = error


def _judge_one(
    endpoint: Any,
    row: dict[str, Any],
    n: int,
    template: str,
    template_sha: str,
    judge: Mapping[str, Any],
    base: dict[str, Any],
    f1: float,
    bleu1: float,
) -> tuple[JudgeTrace, AutoraterVerdict]:
    slots = {"question": str(row["question"]), "gold_answer": str(row["gold"]), "generated_answer": str(row["prediction"])}
    prompt = build_judge_prompt(template, slots["question"], slots["gold_answer"], slots["generated_answer"])
    payload_sha = text_sha256(prompt)
    seed = judge.get("seed")
    request = ChatRequest(
        model=endpoint.model,
        messages=({"role": "user", "content": prompt},),
        temperature=float(judge["temperature"]),
        max_tokens=int(judge["max_tokens"]),
        seed=None if seed is None else int(seed),
        response_format=dict(RESPONSE_FORMAT),
        # no stop sequence, as Mem0: in JSON mode the embedded model's grammar ends the answer
    )
    request_sha = request.sha256()
    stored = JudgeRequest(
        model=request.model,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        seed=request.seed,
        response_format=dict(RESPONSE_FORMAT),
        template=PROMPT_COPY.removeprefix(f"{AUTORATER_DIR}/"),
        template_sha256=template_sha,
        slots=slots,
    )
    common = dict(question_id=row["question_id"], pass_=n, judge_prompt_sha256=template_sha,
                  judge_payload_sha256=payload_sha, request_sha256=request_sha, model_requested=request.model)
    lexical = dict(mem0_f1=f1, mem0_bleu1=bleu1)
    try:
        result = endpoint.client.complete(request)
    except ModelCallError as e:
        trace = JudgeTrace(**common, request=stored, error=e.message, attempts=list(e.attempts))
        verdict = AutoraterVerdict(
            **base, status="FAILED", failure="model_call", error=e.message, **lexical,
            judge_payload_sha256=payload_sha, request_sha256=request_sha, model_requested=request.model,
        )
        return trace, verdict
    parsed = parse_judge_reply(result.text)
    trace = JudgeTrace(**common, model_answered=result.model_answered, request=stored, response=result)
    verdict = AutoraterVerdict(
        **base,
        status=parsed.status,  # type: ignore[arg-type]
        label_raw=parsed.label,
        label_standard=parsed.standard,
        score=parsed.score,
        failure=None if parsed.label is not None else "parse",
        error=parsed.error,
        **lexical,
        judge_payload_sha256=payload_sha,
        request_sha256=request_sha,
        model_requested=request.model,
        model_answered=result.model_answered,
    )
    return trace, verdict


def _prompt_info(sha: str) -> dict[str, Any]:
    pin = MEM0_ACCURACY_PROMPT
    return {
        "name": "mem0 ACCURACY_PROMPT",
        "pin": pin.relpath,
        "sha256": sha,
        "repository": pin.repository,
        "commit": pin.commit,
        "source_path": pin.source_path,
        "stored_at": PROMPT_COPY,
    }


def _notes(local: bool, run_meta: Mapping[str, Any]) -> list[str]:
    notes = []
    if local:
        notes.append("Judged by the embedded local model: a local label, not comparable with Mem0's published J.")
    if run_meta.get("local_model"):
        notes.append("Answers from the embedded local model: not comparable with published numbers.")
    if run_meta.get("is_prefix"):
        notes.append(f"Prefix run: the first {run_meta.get('question_count')} questions only (max_questions).")
    return notes


# -- metrics -----------------------------------------------------------------------------
def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _category_means(pairs: Sequence[tuple[int, float]]) -> dict[str, float | None]:
    return {str(c): _mean([v for cat, v in pairs if cat == c]) for c in JUDGED_CATEGORIES}


def compute_autorater_metrics(pack_root: str | os.PathLike[str]) -> dict[str, Any]:
    """`autorater_metrics.json` from the stored files only (no model, no clock)."""
    root = Path(pack_root).resolve()
    rows = _read_jsonl(root / "predictions.jsonl")
    meta = json.loads((root / META).read_text("utf-8"))
    run_meta = _run_meta(root)
    verdicts = load_verdicts(root)
    traces = _read_jsonl(root / TRACES) if (root / TRACES).is_file() else []
    passes = int(meta["passes"])
    order = {row["question_id"]: i for i, row in enumerate(rows)}
    judged_rows = [row for row in rows if row["category"] != SKIPPED_CATEGORY]

    scores: dict[tuple[str, int], int] = {}
    by_pass = []
    j_passes: list[float | None] = []
    j_passes_by_category: list[dict[str, float | None]] = []
    for n in range(1, passes + 1):
        these = [v for v in verdicts if int(v["pass"]) == n]
        parsed = [v for v in these if v["status"] in ("CORRECT", "WRONG")]
        for v in parsed:
            scores[(v["question_id"], n)] = int(v["score"])
        by_pass.append({
            "pass": n,
            "judged": len(parsed),
            "skipped": sum(1 for v in these if v["status"] == "SKIPPED"),
            "failed": sum(1 for v in these if v["status"] == "FAILED"),
        })
        j_passes.append(_mean([v["score"] for v in parsed]))
        j_passes_by_category.append(_category_means([(v["category"], v["score"]) for v in parsed]))

    present = [j for j in j_passes if j is not None]
    by_category = {}
    for c in JUDGED_CATEGORIES:
        values = [p[str(c)] for p in j_passes_by_category if p[str(c)] is not None]
        by_category[str(c)] = _mean(values)
    unanimous = agreed_rows = 0
    for row in judged_rows:
        row_scores = [scores.get((row["question_id"], n)) for n in range(1, passes + 1)]
        if None in row_scores:
            continue
        agreed_rows += 1
        unanimous += len(set(row_scores)) == 1
    agreement = {
        "rows": agreed_rows,
        "unanimous": unanimous,
        "share": (unanimous / agreed_rows if agreed_rows else None) if passes > 1 else None,
    }

    failed = [v for v in verdicts if v["status"] == "FAILED"]
    failed.sort(key=lambda v: (int(v["pass"]), order.get(v["question_id"], 0)))
    failed_ids = sorted({v["question_id"] for v in failed}, key=lambda q: order.get(q, 0))
    labels = Counter(v["label_raw"] for v in verdicts if v["status"] in ("CORRECT", "WRONG") and not v["label_standard"])

    lexical = {v["question_id"]: (v["category"], v["mem0_f1"], v["mem0_bleu1"])
               for v in verdicts if v["status"] != "SKIPPED" and v["mem0_f1"] is not None}
    lexical_rows = [lexical[row["question_id"]] for row in judged_rows if row["question_id"] in lexical]

    responses = [t for t in traces if t.get("response") is not None]
    usage = usage_summary(responses) if responses else {}
    if usage:
        usage["failed_calls"] = sum(1 for t in traces if t.get("response") is None)
    answered = sorted({t["model_answered"] for t in traces if t.get("model_answered")})
    judge_cfg = meta["judge_config"]
    return {
        "schema": "autorater_metrics.v1",
        "run_id": meta.get("run_id"),
        "questions": len(rows),
        "is_prefix": run_meta.get("is_prefix"),
        "reader_local_model": run_meta.get("local_model"),
        "local_judge": meta["local_judge"],
        "passes": passes,
        "judge": {
            "name": judge_cfg.get("name"),
            "provider": judge_cfg.get("provider"),
            "model_requested": meta["judge_model_sent"],
            "model_configured": meta["judge"]["requested"],
            "models_answered": answered,
            "base_url": judge_cfg.get("base_url"),
            "temperature": judge_cfg.get("temperature"),
            "max_tokens": judge_cfg.get("max_tokens"),
            "seed": judge_cfg.get("seed"),
            "response_format": meta["response_format"],
            "local": meta["local_judge"],
            "weights": meta["judge"].get("weights"),
        },
        "judge_prompt_sha256": meta["prompt"]["sha256"],
        "prompt": meta["prompt"],
        "category_names": {str(c): CATEGORY_NAMES[c] for c in JUDGED_CATEGORIES},
        "j": {
            "overall": _mean(present),
            "by_category": by_category,
            "passes": j_passes,
            "passes_by_category": j_passes_by_category,
            "mean": _mean(present),
            "sd": statistics.stdev(present) if len(present) > 1 else None,
            "agreement": agreement,
        },
        "counts": {
            "rows": len(rows),
            "judged_rows": len(judged_rows),
            "skipped_rows": len(rows) - len(judged_rows),
            "requests": len(traces),
            "judged": sum(p["judged"] for p in by_pass),
            "skipped": sum(p["skipped"] for p in by_pass),
            "failed": len(failed),
            "by_pass": by_pass,
            "by_category": {str(c): sum(1 for r in judged_rows if r["category"] == c) for c in JUDGED_CATEGORIES},
            "failed_question_ids": failed_ids,
            "failures": [
                {"question_id": v["question_id"], "pass": v["pass"], "failure": v["failure"], "error": v["error"]}
                for v in failed
            ],
            "nonstandard_labels": sum(labels.values()),
            "nonstandard_label_values": dict(sorted(labels.items())),
        },
        "mem0_f1": {
            "overall": _mean([f1 for _, f1, _ in lexical_rows]),
            "by_category": _category_means([(c, f1) for c, f1, _ in lexical_rows]),
        },
        "mem0_bleu1": {
            "overall": _mean([b for _, _, b in lexical_rows]),
            "by_category": _category_means([(c, b) for c, _, b in lexical_rows]),
        },
        "usage": {"judge": usage} if usage else {},
        "labels": LABELS,
        "notes": meta.get("notes", []),
    }


def format_autorater_table(metrics: Mapping[str, Any]) -> str:
    """The table printed at the end: J, Mem0 F1 and BLEU-1 per category, passes, failures."""
    lines = list(metrics.get("notes", []))
    judge = metrics["judge"]
    lines.append(
        f"judge: {judge['name']} ({judge['provider']}), model {judge['model_requested']}"
        f" answered by {', '.join(judge['models_answered']) or '-'}; prompt sha256 {metrics['judge_prompt_sha256'][:12]}"
    )
    header = f"{'cat':<4}{'name':<13}{'n':>5}  {'J':>7}  {'Mem0 F1':>8}  {'BLEU-1':>8}"
    lines += [header, "-" * len(header)]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    for c in JUDGED_CATEGORIES:
        key = str(c)
        lines.append(
            f"{c:<4}{CATEGORY_NAMES[c]:<13}{metrics['counts']['by_category'][key]:>5}  {fmt(metrics['j']['by_category'][key]):>7}  "
            f"{fmt(metrics['mem0_f1']['by_category'][key]):>8}  {fmt(metrics['mem0_bleu1']['by_category'][key]):>8}"
        )
    lines.append("-" * len(header))
    counts = metrics["counts"]
    lines.append(
        f"{'1-4':<17}{counts['judged_rows']:>5}  {fmt(metrics['j']['overall']):>7}  "
        f"{fmt(metrics['mem0_f1']['overall']):>8}  {fmt(metrics['mem0_bleu1']['overall']):>8}"
    )
    lines.append(f"5 (adversarial) skipped: {counts['skipped_rows']} rows, no judge request")
    j = metrics["j"]
    if metrics["passes"] > 1:
        sd = "-" if j["sd"] is None else f"{j['sd']:.4f}"
        share = "-" if j["agreement"]["share"] is None else f"{j['agreement']['share']:.4f}"
        lines.append(
            f"passes: {metrics['passes']}; J per pass {', '.join(fmt(p) for p in j['passes'])}; "
            f"mean {fmt(j['mean'])} sd {sd}; all passes agree on {share} of {j['agreement']['rows']} rows"
        )
    if counts["failed"]:
        ids = counts["failed_question_ids"]
        shown = ", ".join(ids[:10]) + (f" (+{len(ids) - 10} more)" if len(ids) > 10 else "")
        lines.append(f"judge failures: {counts['failed']} (not in J): {shown}")
    if counts["nonstandard_labels"]:
        lines.append(f"non-standard labels scored 0 as Mem0 does: {counts['nonstandard_label_values']}")
    usage = metrics.get("usage", {}).get("judge")
    if usage:
        cost = f"${usage['cost_usd']:.4f}" if usage["cost_known"] else "unknown (model not in the price table)"
        lines.append(
            f"judge calls: {usage['calls']} answered, {usage['failed_calls']} failed; {usage['prompt_tokens']} prompt + "
            f"{usage['completion_tokens']} completion tokens; cost {cost}; retries {usage['retries']}"
        )
    return "\n".join(lines)


# -- command line -----------------------------------------------------------------------
_ALLOWED_PREFIXES = ("judge", "paths.", "pricing.", "+pricing.")


def compose_judge(overrides: Sequence[str]) -> DictConfig:
    """Compose the project config with `judge=...`, `judge.KEY=...`, `paths.KEY=...` overrides."""
    from hydra import initialize_config_dir

    from memorybench import CONF_DIR
    from memorybench.plan import compose_spec

    for override in overrides:
        key = override.split("=", 1)[0]
        if "=" not in override or not (key == "judge" or key.startswith(_ALLOWED_PREFIXES)):
            raise UserError(
                f"autorater takes only judge=NAME, judge.KEY=VALUE, paths.KEY=VALUE or pricing.KEY=VALUE overrides, "
                f"got {override!r}; the pack's own config is fixed"
            )
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="memorybench-autorater"):
        spec = compose_spec(list(overrides))
    return spec.cfg


def autorater_main(argv: Sequence[str]) -> int:
    """`memorybench autorater PACK [--passes N] [--pins DIR] [judge=NAME judge.KEY=VALUE ...]`."""
    # To be wired in memorybench/cli.py (owned by another engineer) as
    #   COMMANDS["autorater"] = lambda args: autorater_main(args)
    # cli.main prints a UserError raised here as one line and exits with its code.
    parser = OneLineParser(
        prog="memorybench autorater",
        description="Judge a finished pack's stored answers with Mem0's LLM judge (writes <pack>/autorater/).",
    )
    parser.add_argument("pack", help="a finished pack folder: <packs>/<name>/runs/<run_id>")
    parser.add_argument("overrides", nargs="*", help="judge=mem0|openai_compatible|local, judge.KEY=VALUE, paths.KEY=VALUE")
    parser.add_argument("--passes", type=int, default=1, help="judge passes over every row (J mean and sd over passes)")
    parser.add_argument("--pins", help="pins folder with the ACCURACY_PROMPT (default: paths.pins, $MEMORYBENCH_PINS, user cache)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    ns = parser.parse_intermixed_args(list(argv))
    if ns.passes < 1:
        raise UserError(f"--passes {ns.passes} must be at least 1")
    root = Path(ns.pack).expanduser()
    load_predictions(root.resolve())  # a missing or unfinished pack fails before composing anything
    cfg = compose_judge(ns.overrides)
    metrics = run_autorater(
        root,
        cfg.judge,
        passes=ns.passes,
        pins=ns.pins or cfg.paths.pins,
        cache_dir=cfg.paths.cache,
        prices=OmegaConf.to_container(cfg.pricing) if cfg.get("pricing") is not None else {},
        progress=not ns.quiet,
    )
    print(format_autorater_table(metrics))
    print(f"autorater: {root.resolve() / AUTORATER_DIR}")
    return 0


def _module_main() -> int:
    try:
        return autorater_main(sys.argv[1:])
    except UserError as e:
        print(f"memorybench: error: {e.message}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(_module_main())

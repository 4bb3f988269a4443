"""Scores of a pack from its stored rows: `predictions.csv` and `metrics.json`.

Pure function of the pack's files (no model, no clock), so `memorybench rescore PACK`
is byte-identical on every run and equals what `qa` wrote at the end.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.pack.run_pack import RunPack
from memorybench.score import CATEGORY_NAMES, exact_match, locomo_score, token_f1

CSV_COLUMNS = (
    "question_id", "sample_id", "category", "category_name", "question", "prediction", "gold",
    "adversarial_answer", "locomo_f1", "exact_match", "token_f1",
)
LABELS = {
    "locomo_f1": "LoCoMo F1: the released task_eval/evaluation.py rules; overall includes category 5",
    "exact_match": "exact match after LoCoMo normalisation (ours, not LoCoMo's)",
    "token_f1": "plain token F1 after LoCoMo normalisation, no category rules (ours, not LoCoMo's)",
}


def score_row(row: dict[str, Any]) -> dict[str, float]:
    gold = row["gold"]
    text_gold = "" if gold is None else str(gold)
    return {
        "locomo_f1": locomo_score(row["prediction"], gold, row["category"]),
        "exact_match": exact_match(row["prediction"], text_gold),
        "token_f1": token_f1(row["prediction"], text_gold),
    }


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """JSONL rows; a line that is not JSON is a one-line error naming the file and line."""
    with path.open("r", encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                raise UserError(f"{path} line {number} is not valid JSON; run `memorybench verify` on the pack") from None


def _mean(values: list[float]) -> float | None:
    # fsum: exact, so the mean does not depend on the order of the rows
    return math.fsum(values) / len(values) if values else None


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def usage_summary(traces: list[dict[str, Any]]) -> dict[str, Any]:
    responses = [t["response"] for t in traces]
    costs = [r.get("cost_usd") for r in responses]
    latencies = [r["latency_s"] for r in responses if not r.get("cache_hit")]
    return {
        "calls": len(responses),
        "prompt_tokens": sum(r["usage"]["prompt_tokens"] for r in responses),
        "completion_tokens": sum(r["usage"]["completion_tokens"] for r in responses),
        "cached_tokens": sum(r["usage"]["cached_tokens"] for r in responses),
        "cost_usd": round(sum(c for c in costs if c is not None), 10),
        "cost_known": all(c is not None for c in costs),
        "retries": sum(max(0, len(r["attempts"]) - 1) for r in responses),
        "cache_hits": sum(1 for r in responses if r.get("cache_hit")),
        "models_answered": sorted({r["model_answered"] for r in responses if r.get("model_answered")}),
        "latency_s": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "mean": _mean(latencies),
        },
    }


def compute_scores(pack_root: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows with scores, metrics) from predictions.jsonl, reader traces and run_meta."""
    pack = RunPack(pack_root)
    if not pack.predictions.path.is_file():
        raise UserError(f"{pack_root} is not a pack: it has no predictions.jsonl; pass a folder <packs>/<name>/runs/<run_id>")
    meta_path = pack_root / "run_meta.json"
    if not meta_path.is_file():
        raise UserError(f"{pack_root} is not a finished pack: it has no run_meta.json; rerun its `memorybench qa` command")
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
    except ValueError:
        raise UserError(f"{meta_path} is not valid JSON; run `memorybench verify` on the pack") from None
    rows = []
    for raw in _rows(pack.predictions.path):
        if raw.get("schema") != "prediction.v1":
            raise UserError(f"{pack.predictions.path}: row {raw.get('question_id')} has schema {raw.get('schema')!r}, expected 'prediction.v1'")
        rows.append({**raw, **score_row(raw)})
    trace_path = pack_root / "reader" / "traces.jsonl"
    traces = list(_rows(trace_path)) if trace_path.is_file() else []

    metrics: dict[str, Any] = {
        "schema": "metrics.v1",
        "run_id": meta.get("run_id"),
        "questions": len(rows),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "category_names": {str(k): v for k, v in CATEGORY_NAMES.items()},
        "counts": {"total": len(rows), "by_category": {}},
        "labels": LABELS,
    }
    for metric in ("locomo_f1", "exact_match", "token_f1"):
        by_category = {}
        for category in CATEGORY_NAMES:
            values = [r[metric] for r in rows if r["category"] == category]
            by_category[str(category)] = _mean(values)
        metrics[metric] = {"overall": _mean([r[metric] for r in rows]), "by_category": by_category}
    for category in CATEGORY_NAMES:
        metrics["counts"]["by_category"][str(category)] = sum(1 for r in rows if r["category"] == category)
    metrics["usage"] = {"reader": usage_summary(traces)} if traces else {}
    return rows, metrics


def predictions_csv(rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow([
            r["question_id"], r["sample_id"], r["category"], CATEGORY_NAMES[r["category"]], r["question"],
            r["prediction"], "" if r["gold"] is None else str(r["gold"]), r.get("adversarial_answer") or "",
            repr(r["locomo_f1"]), repr(r["exact_match"]), repr(r["token_f1"]),
        ])
    return buffer.getvalue()


def rescore(pack_root: Path) -> dict[str, Any]:
    """Rewrite predictions.csv and metrics.json from the stored rows; return the metrics."""
    rows, metrics = compute_scores(pack_root)
    pack = RunPack(pack_root)
    pack.write_text("predictions.csv", predictions_csv(rows))
    pack.write_json("metrics.json", metrics)
    return metrics


def format_table(metrics: dict[str, Any]) -> str:
    """The results table printed at the end of a run: category number beside its name."""
    lines = []
    if metrics.get("local_model"):
        lines.append("Embedded local model: not comparable with published LoCoMo numbers.")
    if metrics.get("is_prefix"):
        lines.append(f"Smoke test: the first {metrics['questions']} questions only (max_questions).")
    header = f"{'cat':<4}{'name':<13}{'n':>5}  {'LoCoMo F1':>9}  {'EM (ours)':>9}  {'tokF1 (ours)':>12}"
    lines += [header, "-" * len(header)]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    for category, name in CATEGORY_NAMES.items():
        key = str(category)
        n = metrics["counts"]["by_category"][key]
        lines.append(
            f"{category:<4}{name:<13}{n:>5}  {fmt(metrics['locomo_f1']['by_category'][key]):>9}  "
            f"{fmt(metrics['exact_match']['by_category'][key]):>9}  {fmt(metrics['token_f1']['by_category'][key]):>12}"
        )
    lines.append("-" * len(header))
    lines.append(
        f"{'all':<17}{metrics['counts']['total']:>5}  {fmt(metrics['locomo_f1']['overall']):>9}  "
        f"{fmt(metrics['exact_match']['overall']):>9}  {fmt(metrics['token_f1']['overall']):>12}"
    )
    reader = metrics.get("usage", {}).get("reader")
    if reader:
        cost = f"${reader['cost_usd']:.4f}" if reader["cost_known"] else "unknown (model not in the price table)"
        p50 = reader["latency_s"]["p50"]
        lines.append(
            f"reader: {reader['calls']} calls, {reader['prompt_tokens']} prompt + {reader['completion_tokens']} completion tokens, "
            f"cost {cost}, latency p50 {p50 if p50 is None else round(p50, 3)} s, retries {reader['retries']}"
        )
    return "\n".join(lines)

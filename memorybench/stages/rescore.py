"""Scores of a pack from its stored rows: `predictions.csv` and `metrics.json`.

Pure function of the pack's files (no model, no clock), so `memorybench rescore PACK`
is byte-identical on every run and equals what `qa` wrote at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.pack import layout
from memorybench.pack.run_pack import RunPack
from memorybench.pack.scores import compute_scores
from memorybench.score import CATEGORY_NAMES
from memorybench.score.rows import predictions_csv


def rescore(pack_root: Path) -> dict[str, Any]:
    """Rewrite predictions.csv and metrics.json from the stored rows; return the metrics."""
    rows, metrics = compute_scores(pack_root)
    pack = RunPack(pack_root)
    pack.write_text(layout.PREDICTIONS_CSV, predictions_csv(rows))
    pack.write_json(layout.METRICS, metrics)
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

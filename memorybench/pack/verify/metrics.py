"""predictions.csv and metrics.json equal a fresh rescore of the pack's stored rows."""

from __future__ import annotations

import json

from memorybench.errors import UserError
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings

__all__ = ["check_metrics"]


def check_metrics(ctx: Context, out: Findings) -> None:
    """Rescore the rows (`compute_scores`) and compare, by content: `memorybench rescore` may rewrite both files."""
    if ctx.meta is None or {"predictions.jsonl", "reader/traces.jsonl"} & ctx.bad_files:
        return
    if not (ctx.root / "predictions.jsonl").is_file():
        return
    from memorybench.pack.scores import compute_scores
    from memorybench.score.rows import predictions_csv

    schema = (ctx.metrics_doc or {}).get("schema") or "metrics.v2"
    try:
        rows, metrics = compute_scores(ctx.root, schema=str(schema))
    except (UserError, KeyError, TypeError, ValueError) as e:
        out.add("metrics", "predictions.jsonl", f"cannot be rescored ({' '.join(str(e).split())[:200]})")
        return
    csv_path = ctx.root / "predictions.csv"
    from memorybench.benchmark import benchmark_of_pack

    expected_csv = predictions_csv(rows, benchmark_of_pack(ctx.meta, metrics))
    if csv_path.is_file() and csv_path.read_bytes().decode("utf-8", errors="replace") != expected_csv:
        out.add(
            "metrics", "predictions.csv", "differs from a rescore of predictions.jsonl; run `memorybench rescore` on the pack"
        )
    if ctx.metrics_doc is not None and ctx.metrics_doc != json.loads(json.dumps(metrics)):
        changed = sorted(
            k for k in set(metrics) | set(ctx.metrics_doc) if json.loads(json.dumps(metrics.get(k))) != ctx.metrics_doc.get(k)
        )
        out.add(
            "metrics",
            "metrics.json",
            f"differs from a rescore of the stored rows ({', '.join(changed)}); run `memorybench rescore` on the pack",
        )

"""A pack's local scores from its stored rows: predictions.csv and metrics.json's content.

`rescore`, `verify` and `compare` all score a pack through `compute_scores`, so the
three can never disagree on what a pack's rows are worth.
"""

from __future__ import annotations

import os
from typing import Any

from memorybench.errors import UserError
from memorybench.llm.usage import usage_summary
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.score.rows import local_metrics, score_row


def compute_scores(pack_root: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows with scores, metrics) from predictions.jsonl, reader traces and run_meta."""
    pack = PackReader.open(pack_root)
    if not pack.exists(layout.PREDICTIONS):
        raise UserError(f"{pack_root} is not a pack: it has no predictions.jsonl; pass a folder <packs>/<name>/runs/<run_id>")
    if not pack.exists(layout.RUN_META):
        raise UserError(f"{pack_root} is not a finished pack: it has no run_meta.json; rerun its `memorybench qa` command")
    meta = pack.json(layout.RUN_META)
    rows = []
    for raw in pack.rows(layout.PREDICTIONS):
        if raw.get("schema") != "prediction.v1":
            raise UserError(f"{pack.uri(layout.PREDICTIONS)}: row {raw.get('question_id')} has schema {raw.get('schema')!r}, expected 'prediction.v1'")
        rows.append({**raw, **score_row(raw)})
    traces = list(pack.rows(layout.READER_TRACES))
    metrics = local_metrics(rows, meta)
    metrics["usage"] = {"reader": usage_summary(traces)} if traces else {}
    return rows, metrics

"""A pack's local scores from its stored rows: predictions.csv and metrics.json's content.

`rescore`, `verify` and `compare` all score a pack through `compute_scores`, so the
three can never disagree on what a pack's rows are worth.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from memorybench.benchmark import benchmark_of_pack
from memorybench.errors import UserError
from memorybench.llm.usage import agent_usage, build_usage, total_usage, usage_summary
from memorybench.pack.writer_tally import library_reported, writer_tally
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import Prediction
from memorybench.score.rows import metrics_v1, score_row
from memorybench.score.score_record import SCHEMA, local_metrics


def compute_scores(pack_root: str | os.PathLike[str], *, schema: str = SCHEMA) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows with scores, metrics) from predictions.jsonl, run_meta, and the cost records
    (reader and agent traces, memory/build_cost.jsonl); metrics in `schema`'s shape (metrics.v2,
    or the metrics.v1 an older pack holds, for `verify`)."""
    pack = PackReader.open(pack_root)
    if not pack.exists(layout.PREDICTIONS):
        raise UserError(f"{pack_root} is not a pack: it has no predictions.jsonl; pass a folder <packs>/<name>/runs/<run_id>")
    if not pack.exists(layout.RUN_META):
        raise UserError(f"{pack_root} is not a finished pack: it has no run_meta.json; rerun its `memorybench qa` command")
    meta = pack.json_object(layout.RUN_META)
    benchmark = benchmark_of_pack(meta)
    rows = []
    # every row through its schema (a category "2" is a one-line PackError naming the line),
    # then scored as the dict it was written as
    for prediction in pack.records(layout.PREDICTIONS, Prediction):
        raw = prediction.model_dump(mode="json", by_alias=True, exclude_unset=True)
        rows.append({**raw, **score_row(raw, benchmark)})
    traces = list(pack.rows(layout.READER_TRACES))
    metrics = local_metrics(rows, meta, benchmark) if schema == SCHEMA else metrics_v1(rows, meta, benchmark)
    builds = list(pack.rows(layout.BUILD_COST)) if pack.exists(layout.BUILD_COST) else None
    metrics["usage"] = run_usage(pack, traces, builds, questions=len(rows))
    tally = writer_tally(builds or [])
    if tally is not None:  # a memory a writer model wrote: how many of its tasks failed
        metrics["memory"] = tally.metrics()
        reports = layout.library_reports(str((meta.get("choices") or {}).get("memory")))
        if pack.exists(reports):  # a wrapped library that reported failures of its own
            metrics["memory"]["library_reported"] = library_reported(pack.rows(reports), reports)
    return rows, metrics


def run_usage(
    pack: PackReader, traces: list[dict[str, Any]], builds: list[dict[str, Any]] | None, *, questions: int
) -> dict[str, Any]:
    """metrics.json's `usage`: `reader` (as it always was), `agent`, `build` (the memory's
    writer and embedder), and `total` = build + answers, each present when its files are."""
    usage: dict[str, Any] = {}
    if traces:
        usage["reader"] = usage_summary(traces)
    agent = list(pack.rows(layout.AGENT_TRACES))
    if agent:
        usage["agent"] = agent_usage(agent, _prices(pack))
    if builds is not None:
        usage["build"] = build_usage(builds)
    answers = [usage[k] for k in ("reader", "agent") if k in usage]
    if builds is not None and answers:  # a pack without its build costs (an old one) has no total
        usage["total"] = total_usage([usage["build"], *answers], questions)
    return usage


def _prices(pack: PackReader) -> dict[str, Any]:
    """The price table the run was configured with (config.resolved.yaml `pricing`)."""
    if not pack.exists(layout.CONFIG):
        return {}
    cfg = yaml.safe_load(pack.read_text(layout.CONFIG)) or {}
    prices = cfg.get("pricing") if isinstance(cfg, dict) else None
    return prices if isinstance(prices, dict) else {}

"""One finished run in numbers: the summary every later view of a pack derives from.

`run_summary(pack)` reads `run_meta.json`, `metrics.json` and, when the autorater ran,
`autorater/autorater_metrics.json`, all through `PackReader` (a local folder or gs://).
`aggregate`'s runs table is its `RUNS_SCHEMA` columns, MLflow's metrics and judge params
are its numbers under MLflow's names (`memorybench.tracking`), `compare` takes a pack's
own reported scores from it, and `report` reads it through the runs table. A number
shown in two places is therefore computed once.

Keys: the run keys (`run_keys`), then the runs-table columns in `RUNS_SCHEMA` order, then
`exact_match_cat1..5`, `token_f1_cat1..5`, `cache_hits`, `j_per_pass` (J of each pass),
`judge_failed`, `judge_cost_usd`, `judge_models_answered` and `judge_prompt_sha256`. A
value the pack does not have is None (every J key of a pack without an autorater).
"""

from __future__ import annotations

import json
import os
from typing import Any

from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import RunMeta

__all__ = ["CATEGORIES", "CHOICE_GROUPS", "JUDGED_CATEGORIES", "run_keys", "run_summary"]

#: config groups that get a column of their own; every choice is also in `choices` (JSON)
CHOICE_GROUPS = ("dataset", "memory", "reader", "writer", "embedder", "answerer", "judge")
#: LoCoMo's categories (the keys of memorybench.score.CATEGORY_NAMES, which is not imported
#: here: it loads nltk, which loads scipy when installed, seconds for a Parquet writer)
CATEGORIES = (1, 2, 3, 4, 5)
#: the categories with a J (Mem0's judge skips 5)
JUDGED_CATEGORIES = (1, 2, 3, 4)


def _reader_model(meta: RunMeta) -> str | None:
    for model in meta.models:
        if model.role == "reader":
            return model.requested
    return None


def run_keys(pack: PackReader, meta: RunMeta) -> dict[str, Any]:
    """What names a run in every table: run id, experiment, config hash, choices, reader model."""
    choices = meta.choices or {}
    return {
        "run_id": meta.run_id or pack.name,
        "experiment": meta.name,
        "config_sha256": meta.config_sha256,
        **{g: choices.get(g) for g in CHOICE_GROUPS},
        "reader_model": _reader_model(meta),
        "choices": json.dumps(dict(sorted(choices.items())), sort_keys=True),
    }


def _by_category(node: dict[str, Any], category: int) -> Any:
    by_category = node.get("by_category")
    return by_category.get(str(category)) if isinstance(by_category, dict) else None


def run_summary(location: str | os.PathLike[str] | PackReader) -> dict[str, Any]:
    """The summary of one finished pack (see the module docstring for its keys)."""
    pack = PackReader.open(location)
    meta = pack.meta()
    metrics = pack.metrics()
    judge = pack.autorater_metrics()
    reader = metrics.usage.get("reader") or {}
    latency = reader.get("latency_s") or {}
    answered = sorted({a for m in meta.models if m.role == "reader" for a in m.answered}
                      | set(reader.get("models_answered") or []))
    row: dict[str, Any] = {
        **run_keys(pack, meta),
        "models_answered": ",".join(answered) or None,
        "questions": metrics.questions,
        "questions_total": meta.questions_total,
        "is_prefix": meta.is_prefix,
        "local_model": meta.local_model,
        "locomo_f1": metrics.locomo_f1.get("overall"),
        **{f"locomo_f1_cat{c}": _by_category(metrics.locomo_f1, c) for c in CATEGORIES},
        "exact_match": metrics.exact_match.get("overall"),
        "token_f1": metrics.token_f1.get("overall"),
        "j_mean": judge.j.mean if judge else None,
        "j_sd": judge.j.sd if judge else None,
        "j_passes": judge.passes if judge else None,
        **{f"j_cat{c}": judge.j.by_category.get(str(c)) if judge else None for c in JUDGED_CATEGORIES},
        "j_agreement": judge.j.agreement.share if judge else None,
        "judge_model": judge.judge.model_requested if judge else None,
        "mem0_f1": judge.mem0_f1.overall if judge else None,
        "mem0_bleu1": judge.mem0_bleu1.overall if judge else None,
        "calls": reader.get("calls"),
        "prompt_tokens": reader.get("prompt_tokens"),
        "completion_tokens": reader.get("completion_tokens"),
        "cached_tokens": reader.get("cached_tokens"),
        "cost_usd": reader.get("cost_usd") if reader.get("cost_known") else None,
        "cost_known": reader.get("cost_known"),
        "latency_p50_s": latency.get("p50"),
        "latency_p95_s": latency.get("p95"),
        "latency_mean_s": latency.get("mean"),
        "retries": reader.get("retries"),
        "data_sha256": meta.data.get("sha256"),
        "git_commit": meta.git_commit,
        "started_at": meta.started_at,
        "ended_at": meta.ended_at,
        "pack": pack.uri(),
        # beyond the runs table: MLflow's metrics and params
        **{f"exact_match_cat{c}": _by_category(metrics.exact_match, c) for c in CATEGORIES},
        **{f"token_f1_cat{c}": _by_category(metrics.token_f1, c) for c in CATEGORIES},
        "cache_hits": reader.get("cache_hits"),
        "j_per_pass": list(judge.j.passes) if judge else [],
        "judge_failed": judge.counts.failed if judge else None,
        "judge_cost_usd": None,
        "judge_models_answered": list(judge.judge.models_answered) if judge else [],
        "judge_prompt_sha256": judge.judge_prompt_sha256 if judge else None,
    }
    judge_usage = (judge.usage.get("judge") or {}) if judge else {}
    if judge_usage.get("cost_known"):
        row["judge_cost_usd"] = judge_usage.get("cost_usd")
    return row

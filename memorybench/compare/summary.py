"""One finished run in numbers: the summary every later view of a pack derives from.

`run_summary(pack)` reads `run_meta.json`, `metrics.json` and, when the autorater ran,
`autorater/autorater_metrics.json`, all through `PackReader` (a local folder or gs://).
`aggregate`'s runs table is its `RUNS_SCHEMA` columns, MLflow's metrics and judge params
are its numbers under MLflow's names (`memorybench.tracking`), `compare` takes a pack's
own reported scores from it, and `report` reads it through the runs table. A number
shown in two places is therefore computed once.

Keys: the run keys (`run_keys`), then the runs-table columns in `RUNS_SCHEMA` order, then
`exact_match_cat1..5`, `token_f1_cat1..5`, `cache_hits`, `j_per_pass` (J of each pass),
`judge_failed`, `judge_cost_usd`, `judge_models_answered` and `judge_prompt_sha256`, then
the run's identity as `cfg.<dotted leaf>` keys (`identity_columns`). A value the pack does
not have is None (every J key of a pack without an autorater).
"""

from __future__ import annotations

import json
import os
from typing import Any

import yaml

from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import RunMeta
from memorybench.run_id import answerer_reads, identity_config, prompt_relpaths
from memorybench.benchmark import benchmark_named
from memorybench.score.scorers import LEXICAL, kind_column, subset_column

__all__ = [
    "CATEGORIES",
    "CHOICE_GROUPS",
    "CONFIG_PREFIX",
    "JUDGED_CATEGORIES",
    "JUDGE_SEPARATOR",
    "BUDGET_COLUMNS",
    "KIND_SCORERS",
    "SUBSETS",
    "budget_columns",
    "cost_columns",
    "agent_columns",
    "identity_columns",
    "judge_key",
    "judge_summary",
    "run_keys",
    "run_summary",
]

#: the prefix of a run's identity keys: `cfg.memory.top_k`, `cfg.reader.seed`, ...
CONFIG_PREFIX = "cfg."
#: between a judge's number and its judge id: `j_mean/<judge id>`
JUDGE_SEPARATOR = "/"

#: config groups that get a column of their own; every choice is also in `choices` (JSON)
CHOICE_GROUPS = ("dataset", "memory", "reader", "writer", "embedder", "answerer", "judge")
#: the default benchmark's record (LoCoMo's): its kinds, subsets and judged kinds name the runs
#: table's lexical and J columns (reading it imports only the benchmarks' records, no scorer)
_DEFAULT = benchmark_named(None)
#: the default benchmark's question kinds (LoCoMo's categories 1-5): a column each per scorer
CATEGORIES: tuple[int, ...] = tuple(_DEFAULT.category_names)
#: the kinds with a J (Mem0's judge skips LoCoMo's 5)
JUDGED_CATEGORIES: tuple[int, ...] = _DEFAULT.judged if _DEFAULT.judged is not None else CATEGORIES
#: the default benchmark's named subsets (LoCoMo's overalls "1-4" and "1-5"): a column each of
#: the lexical scorer's figure (`subset_column`)
SUBSETS: tuple[str, ...] = tuple(_DEFAULT.subsets)
#: the scorers whose overall and per-kind figures (`kind_column`) the summary holds: the lexical
#: score, then the exact match and token F1
KIND_SCORERS = (LEXICAL, "exact_match", "token_f1")


def _reader_model(meta: RunMeta) -> str | None:
    """The reader's model as requested; a local `auto` as the model it chose (run_meta's weights)."""
    for model in meta.models:
        if model.role == "reader":
            chosen = (model.weights or {}).get("model") if model.requested in (None, "auto", "None") else None
            return str(chosen) if chosen else model.requested
    return None


def _config(pack: PackReader) -> dict[str, Any]:
    return (yaml.safe_load(pack.read_text(layout.CONFIG)) or {}) if pack.exists(layout.CONFIG) else {}


def run_keys(pack: PackReader, meta: RunMeta) -> dict[str, Any]:
    """What names a run in every table: run id, experiment, config hash, choices, reader model.
    A group the run's answerer does not read as a whole (answerer=codex: the reader, and
    outside prompt_injected the memory, writer and embedder too) is no choice of the run
    (`memorybench.run_id.answerer_reads`), so it names no report condition."""
    reads = answerer_reads(_config(pack))
    # a group read in part is no choice either: the agent reads the reader's template at most
    unused = set(reads)
    choices = {g: v for g, v in (meta.choices or {}).items() if g not in unused}
    return {
        "run_id": meta.run_id or pack.name,
        "experiment": meta.name,
        "config_sha256": meta.config_sha256,
        **{g: choices.get(g) for g in CHOICE_GROUPS},
        "reader_model": _reader_model(meta),
        "choices": json.dumps(dict(sorted(choices.items())), sort_keys=True),
    }


def _leaves(node: Any, prefix: str) -> dict[str, Any]:
    if isinstance(node, dict) and node:
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_leaves(value, f"{prefix}.{key}"))
        return out
    return {prefix: node}


def _cell(value: Any) -> str | None:
    """A config value as one string cell: strings as they are, everything else as JSON
    (`8`, `0.0`, `true`, `[]`), so one column keeps one type across packs."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def identity_columns(pack: PackReader, meta: RunMeta) -> dict[str, str | None]:
    """Every leaf of the run's identity config (what its run id hashes, `memorybench.run_id`)
    as `cfg.<dotted key>`: the resolved config of the pack minus paths, storage, tracking,
    pricing, name and operational settings, plus the sha256 of its prompts and its data.

    Read from the pack alone, so a pack identifies itself on any machine: the dataset is
    its sha256 from run_meta.json (never a local path), the prompts are run_meta's hashes.
    """
    data = _config(pack)
    dataset = data.get("dataset")
    if isinstance(dataset, dict):
        data["dataset"] = {**{k: v for k, v in dataset.items() if k != "path"}, "sha256": meta.data.get("sha256")}
    code: dict[str, Any] = {"prompts": {relpath: meta.prompts.get(relpath) for relpath in prompt_relpaths(data)}}
    if meta.plugins:
        code["plugins"] = meta.plugins
    identity = identity_config(data, code)
    return {key: _cell(value) for key, value in sorted(_leaves(identity, CONFIG_PREFIX.rstrip(".")).items())}


def judge_key(name: str, judge_id: str) -> str:
    """A judge's number under its judge id (`j_mean/mem0-gpt-4o-mini-1a2b3c4d`): two judges'
    J never share a column, a metric or a key."""
    return f"{name}{JUDGE_SEPARATOR}{judge_id}"


def judge_summary(pack: PackReader, judge_id: str) -> dict[str, Any]:
    """One finished judge's numbers, each key `judge_key(name, judge_id)`."""
    judge = pack.autorater_metrics(judge_id)
    meta = pack.autorater_meta(judge_id)
    if judge is None:
        return {}
    usage = judge.usage.get("judge") or {}
    values: dict[str, Any] = {
        "j_mean": judge.j.mean,
        "j_sd": judge.j.sd,
        "j_passes": judge.passes,
        **{f"j_cat{c}": judge.j.by_category.get(str(c)) for c in JUDGED_CATEGORIES},
        "j_agreement": judge.j.agreement.share,
        "judge_model": judge.judge.model_requested,
        "judge_failed": judge.counts.failed,
        "judge_calls": usage.get("calls"),
        "judge_cost_usd": usage.get("cost_usd") if usage.get("cost_known") else None,
    }
    out = {judge_key(k, judge_id): v for k, v in values.items()}
    # beyond the runs table: MLflow's metrics and params
    out[judge_key("j_per_pass", judge_id)] = list(judge.j.passes)
    out[judge_key("judge_models_answered", judge_id)] = list(judge.judge.models_answered)
    out[judge_key("judge_identity", judge_id)] = meta.identity.model_dump(mode="json", by_alias=True) if meta else None
    return out


def _sum_known(parts: list[dict[str, Any]], key: str) -> Any:
    values = [p.get(key) for p in parts]
    return None if any(v is None for v in values) else sum(values)


def _cost(usage: dict[str, Any]) -> float | None:
    """A usage block's dollars, None (unknown, never $0) when any of its calls had no price."""
    return usage.get("cost_usd") if usage.get("cost_known") else None


def cost_columns(metrics: Any, judges: list[dict[str, Any]]) -> dict[str, Any]:
    """What a run cost, by stage: building its memory (writer, embedder), answering (reader or
    agent), judging (every judge), and build + answer as `total_*` (a method's own cost)."""
    usage = metrics.usage
    answer = usage.get("reader") or usage.get("agent") or {}
    build = usage.get("build") or {}
    total = usage.get("total") or {}
    judge_costs = [{"cost_usd": j.get("judge_cost_usd")} for j in judges]
    return {
        "build_calls": build.get("calls"),
        "build_prompt_tokens": build.get("prompt_tokens"),
        "build_completion_tokens": build.get("completion_tokens"),
        "build_cost_usd": _cost(build) if build else None,
        "answer_calls": answer.get("calls"),
        "answer_prompt_tokens": answer.get("prompt_tokens"),
        "answer_completion_tokens": answer.get("completion_tokens"),
        "answer_cached_tokens": answer.get("cached_tokens"),
        "answer_cost_usd": _cost(answer) if answer else None,
        "judge_calls": _sum_known([{"c": j.get("judge_calls")} for j in judges], "c") if judges else None,
        "judge_cost_usd": _sum_known(judge_costs, "cost_usd") if judges else None,
        "total_calls": total.get("calls"),
        "total_prompt_tokens": total.get("prompt_tokens"),
        "total_completion_tokens": total.get("completion_tokens"),
        "total_cost_usd": _cost(total) if total else None,
        "cost_per_question_usd": total.get("cost_per_question_usd") if total.get("cost_known") else None,
        "cost_known": bool(total.get("cost_known")) if total else False,
    }


#: the runs-table columns of an agent run, from its `agent/comparison.json` (null for a reader run)
AGENT_COLUMNS = (
    "agent_requests_p50",
    "agent_requests_p95",
    "agent_requests_max",
    "agent_tokens_p50",
    "agent_tokens_p95",
    "agent_tokens_max",
    "agent_budget_exceeded",
    "agent_comparable",
    "agent_reasons",
)


def agent_columns(pack: PackReader) -> dict[str, Any]:
    """An agent run's model requests and tokens per question (p50, p95, max: nearest rank, as
    its COMPARISON.md), its budget hits, and whether it is comparable with reader runs and why
    not (`agent_comparison.v1`, counted by the gateway); all None for a reader run."""
    if not pack.exists(layout.AGENT_COMPARISON):
        return dict.fromkeys(AGENT_COLUMNS)
    # imported here: the agent package costs a Parquet writer of reader packs half a second
    from memorybench.answer.agent._records import AgentComparison

    comparison = pack.record(layout.AGENT_COMPARISON, AgentComparison)
    requests = comparison.requests_per_question or {}
    tokens = comparison.tokens_per_question or {}
    gated = comparison.requests_per_question is not None
    return {
        **{f"agent_requests_{k}": requests.get(k) for k in ("p50", "p95", "max")},
        **{f"agent_tokens_{k}": tokens.get(k) for k in ("p50", "p95", "max")},
        "agent_budget_exceeded": comparison.budget_exceeded if gated else None,
        "agent_comparable": comparison.comparable,
        "agent_reasons": "; ".join(comparison.reasons) or None,
    }


#: the runs-table columns of the run's retrieval budget (`memorybench.pack.budget`): context
#: tokens per question and retrieval latency, as OmniMemEval's and Mem0's tables show them, and
#: whether the budget held (`budget_flag`: how it did not, null where it held or none was set)
BUDGET_COLUMNS = (
    "context_tokens_mean",
    "context_tokens_p50",
    "context_tokens_p95",
    "retrieval_latency_p50_s",
    "retrieval_latency_p95_s",
    "budget_top_k",
    "budget_returned_max",
    "budget_held",
    "budget_flag",
)


def budget_columns(pack: PackReader) -> dict[str, Any]:
    """The run's budget summary (its memory/budget.json, else computed from its rows: any pack,
    an old one included) as the runs table's `BUDGET_COLUMNS`."""
    from memorybench.pack.budget import budget_flag, budget_summary

    budget = budget_summary(pack)
    return {
        "context_tokens_mean": budget.context_tokens_mean,
        "context_tokens_p50": budget.context_tokens_p50,
        "context_tokens_p95": budget.context_tokens_p95,
        "retrieval_latency_p50_s": budget.retrieval_latency_p50_s,
        "retrieval_latency_p95_s": budget.retrieval_latency_p95_s,
        "budget_top_k": budget.top_k,
        "budget_returned_max": budget.returned_max,
        "budget_held": budget.held,
        "budget_flag": budget_flag(budget),
    }


def run_summary(location: str | os.PathLike[str] | PackReader) -> dict[str, Any]:
    """The summary of one finished pack (see the module docstring for its keys)."""
    pack = PackReader.open(location)
    meta = pack.meta()
    metrics = pack.metrics()
    judge_ids = pack.judges()
    judges = {judge_id: judge_summary(pack, judge_id) for judge_id in judge_ids}
    # Mem0's F1 and BLEU-1 are lexical: the autorater computes them, but no judge decides them
    lexical = pack.autorater_metrics(judge_ids[0]) if judge_ids else None
    reader = metrics.usage.get("reader") or {}
    latency = reader.get("latency_s") or {}
    answered = sorted(
        {a for m in meta.models if m.role == "reader" for a in m.answered} | set(reader.get("models_answered") or [])
    )
    by_judge = [{name.split(JUDGE_SEPARATOR)[0]: v for name, v in j.items()} for j in judges.values()]
    row: dict[str, Any] = {
        **run_keys(pack, meta),
        "models_answered": ",".join(answered) or None,
        "questions": metrics.questions,
        "questions_total": meta.questions_total,
        "is_prefix": meta.is_prefix,
        "local_model": meta.local_model,
        LEXICAL: metrics.overall(LEXICAL),
        "overall_covers": metrics.covers(),
        # the default benchmark's overalls (LoCoMo's 1-4 and 1-5); absent from another benchmark's packs
        **{subset_column(name): metrics.subset(LEXICAL, name) for name in SUBSETS},
        **{kind_column(c): metrics.by_kind(LEXICAL, c) for c in CATEGORIES},
        "exact_match": metrics.overall("exact_match"),
        "token_f1": metrics.overall("token_f1"),
        "judges": ",".join(judge_ids) or None,
        "mem0_f1": lexical.mem0_f1.overall if lexical else None,
        "mem0_bleu1": lexical.mem0_bleu1.overall if lexical else None,
        **cost_columns(metrics, by_judge),
        "memory_failed_tasks": (metrics.memory or {}).get("failed"),
        "latency_p50_s": latency.get("p50"),
        "latency_p95_s": latency.get("p95"),
        "latency_mean_s": latency.get("mean"),
        "retries": reader.get("retries"),
        **agent_columns(pack),
        **budget_columns(pack),
        "data_sha256": meta.data.get("sha256"),
        "git_commit": meta.git_commit,
        "started_at": meta.started_at,
        "ended_at": meta.ended_at,
        "pack": pack.uri(),
        # beyond the runs table: MLflow's metrics and params
        **{kind_column(c, scorer): metrics.by_kind(scorer, c) for scorer in KIND_SCORERS[1:] for c in CATEGORIES},
        "cache_hits": reader.get("cache_hits"),
    }
    for values in judges.values():
        row.update(values)
    row.update(identity_columns(pack, meta))
    return row

"""What a run's model calls cost: calls, tokens, dollars, retries, cache hits, latency.

`usage_summary` sums a journal of traced calls (reader, judge); `UsageMeter` is the running
meter of the writer and the embedder, whose snapshots give each build's cost.
`build_usage` sums those build costs (`memory/build_cost.jsonl`), `agent_usage` the Codex
agent's processes (`agent/traces.jsonl`), and `total_usage` adds the parts of one run:
metrics.json's `usage.build`, `usage.agent` and `usage.total`. In these three a cost that
is not known is null, never 0: one unknown part makes the total unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from memorybench.llm.pricing import call_cost
from memorybench.llm.records import Usage
from memorybench.stats import mean, percentile


def usage_summary(traces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums over trace rows that each hold a `response` (a ChatResult as JSON)."""
    responses = [t["response"] for t in traces]
    costs = [r.get("cost_usd") for r in responses]
    latencies = [r["latency_s"] for r in responses if not r.get("cache_hit")]
    # replies stored without a usable text, and answers cut to reader.max_answer_chars: keys
    # present only when some were, so a clean run's metrics read as before
    flagged = {
        "empty_replies": sum(1 for r in responses if r.get("problem")),
        "answers_cut": sum(1 for t in traces if t.get("answer_cut_from_chars")),
    }
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
            "p50": percentile(latencies, 0.5),
            "p95": percentile(latencies, 0.95),
            "mean": mean(latencies),
        },
        **{key: n for key, n in flagged.items() if n},
    }


def _part(calls: int, prompt_tokens: int, completion_tokens: int, costs: Sequence[float | None], **extra: Any) -> dict[str, Any]:
    known = all(c is not None for c in costs)
    cost = round(sum(c for c in costs if c is not None), 10) if known else None
    return {
        "calls": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        **extra,
        "cost_usd": cost,
        "cost_known": known,
    }


def build_usage(build_costs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The memory build's writer and embedder calls, from `memory/build_cost.jsonl` rows.

    `prompt_tokens` counts the embedder's billed tokens with the writer's prompt tokens
    (both are input); `cost_usd` is the rows' summed `cost_usd`, null when any is null.
    """
    calls = prompt = completion = 0
    for row in build_costs:
        writer, embedder = row.get("writer") or {}, row.get("embedder") or {}
        calls += int(writer.get("calls", 0)) + int(embedder.get("calls", 0))
        prompt += int(writer.get("prompt_tokens", 0)) + int(embedder.get("tokens", 0))
        completion += int(writer.get("completion_tokens", 0))
    return _part(calls, prompt, completion, [row.get("cost_usd") for row in build_costs])


def agent_usage(traces: Sequence[Mapping[str, Any]], prices: Mapping[str, Any]) -> dict[str, Any]:
    """The Codex agent's processes, from `agent/traces.jsonl` rows (one per `codex exec`):
    their `usage` sums the `turn.completed` events (input_tokens, which include
    cached_input_tokens, and output_tokens). Priced by the run's own price table (the
    pack's config.resolved.yaml `pricing`) when the trace's model is in it. A trace the memorybench gateway counted
    (`agent_trace.v3` `gateway`) is summed from its requests' usage instead, and `calls`
    counts those model requests (else one per process)."""
    prompt = completion = cached = calls = 0
    costs: list[float | None] = []
    for row in traces:
        gateway = row.get("gateway") or None
        usage = (gateway or {}).get("usage") or row.get("usage") or {}
        calls += int(gateway["requests"]) if gateway else 1
        used = Usage(
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            cached_tokens=int(usage.get("cached_input_tokens", 0)),
        )
        prompt, completion, cached = prompt + used.prompt_tokens, completion + used.completion_tokens, cached + used.cached_tokens
        costs.append(call_cost(str(row.get("model") or ""), used, prices))
    return _part(calls, prompt, completion, costs, cached_tokens=cached)


def total_usage(parts: Sequence[Mapping[str, Any]], questions: int) -> dict[str, Any]:
    """The sum of a run's parts (the build and the answers); `cost_per_question_usd` over
    the `questions` answered. A part's cost counts only when its `cost_known`."""
    total = _part(
        sum(int(p["calls"]) for p in parts),
        sum(int(p["prompt_tokens"]) for p in parts),
        sum(int(p["completion_tokens"]) for p in parts),
        [p["cost_usd"] if p.get("cost_known") else None for p in parts],
    )
    cost = total["cost_usd"]
    total["cost_per_question_usd"] = round(cost / questions, 10) if cost is not None and questions else None
    return total


class UsageMeter:
    """Running counters of one kind of model use (a writer's calls, an embedder's batches,
    ...), as a dataclass of numbers. `cost_usd` is None once any call had no price (unknown
    is not free); `latency_s` sums seconds; a tuple field is a log that only grows, and
    `since` gives its entries added after the snapshot. A snapshot (`copy`) subtracted from a
    later state (`since`) gives what one piece of work cost, the fields in their declared order."""

    def copy(self: MeterT) -> MeterT:
        return dataclasses.replace(self)  # type: ignore[type-var]

    def since(self, before: UsageMeter) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            now, then = getattr(self, f.name), getattr(before, f.name)
            if f.name == "cost_usd":
                out[f.name] = None if now is None or then is None else round(now - then, 10)
            elif f.name == "latency_s":
                out[f.name] = round(now - then, 6)
            elif isinstance(now, tuple):
                out[f.name] = list(now[len(then) :])
            else:
                out[f.name] = now - then
        return out


MeterT = TypeVar("MeterT", bound=UsageMeter)

"""What a run's model calls cost: calls, tokens, dollars, retries, cache hits, latency.

`usage_summary` sums a journal of traced calls (reader, judge); `UsageMeter` is the running
meter of the writer and the embedder, whose snapshots give each build's cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from memorybench.stats import mean, percentile


def usage_summary(traces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Sums over trace rows that each hold a `response` (a ChatResult as JSON)."""
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
            "p50": percentile(latencies, 0.5),
            "p95": percentile(latencies, 0.95),
            "mean": mean(latencies),
        },
    }


class UsageMeter:
    """Running counters of one kind of model use (a writer's calls, an embedder's batches,
    ...), as a dataclass of numbers. `cost_usd` is None once any call had no price (unknown
    is not free); `latency_s` sums seconds. A snapshot (`copy`) subtracted from a later
    state (`since`) gives what one piece of work cost, the fields in their declared order."""

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
            else:
                out[f.name] = now - then
        return out


MeterT = TypeVar("MeterT", bound=UsageMeter)

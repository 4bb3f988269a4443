"""Cost of a call from a per-model price table (USD per 1M tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorybench.llm.records import Usage


def call_cost(model: str, usage: Usage, prices: Mapping[str, Any]) -> float | None:
    """USD for one call, or None when the model is not in the table (unknown is not free)."""
    price = prices.get(model)
    if price is None:
        # dated snapshots ("gpt-4o-mini-2024-07-18") are priced as their family
        family = next((m for m in prices if model.startswith(m + "-")), None)
        if family is None:
            return None
        price = prices[family]
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    uncached = usage.prompt_tokens - cached
    total = (
        uncached * float(price["input"])
        + cached * float(price.get("cached_input", price["input"]))
        + usage.completion_tokens * float(price["output"])
    )
    return round(total / 1_000_000, 10)

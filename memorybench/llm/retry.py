"""How long a retry waits: what the server asked (`Retry-After` in seconds or as an HTTP date,
or `retry-after-ms`), else full jitter below an exponential ceiling. Shared by the chat client,
the openai embedder and the agent gateway's upstream side (which imports nothing heavy, so
neither does this module)."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

__all__ = ["retry_after_seconds", "retry_wait"]


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds asked for by `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def retry_wait(n: int, *, base_s: float, max_s: float, asked: float | None = None) -> float:
    """Seconds to wait after failed attempt `n` (1-based): what the server asked
    (`Retry-After`), capped at `max_s`, else full jitter: a uniform draw from 0 to
    `min(max_s, base_s * 2**(n-1))`. Rounded to the millisecond, so the value an attempt
    records is the value slept."""
    if asked is not None:
        return round(max(0.0, min(asked, max_s)), 3)
    return round(random.uniform(0.0, max(0.0, min(max_s, base_s * 2 ** (n - 1)))), 3)

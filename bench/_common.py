"""Shared helpers for benchmarks: where results go, the pinned data, printing figures."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
os.environ.setdefault("MEMORYBENCH_PINS", str(REPO.parent / "shared" / "pins"))


def machine() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "cpus": os.cpu_count(), "platform": platform.platform()}


def report(name: str, figures: dict[str, Any]) -> Path:
    """Print the figures and write them to bench/results/<name>.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"bench": name, "machine": machine(), **figures}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(f"written: {path}")
    return path

"""Shared helpers for benchmarks: where results go, the pinned data, the machine, ratios.

Every figure a benchmark quotes is a ratio to a yardstick measured in the same run (issue 45):
an absolute time says as much about the machine as about the code, a ratio holds on another
machine. The absolute figures are written beside the ratios with `machine()` (cores, CPU
model, load average), so a reader can tell which machine gave them.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
os.environ.setdefault("MEMORYBENCH_PINS", str(REPO.parent / "shared" / "pins"))


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """What gave the absolute figures: cores this process may use, CPU model, load (1, 5, 15 min)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "python": sys.version.split()[0],
        "cpus": cpus,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def spread(values: Sequence[float], digits: int = 3) -> dict[str, Any]:
    """Median, min, max and (max - min) / median in percent: how far one run may be from another."""
    median = statistics.median(values)
    return {
        "median": round(median, digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "spread_pct": round(100 * (max(values) - min(values)) / median, 1) if median else None,
        "n": len(values),
    }


#: the set-up yardstick (issue 45): these exact wheels, no dependencies, no build, into a new venv.
#: A fixed set (114 MB of cp311 wheels), so that on any machine it measures what that machine's
#: pip, disk and network make of installing wheels; set-up and install times are quoted over it.
WHEEL_SET = (
    "numpy==2.4.6",
    "scipy==1.17.1",
    "pyarrow==25.0.1",
    "pandas==3.1.1",
    "pydantic-core==2.50.5",
    "regex==2026.12.2",
    "PyYAML==6.0.4",
)


def wheel_set_install(root: Path, cache: Path | None) -> dict[str, float]:
    """Wall and CPU seconds of a bare `pip install --no-deps --only-binary :all: WHEEL_SET` into a
    new venv under `root` (made first, not timed), with pip's cache at `cache` (None: the machine's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if cache is not None:
        env["PIP_CACHE_DIR"] = str(cache)
    venv = Path(root) / f"wheel-set-venv-{time.monotonic_ns()}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    before, t0 = os.times(), time.perf_counter()
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", "--only-binary", ":all:", *WHEEL_SET],
        env=env,
        capture_output=True,
        text=True,
    )
    wall, after = time.perf_counter() - t0, os.times()
    shutil.rmtree(venv, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"the wheel-set yardstick failed: {done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def report(name: str, figures: dict[str, Any]) -> Path:
    """Print the figures and write them to bench/results/<name>.json, the machine beside them."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"bench": name, "machine": machine(), **figures}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(f"machine: {payload['machine']}")
    print(f"written: {path}")
    return path

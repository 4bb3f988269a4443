"""`./setup.sh` on a cold pip cache, phase by phase (issue 31, item 4).

    python bench/setup_time.py            # minutes: llama.cpp compiles from source
    python bench/setup_time.py --warm     # the machine's pip cache (llama.cpp's wheel cached)

Clones this checkout's HEAD into a temp folder and runs its `setup.sh` there as README says,
with the pins folder (`MEMORYBENCH_PINS`, as CI) and, unless --warm, a new empty
`PIP_CACHE_DIR` (no wheel built before: llama-cpp-python, source-only on PyPI, compiles). Each
`setup.sh: STEP` line is timed from its start to the next one. Prints every phase's seconds
and the total, and writes ``bench/results/setup_time[_warm].json``. A benchmark, not a test.

The yardstick, measured in the same run (issue 45): a bare `pip install` of a fixed wheel set
(`_common.WHEEL_SET`, 114 MB, no dependencies, no build) into a new venv under the same cache
state (cold: a new empty pip cache of its own; warm: the machine's, after one untimed install),
once before and once after `setup.sh`. Each phase and the total are quoted as a multiple of
their mean: what this machine's pip, disk and network make of installing wheels cancels out.
The total is also quoted in CPU seconds (setup.sh and every process it ran) over the wheel
set's, which holds where other work loads the machine.
It does not cancel the compiler: llama.cpp's source build is CPU work that no install of
wheels measures, so that phase's ratio moves with the cores (say so beside it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, WHEEL_SET, report, wheel_set_install


def timed_setup(root: Path, env: dict[str, str]) -> list[tuple[str, float]]:
    """(step, seconds) of each `setup.sh: ` line of a run of setup.sh in `root`."""
    proc = subprocess.Popen(
        ["bash", "setup.sh"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    steps: list[tuple[str, float]] = []
    last = time.perf_counter()
    current = "starting"
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter()
        if line.startswith("setup.sh: "):
            steps.append((current, round(now - last, 1)))
            current, last = line[len("setup.sh: ") :].strip(), now
    if proc.wait() != 0:
        raise SystemExit(f"setup.sh failed during: {current} (see {root / '.venv' / 'setup.log'})")
    steps.append((current, round(time.perf_counter() - last, 1)))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="keep the machine's pip cache")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="setup-time-") as tmp:
        top = Path(tmp)
        root = top / "memorybench"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
        # the machine's pip cache, found before XDG_CACHE_HOME moves: pip's default cache lives under it,
        # so --warm would otherwise start from an empty cache (and compile llama.cpp)
        machine_cache = subprocess.run(
            [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, check=True
        ).stdout.strip()
        env["XDG_CACHE_HOME"] = str(top / "user-cache")
        env["PIP_CACHE_DIR"] = machine_cache if ns.warm else str(top / "pip-cache")
        if ns.warm:
            wheel_set_install(top, Path(machine_cache))  # the wheels into the machine's cache
        yard = [wheel_set_install(top, Path(machine_cache) if ns.warm else top / "yardstick-cache-before")]
        started, before = time.perf_counter(), os.times()
        steps = timed_setup(root, env)
        total, after = round(time.perf_counter() - started, 1), os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        yard.append(wheel_set_install(top, Path(machine_cache) if ns.warm else top / "yardstick-cache-after"))
    unit = sum(y["wall_s"] for y in yard) / len(yard)
    figures: dict[str, object] = {"pip cache": "the machine's (warm)" if ns.warm else "new and empty (cold)"}
    figures["yardstick"] = f"pip install --no-deps --only-binary :all: {' '.join(WHEEL_SET)} into a new venv, same cache state"
    figures["yardstick runs (before, after)"] = yard
    figures["yardstick_s (mean)"] = round(unit, 2)
    figures.update(
        {
            f"phase: {step}": f"{seconds} s, {seconds / unit:.2f}x the wheel set"
            for step, seconds in steps
            if step != "starting" or seconds >= 1
        }
    )
    figures["total"] = f"{total} s, {total / unit:.2f}x the wheel set"
    figures["ratio_total_to_wheel_set"] = round(total / unit, 2)
    # CPU seconds of setup.sh and all it ran, over the wheel set's: the work, whatever else the machine runs
    figures["total_cpu_s"] = round(cpu, 1)
    figures["ratio_total_cpu_to_wheel_set_cpu"] = round(cpu / (sum(y["cpu_s"] for y in yard) / len(yard)), 2)
    report("setup_time_warm" if ns.warm else "setup_time", figures)


if __name__ == "__main__":
    main()

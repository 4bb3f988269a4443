"""`./setup.sh` on a cold pip cache, phase by phase (issue 31, item 4).

    python bench/setup_time.py            # minutes: llama.cpp compiles from source
    python bench/setup_time.py --warm     # the machine's pip cache (llama.cpp's wheel cached)

Clones this checkout's HEAD into a temp folder and runs its `setup.sh` there as README says,
with the pins folder (`MEMORYBENCH_PINS`, as CI) and, unless --warm, a new empty
`PIP_CACHE_DIR` (no wheel built before: llama-cpp-python, source-only on PyPI, compiles). Each
`setup.sh: STEP` line is timed from its start to the next one. Prints every phase's seconds
and the total, and writes ``bench/results/setup_time[_warm].json``. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from _common import REPO, report


def timed_setup(root: Path, env: dict[str, str]) -> list[tuple[str, float]]:
    """(step, seconds) of each `setup.sh: ` line of a run of setup.sh in `root`."""
    proc = subprocess.Popen(["bash", "setup.sh"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    steps: list[tuple[str, float]] = []
    last = time.perf_counter()
    current = "starting"
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter()
        if line.startswith("setup.sh: "):
            steps.append((current, round(now - last, 1)))
            current, last = line[len("setup.sh: "):].strip(), now
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
        env["XDG_CACHE_HOME"] = str(top / "user-cache")
        if not ns.warm:
            env["PIP_CACHE_DIR"] = str(top / "pip-cache")
        started = time.perf_counter()
        steps = timed_setup(root, env)
        total = round(time.perf_counter() - started, 1)
    figures = {"pip cache": "the machine's (warm)" if ns.warm else "new and empty (cold)"}
    figures.update({f"phase: {step}": f"{seconds} s" for step, seconds in steps if step != "starting" or seconds >= 1})
    figures["total"] = f"{total} s"
    report("setup_time_warm" if ns.warm else "setup_time", figures)


if __name__ == "__main__":
    main()

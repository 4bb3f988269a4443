"""CLI start-up as a ratio to importing hydra and omegaconf alone (issue 31).

Each command runs in a fresh process, paired with the yardstick (`python -c "import hydra,
omegaconf"`) in turn (A B A B ...), and the ratio of their CPU seconds (user + system, the
kernel's accounting of the finished child) is taken pair by pair; the median is printed.
A ratio keeps the figure meaningful on a loaded machine. Commands: `memorybench --help`,
`plan` of one run, `show` and `verify` of a 20-question pack (made first against the
scripted server). Both sides run from bytecode, as on a user's machine (the .pyc files in a
temp folder, also where PYTHONDONTWRITEBYTECODE is set).

Run: .venv/bin/python bench/cli_startup.py [PAIRS]   (default: 7)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import report

from memorybench.testing.scripted_server import ScriptedOpenAIServer

YARDSTICK = [sys.executable, "-c", "import hydra, omegaconf"]


def cpu_seconds(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed (status {status})")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    cli = [sys.executable, "-m", "memorybench.cli"]
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as server:
        root = Path(tmp)
        subprocess.run(
            [
                *cli,
                "qa",
                "reader=openai_compatible",
                f"reader.base_url={server.base_url}",
                "reader.model=scripted",
                "max_questions=20",
                f"paths.packs={root / 'packs'}",
                "name=cli",
            ],
            check=True,
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        (pack,) = (root / "packs" / "cli" / "runs").iterdir()
        question = json.loads((pack / "predictions.jsonl").open().readline())["question_id"]
        commands = {
            "--help": [*cli, "--help"],
            "plan (one run)": [*cli, "plan", "memory=session_summaries"],
            "show (20-question pack)": [*cli, "show", str(pack), question],
            "verify (20-question pack)": [*cli, "verify", str(pack)],
        }
        # as on a user's machine, both sides run from bytecode: where PYTHONDONTWRITEBYTECODE is
        # set (CI machines, this one), memorybench's own modules would be compiled from source on
        # every run while hydra's come compiled with the wheel; the .pyc files go to a temp folder
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        yard: list[float] = []
        for name, args in commands.items():
            cpu_seconds(args, root, env)  # warm-up: the file cache, .pyc files
            cpu_seconds(YARDSTICK, root, env)
            ratios, seconds = [], []
            for _ in range(pairs):
                a, b = cpu_seconds(args, root, env), cpu_seconds(YARDSTICK, root, env)
                ratios.append(a / b)
                seconds.append(a)
                yard.append(b)
            figures[f"{name}: cpu_ratio_to_hydra_import (median of {pairs} pairs)"] = round(statistics.median(ratios), 2)
            figures[f"{name}: cpu_s (median)"] = round(statistics.median(seconds), 3)
        figures["hydra+omegaconf import: cpu_s (median)"] = round(statistics.median(yard), 3)
    report("cli_startup", figures)


if __name__ == "__main__":
    main()

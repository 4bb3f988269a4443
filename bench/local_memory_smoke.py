"""Every memory method on the real data with the embedded model, a few questions each.

    python bench/local_memory_smoke.py                          # all seven, 3 questions of conv-26
    python bench/local_memory_smoke.py --methods graph mem0 --questions 5
    python bench/local_memory_smoke.py --extra writer.json_max_items=2

Runs the real CLI once per method (`memorybench qa memory=NAME writer=local` with the
embedded reader, `embedder=minilm`), so each conversation's memory is built by the
embedded writer from every session of the first LoCoMo conversation before its first
question. Then reads each pack: writer calls, repairs and failures from
`memory/build_cost.jsonl`, the items stored (`memory/lineage.jsonl`), build and answer
seconds, LoCoMo F1, and `memorybench verify`'s findings. Figures go to
`bench/results/local_memory_smoke.json`; the packs stay under `--packs`.

A smoke run, not a quality figure: a 135M-parameter writer fills each task's schema
(llama.cpp grammar) but what it writes is poor. It says that every method runs end to
end on the embedded model, what that costs on 2 cores, and that the pack verifies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, report

METHODS = ("raw_chunks", "rag", "session_summaries", "graph", "openai_memory", "mem0", "mem0g")
#: per method, what selects it beyond memory=NAME
SELECT = {"session_summaries": ["memory.source=writer"]}


def run_method(method: str, args: argparse.Namespace, packs: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "memorybench.cli",
        "qa",
        f"memory={method}",
        *SELECT.get(method, []),
        "writer=local",
        "embedder=minilm",
        f"max_questions={args.questions}",
        f"name=smoke-{method}",
        f"paths.packs={packs}",
        f"paths.cache={packs / 'cache'}",
        *args.extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=args.timeout)
    wall = round(time.perf_counter() - started, 1)
    runs = sorted((packs / f"smoke-{method}" / "runs").glob("*"))
    out: dict[str, Any] = {"exit": done.returncode, "wall_s": wall}
    if done.returncode != 0 or not runs:
        out["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return out
    pack = runs[-1]
    builds = [json.loads(line) for line in (pack / "memory/build_cost.jsonl").read_text().splitlines() if line]
    writer = [b["writer"] for b in builds if b.get("writer")]
    metrics = json.loads((pack / "metrics.json").read_text())
    verify = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", "verify", str(pack)], cwd=REPO, capture_output=True, text=True
    )
    lineage = pack / "memory/lineage.jsonl"
    out.update(
        pack=str(pack),
        items_stored=sum(1 for line in lineage.read_text().splitlines() if line) if lineage.exists() else 0,
        build_s=round(sum(float(b["latency_s"]) for b in builds), 1),
        writer_calls=sum(w["calls"] for w in writer),
        writer_repairs=sum(w["repairs"] for w in writer),
        writer_failures=sum(w["failures"] for w in writer),
        writer_completion_tokens=sum(w["completion_tokens"] for w in writer),
        memory_tokens=[b.get("memory_tokens") for b in builds],
        answer_latency_s=metrics["usage"]["reader"]["latency_s"],
        locomo_f1=round(metrics["locomo_f1"]["overall"], 4),
        verify_findings=[line for line in verify.stdout.splitlines() if line.strip()],
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--packs", type=Path, default=None, help="where the packs go (default: a temp folder)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per method")
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    args = parser.parse_args()
    packs = (args.packs or Path(tempfile.mkdtemp(prefix="memorybench-smoke-"))).resolve()
    figures: dict[str, Any] = {"questions": args.questions, "extra": args.extra, "packs": str(packs), "methods": {}}
    for method in args.methods:
        figures["methods"][method] = run_method(method, args, packs)
        print(method, json.dumps(figures["methods"][method]), flush=True)
    report("local_memory_smoke", figures)


if __name__ == "__main__":
    main()

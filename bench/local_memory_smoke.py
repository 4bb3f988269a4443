"""Every memory method on the real data with the embedded model, a few questions each.

    python bench/local_memory_smoke.py                          # all seven, 3 questions of conv-26
    python bench/local_memory_smoke.py --methods graph mem0 --questions 5
    python bench/local_memory_smoke.py --extra writer.json_max_items=2
    python bench/local_memory_smoke.py --methods mem0 graph --max-sessions 2 --questions 1

Runs the real CLI once per method (`memorybench qa memory=NAME writer=local` with the
embedded reader, `embedder=minilm`), so each conversation's memory is built by the
embedded writer from every session of the first LoCoMo conversation (or its first
`--max-sessions`, `memory.max_sessions`) before its first question. Then reads each pack:
writer calls, repairs and failures from `memory/build_cost.jsonl`, the calls by task
(`memory/writer/calls.jsonl`: mem0's extractions and updates), the facts extracted, the
items stored (`memory/lineage.jsonl`), build and answer seconds, LoCoMo F1, and
`memorybench verify`'s findings; beside them `plan --estimate`'s writer calls for the same
spec, so the estimate (`memorybench/estimate.py`) is checked against each measured build.
Figures go to `bench/results/local_memory_smoke.json` (`--out` names another file); the
packs stay under `--packs`. A build that finished is measured even where its run stopped
later (answering, scoring); rerun with the same `--packs` and qa resumes it without
rebuilding (`resumed: true`: its `wall_s` is then the rerun's, its build figures the build's).
The figures in docs/writers.md's writer-call tables come from this script.

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


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _overall_f1(metrics: dict[str, Any]) -> float | None:
    """LoCoMo F1 over the questions asked, from metrics.json's `locomo_f1` or its `scores` table."""
    found = metrics.get("locomo_f1") or (metrics.get("scores") or {}).get("locomo_f1") or {}
    overall = found.get("overall")
    value = overall.get("value") if isinstance(overall, dict) else overall
    return None if value is None else round(float(value), 4)


def planned_writer_calls(overrides: list[str]) -> dict[str, Any]:
    """What `plan --estimate` states for the same spec before any call: the writer's calls
    (expected, and its range) from `memorybench.estimate`, with the note that says how."""
    from memorybench.estimate import estimate_run
    from memorybench.plan import plan_runs

    (spec,) = plan_runs(overrides, False)
    estimate = estimate_run(spec.cfg, spec.run_id)
    writer = next((r for r in estimate.roles if r.role == "writer"), None)
    if writer is None:
        return {"calls": None}
    return {"calls": writer.calls, "input_tokens": writer.input_tokens, "notes": [n for n in estimate.notes if "writer" in n]}


def run_method(method: str, args: argparse.Namespace, packs: Path) -> dict[str, Any]:
    overrides = [
        f"memory={method}",
        *SELECT.get(method, []),
        "writer=local",
        "embedder=minilm",
        f"max_questions={args.questions}",
        *([f"memory.max_sessions={args.max_sessions}"] if args.max_sessions else []),
        *args.extra,
    ]
    name = f"smoke-{method}" + (f"-s{args.max_sessions}" if args.max_sessions else "")
    command = [
        sys.executable,
        "-m",
        "memorybench.cli",
        "qa",
        *overrides,
        f"name={name}",
        f"paths.packs={packs}",
        f"paths.cache={packs / 'cache'}",
    ]
    try:
        planned = planned_writer_calls(overrides)
    except Exception as e:  # noqa: BLE001  (the measurement stands without the estimate beside it)
        planned = {"calls": None, "error": f"{type(e).__name__}: {e}"}
    # a pack already there: qa resumes it and builds nothing again, so wall_s is not the build's
    resumed = any((packs / name / "runs").glob("*/memory/build_cost.jsonl"))
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=args.timeout)
    wall = round(time.perf_counter() - started, 1)
    runs = sorted((packs / name / "runs").glob("*"))
    out: dict[str, Any] = {
        "exit": done.returncode,
        "wall_s": wall,
        "resumed": resumed,
        "max_sessions": args.max_sessions,
        "planned": planned,
    }
    if done.returncode != 0:
        out["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    builds = _rows(runs[-1] / "memory/build_cost.jsonl") if runs else []
    if not builds:
        return out
    # a build that finished is measured even where the run stopped after it (answering, scoring)
    pack = runs[-1]
    calls = _rows(pack / "memory/writer/calls.jsonl")
    by_role: dict[str, int] = {}
    for row in calls:
        by_role[row["role"]] = by_role.get(row["role"], 0) + 1
    operations = _rows(pack / f"memory/{method}/operations.jsonl")
    writer = [b["writer"] for b in builds if b.get("writer")]
    lineage = pack / "memory/lineage.jsonl"
    out.update(
        pack=str(pack),
        items_stored=sum(1 for line in lineage.read_text().splitlines() if line) if lineage.exists() else 0,
        build_s=round(sum(float(b["latency_s"]) for b in builds), 1),
        writer_latency_s=round(sum(float(w.get("latency_s") or 0) for w in writer), 1),
        writer_calls=sum(w["calls"] for w in writer),
        writer_calls_by_task=dict(sorted(by_role.items())),
        facts_extracted=sum(len(o.get("facts") or []) for o in operations if o.get("event") == "EXTRACT") if operations else None,
        writer_prompt_tokens=sum(w["prompt_tokens"] for w in writer),
        writer_repairs=sum(w["repairs"] for w in writer),
        writer_failures=sum(w["failures"] for w in writer),
        writer_completion_tokens=sum(w["completion_tokens"] for w in writer),
        memory_tokens=[b.get("memory_tokens") for b in builds],
    )
    if done.returncode != 0:
        return out
    metrics = json.loads((pack / "metrics.json").read_text())
    verify = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", "verify", str(pack)], cwd=REPO, capture_output=True, text=True
    )
    out.update(
        answer_latency_s=((metrics.get("usage") or {}).get("reader") or {}).get("latency_s"),
        locomo_f1=_overall_f1(metrics),
        verify_findings=[line for line in verify.stdout.splitlines() if line.strip()],
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--packs", type=Path, default=None, help="where the packs go (default: a temp folder)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per method")
    parser.add_argument("--max-sessions", type=int, default=None, help="memory.max_sessions: build from the first N sessions")
    parser.add_argument("--out", default="local_memory_smoke", help="the results file's name under bench/results/")
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    args = parser.parse_args()
    packs = (args.packs or Path(tempfile.mkdtemp(prefix="memorybench-smoke-"))).resolve()
    figures: dict[str, Any] = {
        "questions": args.questions,
        "max_sessions": args.max_sessions,
        "extra": args.extra,
        "packs": str(packs),
        "methods": {},
    }
    for method in args.methods:
        figures["methods"][method] = run_method(method, args, packs)
        print(method, json.dumps(figures["methods"][method]), flush=True)
        report(args.out, figures)  # after each method: a long series leaves what it measured if stopped


if __name__ == "__main__":
    main()

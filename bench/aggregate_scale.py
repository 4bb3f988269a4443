"""Aggregate 100 packs of 1,986 rows into Parquet: time (target < 5 s on 2 cores) and peak memory.

The packs are real: one full 1,986-question pack is made by the real CLI against the
scripted server (running in this process), then copied 100 times under new run ids
(run_meta.json and metrics.json say so). `aggregate` then runs in a fresh subprocess, so
its peak RSS is its own; the import time of the stage is reported apart from the work.
Also reports collect-full on the same packs (stored bytes against the originals).

The yardstick, measured in the same run (issue 45): a plain Python loop in a process of its
own that reads the same per-question files of every pack (`predictions.jsonl` and
`reader/traces.jsonl` line by line with `json.loads`, `predictions.csv` with `csv.reader`)
and keeps nothing: the least that reading those rows costs. Runs alternate yardstick and
`aggregate`; `aggregate / plain read` is taken pair by pair, in CPU seconds (all threads:
aggregate reads packs in a thread pool, so its wall time falls with the cores, its CPU does
not) and in wall seconds. Peak memory is a size, not a time: it is quoted as it is.

Run: .venv/bin/python bench/aggregate_scale.py [--packs 100] [--repeat 3] [--pack EXISTING_PACK]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report, spread

from memorybench.testing.scripted_server import ScriptedOpenAIServer

CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0 = time.perf_counter()
from memorybench.compare.aggregate import aggregate
t1, c1 = time.perf_counter(), cpu()
result = aggregate([sys.argv[1]], sys.argv[2])
t2, c2 = time.perf_counter(), cpu()
print(json.dumps({"import_s": t1 - t0, "aggregate_s": t2 - t1, "aggregate_cpu_s": c2 - c1, "packs": len(result.packs),
                  "rows": result.rows}))
"""

COLLECT = r"""
import json, sys, time
from memorybench.compare.collect import collect_full
t0 = time.perf_counter()
r = collect_full([sys.argv[1]], sys.argv[2])
print(json.dumps({"collect_s": time.perf_counter() - t0, "files": r.files, "original_bytes": r.original_bytes,
                  "stored_bytes": r.stored_bytes, "blobs": r.blobs}))
"""


#: the yardstick: the same rows read by a plain loop, nothing kept (user + system seconds of the process)
PLAIN_READ = r"""
import csv, json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
rows = 0
for pack in sorted(Path(sys.argv[1]).rglob("_SUCCESS")):
    pack = pack.parent
    for name in ("predictions.jsonl", "reader/traces.jsonl"):
        with open(pack / name, "rb") as f:
            for line in f:
                json.loads(line)
                rows += 1
    with open(pack / "predictions.csv", newline="", encoding="utf-8") as f:
        rows += sum(1 for _ in csv.reader(f))
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"read_s": time.perf_counter() - t0, "read_cpu_s": r.ru_utime + r.ru_stime, "rows": rows}))
"""


def make_full_pack(root: Path) -> Path:
    """In a process of its own: the scripted server keeps every request body (about 1,986 x 60 KB),
    and a child forked from a big parent would report the parent's RSS as its own peak."""
    done = subprocess.run([sys.executable, __file__, "--make-pack-into", str(root)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"making the source pack failed: {done.stderr[-2000:]}")
    (pack,) = (root / "source" / "source" / "runs").iterdir()
    return pack


def _make_full_pack_here(root: Path) -> None:
    with ScriptedOpenAIServer() as server:
        args = [
            sys.executable,
            "-m",
            "memorybench.cli",
            "qa",
            "reader=openai_compatible",
            f"reader.base_url={server.base_url}",
            "reader.model=scripted",
            f"paths.packs={root / 'source'}",
            f"paths.cache={root / 'cache'}",
            "name=source",
        ]
        done = subprocess.run(args, cwd=root, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"qa failed: {done.stderr[-2000:]}")


def replicate(pack: Path, root: Path, count: int) -> Path:
    runs = root / "packs" / "scale" / "runs"
    runs.mkdir(parents=True)
    for i in range(count):
        run_id = f"{pack.name[:-12]}{i:012d}"
        target = runs / run_id
        shutil.copytree(pack, target)
        for name in ("run_meta.json", "metrics.json"):
            data = json.loads((target / name).read_text("utf-8"))
            data["run_id"] = run_id
            if name == "run_meta.json":
                data["name"] = "scale"
            (target / name).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return root / "packs"


def run_child(code: str, *args: str) -> tuple[dict, float, int]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    if status != 0:
        raise SystemExit(f"child failed: {err.decode()[-2000:]}")
    return json.loads(out.decode().strip().splitlines()[-1]), wall, usage.ru_maxrss


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="aggregate runs (the fastest is reported, each listed)")
    parser.add_argument("--pack", help="an existing finished full pack to replicate (default: make one, about 30 s)")
    parser.add_argument("--make-pack-into", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.make_pack_into:
        _make_full_pack_here(Path(ns.make_pack_into))
        return
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="memorybench-aggbench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        pack = Path(ns.pack).resolve() if ns.pack else make_full_pack(root)
        figures["make_source_pack_s"] = round(time.perf_counter() - t0, 1)
        packs = replicate(pack, root, ns.packs)
        rows_per_pack = sum(1 for _ in (pack / "predictions.jsonl").open())
        figures["packs"] = ns.packs
        figures["rows_per_pack"] = rows_per_pack
        figures["pack_bytes"] = dir_size(pack)
        figures["all_packs_bytes"] = dir_size(packs)
        runs = []
        for i in range(ns.repeat):
            plain, _, _ = run_child(PLAIN_READ, str(packs))
            out = root / f"out{i}"
            result, wall, rss = run_child(CHILD, str(packs), str(out))
            runs.append(
                {
                    "aggregate_s": round(result["aggregate_s"], 3),
                    "aggregate_cpu_s": round(result["aggregate_cpu_s"], 3),
                    "import_s": round(result["import_s"], 3),
                    "process_wall_s": round(wall, 3),
                    "peak_rss_mib": round(rss / 1024, 1),
                    "plain_read_s": round(plain["read_s"], 3),
                    "plain_read_cpu_s": round(plain["read_cpu_s"], 3),
                    "ratio_cpu": round(result["aggregate_cpu_s"] / plain["read_cpu_s"], 3),
                    "ratio_wall": round(result["aggregate_s"] / plain["read_s"], 3),
                }
            )
            print(
                f"round {i + 1}: aggregate {result['aggregate_s']:.2f} s ({result['aggregate_cpu_s']:.2f} s CPU), plain read "
                f"{plain['read_s']:.2f} s ({plain['read_cpu_s']:.2f} s CPU): {runs[-1]['ratio_cpu']:.2f}x CPU",
                flush=True,
            )
            assert result["rows"] == ns.packs * rows_per_pack and result["packs"] == ns.packs
        figures["yardstick"] = (
            "a plain loop reading the same per-question files (json.loads a line, csv.reader), "
            "nothing kept, in a process of its own"
        )
        figures["ratio_to_plain_read (cpu)"] = spread([r["ratio_cpu"] for r in runs], 2)
        figures["ratio_to_plain_read (wall)"] = spread([r["ratio_wall"] for r in runs], 2)
        figures["plain_read_cpu_s"] = spread([r["plain_read_cpu_s"] for r in runs], 2)
        best = min(runs, key=lambda r: r["aggregate_s"])
        figures["aggregate_s (best of runs)"] = best["aggregate_s"]
        # CPU seconds (user + sys, all threads): what the work costs whatever else the machine runs
        figures["aggregate_cpu_s (best run)"] = best["aggregate_cpu_s"]
        figures["aggregate_runs"] = runs
        figures["peak_rss_mib (process, max of runs)"] = max(r["peak_rss_mib"] for r in runs)
        figures["rows"] = ns.packs * rows_per_pack
        figures["rows_per_s"] = round(ns.packs * rows_per_pack / best["aggregate_s"])
        collected = root / "out0" / "collected"
        figures["examples_parquet_bytes"] = (collected / "examples.parquet").stat().st_size
        figures["runs_parquet_bytes"] = (collected / "runs.parquet").stat().st_size
        collect, wall, rss = run_child(COLLECT, str(packs), str(root / "full"))
        figures["collect_full_s"] = round(collect["collect_s"], 2)
        figures["collect_full_peak_rss_mib"] = round(rss / 1024, 1)
        figures["collect_full_original_bytes"] = collect["original_bytes"]
        figures["collect_full_stored_bytes"] = collect["stored_bytes"]
        figures["collect_full_stored_over_original"] = round(collect["stored_bytes"] / collect["original_bytes"], 4)
    report("aggregate_scale", figures)


if __name__ == "__main__":
    main()

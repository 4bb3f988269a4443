"""`memorybench board` over 100 packs of 1,986 questions: the first build, adding one pack, the first page's size.

The packs are real: one full 1,986-question pack made by the real CLI against the scripted server
(`aggregate_scale.make_full_pack`), judged by a scripted judge (the autorater's files as
tests/tracking/pack_factory.py writes them), then copied 100 times under new run ids. The board is
built in a fresh process (its imports timed apart from the work), without the per-run viewer pages
(`--no-views`: those are made once per new pack, about 1.5 s each, timed apart below); then one
more pack is added and the board built again: only that pack is read, and only the pages whose
bytes change are written; then the board is built once more over the same packs (nothing read).
Each build's wall and CPU seconds (its worker processes' included) are reported.

The add's floor is an import: `memorybench.compare`'s intervals (a new pack's J and F1) take their
quantiles from `scipy.stats`, which a fresh process spends most of a second importing; that
import, timed alone in a process of its own (after numpy, which the build has already imported),
is reported beside the add.

The yardstick, measured in the same run: a plain Python loop in a process of its own that reads
the files the board reads of every pack (`predictions.csv` with `csv.reader`, the judge's
verdicts with `json.loads` line by line) and keeps nothing. Figures are quoted as times and as
ratios to it.

Run: .venv/bin/python bench/board_scale.py [--packs 100] [--repeat 3]    (about 3 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _common import report, spread
from aggregate_scale import make_full_pack, replicate, run_child

ROOT = Path(__file__).resolve().parent.parent

BUILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime
t0 = time.perf_counter()
from memorybench.board.board_command import build_board
t1, c1 = time.perf_counter(), cpu()
result = build_board([sys.argv[1]], sys.argv[2], views=False)
t2, c2 = time.perf_counter(), cpu()
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "build_cpu_s": c2 - c1, "added": result["added"],
                  "kept": result["kept"], "index_bytes": result["index_bytes"]}))
"""

VIEW = r"""
import json, sys, time
from memorybench.viewers.view import build_view
t0 = time.perf_counter()
build_view([sys.argv[1]], sys.argv[2])
print(json.dumps({"view_s": time.perf_counter() - t0}))
"""

PLAIN_READ = r"""
import csv, json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
rows = 0
for pack in sorted(Path(sys.argv[1]).rglob("run_meta.json")):
    pack = pack.parent
    with open(pack / "predictions.csv", newline="", encoding="utf-8") as f:
        rows += sum(1 for _ in csv.reader(f))
    for verdicts in pack.glob("autorater/*/autorater_verdicts.jsonl"):
        with open(verdicts, "rb") as f:
            for line in f:
                json.loads(line)
                rows += 1
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"read_s": time.perf_counter() - t0, "read_cpu_s": r.ru_utime + r.ru_stime, "rows": rows}))
"""


SCIPY_STATS = r"""
import json, resource, sys, time
import numpy
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0, c0 = time.perf_counter(), cpu()
import scipy.stats
print(json.dumps({"import_s": time.perf_counter() - t0, "import_cpu_s": cpu() - c0}))
"""


def judge(pack: Path) -> None:
    """A scripted judge's autorater folder in the source pack, before it is copied."""
    os.environ.setdefault("MEMORYBENCH_PINS", str(ROOT.parent / "shared" / "pins"))
    sys.path.insert(0, str(ROOT / "tests"))
    from tracking.pack_factory import add_autorater

    add_autorater(pack, passes=1, model="scripted-judge")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="board-scale-"))
    try:
        source = make_full_pack(work)
        judge(source)
        packs = replicate(source, work, ns.packs + 1)
        runs = sorted((packs / "scale" / "runs").iterdir())
        extra = work / "held-back"
        shutil.move(str(runs[-1]), extra)  # the pack added later
        reads, builds, cpus, adds, add_cpus, agains, ratios, scipys, scipy_cpus = [], [], [], [], [], [], [], [], []
        index_bytes = 0
        for i in range(ns.repeat):
            read, _, _ = run_child(PLAIN_READ, str(packs))
            out = work / f"site-{i}"
            built, _, _ = run_child(BUILD, str(packs), str(out))
            assert built["added"] == ns.packs, built
            shutil.move(str(extra), runs[-1])
            added, _, _ = run_child(BUILD, str(packs), str(out))
            assert added["added"] == 1 and added["kept"] == ns.packs, added
            again, _, _ = run_child(BUILD, str(packs), str(out))
            assert again["added"] == 0 and again["kept"] == ns.packs + 1, again
            shutil.move(str(runs[-1]), extra)
            scipy_stats, _, _ = run_child(SCIPY_STATS)
            reads.append(read["read_s"])
            builds.append(built["build_s"])
            cpus.append(built["build_cpu_s"])
            adds.append(added["build_s"])
            add_cpus.append(added["build_cpu_s"])
            agains.append(again["build_s"])
            scipys.append(scipy_stats["import_s"])
            scipy_cpus.append(scipy_stats["import_cpu_s"])
            ratios.append(built["build_s"] / read["read_s"])
            index_bytes = added["index_bytes"]
        view, _, _ = run_child(VIEW, str(runs[0]), str(work / "view.html"))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        report(
            "board_scale",
            {
                "packs": ns.packs,
                "questions_per_pack": 1986,
                "cores": cores,
                "build_s": spread(builds),
                "build_cpu_s": spread(cpus),
                "add_one_pack_s": spread(adds),
                "add_one_pack_cpu_s": spread(add_cpus),
                "scipy_stats_import_s": spread(scipys),
                "scipy_stats_import_cpu_s": spread(scipy_cpus),
                "build_again_unchanged_s": spread(agains),
                "plain_read_s": spread(reads),
                "build_over_plain_read": spread(ratios),
                "import_s": round(built["import_s"], 3),
                "index_html_bytes": index_bytes,
                "one_viewer_page_s": round(view["view_s"], 2),
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

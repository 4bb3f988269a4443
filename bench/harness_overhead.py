"""Harness overhead per question against the scripted server, and peak RSS.

Runs the real CLI (`memorybench qa`, full_context) in a subprocess for N questions and
for 1 question; the scripted server runs in this process and counts its own seconds.
overhead per question = ((T_N - T_1) - (S_N - S_1)) / (N - 1): wall time the harness adds
beyond the server's time, with process start-up cancelled out.
Also prints the pack size against the size of the transcripts it holds.

Run: .venv/bin/python bench/harness_overhead.py [N ...]   (default: 300 1986)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report

from memorybench.testing.scripted_server import ScriptedOpenAIServer


def run(n: int, server: ScriptedOpenAIServer, root: Path) -> tuple[float, float, int, Path]:
    """(wall seconds, server seconds, peak RSS KiB of the run, pack path)."""
    args = [
        sys.executable, "-m", "memorybench.cli", "qa", "reader=openai_compatible",
        f"reader.base_url={server.base_url}", "reader.model=scripted", f"max_questions={n}",
        f"paths.packs={root / 'packs'}", f"name=bench{n}",
    ]
    before = server.server_seconds
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=root)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"run of {n} failed: {proc.stderr.read().decode()[-2000:]}")
    (pack,) = (root / "packs" / f"bench{n}" / "runs").iterdir()
    return wall, server.server_seconds - before, usage.ru_maxrss, pack


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:  # noqa: C901 (a linear script)
    sizes = [int(a) for a in sys.argv[1:]] or [300, 1986]
    from memorybench.data.pins import LOCOMO10, pin_path

    raw = json.loads(pin_path(LOCOMO10).read_text("utf-8"))
    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as server:
        root = Path(tmp)
        wall1, server1, rss1, _ = run(1, server, root)
        figures["startup_s (1 question)"] = round(wall1, 3)
        for n in sizes:
            wall, served, rss, pack = run(n, server, root)
            overhead_ms = ((wall - wall1) - (served - server1)) / (n - 1) * 1000
            figures[f"questions={n}: wall_s"] = round(wall, 2)
            figures[f"questions={n}: server_s"] = round(served, 2)
            figures[f"questions={n}: harness_overhead_ms_per_question"] = round(overhead_ms, 2)
            figures[f"questions={n}: peak_rss_mib"] = round(rss / 1024, 1)
            meta = json.loads((pack / "run_meta.json").read_text())
            transcripts = sum(
                (pack / "memory" / "dumps" / f"{sid}.txt").stat().st_size
                for sid in {json.loads(line)["sample_id"] for line in (pack / "predictions.jsonl").open()}
            )
            in_pack = {json.loads(line)["sample_id"] for line in (pack / "predictions.jsonl").open()}
            released = sum(len(json.dumps(c["conversation"], ensure_ascii=False).encode()) for c in raw if c["sample_id"] in in_pack)
            figures[f"questions={n}: pack_bytes"] = dir_size(pack)
            figures[f"questions={n}: rendered_transcript_bytes"] = transcripts
            figures[f"questions={n}: released_transcript_json_bytes"] = released
            figures[f"questions={n}: pack_over_rendered_transcripts"] = round(dir_size(pack) / transcripts, 3)
            figures[f"questions={n}: pack_over_released_transcripts"] = round(dir_size(pack) / released, 3)
            figures[f"questions={n}: largest_files"] = {
                str(p.relative_to(pack)): p.stat().st_size
                for p in sorted((p for p in pack.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)[:5]
            }
            figures[f"questions={n}: is_prefix"] = meta["is_prefix"]
    report("harness_overhead", figures)


if __name__ == "__main__":
    main()

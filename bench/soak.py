"""Soak: repeated random SIGKILL + resume cycles over a qa run against a flaky scripted server.

The real CLI (`memorybench qa`, full_context on the pinned LoCoMo file) runs in a
subprocess; the scripted server (this process, 127.0.0.1 only) answers a share of the
requests with 429 (Retry-After) or 500. Each cycle starts the same command (a resume after
the first), waits a random time and sends SIGKILL if the run is still going; the next
cycle resumes it. Kills land anywhere: at start-up, between and inside answers, while the
end-of-run files are written. When the cycles or the time budget run out, one last
uninterrupted resume finishes the run. The finished pack is then compared with an
undisturbed run of the same questions: rows lost, rows duplicated, files that differ,
and `verify_pack` findings. The counts are the result (they hold on any machine); the soak's
wall time is quoted as a multiple of the undisturbed run's, its yardstick in the same run
(the kills are drawn in proportion to it). Bounded in cycles and seconds; a benchmark prints figures, it
does not pass or fail.

Run: .venv/bin/python bench/soak.py [--questions 300] [--cycles 12] [--seconds 240]
                                    [--fault-rate 0.1] [--kill-after MIN MAX] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import report

from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import Action, ScriptedOpenAIServer, Status, echo_responder

#: files whose bytes must equal the undisturbed run's (nothing in them depends on time or retries)
SAME_BYTES = ("predictions.jsonl", "predictions.csv", "memory/manifest.jsonl", "memory/lineage.jsonl", "REFERENCE_PIN.json")


class FlakyResponder:
    """Echo replies, except a `rate` share of requests: a 429 with Retry-After or a 500 (seeded)."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.random = random.Random(seed)
        self.injected: Counter[int] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Action:
        with self._lock:
            draw = self.random.random()
        if draw < self.rate / 2:
            self.injected[429] += 1
            return Status(429, headers={"Retry-After": "0.01"}, message="soak: rate limited")
        if draw < self.rate:
            self.injected[500] += 1
            return Status(500, message="soak: upstream error")
        return echo_responder(body)


def qa_command(server: ScriptedOpenAIServer, root: Path, name: str, questions: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memorybench.cli",
        "qa",
        "reader=openai_compatible",
        f"reader.base_url={server.base_url}",
        "reader.model=scripted",
        "reader.max_retries=8",
        "reader.retry_max_wait_s=0.05",
        f"max_questions={questions}",
        f"paths.packs={root / 'packs'}",
        f"paths.cache={root / 'cache'}",
        f"name={name}",
    ]


def pack_of(root: Path, name: str) -> Path | None:
    found = list((root / "packs" / name / "runs").glob("*"))
    return found[0] if found else None


def journal_state(pack: Path | None) -> tuple[int, bool]:
    """(whole prediction rows, whether the file ends in a torn line) right after a kill."""
    path = pack / "predictions.jsonl" if pack is not None else None
    if path is None or not path.is_file():
        return 0, False
    data = path.read_bytes()
    return data.count(b"\n"), bool(data) and not data.endswith(b"\n")


def run_to_end(command: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"qa failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:  # noqa: C901 (a linear script)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=300, help="max_questions of the run (file order)")
    parser.add_argument("--cycles", type=int, default=12, help="at most this many start+kill cycles")
    parser.add_argument("--seconds", type=float, default=240.0, help="time budget for the cycles")
    parser.add_argument("--fault-rate", type=float, default=0.1, help="share of requests answered 429 or 500")
    parser.add_argument(
        "--kill-after",
        type=float,
        nargs=2,
        default=None,
        metavar=("MIN", "MAX"),
        help="seconds after a start at which the kill lands (uniform; default: 0.3 to 1.1 times"
        " the undisturbed run's wall time, so kills land in start-up, answers and the end)",
    )
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args()
    chance = random.Random(ns.seed)
    figures: dict[str, Any] = {"questions": ns.questions, "fault_rate": ns.fault_rate, "seed": ns.seed}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with ScriptedOpenAIServer() as clean:
            figures["undisturbed_wall_s"] = round(run_to_end(qa_command(clean, root, "undisturbed", ns.questions), root), 2)
        undisturbed = pack_of(root, "undisturbed")
        assert undisturbed is not None
        kill_after = ns.kill_after or (0.3 * figures["undisturbed_wall_s"], 1.1 * figures["undisturbed_wall_s"])
        figures["kill_after_s"] = [round(s, 2) for s in kill_after]
        flaky = FlakyResponder(ns.fault_rate, ns.seed)
        with ScriptedOpenAIServer(responder=flaky) as server:
            command = qa_command(server, root, "soak", ns.questions)
            cycles = kills = torn = 0
            finished_in_cycles = False
            rows_at_kill: list[int] = []
            soak_started = time.perf_counter()
            while cycles < ns.cycles and time.perf_counter() - soak_started < ns.seconds:
                cycles += 1
                proc = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                try:
                    proc.wait(timeout=chance.uniform(*kill_after))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    kills += 1
                    count, is_torn = journal_state(pack_of(root, "soak"))
                    rows_at_kill.append(count)
                    torn += is_torn
                    continue
                if proc.returncode != 0:
                    raise SystemExit(f"qa failed ({proc.returncode}) in cycle {cycles}: {proc.stderr.read().decode()[-2000:]}")
                finished_in_cycles = True
                break
            if not finished_in_cycles:
                figures["final_resume_wall_s"] = round(run_to_end(command, root), 2)
            figures["soak_wall_s"] = round(time.perf_counter() - soak_started, 2)
            requests = len(server.requests)
        pack = pack_of(root, "soak")
        assert pack is not None
        ids = [json.loads(line)["question_id"] for line in (pack / "predictions.jsonl").read_text().splitlines()]
        expected = [json.loads(line)["question_id"] for line in (undisturbed / "predictions.jsonl").read_text().splitlines()]
        counts = Counter(ids)
        traces = [json.loads(line) for line in (pack / "reader/traces.jsonl").read_text().splitlines()]
        attempts = [a for t in traces for a in t["response"]["attempts"]]
        findings = verify_pack(pack)
        meta = json.loads((pack / "run_meta.json").read_text())
        figures.update(
            {
                "cycles": cycles,
                "kills": kills,
                "kills_with_a_torn_last_line": torn,
                "rows_at_each_kill": rows_at_kill,
                "kills_after_new_rows": sum(1 for before, after in zip([0, *rows_at_kill], rows_at_kill) if after > before),
                "finished_within_cycles": finished_in_cycles,
                "resumes_recorded_in_run_meta": meta.get("resumed"),
                "rows": len(ids),
                "rows_expected": len(expected),
                "lost": len(set(expected) - set(ids)),
                "duplicated": sum(n - 1 for n in counts.values() if n > 1),
                "order_equal": ids == expected,
                "files_differing_from_undisturbed": [
                    n for n in SAME_BYTES if (pack / n).read_bytes() != (undisturbed / n).read_bytes()
                ],
                "injected_429": flaky.injected[429],
                "injected_500": flaky.injected[500],
                "requests_served": requests,
                "attempts_in_kept_traces": len(attempts),
                "failed_attempts_in_kept_traces": sum(1 for a in attempts if a.get("status") != 200),
                "verify_findings": [f.format() for f in findings],
                "total_wall_s": round(time.perf_counter() - started, 2),
                "soak_over_undisturbed (wall)": round(figures["soak_wall_s"] / figures["undisturbed_wall_s"], 2),
            }
        )
    report("soak", figures)


if __name__ == "__main__":
    main()

"""Harness overhead per question against the scripted server, as a ratio to a raw HTTP request.

Runs the real CLI (`memorybench qa`, full_context) in a subprocess for N questions and for
1 question; the scripted server runs in this process and counts its own seconds.
overhead per question = ((T_N - T_1) - (S_N - S_1)) / (N - 1): wall time the harness adds
beyond the server's time, with process start-up cancelled out.

The yardstick, measured in the same run (issue 45): the same N request bodies, sent by a
process of its own to the same server with nothing but the standard library's `http.client`
over one kept-alive connection, each reply read and parsed. Its cost per request is the
floor the harness cannot go under (every question is one such request), so `harness / raw`
says how much more than the bare HTTP exchange the harness costs, on any machine. The same
bodies by httpx (the library under the openai SDK the harness posts through) are a second
yardstick: how much of the overhead is the HTTP client's.

Both sides are measured in CPU seconds of the client process (the harness: (C_N - C_1) /
(N - 1), the kernel's accounting of the finished child) and in wall seconds (server seconds
taken out); each round runs the harness and then the yardsticks, and the ratio is taken
round by round (median, min and max printed). The CPU ratio is the figure to quote: on a
shared machine the wall ratio moves with the other work (7x to 23x over one afternoon on 2
loaded cores, where the CPU ratio stayed within 13.5x to 15.8x). Over fewer questions the
start-up, taken out by difference, weighs more: quote the whole LoCoMo (1,986).
Also prints peak RSS (the CLI's own VmHWM) and the pack size against the size of the
transcripts it holds.

Run: .venv/bin/python bench/harness_overhead.py [N ...] [--rounds 3]   (default: 300 1986)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import report, spread

from memorybench.testing.scripted_server import ScriptedOpenAIServer

#: the yardstick: the bodies of a file, one a line, POSTed in order over one kept-alive connection,
#: by http.client (the floor) or by httpx (the HTTP library under the openai SDK the harness uses)
RAW_HTTP = r"""
import json, resource, sys, time
client, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "rb") as f:
    bodies = f.read().splitlines()
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
headers = {"Content-Type": "application/json"}
if client == "httpx":
    import httpx
    conn = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    def post(body):
        reply = conn.post("/v1/chat/completions", content=body, headers=headers)
        return reply.status_code, reply.content
else:
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    def post(body):
        conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
        reply = conn.getresponse()
        return reply.status, reply.read()
c0, t0 = cpu(), time.perf_counter()
for body in bodies:
    status, data = post(body)
    assert status == 200 and json.loads(data)["choices"][0]["message"]["content"]
wall, used = time.perf_counter() - t0, cpu() - c0
conn.close()
print(json.dumps({"wall_s": wall, "cpu_s": used, "requests": len(bodies)}))
"""


#: the CLI, writing its own peak RSS (VmHWM) at exit to the file $BENCH_HWM_FILE: ru_maxrss from wait4
#: would count the RSS this process had when it started the child (the server keeps every body)
CLI = r"""
import atexit, os, runpy, sys
def hwm():
    with open("/proc/self/status") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(os.environ["BENCH_HWM_FILE"], "w") as f:
        f.write(str(kib))
atexit.register(hwm)
sys.argv = ["memorybench", *sys.argv[1:]]
runpy.run_module("memorybench.cli", run_name="__main__", alter_sys=True)
"""


def run(n: int, server: ScriptedOpenAIServer, root: Path, name: str) -> dict:
    """One `qa` of n questions: wall, server and CPU seconds, peak RSS KiB, the pack and the bodies it sent."""
    args = [
        sys.executable,
        "-c",
        CLI,
        "qa",
        "reader=openai_compatible",
        f"reader.base_url={server.base_url}",
        "reader.model=scripted",
        f"max_questions={n}",
        f"paths.packs={root / 'packs'}",
        f"name={name}",
    ]
    del server.requests[:]  # the server keeps every body: only this run's
    before = server.server_seconds
    t0 = time.perf_counter()
    hwm = root / "hwm"
    env = {**os.environ, "BENCH_HWM_FILE": str(hwm)}
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=root, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"run of {n} failed: {proc.stderr.read().decode()[-2000:]}")
    (pack,) = (root / "packs" / name / "runs").iterdir()
    return {
        "wall": wall,
        "server": server.server_seconds - before,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_kib": int(hwm.read_text()),
        "pack": pack,
    }


def write_bodies(bodies: list[dict], path: Path) -> Path:
    """The bodies, one a line, as compact JSON; the server's list is emptied."""
    with path.open("wb") as f:
        for body in bodies:
            f.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    del bodies[:]
    return path


def raw_http(client: str, path: Path, server: ScriptedOpenAIServer) -> dict:
    """The yardstick: the bodies of `path` by plain `client` (http.client or httpx) in a process of its own."""
    del server.requests[:]
    before = server.server_seconds
    done = subprocess.run([sys.executable, "-c", RAW_HTTP, client, str(server.port), str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"raw HTTP yardstick failed: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["server_s"] = server.server_seconds - before
    out["body_bytes_mean"] = path.stat().st_size / max(1, out["requests"])
    del server.requests[:]
    return out


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def pack_sizes(pack: Path, raw: list[dict]) -> dict[str, object]:
    transcripts = sum(
        (pack / "memory" / "dumps" / f"{sid}.txt").stat().st_size
        for sid in {json.loads(line)["sample_id"] for line in (pack / "predictions.jsonl").open()}
    )
    in_pack = {json.loads(line)["sample_id"] for line in (pack / "predictions.jsonl").open()}
    released = sum(len(json.dumps(c["conversation"], ensure_ascii=False).encode()) for c in raw if c["sample_id"] in in_pack)
    meta = json.loads((pack / "run_meta.json").read_text())
    return {
        "pack_bytes": dir_size(pack),
        "rendered_transcript_bytes": transcripts,
        "released_transcript_json_bytes": released,
        "pack_over_rendered_transcripts": round(dir_size(pack) / transcripts, 3),
        "pack_over_released_transcripts": round(dir_size(pack) / released, 3),
        "largest_files": {
            str(p.relative_to(pack)): p.stat().st_size
            for p in sorted((p for p in pack.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)[:5]
        },
        "is_prefix": meta["is_prefix"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[300, 1986], help="questions of each measured run")
    parser.add_argument("--rounds", type=int, default=3, help="harness + yardstick pairs per size")
    ns = parser.parse_args()
    from memorybench.benchmarks.locomo.pins import LOCOMO10
    from memorybench.data.pins import pin_path

    raw = json.loads(pin_path(LOCOMO10).read_text("utf-8"))
    figures: dict[str, object] = {
        "yardstick": "the same request bodies by http.client over one kept-alive "
        "connection, in a process of its own, to the same server",
        "rounds": ns.rounds,
    }
    per: dict[int, dict[str, list[float]]] = {n: {} for n in ns.sizes}
    sizes: dict[int, dict[str, object]] = {}
    starts: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as server:
        root = Path(tmp)
        for r in range(ns.rounds):
            one = run(1, server, root, f"one{r}")
            starts.append(one["wall"])
            for n in ns.sizes:
                got = run(n, server, root, f"bench{n}_{r}")
                bodies = write_bodies(server.requests, root / "bodies.jsonl")
                yard = raw_http("http.client", bodies, server)
                lib = raw_http("httpx", bodies, server)
                httpx_wall_ms = (lib["wall_s"] - lib["server_s"]) / lib["requests"] * 1000
                harness_wall_ms = ((got["wall"] - one["wall"]) - (got["server"] - one["server"])) / (n - 1) * 1000
                harness_cpu_ms = (got["cpu"] - one["cpu"]) / (n - 1) * 1000
                raw_wall_ms = (yard["wall_s"] - yard["server_s"]) / yard["requests"] * 1000
                raw_cpu_ms = yard["cpu_s"] / yard["requests"] * 1000
                values = per[n]
                for key, value in (
                    ("ratio_wall", harness_wall_ms / raw_wall_ms),
                    ("ratio_cpu", harness_cpu_ms / raw_cpu_ms),
                    ("harness_wall_ms", harness_wall_ms),
                    ("harness_cpu_ms", harness_cpu_ms),
                    ("raw_wall_ms", raw_wall_ms),
                    ("raw_cpu_ms", raw_cpu_ms),
                    ("ratio_wall_httpx", harness_wall_ms / httpx_wall_ms),
                    ("ratio_cpu_httpx", harness_cpu_ms / (lib["cpu_s"] / lib["requests"] * 1000)),
                    ("httpx_wall_ms", httpx_wall_ms),
                    ("wall_s", got["wall"]),
                    ("server_s", got["server"]),
                    ("rss_mib", got["rss_kib"] / 1024),
                    ("body_kb", yard["body_bytes_mean"] / 1000),
                ):
                    values.setdefault(key, []).append(value)
                if r == ns.rounds - 1:
                    sizes[n] = pack_sizes(got["pack"], raw)
                print(
                    f"round {r + 1}, {n} questions: harness {harness_wall_ms:.2f} ms wall / {harness_cpu_ms:.2f} ms CPU "
                    f"per question; raw HTTP {raw_wall_ms:.2f} / {raw_cpu_ms:.2f} ms per request; "
                    f"ratio {harness_wall_ms / raw_wall_ms:.2f}x wall, {harness_cpu_ms / raw_cpu_ms:.2f}x CPU; "
                    f"httpx {httpx_wall_ms:.2f} ms",
                    flush=True,
                )
    figures["startup_s (1 question)"] = spread(starts)
    for n in ns.sizes:
        values = per[n]
        figures[f"questions={n}: ratio_to_raw_http (wall, server excluded)"] = spread(values["ratio_wall"], 2)
        figures[f"questions={n}: ratio_to_raw_http (cpu)"] = spread(values["ratio_cpu"], 2)
        figures[f"questions={n}: ratio_to_httpx (wall, server excluded)"] = spread(values["ratio_wall_httpx"], 2)
        figures[f"questions={n}: ratio_to_httpx (cpu)"] = spread(values["ratio_cpu_httpx"], 2)
        figures[f"questions={n}: harness_overhead_ms_per_question (wall)"] = spread(values["harness_wall_ms"], 2)
        figures[f"questions={n}: harness_cpu_ms_per_question"] = spread(values["harness_cpu_ms"], 2)
        figures[f"questions={n}: raw_http_ms_per_request (wall, server excluded)"] = spread(values["raw_wall_ms"], 3)
        figures[f"questions={n}: raw_http_cpu_ms_per_request"] = spread(values["raw_cpu_ms"], 3)
        figures[f"questions={n}: httpx_ms_per_request (wall, server excluded)"] = spread(values["httpx_wall_ms"], 3)
        figures[f"questions={n}: request_body_kb_mean"] = round(values["body_kb"][-1], 1)
        figures[f"questions={n}: wall_s"] = spread(values["wall_s"], 2)
        figures[f"questions={n}: server_s"] = spread(values["server_s"], 2)
        # memory is not a time: it does not move with the machine's speed (same Python and packages)
        figures[f"questions={n}: peak_rss_mib"] = spread(values["rss_mib"], 1)
        figures.update({f"questions={n}: {k}": v for k, v in sizes[n].items()})
    report("harness_overhead", figures)


if __name__ == "__main__":
    main()

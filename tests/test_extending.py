"""docs/extending.md, done as it says: a memory method is one module plus one YAML.

The files come from the page's own code blocks (a block under a line "`PATH`:"), so the page
cannot drift from what works. The method is added twice, each run by the real `memorybench`
command in fresh processes (`plan`, then a `qa` on the scripted OpenAI-compatible server over
the two-conversation fixture, then `verify`):

- inside memorybench: its module and its YAML written into a copy of the checkout
  (`memorybench/`, `conf/`, `prompts/`), which the processes import instead of this one;
- as a plugin package: installed the way pip installs a user's package (`pip install
  --target`, which writes its entry point into a .dist-info folder), that folder on PYTHONPATH.

Nothing else is edited: no list of components, no schema table. A YAML that names a module
that is not there, or one that registers nothing under the option's name, is one line.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "extending.md"
METHOD = "memorybench/memory/last_turns.py"
YAML = "conf/memory/last_turns.yaml"
PLUGIN_FILES = ("pyproject.toml", "mb_last_turns/__init__.py", "mb_last_turns/conf/memory/last_turns.yaml")


def _section(title: str) -> str:
    text = PAGE.read_text("utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def _files(section: str) -> dict[str, str]:
    """The code blocks of a section of the page, by the path named on the line before each."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^`([^`\n]+)`:\n\n```[a-z]*\n(.*?)^```", section, re.M | re.S)}


def _commands(section: str) -> list[list[str]]:
    """The `memorybench plan` and `memorybench qa` lines of a section's shell block (no sweep)."""
    (block,) = re.findall(r"^```bash\n(.*?)^```", section, re.M | re.S)
    lines = [shlex.split(line.split("#")[0]) for line in block.splitlines()]
    return [line[1:] for line in lines if line[:1] == ["memorybench"] and line[1] in ("plan", "qa") and "-m" not in line]


INSIDE = _section("A memory method inside memorybench")
PLUGIN = _section("The same method in a plugin package")


def _overrides(server, tmp: Path) -> list[str]:
    """What the test adds to the page's commands: the scripted reader, the fixture, its folders."""
    return [
        *scripted_reader(server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp / 'packs'}",
        f"paths.cache={tmp / 'cache'}",
        f"hydra.sweep.dir={tmp / 'multirun'}",
        "name=extending",
    ]


def _env(path: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(path), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _plan_and_qa(section: str, server, tmp: Path, env: dict[str, str]) -> Path:
    """The page's `plan` and `qa` (with the test's overrides): the pack `qa` wrote, verified."""
    work = tmp / "work"
    work.mkdir()
    (plan, qa) = _commands(section)
    planned = run_cli(*plan, *_overrides(server, work), cwd=work, env=env)
    assert planned.returncode == 0, planned.stderr
    run_id = planned.stdout.split("\t")[2]
    assert run_id.startswith("last_turns-reader-scripted-"), planned.stdout
    done = run_cli(*qa, *_overrides(server, work), cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    pack = work / "packs" / "extending" / "runs"
    (found,) = pack.iterdir()
    assert json.loads((found / "run_meta.json").read_text())["choices"]["memory"] == "last_turns"
    verified = run_cli("verify", str(found), cwd=work, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return found


def _last_turns(pack: Path, turns: int) -> None:
    """The method's own key went through its schema node, and each memory is the last turns."""
    config = (pack / "config.resolved.yaml").read_text()
    # no key of another method's (`top_k`) in its node: only the run's `budget.top_k`, last, names one
    assert f"turns: {turns}" in config and "top_k" not in config.split("\nbudget:\n")[0]
    for sample in json.loads((FIXTURES / "mini_locomo.json").read_text()):
        conv = sample["conversation"]
        sessions = sorted((int(k.split("_")[1]) for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)))
        ids = [turn["dia_id"] for n in sessions for turn in conv[f"session_{n}"]][-turns:]
        lineage = [json.loads(line) for line in (pack / "memory" / "lineage.jsonl").read_text().splitlines()]
        mine = [row for row in lineage if row.get("sample_id") == sample["sample_id"]]
        dump = (pack / "memory" / "dumps" / f"{sample['sample_id']}.txt").read_text().splitlines()
        assert len(dump) == len(ids), (sample["sample_id"], len(dump), len(ids))
        assert [s for row in mine for s in row["sources"]] == ids


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A copy of the checkout with the page's module and YAML added, nothing else edited."""
    root = tmp_path_factory.mktemp("clone")
    for part in ("memorybench", "conf", "prompts"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    files = _files(INSIDE)
    assert set(files) == {METHOD, YAML}, sorted(files)
    for relpath, text in files.items():
        assert not (root / relpath).exists(), relpath
        (root / relpath).write_text(text, "utf-8")
    probe = subprocess.run(
        [sys.executable, "-c", "import memorybench; print(memorybench.__file__)"],
        capture_output=True,
        text=True,
        env={**os.environ, **_env(root)},
        cwd=root,
        timeout=60,
    )
    assert probe.stdout.strip() == str(root / "memorybench" / "__init__.py"), probe.stdout + probe.stderr
    return root


def test_a_method_added_inside_memorybench_plans_and_runs(clone, tmp_path, scripted_server):
    assert re.search(r"^defaults:\n  - memorybench\.memory\.last_turns\n", _files(INSIDE)[YAML], re.M)
    pack = _plan_and_qa(INSIDE, scripted_server, tmp_path, _env(clone))
    assert "memory.turns=40" in _commands(INSIDE)[1]
    _last_turns(pack, 40)


def test_a_yaml_naming_a_missing_or_wrong_module_is_one_line(clone, tmp_path, scripted_server):
    conf = clone / "conf" / "memory"
    (conf / "no_module.yaml").write_text("defaults:\n  - memorybench.memory.no_such_module\n  - _self_\n\nname: no_module\n")
    (conf / "stray.yaml").write_text("defaults:\n  - memorybench.memory.full_context\n  - _self_\n\nname: stray\n")
    try:
        missing = run_cli("plan", "memory=no_module", *_overrides(scripted_server, tmp_path), cwd=tmp_path, env=_env(clone))
        stray = run_cli("plan", "memory=stray", *_overrides(scripted_server, tmp_path), cwd=tmp_path, env=_env(clone))
    finally:
        (conf / "no_module.yaml").unlink()
        (conf / "stray.yaml").unlink()
    for done, words in (
        (missing, ("conf/memory/no_module.yaml", "memorybench.memory.no_such_module", "not found")),
        (stray, ("conf/memory/stray.yaml", "memorybench.memory.full_context", "registers no memory method 'stray'")),
    ):
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        line = done.stderr.strip()
        assert "\n" not in line and all(w in line for w in words), line


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The page's package, installed with pip into a folder of its own."""
    root = tmp_path_factory.mktemp("plugin")
    files = _files(PLUGIN)
    assert set(files) == set(PLUGIN_FILES), sorted(files)
    assert re.search(r"^\s+method\.py\s+the module above, unchanged$", PLUGIN, re.M)
    files["mb_last_turns/method.py"] = _files(INSIDE)[METHOD]
    src = root / "src"
    for relpath, text in files.items():
        (src / relpath).parent.mkdir(parents=True, exist_ok=True)
        (src / relpath).write_text(text, "utf-8")
    site = root / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (site / "mb_last_turns" / "conf" / "memory" / "last_turns.yaml").is_file()
    return site


def test_a_method_in_a_plugin_plans_and_runs(plugin_site, tmp_path, scripted_server):
    assert re.search(
        r"^defaults:\n  - mb_last_turns\.method\n", _files(PLUGIN)["mb_last_turns/conf/memory/last_turns.yaml"], re.M
    )
    pack = _plan_and_qa(PLUGIN, scripted_server, tmp_path, _env(plugin_site))
    _last_turns(pack, 20)
    (plugin,) = json.loads((pack / "run_meta.json").read_text())["plugins"]
    assert (plugin["name"], plugin["module"], plugin["distribution"]) == ("last_turns", "mb_last_turns", "memorybench-last-turns")


def test_without_the_plugin_the_method_is_unknown(tmp_path, scripted_server):
    done = run_cli("plan", "memory=last_turns", *_overrides(scripted_server, tmp_path), cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "unknown memory option 'last_turns'" in done.stderr

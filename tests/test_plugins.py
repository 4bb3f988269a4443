"""A memory method, a prompt and a scorer from a plugin package outside memorybench.

The test writes the package docs/extending.md walks through into a temporary folder,
installs it the way pip installs a user's package (`pip install --target`, which writes
its entry point into a .dist-info folder), puts that folder on PYTHONPATH and runs the
real `memorybench` command in subprocesses: `plan`, `qa` through Hydra's basic launcher
and through `hydra/launcher=cloudrun_local`, and `verify`. Editing the plugin's code or
its prompt gives a new run id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "memorybench-last-session"
version = "0.1.0"
dependencies = ["memorybench"]

[project.entry-points."memorybench.plugins"]
last_session = "mb_last_session"

[tool.setuptools.packages.find]
include = ["mb_last_session*"]

[tool.setuptools.package-data]
mb_last_session = ["conf/*/*.yaml", "prompts/*/*.txt"]
"""

PLUGIN = '''\
"""memory=last_session: only the last `memory.sessions` sessions, one line per turn."""

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from memorybench.config import MemoryConfig, store_schema
from memorybench.memory.base import BuiltMemory, MemoryItem
from memorybench.registry import MEMORY, SCORERS
from memorybench.score.scorers import Scorer

CONFIG_DIR = Path(__file__).parent / "conf"
PROMPTS_DIR = Path(__file__).parent / "prompts"


@dataclass
class LastSessionConfig(MemoryConfig):
    #: how many of the last sessions the reader gets
    sessions: int = 1


store_schema("memory", "last_session", LastSessionConfig)


@MEMORY.register("last_session")
class LastSession:
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = True

    def __init__(self, cfg):
        self.sessions = int(cfg.memory.sessions)

    def build(self, conversation, ctx):
        items = [
            MemoryItem(turn.dia_id, f"{session.date_time} | {turn.render()}", (turn.dia_id,))
            for session in conversation.sessions[-self.sessions:]
            for turn in session.turns
        ]
        return BuiltMemory(conversation.sample_id, items, text="\\n".join(i.text for i in items))

    def for_question(self, built, asked, ctx):
        return built.text


def _gold_in_answer(row):
    gold = "" if row["gold"] is None else str(row["gold"]).lower()
    return float(bool(gold) and gold in row["prediction"].lower())


SCORERS.add("gold_in_answer", Scorer("gold_in_answer", _gold_in_answer, "the gold text inside the answer (a plugin's)", owner="ours"))
'''

MEMORY_YAML = """\
defaults:
  - last_session_schema
  - _self_

name: last_session
sessions: 1
"""

PROMPT = "Memory (the last session only):\n{memory}\n\nQuestion: {question}\nShort answer:"


def write_plugin(src: Path) -> None:
    package = src / "mb_last_session"
    (package / "conf" / "memory").mkdir(parents=True)
    (package / "prompts" / "readers").mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text(PLUGIN)
    (package / "conf" / "memory" / "last_session.yaml").write_text(MEMORY_YAML)
    (package / "prompts" / "readers" / "last_session_v1.txt").write_text(PROMPT)


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plugin")
    write_plugin(root / "src")
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
            str(root / "src"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (site / "mb_last_session" / "__init__.py").is_file()
    return site


def env_with(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}


def args(server, tmp: Path) -> list[str]:
    return [
        "memory=last_session",
        *scripted_reader(server.base_url),
        "reader.prompt=readers/last_session_v1.txt",
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp / 'packs'}",
        f"paths.cache={tmp / 'cache'}",
        f"hydra.sweep.dir={tmp / 'multirun'}",
        "name=plugin",
    ]


def plan_id(site: Path, server, tmp: Path) -> str:
    done = run_cli("plan", *args(server, tmp), cwd=tmp, env=env_with(site))
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\t")[2]


def test_without_the_plugin_the_method_is_unknown(tmp_path, scripted_server):
    done = run_cli("plan", *args(scripted_server, tmp_path), cwd=tmp_path)
    assert done.returncode != 0
    assert "last_session" in done.stderr and "Traceback" not in done.stderr


def test_a_plugin_method_prompt_and_scorer_run_through_qa(plugin_site, tmp_path, scripted_server, locomo_raw):
    rid = plan_id(plugin_site, scripted_server, tmp_path)
    assert rid.startswith("last_session-reader-scripted-")
    done = run_cli("qa", *args(scripted_server, tmp_path), cwd=tmp_path, env=env_with(plugin_site))
    assert done.returncode == 0, done.stderr
    pack = tmp_path / "packs" / "plugin" / "runs" / rid
    meta = json.loads((pack / "run_meta.json").read_text())
    (plugin,) = meta["plugins"]
    assert (plugin["name"], plugin["distribution"], plugin["version"]) == ("last_session", "memorybench-last-session", "0.1.0")
    assert len(plugin["source_sha256"]) == 64
    assert meta["choices"]["memory"] == "last_session"
    # the method's own key, typed by its schema node, and nothing of other methods'
    config = (pack / "config.resolved.yaml").read_text()
    assert "sessions: 1" in config and "top_k" not in config.split("\nbudget:\n")[0]
    # the memory is the last session of each conversation, nothing earlier
    data = json.loads((FIXTURES / "mini_locomo.json").read_text())
    for sample in data:
        conv = sample["conversation"]
        last = max(int(k.split("_")[1]) for k, v in conv.items() if k.startswith("session_") and isinstance(v, list))
        dump = (pack / "memory" / "dumps" / f"{sample['sample_id']}.txt").read_text().splitlines()
        assert [line.split(" | ", 1)[0] for line in dump] == [conv[f"session_{last}_date_time"]] * len(conv[f"session_{last}"])
    # the plugin's prompt went out and is in the pack; its scorer is a column and a metric
    assert (pack / "prompts" / "readers" / "last_session_v1.txt").read_text() == PROMPT
    assert (pack / "predictions.csv").read_text().splitlines()[0].endswith(",token_f1,gold_in_answer")
    assert "gold_in_answer" in json.loads((pack / "metrics.json").read_text())["scores"]  # a scorer of its own, in the record
    verified = run_cli("verify", str(pack), cwd=tmp_path, env=env_with(plugin_site))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_plugin_runs_under_the_cloudrun_local_launcher(plugin_site, tmp_path, scripted_server):
    done = run_cli(
        "qa",
        "-m",
        *args(scripted_server, tmp_path),
        "memory.sessions=2",
        "hydra/launcher=cloudrun_local",
        cwd=tmp_path,
        env=env_with(plugin_site),
    )
    assert done.returncode == 0, done.stderr
    packs = sorted((tmp_path / "packs" / "plugin" / "runs").iterdir())
    assert len(packs) == 1
    for pack in packs:
        assert "sessions: 2" in (pack / "config.resolved.yaml").read_text()
        assert (pack / "_SUCCESS").is_file()
        assert json.loads((pack / "run_meta.json").read_text())["plugins"][0]["name"] == "last_session"
        assert json.loads((pack / "provenance" / "cloudrun.json").read_text())["launcher"] == "cloudrun_local"


def test_editing_the_plugin_or_its_prompt_gives_a_new_run_id(plugin_site, tmp_path, scripted_server):
    before = plan_id(plugin_site, scripted_server, tmp_path)
    module = plugin_site / "mb_last_session" / "__init__.py"
    prompt = plugin_site / "mb_last_session" / "prompts" / "readers" / "last_session_v1.txt"
    original_code, original_prompt = module.read_text(), prompt.read_text()
    try:
        module.write_text(original_code + "\n# an edit: the run is no longer the same experiment\n")
        after_code = plan_id(plugin_site, scripted_server, tmp_path)
        module.write_text(original_code)
        prompt.write_text(original_prompt + " (one word)")
        after_prompt = plan_id(plugin_site, scripted_server, tmp_path)
    finally:
        module.write_text(original_code)
        prompt.write_text(original_prompt)
    assert len({before, after_code, after_prompt}) == 3


def test_a_plugin_reading_an_undeclared_key_gets_one_line(plugin_site, tmp_path, scripted_server):
    module = plugin_site / "mb_last_session" / "__init__.py"
    original = module.read_text()
    try:
        module.write_text(
            original.replace(
                "self.sessions = int(cfg.memory.sessions)", "self.sessions = int(cfg.memory.sessions) + int(cfg.memory.window)"
            )
        )
        done = run_cli("qa", *args(scripted_server, tmp_path), cwd=tmp_path, env=env_with(plugin_site))
    finally:
        module.write_text(original)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "window" in x]
    assert "plugin last_session" in line and "'memory.window'" in line and "__init__.py:" in line and "schema" in line

"""experiment=clone_vs_real end to end on scripted servers: our clones (mem0, mem0g, graph)
beside the real systems (mem0's library, Graphiti), then conf/analysis/clone_vs_real.yaml
over those packs: the side-by-side tables and the paired comparison of each clone with the
system it copies.

The run specs are the experiment's own (`sweep_jobs`, as `memorybench qa -m
experiment=clone_vs_real` expands it), each run as one `qa` call with the scripted
endpoints added. One scripted writer answers every method: the plugins' own test
responders for the libraries' structured calls (mem0's extraction, Graphiti's reply
models), `tests/memory/memtest.py` for our clones. The scripted reader answers with the
first words of the memory it was given, so the methods' scores differ by what they retrieved.

Skipped, with the reason, when either plugin is not installed.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

pytest.importorskip("mb_mem0_lib", reason="the mem0_lib plugin is not installed: .venv/bin/pip install -e plugins/mem0_lib")
pytest.importorskip("mb_graphiti", reason="the graphiti plugin is not installed: bash plugins/graphiti/install.sh")

from conftest import FIXTURES, REPO, scripted_reader  # noqa: E402
from memory.memtest import writer_responder  # noqa: E402

from memorybench import CONF_DIR  # noqa: E402
from memorybench.cli import main  # noqa: E402
from memorybench.compare.report import run_report  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.plan import hydra_context, sweep_jobs  # noqa: E402
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer  # noqa: E402

MINI = FIXTURES / "mini_locomo.json"
DESIGN = CONF_DIR / "analysis" / "clone_vs_real.yaml"
MEMORIES = ("mem0", "mem0_lib", "mem0g", "graph", "graphiti")
PAIRS = {("mem0", "mem0_lib"), ("mem0g", "graphiti"), ("graph", "graphiti")}
#: per memory, what keeps its build small (a prefix of Graphiti's episodes, as its own tests do)
EXTRA = {"graphiti": ["memory.max_episodes=4"]}


def _plugin_tests(name: str, path: Path) -> ModuleType:
    """A plugin's test module (its responders), imported by path: plugins/*/tests is no package."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


MEM0_LIB = _plugin_tests("_clone_vs_real_mem0_lib", REPO / "plugins/mem0_lib/tests/test_mem0_lib.py")
GRAPHITI = _plugin_tests("_clone_vs_real_graphiti", REPO / "plugins/graphiti/tests/test_graphiti.py")


def scripted_writer(body: dict[str, Any]) -> Reply:
    """mem0's extraction call, then Graphiti's structured calls, then our clones' tasks."""
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    if MEM0_LIB.EXTRACTOR in system:
        return MEM0_LIB.mem0_responder(body)
    if (body.get("response_format") or {}).get("type") == "json_schema":
        return GRAPHITI.graphiti_responder(body)
    return writer_responder(body)


def memory_reader(body: dict[str, Any]) -> Reply:
    """The reader: the first twelve words of the memory it was given (plumbing, not an answer)."""
    user = next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    memory = user.split("two people.\n\n", 1)[-1].split("\n\nAnswer the question", 1)[0]
    words = memory.split()[:12]
    return Reply(
        text=" ".join(words) or "Not mentioned in the conversation",
        prompt_tokens=max(1, len(user.split())),
        completion_tokens=max(1, len(words)),
    )


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def clone_vs_real(tmp_path_factory):
    root = tmp_path_factory.mktemp("clone_vs_real")
    with hydra_context():
        jobs = sweep_jobs(["experiment=clone_vs_real"])
    with ScriptedOpenAIServer(responder=memory_reader) as reader, ScriptedOpenAIServer(responder=scripted_writer) as writer:
        for job in jobs:
            memory = next(o.split("=", 1)[1] for o in job if o.startswith("memory="))
            args = [
                "qa",
                *job,
                *scripted_reader(reader.base_url),
                "writer=openai_compatible",
                f"writer.base_url={writer.base_url}",
                "writer.model=scripted-writer",
                "embedder=hashing",
                f"dataset.path={MINI}",
                "max_questions=6",
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
                *EXTRA.get(memory, []),
            ]
            assert main(args) == 0, job
    design = root / "clone_vs_real.yaml"
    data = yaml.safe_load(DESIGN.read_text("utf-8"))
    design.write_text(
        yaml.safe_dump({**data, "packs": [str(root / "packs")], "bootstrap": {"resamples": 200, "seed": 0}}), "utf-8"
    )
    report = run_report(design, root / "report")
    return root, jobs, report


def test_the_experiment_is_each_clone_beside_its_real_system(clone_vs_real):
    root, jobs, _ = clone_vs_real
    assert sorted(next(o for o in job if o.startswith("memory=")) for job in jobs) == sorted(f"memory={m}" for m in MEMORIES)
    packs = sorted((root / "packs" / "clone_vs_real" / "runs").iterdir())
    assert len(packs) == len(MEMORIES)
    shared = set()
    for pack in packs:
        assert verify_pack(pack) == [], pack.name
        config = yaml.safe_load((pack / "config.resolved.yaml").read_text("utf-8"))
        # the same reader, writer, embedder and judge: only the memory differs
        shared.add(json.dumps([config[g] for g in ("reader", "writer", "embedder", "judge")], sort_keys=True))
    assert len(shared) == 1


def test_the_report_puts_them_side_by_side_with_the_paired_comparison(clone_vs_real):
    root, _, report = clone_vs_real
    scores = _csv(report.table_files["scores_by_category"])
    overall = {r["condition"]: r for r in scores if r["category"] == "1-4"}
    assert sorted(overall) == sorted(MEMORIES)
    paired = [
        r for r in _csv(report.table_files["paired_differences"]) if r["metric"] == "locomo_f1" and r["categories"] == "1-4"
    ]
    assert {(r["baseline"], r["condition"]) for r in paired} == PAIRS
    for r in paired:
        # each side's number is its own score over the compared questions; the difference is real minus clone
        assert float(r["a"]) == pytest.approx(float(overall[r["baseline"]]["locomo_f1"]), abs=1e-6)
        assert float(r["b"]) == pytest.approx(float(overall[r["condition"]]["locomo_f1"]), abs=1e-6)
        # the CSV writes each of the three to 6 significant digits (`%.6g`): each of a and b is off
        # by up to 5e-7 of a score below 1, the difference by far less
        assert float(r["difference"]) == pytest.approx(float(r["b"]) - float(r["a"]), abs=1.1e-6)
        assert int(r["conversations"]) == 2 and not math.isnan(float(r["ci_low"]))
    assert any(float(r["locomo_f1"]) > 0 for r in overall.values())
    latency = {r["condition"]: r for r in _csv(report.table_files["latency_tokens"])}
    assert sorted(latency) == sorted(MEMORIES)
    for memory, row in latency.items():  # each build is counted; all but graph (one text per conversation) search per question
        assert (row["search_p50_s"] == "") == (memory == "graph"), memory
        assert float(row["total_p95_s"]) >= float(row["total_p50_s"]) > 0, memory
        assert float(row["build_tokens_per_conversation"]) > 0 and float(row["memory_tokens_per_query"]) > 0, memory
    text = report.markdown.read_text("utf-8")
    for name in ("scores_by_category", "paired_differences", "latency_tokens"):
        assert f"## {name}" in text

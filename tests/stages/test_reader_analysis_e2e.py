"""The seed's reader analysis end to end: `experiment=reader_analysis`'s six run specs run
against scripted servers (the one-call reader over the openai SDK, the real pinned Codex
CLI over the Responses API), then its report design and its notebook over those packs.

The scripted servers only play the models; every pack, table and figure is the real one.
Two questions per run keep the four Codex runs to eight `codex exec` processes.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import FIXTURES, scripted_reader

from memorybench import PROJECT_ROOT
from memorybench.cli import main
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.plan import hydra_context, sweep_jobs
from memorybench.testing.scripted_responses import ScriptedResponsesServer
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
DESIGN = PROJECT_ROOT / "conf" / "analysis" / "reader_analysis.yaml"


def _codex(base_url: str) -> list[str]:
    return [
        "answerer.provider=openai_compatible",
        f"answerer.base_url={base_url}",
        "answerer.model=scripted",
        "answerer.api_key_env=null",
        "answerer.request_max_retries=0",
        "answerer.stream_max_retries=0",
        "answerer.timeout_s=60",
    ]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    root = tmp_path_factory.mktemp("reader_analysis")
    with hydra_context():
        jobs = sweep_jobs(["experiment=reader_analysis"])
    with ScriptedOpenAIServer() as reader, ScriptedResponsesServer() as agent:
        for job in jobs:
            agent_arm = any(o.startswith("arm=codex") for o in job)
            args = [
                "qa",
                *job,
                *scripted_reader(reader.base_url),
                *(_codex(agent.base_url) if agent_arm else []),
                f"dataset.path={MINI}",
                "max_questions=2",
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
            ]
            assert main(args) == 0, job
    design = root / "reader_analysis.yaml"
    data = yaml.safe_load(DESIGN.read_text("utf-8"))
    design.write_text(
        yaml.safe_dump({**data, "packs": [str(root / "packs")], "bootstrap": {"resamples": 200, "seed": 0}}), "utf-8"
    )
    return root, jobs, design


def test_the_experiment_is_six_run_specs_and_six_verified_packs(analysis):
    root, jobs, _ = analysis
    assert len(jobs) == 6
    packs = sorted((root / "packs" / "reader_analysis" / "runs").iterdir())
    assert len(packs) == 6
    kinds = []
    for pack in packs:
        assert failures(verify_pack(pack)) == [], pack.name
        meta = PackReader.open(pack).meta()
        kinds.append((meta.choices["memory"], meta.choices["answerer"]))
        assert meta.question_count == 2
        assert json.loads((pack / "run_meta.json").read_text("utf-8"))["prompts"]  # qa_mem0_v1 recorded with its sha256
    assert sorted(kinds) == sorted([(m, a) for m in ("full_context", "session_summaries") for a in ("reader", "codex", "codex")])


def test_its_report_has_one_row_per_condition(analysis, tmp_path):
    from memorybench.compare.report import run_report

    _, _, design = analysis
    report = run_report(design, tmp_path / "out")
    table = report.tables["scores_by_category"]
    conditions = set(table["condition"]) if "condition" in table else set(table.index)
    assert len(conditions) == 6, table
    assert (tmp_path / "out" / "report.md").is_file()


def test_its_notebook_runs_on_those_packs(analysis, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    _, _, design = analysis
    kernels = tmp_path / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    import sys

    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "venv",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MEMORYBENCH_DESIGN", str(design))
    monkeypatch.setenv("MEMORYBENCH_REPORT_OUT", str(tmp_path / "nb-out"))
    nb = nbformat.read(PROJECT_ROOT / "notebooks" / "reader_analysis.ipynb", as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "Reader analysis" in shown and "memory, answerer, cfg.answerer.persist" in shown
    assert (tmp_path / "nb-out" / "report.md").is_file()

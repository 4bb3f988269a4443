"""hydra/launcher=submitit_local (hydra-submitit-launcher, configs from its own plugin) runs
the same 2 x 2 sweep as the cloudrun tests: submitit pickles qa_app and runs each job in
its own process; the packs land where a basic-launcher run puts them."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.plan import plan_runs

pytest.importorskip("submitit", reason="pip install hydra-submitit-launcher (the test extra)")
pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install hydra-submitit-launcher (the test extra)")

SWEEP = ["memory=full_context,session_summaries", "reader.max_tokens=8,16"]


def test_submitit_local_runs_the_sweep_and_writes_every_pack(scripted_server, tmp_path):
    common = [*scripted_reader(scripted_server.base_url), f"dataset.path={FIXTURES / 'mini_locomo.json'}",
              f"paths.packs={tmp_path / 'packs'}", f"paths.cache={tmp_path / 'cache'}"]
    expected = sorted(spec.run_id for spec in plan_runs([*common, *SWEEP], multirun=True))
    assert len(expected) == 4
    assert main(["qa", "-m", *common, *SWEEP, f"hydra.sweep.dir={tmp_path / 'multirun'}", "hydra/launcher=submitit_local",
                 "hydra.launcher.timeout_min=10"]) == 0
    packs = sorted((tmp_path / "packs" / "default" / "runs").iterdir())
    assert [p.name for p in packs] == expected
    for pack in packs:
        assert (pack / "_SUCCESS").is_file()
        meta = json.loads((pack / "run_meta.json").read_text())
        assert meta["choices"]["memory"] in ("full_context", "session_summaries")
        assert json.loads((pack / "metrics.json").read_text())["counts"]["total"] == 10
    assert len(scripted_server.requests) == 40  # 4 runs x 10 questions, each job in its own submitit process
    # submitit kept each job's pickled result and logs under the sweep folder
    assert len(list((tmp_path / "multirun" / ".submitit").glob("*/*_result.pkl"))) == 4

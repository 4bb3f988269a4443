"""A sweep (`memorybench qa -m`) ends with one table: each run's overrides, run id, F1, cost and
status, the numbers those of each run's metrics.json; a failed run is a row that says why."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

from memorybench.sweep_table import COLUMNS


@pytest.mark.parametrize("launcher", ["basic", "cloudrun_local"])
def test_a_sweep_ends_with_one_table_of_its_runs(tmp_path, scripted_server, launcher):
    done = run_cli(
        "qa",
        "-m",
        "memory=full_context,session_summaries",
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
        "name=sweep",
        "max_questions=4",
        f"hydra/launcher={launcher}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("sweep: 2 of 2 runs done"))
    header, *rows = out[start + 1 : start + 4]
    assert header.split() == [w for c in COLUMNS for w in c.split()]
    packs = {p.name: p for p in (tmp_path / "packs" / "sweep" / "runs").iterdir()}
    assert len(rows) == 2 and len(packs) == 2 and "max_questions=4" not in done.stdout  # shared overrides left out
    for row, memory in zip(rows, ("full_context", "session_summaries")):
        assert row.startswith(f"memory={memory}")
        (run_id,) = [name for name in packs if name in row]
        metrics = json.loads((packs[run_id] / "metrics.json").read_text())
        assert f"{metrics['scores']['locomo_f1']['subsets']['1-4']['value']:.4f}" in row and row.rstrip().endswith("done")

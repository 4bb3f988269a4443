"""`report` never pools runs of different configs: conditions by config identity."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import scripted_reader
from tracking.pack_factory import MINI, lookup_responder

from memorybench.cli import main
from memorybench.compare.aggregate import aggregate
from memorybench.compare.report import run_report
from memorybench.errors import UserError
from memorybench.testing.scripted_server import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A `memory.top_k=1,8` sweep on raw_chunks, and a seed replicate of top_k=8, against one
    scripted server (one base_url: an endpoint is part of a run's identity)."""
    root = tmp_path_factory.mktemp("sweep")
    with ScriptedOpenAIServer(responder=lookup_responder) as server:
        for extra in (["memory.top_k=1"], ["memory.top_k=8"], ["memory.top_k=8", "reader.seed=1"]):
            # small chunks, so that top_k changes what the reader sees
            args = [
                "qa",
                *scripted_reader(server.base_url),
                f"dataset.path={MINI}",
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
                "name=sweep",
                "memory=raw_chunks",
                "memory.chunk_tokens=48",
                "memory.chunk_overlap=0",
                *extra,
            ]
            assert main(args) == 0
    return root


def _design(path: Path, root: Path, **extra) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "packs": [str(root / "packs")],
                "figures": [],
                "tables": ["scores_by_category"],
                "bootstrap": {"resamples": 200, "seed": 1},
                **extra,
            }
        )
    )
    return path


def _metrics(root: Path) -> dict[tuple[str, str], dict]:
    """metrics.json of every pack, by (top_k, seed) from its resolved config."""
    out = {}
    for pack in sorted((root / "packs" / "sweep" / "runs").iterdir()):
        cfg = yaml.safe_load((pack / "config.resolved.yaml").read_text())
        out[(str(cfg["memory"]["top_k"]), str(cfg["reader"]["seed"]))] = json.loads((pack / "metrics.json").read_text())
    return out


def test_runs_table_has_one_column_per_identity_leaf(sweep, tmp_path):
    result = aggregate([sweep / "packs"], tmp_path)
    runs = pq.read_table(result.runs).to_pylist()
    assert sorted((r["cfg.memory.top_k"], r["cfg.reader.seed"]) for r in runs) == [("1", "0"), ("8", "0"), ("8", "1")]
    row = runs[0]
    # the identity: no path, no operational setting; the data by its sha256, the prompts by theirs
    assert row["cfg.memory.name"] == "raw_chunks" and row["cfg.reader.temperature"] == "0.0"
    assert row["cfg.dataset.sha256"] == json.loads(Path(row["pack"], "run_meta.json").read_text())["data"]["sha256"]
    assert row["cfg.code.prompts.readers/qa_v1.txt"] and "cfg.paths.packs" not in row and "cfg.reader.timeout_s" not in row


def test_a_condition_that_would_pool_two_configs_stops_in_one_line(sweep, tmp_path):
    with pytest.raises(UserError) as raised:
        run_report(_design(tmp_path / "d.yaml", sweep, conditions=["memory"]), tmp_path / "out")
    message = str(raised.value)
    assert "\n" not in message and "cfg.memory.top_k = 1, 8" in message and "raw_chunks" in message
    assert "add cfg.memory.top_k to the design's conditions" in message
    assert not (tmp_path / "out" / "report.md").exists()


def test_conditions_by_a_config_leaf_give_one_row_per_value(sweep, tmp_path):
    report = run_report(_design(tmp_path / "d.yaml", sweep, conditions=["memory", "cfg.memory.top_k"]), tmp_path / "out")
    with report.table_files["scores_by_category"].open(newline="") as f:
        rows = {(r["condition"], r["category"]): r for r in csv.DictReader(f)}
    metrics = _metrics(sweep)
    one = rows[("raw_chunks / 1", "1-4")]
    assert one["runs"] == "1" and float(one["locomo_f1"]) == pytest.approx(
        metrics[("1", "0")]["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
    )
    assert one["f1_sd_runs"] == ""  # one run: no sd over replicates
    # top_k=8 has two seeds: replicates, pooled; the question counts once with its mean score
    eight = rows[("raw_chunks / 8", "1-4")]
    expected = (
        metrics[("8", "0")]["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
        + metrics[("8", "1")]["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
    ) / 2
    held = metrics[("8", "0")]["counts"]["by_kind"]
    assert eight["runs"] == "2" and int(eight["n"]) == sum(held[c] for c in "1234")
    assert float(eight["locomo_f1"]) == pytest.approx(expected) and float(eight["f1_sd_runs"]) >= 0
    assert {c for c, _ in rows} == {"raw_chunks / 1", "raw_chunks / 8"}


def test_a_seed_outside_the_replicates_is_refused_too(sweep, tmp_path):
    design = _design(tmp_path / "d.yaml", sweep, conditions=["memory", "cfg.memory.top_k"], replicates=[])
    with pytest.raises(UserError, match=r"cfg\.reader\.seed = 0, 1"):
        run_report(design, tmp_path / "out")


def test_an_unknown_config_leaf_is_one_line(sweep, tmp_path):
    with pytest.raises(UserError, match=r"'cfg.memory.topk' is no config leaf of these packs"):
        run_report(_design(tmp_path / "d.yaml", sweep, conditions=["cfg.memory.topk"]), tmp_path / "out")

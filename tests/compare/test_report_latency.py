"""`report`'s `latency_tokens` table (Mem0's Table 2 columns beside accuracy) and the design's
`pairs`, on packs the scripted servers made: every number is recomputed here from the
packs' own rows (retrievals, reader traces, the memory manifest, build costs)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, scripted_reader
from memory.memtest import writer_responder

from memorybench.cli import main
from memorybench.compare.report import AnalysisDesign, run_report
from memorybench.compare.report_latency import LATENCY_COLUMNS, pack_latency
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
METHODS = ("full_context", "rag", "mem0")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("latency")
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        for method in METHODS:
            assert (
                main(
                    [
                        "qa",
                        *scripted_reader(reader.base_url),
                        f"memory={method}",
                        "writer=openai_compatible",
                        f"writer.base_url={writer.base_url}",
                        "writer.model=scripted-writer",
                        "embedder=hashing",
                        f"dataset.path={MINI}",
                        f"paths.packs={root / 'packs'}",
                        f"paths.cache={root / 'cache'}",
                        "name=latency",
                    ]
                )
                == 0
            ), method
    found = {}
    for pack in (root / "packs" / "latency" / "runs").iterdir():
        found[json.loads((pack / "run_meta.json").read_text())["choices"]["memory"]] = pack
    assert sorted(found) == sorted(METHODS)
    return root, found


def _csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {r["condition"]: r for r in csv.DictReader(f)}


def _cell(value: str) -> float:
    return math.nan if value == "" else float(value)


def _expected(pack: Path) -> dict[str, float]:
    """The table's numbers for one pack, from its files alone."""
    manifest = rows(pack / "memory/manifest.jsonl")
    (method,) = {m["method"] for m in manifest}
    searched = manifest[0]["question_dependent"]
    retrievals = {r["question_id"]: r for r in rows(pack / f"memory/{method}/retrievals.jsonl")}
    traces = {t["question_id"]: t["response"] for t in rows(pack / "reader/traces.jsonl")}
    per_sample = {m["sample_id"]: m["metadata"].get("memory_tokens") for m in manifest}
    predictions = rows(pack / "predictions.jsonl")
    search = [retrievals[p["question_id"]]["latency_s"] for p in predictions] if searched else []
    tokens = [retrievals[p["question_id"]]["memory_tokens"] if searched else per_sample[p["sample_id"]] for p in predictions]
    total = [
        (retrievals[p["question_id"]]["latency_s"] if searched else 0.0) + traces[p["question_id"]]["latency_s"]
        for p in predictions
        if not traces[p["question_id"]]["cache_hit"]
    ]
    builds = rows(pack / "memory/build_cost.jsonl")
    writer = [(b["writer"] or {}) for b in builds]
    return {
        "search_p50_s": float(np.percentile(search, 50)) if search else math.nan,
        "search_p95_s": float(np.percentile(search, 95)) if search else math.nan,
        "total_p50_s": float(np.percentile(total, 50)),
        "total_p95_s": float(np.percentile(total, 95)),
        "memory_tokens_per_query": float(np.mean(tokens)),
        "conversations_built": len(builds),
        "build_s_per_conversation": float(np.mean([b["latency_s"] for b in builds])),
        "build_tokens_per_conversation": float(
            np.mean([w.get("prompt_tokens", 0) + w.get("completion_tokens", 0) for w in writer])
        ),
        "build_embedding_tokens_per_conversation": float(np.mean([(b["embedder"] or {}).get("tokens", 0) for b in builds])),
    }


def test_latency_tokens_are_the_packs_own_numbers(packs, tmp_path):
    root, found = packs
    for pack in found.values():
        assert verify_pack(pack) == []  # memory_retrieval.v2 rows verify
    design = AnalysisDesign(name="lat", packs=[str(root / "packs")], conditions=["memory"], tables=["latency_tokens"], figures=[])
    report = run_report(design, tmp_path / "out")
    table = _csv(report.table_files["latency_tokens"])
    assert sorted(table) == sorted(METHODS)
    columns = list(next(iter(table.values())))
    assert columns[:4] == ["condition", "runs", "questions", "rows"] and "locomo_f1_1_4" in columns
    assert columns[-len(LATENCY_COLUMNS) :] == list(LATENCY_COLUMNS)
    for method, pack in found.items():
        want = _expected(pack)
        got = {k: _cell(table[method][k]) for k in LATENCY_COLUMNS}
        for key, value in want.items():
            if math.isnan(value):
                assert math.isnan(got[key]), (method, key)
            else:
                assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-9), (method, key, got[key], value)
    # what each method is: no search for full context; a writer's tokens only for mem0; every search timed
    assert math.isnan(_cell(table["full_context"]["search_p50_s"])) and _cell(table["rag"]["search_p50_s"]) > 0
    assert _cell(table["mem0"]["build_tokens_per_conversation"]) > 0 == _cell(table["rag"]["build_tokens_per_conversation"])
    assert all(_cell(table[m]["memory_tokens_per_query"]) > 0 for m in METHODS)
    text = report.markdown.read_text()
    assert "## latency_tokens" in text and "search_p50_s" in text and "Mem0's Table 2" in text


def test_a_v1_retrieval_has_tokens_and_no_search_time(packs, tmp_path):
    _, found = packs
    old = tmp_path / "old"
    shutil.copytree(found["rag"], old)
    path = old / "memory/rag/retrievals.jsonl"
    v1 = [{**{k: v for k, v in r.items() if k != "latency_s"}, "schema": "memory_retrieval.v1"} for r in rows(path)]
    path.write_text("".join(json.dumps(r) + "\n" for r in v1), "utf-8")
    questions, builds = pack_latency(old)
    assert questions["search_s"].isna().all() and questions["searched"].all()
    assert list(questions["memory_tokens"]) == [r["memory_tokens"] for r in v1]
    assert list(builds["sample_id"]) == ["mini-1", "mini-2"]


def test_the_designs_pairs_are_the_paired_rows(packs, tmp_path):
    root, _ = packs
    design = AnalysisDesign(
        name="pairs",
        packs=[str(root / "packs")],
        conditions=["memory"],
        tables=["paired_differences"],
        figures=[],
        pairs=[("rag", "mem0"), ("full_context", "rag"), ("mem0", "amem")],
    )
    report = run_report(design, tmp_path / "out")
    with report.table_files["paired_differences"].open(newline="") as f:
        paired = list(csv.DictReader(f))
    assert {(r["baseline"], r["condition"]) for r in paired} == {("rag", "mem0"), ("full_context", "rag")}
    for r in paired:
        assert float(r["difference"]) == pytest.approx(float(r["b"]) - float(r["a"]), abs=1e-9)
    assert "Pair mem0 / amem is not compared: no pack of amem" in report.markdown.read_text()

"""`aggregate`: finished packs -> collected/examples.parquet, runs.parquet, runs.csv."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tracking.pack_factory import add_autorater, make_packs, unfinished_copy

from memorybench.benchmark import LOCOMO
from memorybench.compare.aggregate import (
    CATEGORIES,
    EXAMPLES_SCHEMA,
    JUDGE_EXAMPLE_COLUMNS,
    JUDGE_RUN_COLUMNS,
    RUNS_SCHEMA,
    aggregate,
    aggregate_main,
    default_out_dir,
    scan_packs,
    with_judges,
)
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    root = tmp_path_factory.mktemp("aggregate")
    judged, plain = make_packs(root)
    judge = add_autorater(judged, passes=2)
    unfinished = unfinished_copy(plain)
    return root, judged, plain, unfinished, judge


def _csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_examples_has_one_row_per_run_and_question(design, tmp_path):
    root, judged, plain, unfinished, judge = design
    result = aggregate([root / "packs"], tmp_path)
    assert result.packs == [judged, plain] and result.unfinished == [unfinished]
    assert result.examples == tmp_path / "collected" / "examples.parquet"
    table = pq.read_table(result.examples)
    # the fixed columns, then the judge's own, keyed by its id
    assert table.schema.equals(with_judges(EXAMPLES_SCHEMA, JUDGE_EXAMPLE_COLUMNS, [judge]), check_metadata=True)
    assert table.schema.metadata[b"memorybench.schema"] == b"examples.v3"
    assert [n for n in table.schema.names if n.startswith("j_")] == [f"{c}/{judge}" for c in JUDGE_EXAMPLE_COLUMNS]
    rows = table.to_pylist()
    assert len(rows) == 20
    for pack in (judged, plain):
        meta = json.loads((pack / "run_meta.json").read_text())
        mine = [r for r in rows if r["run_id"] == meta["run_id"]]
        scored = _csv(pack / "predictions.csv")
        traces = [json.loads(line) for line in (pack / "reader" / "traces.jsonl").read_text().splitlines()]
        assert [r["question_id"] for r in mine] == [s["question_id"] for s in scored]
        for row, s, t in zip(mine, scored, traces):
            assert row["experiment"] == "mini" and row["memory"] == meta["choices"]["memory"]
            assert row["reader"] == "openai_compatible" and row["reader_model"] == "scripted"
            assert json.loads(row["choices"]) == meta["choices"]
            assert row["config_sha256"] == meta["config_sha256"]
            assert row["prediction"] == s["prediction"]
            assert row["locomo_f1"] == float(s["locomo_f1"]) and row["token_f1"] == float(s["token_f1"])
            assert row["prompt_tokens"] == t["response"]["usage"]["prompt_tokens"]
            assert row["completion_tokens"] == t["response"]["usage"]["completion_tokens"]
            assert row["latency_s"] == t["response"]["latency_s"]
            assert row["cost_usd"] is None and row["retries"] == 0 and row["cache_hit"] is False
            assert row["pack"] == str(pack)
        # gold as str; category 5 without an answer has none
        by_id = {r["question_id"]: r for r in mine}
        assert by_id["mini-1-q-2"]["gold"] == "3" and by_id["mini-1-q-4"]["gold"] is None
        assert by_id["mini-1-q-4"]["adversarial_answer"] == "Biscuit"
        assert by_id["mini-2-q-0"]["index"] == 5
    # autorater columns only where the autorater ran
    j = {name: f"{name}/{judge}" for name in JUDGE_EXAMPLE_COLUMNS}
    judged_rows = {r["question_id"]: r for r in rows if r["pack"] == str(judged)}
    assert all(r[j["j_verdict"]] is None and r[j["j_passes"]] is None for r in rows if r["pack"] == str(plain))
    assert judged_rows["mini-1-q-4"][j["j_verdict"]] == "SKIPPED" and judged_rows["mini-1-q-4"][j["j_score"]] is None
    first = judged_rows["mini-1-q-0"]  # pass 2 flipped it: passes disagree
    assert first[j["j_passes"]] == 2 and first[j["j_agree"]] is False and first[j["j_score"]] == 0.5
    second = judged_rows["mini-1-q-1"]  # pass 2 failed to parse: one parsed pass
    assert second[j["j_passes"]] == 1 and second[j["j_agree"]] is None and second[j["j_failed"]] == 1
    assert first[j["j_failed"]] == 0 and judged_rows["mini-1-q-4"][j["j_failed"]] == 0
    third = judged_rows["mini-1-q-2"]
    assert third[j["j_passes"]] == 2 and third[j["j_agree"]] is True and third["mem0_f1"] == 0.25 and third["mem0_bleu1"] == 0.5


def test_categories_are_locomos():
    assert CATEGORIES == tuple(LOCOMO.category_names)


def test_runs_table_matches_metrics(design, tmp_path):
    root, judged, plain, _, judge_id = design
    result = aggregate([judged, plain], tmp_path)
    table = pq.read_table(result.runs)
    assert table.schema.metadata[b"memorybench.schema"] == b"runs.v5"
    names = table.schema.names
    assert names[: len(RUNS_SCHEMA)] == RUNS_SCHEMA.names
    assert names[len(RUNS_SCHEMA) : len(RUNS_SCHEMA) + len(JUDGE_RUN_COLUMNS)] == [f"{c}/{judge_id}" for c in JUDGE_RUN_COLUMNS]
    assert all(n.startswith("cfg.") for n in names[len(RUNS_SCHEMA) + len(JUDGE_RUN_COLUMNS) :])
    runs = {r["pack"]: r for r in table.to_pylist()}
    for pack in (judged, plain):
        metrics = json.loads((pack / "metrics.json").read_text())
        run = runs[str(pack)]
        f1 = metrics["scores"]["locomo_f1"]
        assert run["locomo_f1"] == f1["overall"]["value"]
        for c in "12345":
            assert run[f"locomo_f1_cat{c}"] == f1["by_kind"][c]["value"]
        assert run["answer_prompt_tokens"] == metrics["usage"]["reader"]["prompt_tokens"]
        assert run["total_calls"] == metrics["usage"]["total"]["calls"] == run["answer_calls"] + run["build_calls"]
        assert run["total_cost_usd"] is None and run["cost_known"] is False  # the scripted model has no price
        assert run["latency_p95_s"] == metrics["usage"]["reader"]["latency_s"]["p95"]
        assert run["questions"] == 10 and run["is_prefix"] is False and run["models_answered"] == "scripted"
    (metrics_file,) = (judged / "autorater").glob("*/autorater_metrics.json")  # the one judge's folder
    judge = json.loads(metrics_file.read_text())
    assert runs[str(judged)][f"j_mean/{judge_id}"] == judge["j"]["mean"] and runs[str(judged)][f"j_passes/{judge_id}"] == 2
    assert runs[str(judged)]["judges"] == judge_id and runs[str(plain)]["judges"] is None
    assert runs[str(plain)][f"j_mean/{judge_id}"] is None
    with result.runs_csv.open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 2


def test_sources_may_be_packs_experiments_or_roots(design):
    root, judged, plain, unfinished, judge = design
    expected = [judged, plain]
    for source in (root / "packs", root / "packs" / "mini", root / "packs" / "mini" / "runs"):
        assert scan_packs([source]).finished == expected
    assert scan_packs([judged, judged]).finished == [judged]
    assert scan_packs([unfinished]).finished == [] and scan_packs([unfinished]).unfinished == [unfinished]
    assert default_out_dir([root / "packs"]) == root
    assert default_out_dir([judged]) == root


def test_no_pack_is_a_user_error(tmp_path, design):
    with pytest.raises(UserError, match="is not a folder"):
        scan_packs([tmp_path / "missing"])
    with pytest.raises(UserError, match="no pack under"):
        scan_packs([tmp_path])
    root, *_ = design
    with pytest.raises(UserError, match="no finished pack of experiment 'other'"):
        aggregate([root / "packs"], tmp_path, experiment="other")


def test_aggregate_main(design, tmp_path, capsys):
    root, *_ = design
    assert aggregate_main([str(root / "packs"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 pack(s), 20 rows" in out
    assert (tmp_path / "collected" / "runs.csv").is_file()


def test_reads_what_the_real_autorater_writes(tmp_path):
    """The autorater stage's own files (scripted judge) feed the J columns."""
    autorater = pytest.importorskip("memorybench.stages.autorater")
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    pack, _ = make_packs(tmp_path)
    with ScriptedOpenAIServer(responder=lambda body: Reply(text='{"label": "CORRECT"}')) as server:
        assert (
            autorater.autorater_main(
                [
                    str(pack),
                    "judge=openai_compatible",
                    f"judge.base_url={server.base_url}",
                    "judge.model=scripted",
                    "--passes",
                    "2",
                    "--quiet",
                ]
            )
            == 0
        )
    rows = pq.read_table(aggregate([pack], tmp_path).examples).to_pylist()
    (judge,) = PackReader.open(pack).judges()
    judged = [r for r in rows if r["category"] != 5]
    assert judged and all(
        r[f"j_verdict/{judge}"] == "CORRECT" and r[f"j_score/{judge}"] == 1.0 and r[f"j_agree/{judge}"] for r in judged
    )
    assert all(r[f"j_verdict/{judge}"] == "SKIPPED" for r in rows if r["category"] == 5)
    runs = pq.read_table(tmp_path / "collected" / "runs.parquet").to_pylist()
    assert runs[0][f"j_mean/{judge}"] == 1.0 and runs[0][f"j_passes/{judge}"] == 2


def test_an_agent_packs_usage_comes_from_its_answer_traces(design, tmp_path):
    """answerer=codex writes agent/traces.jsonl (agent_trace.v1) instead of reader traces."""
    import shutil

    _, _, plain, _, _ = design
    pack = tmp_path / "packs" / "mini" / "runs" / "agent-run"
    shutil.copytree(plain, pack)
    (pack / "reader" / "traces.jsonl").unlink()
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    agent = [
        {
            "schema": "agent_trace.v1",
            "sample_id": "mini-1",
            "phase": "ingest",
            "model": "m",
            "wall_s": 9.0,
            "usage": {"input_tokens": 999},
        }
    ]
    agent += [
        {
            "schema": "agent_trace.v1",
            "question_id": r["question_id"],
            "sample_id": r["sample_id"],
            "phase": "answer",
            "model": "gpt-agent",
            "wall_s": 1.5 + i,
            "status": "completed",
            "usage": {"input_tokens": 100 + i, "cached_input_tokens": 10, "output_tokens": 7, "reasoning_output_tokens": 3},
        }
        for i, r in enumerate(rows)
    ]
    (pack / "agent").mkdir()
    (pack / "agent" / "traces.jsonl").write_text("".join(json.dumps(a) + "\n" for a in agent))
    table = pq.read_table(aggregate([pack], tmp_path).examples).to_pylist()
    assert [r["prompt_tokens"] for r in table] == [100 + i for i in range(len(rows))]
    assert all(r["completion_tokens"] == 7 and r["cached_tokens"] == 10 and r["model_answered"] == "gpt-agent" for r in table)
    assert table[1]["latency_s"] == 2.5 and table[0]["cost_usd"] is None and table[0]["retries"] is None

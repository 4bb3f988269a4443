"""What a run cost in total: metrics.json's `usage.build` is the sum of memory/build_cost.jsonl,
`usage.total` is build + answers, and the qa summary prints both (issue 14, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader
from memtest import jrows, writer_responder

from memorybench.cli import main
from memorybench.llm.usage import agent_usage, build_usage, total_usage
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
#: USD per 1M tokens for the scripted models, so every cost is known
PRICES = [
    "+pricing.pricedwriter={input: 2.0, cached_input: 1.0, output: 8.0}",
    "+pricing.pricedreader={input: 0.5, cached_input: 0.25, output: 1.5}",
]
READER_KEYS = {
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost_usd",
    "cost_known",
    "retries",
    "cache_hits",
    "models_answered",
    "latency_s",
}


def run(tmp: Path, reader, writer, *extra: str) -> tuple[int, Path | None]:
    args = [
        "qa",
        *scripted_reader(reader.base_url, model="pricedreader"),
        "memory=session_summaries",
        "memory.source=writer",
        "writer=openai_compatible",
        f"writer.base_url={writer.base_url}",
        "embedder=hashing",
        f"dataset.path={MINI}",
        f"paths.packs={tmp / 'packs'}",
        f"paths.cache={tmp / 'cache'}",
        "name=cost",
        *extra,
    ]
    try:
        code = main(args)
    except SystemExit as e:  # a job's error ends Hydra's task with SystemExit
        code = int(e.code or 0)
    runs = tmp / "packs" / "cost" / "runs"
    packs = sorted(runs.iterdir()) if runs.is_dir() else []
    return code, packs[0] if packs else None


def test_build_cost_is_in_metrics_and_the_total_adds_the_reader(tmp_path, capsys):
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        code, pack = run(tmp_path, reader, writer, "writer.model=pricedwriter", *PRICES)
    assert code == 0 and pack is not None
    metrics = json.loads((pack / "metrics.json").read_text())
    costs = jrows(pack / "memory/build_cost.jsonl")
    assert len(costs) == 2 and all(c["writer"]["calls"] == 2 for c in costs)  # one call per session

    build = metrics["usage"]["build"]
    assert build == {
        "calls": sum(c["writer"]["calls"] for c in costs),
        "prompt_tokens": sum(c["writer"]["prompt_tokens"] for c in costs),
        "completion_tokens": sum(c["writer"]["completion_tokens"] for c in costs),
        "cost_usd": round(sum(c["cost_usd"] for c in costs), 10),
        "cost_known": True,
    }
    assert build["calls"] == 4 and build["cost_usd"] > 0
    # the price table: 2.0 / 8.0 USD per 1M prompt / completion tokens
    assert build["cost_usd"] == pytest.approx((build["prompt_tokens"] * 2.0 + build["completion_tokens"] * 8.0) / 1e6)

    reader_usage = metrics["usage"]["reader"]
    assert set(reader_usage) == READER_KEYS and reader_usage["cost_known"] and reader_usage["cost_usd"] > 0
    total = metrics["usage"]["total"]
    assert total["calls"] == build["calls"] + reader_usage["calls"] == 14
    assert total["prompt_tokens"] == build["prompt_tokens"] + reader_usage["prompt_tokens"]
    assert total["completion_tokens"] == build["completion_tokens"] + reader_usage["completion_tokens"]
    assert total["cost_known"] is True
    assert total["cost_usd"] == round(build["cost_usd"] + reader_usage["cost_usd"], 10)
    assert total["cost_per_question_usd"] == round(total["cost_usd"] / 10, 10)
    assert metrics["memory"] == {"tasks": 4, "failed": 0, "failures_file": "memory/writer/failures.jsonl"}
    assert verify_pack(pack) == []

    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("cost: "))
    assert line == (
        f"cost: build ${build['cost_usd']:.4f} (4 calls) + reader ${reader_usage['cost_usd']:.4f} (10 calls) "
        f"= total ${total['cost_usd']:.4f}, ${total['cost_per_question_usd']:.6f} per question"
    )
    assert "memory: 0 of 4 writer tasks failed" in out.splitlines()

    # the same writer cost in runs.parquet and in MLflow
    import pyarrow.parquet as pq

    from memorybench.compare.aggregate import aggregate
    from memorybench.tracking import log_packs, pack_metrics

    (row,) = pq.read_table(aggregate([pack], tmp_path / "out").runs).to_pylist()
    assert row["build_cost_usd"] == build["cost_usd"] and row["build_calls"] == 4
    assert row["total_cost_usd"] == total["cost_usd"] and row["answer_cost_usd"] == reader_usage["cost_usd"]
    assert pack_metrics(pack)["build_cost_usd"] == build["cost_usd"]
    (logged,) = log_packs([pack], tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", experiment_name="cost").runs
    from mlflow.tracking import MlflowClient

    metrics_logged = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(logged.mlflow_run_id).data.metrics
    assert metrics_logged["build_cost_usd"] == pytest.approx(build["cost_usd"])
    assert metrics_logged["total_cost_usd"] == pytest.approx(total["cost_usd"])


def test_an_unpriced_writer_makes_the_total_unknown_not_zero(tmp_path, capsys):
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        code, pack = run(tmp_path, reader, writer, "writer.model=scripted-writer", *PRICES)
    assert code == 0 and pack is not None
    usage = json.loads((pack / "metrics.json").read_text())["usage"]
    costs = jrows(pack / "memory/build_cost.jsonl")
    assert all(c["cost_usd"] is None for c in costs)
    assert usage["build"]["cost_usd"] is None and usage["build"]["cost_known"] is False
    assert usage["build"]["prompt_tokens"] == sum(c["writer"]["prompt_tokens"] for c in costs) > 0
    assert usage["reader"]["cost_known"] is True  # the reader alone is priced
    assert usage["total"]["cost_usd"] is None and usage["total"]["cost_known"] is False
    assert usage["total"]["cost_per_question_usd"] is None
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("cost: "))
    assert line.startswith("cost: build unknown (4 calls) + reader $") and "= total unknown" in line
    assert "$0.0000" not in line.split("reader")[0]


def test_build_usage_counts_embedder_tokens_as_input_and_an_unknown_cost_as_null():
    rows = [
        {
            "writer": {"calls": 3, "repairs": 1, "failures": 0, "prompt_tokens": 100, "completion_tokens": 20},
            "embedder": None,
            "cost_usd": 0.001,
        },
        {"writer": None, "embedder": {"calls": 2, "texts": 9, "tokens": 40}, "cost_usd": None},
    ]
    assert build_usage(rows) == {"calls": 5, "prompt_tokens": 140, "completion_tokens": 20, "cost_usd": None, "cost_known": False}
    assert build_usage(rows[:1])["cost_usd"] == 0.001
    # software-only memory: no call, and known to be free
    assert build_usage([{"writer": None, "embedder": None, "cost_usd": 0.0}]) == {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "cost_known": True,
    }


def test_agent_usage_sums_the_codex_turns_and_prices_a_known_model():
    prices = {"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.60}}
    rows = [
        {
            "model": "gpt-4o-mini",
            "usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 100, "reasoning_output_tokens": 50},
        },
        {"model": "gpt-4o-mini", "usage": {}},  # a process that ended before any turn
    ]
    usage = agent_usage(rows, prices)
    assert usage == {
        "calls": 2,
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "cached_tokens": 400,
        "cost_usd": round((600 * 0.15 + 400 * 0.075 + 100 * 0.60) / 1e6, 10),
        "cost_known": True,
    }
    unknown = agent_usage(rows, {})
    assert unknown["cost_usd"] is None and unknown["cost_known"] is False
    total = total_usage([build_usage([{"writer": None, "embedder": None, "cost_usd": 0.0}]), unknown], questions=2)
    assert total == {
        "calls": 2,
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "cost_usd": None,
        "cost_known": False,
        "cost_per_question_usd": None,
    }

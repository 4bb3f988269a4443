"""One retrieval budget for every system (issue 43 item 3), end to end on scripted servers.

Five runs over a conversation set large enough that retrieval chooses (42 turns, one chunk
per turn), all with `budget.top_k=10` and a token cap: raw_chunks and rag (they keep to it),
mem0 (asked 10 per speaker, its protocol: it returns up to 20), full_context (no retrieval:
the budget does not apply) and a test-only method, `thirty`, that returns 30 items whatever
it is asked. Each pack records what its system returned (`memory_retrieval.v3`) and whether
the budget held (`memory/budget.json`, recomputed here and by verify); the runs table,
`compare` and the report flag the runs that did not keep to it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import scripted_reader
from memory.memtest import writer_responder

from memorybench.cli import main
from memorybench.compare.aggregate import RUNS_SCHEMA, aggregate
from memorybench.compare.report import AnalysisDesign, run_report
from memorybench.compare.summary import BUDGET_COLUMNS
from memorybench.config import store_schema
from memorybench.memory._chunks import ChunksConfig
from memorybench.memory._managed import Retrieved
from memorybench.memory.raw_chunks import RawChunks
from memorybench.pack.budget import WHOLE_MEMORY_MIN_ITEMS, budget_summary, compute_budget, summarize_budget
from memorybench.pack.verify import verify_pack
from memorybench.registry import MEMORY
from memorybench.testing.scripted_server import ScriptedOpenAIServer

TOP_K = 10
CAP = 400
#: what each run is: its overrides, and whether its budget held (None: nothing to hold)
RUNS: dict[str, tuple[list[str], bool | None]] = {
    "raw_chunks": (["memory=raw_chunks", "memory.chunk_tokens=32", "memory.chunk_overlap=0"], True),
    "rag": (["memory=rag", "memory.chunk_tokens=32", "memory.chunk_overlap=0"], True),
    "mem0": (["memory=mem0"], False),
    "full_context": (["memory=full_context"], None),
    "thirty": (["memory=raw_chunks", "memory.name=thirty", "memory.chunk_tokens=32", "memory.chunk_overlap=0"], False),
}
WORDS = "pottery lisbon biscuit guitar marathon garden novel painting camping chess sailing baking coffee".split()


class Thirty(RawChunks):
    """raw_chunks' chunks, but 30 of them for every question whatever `memory.top_k` asks: a
    system that does not keep to the budget (test-only)."""

    def retrieve(self, built: Any, asked: Any, ctx: Any) -> Retrieved:
        ranked = list(range(min(30, len(built.items))))
        texts = [built.items[i].text for i in ranked]
        return Retrieved(
            texts=texts,
            hits=[{"item_id": built.items[i].item_id, "score": round(1.0 / (1 + i), 6)} for i in ranked],
            render=lambda keep: "\n\n".join(texts[n] for n in keep),
            extra={"joiner": "\n\n"},
        )


def dataset(path: Path) -> Path:
    """Two conversations of 3 sessions x 14 turns (each turn ~25 cl100k tokens), 3 questions each."""
    samples = []
    for c, (a, b) in enumerate((("Ana", "Ben"), ("Cleo", "Dan"))):
        conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
        for s in range(1, 4):
            conversation[f"session_{s}_date_time"] = f"10:00 am on {s + 3 * c} May, 2023"
            conversation[f"session_{s}"] = [
                {
                    "speaker": (a, b)[t % 2],
                    "dia_id": f"D{s}:{t + 1}",
                    "text": f"On day {s}-{t} I spent the afternoon on {WORDS[(s * 14 + t) % len(WORDS)]} with my "
                    f"neighbour number {t} and it went well.",
                }
                for t in range(14)
            ]
        qa = [
            {
                "question": f"What did {a} do on day 1-{t}?",
                "answer": WORDS[(14 + t) % len(WORDS)],
                "evidence": [f"D1:{t + 1}"],
                "category": 4,
            }
            for t in (0, 2, 4)
        ]
        samples.append(
            {
                "sample_id": f"budget-{c + 1}",
                "conversation": conversation,
                "qa": qa,
                "session_summary": {f"session_{s}_summary": f"{a} and {b} talked on day {s}." for s in range(1, 4)},
                "event_summary": {},
                "observation": {},
            }
        )
    path.write_text(json.dumps(samples), "utf-8")
    return path


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("budget")
    data = dataset(root / "budget_locomo.json")
    MEMORY.add("thirty", Thirty, module=__name__)
    store_schema("memory", "thirty", ChunksConfig)  # raw_chunks' keys
    try:
        with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
            for name, (overrides, _) in RUNS.items():
                args = [
                    "qa",
                    *scripted_reader(reader.base_url),
                    *overrides,
                    f"budget.top_k={TOP_K}",
                    f"budget.max_memory_tokens={CAP}",
                    "writer=openai_compatible",
                    f"writer.base_url={writer.base_url}",
                    "writer.model=scripted-writer",
                    "embedder=hashing",
                    f"dataset.path={data}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=budget",
                ]
                assert main(args) == 0, name
        found = {}
        for pack in (root / "packs" / "budget" / "runs").iterdir():
            config = yaml.safe_load((pack / "config.resolved.yaml").read_text("utf-8"))
            found[config["memory"]["name"]] = pack
        assert sorted(found) == sorted(RUNS)
        yield root, found
    finally:
        from hydra.core.config_store import ConfigStore

        MEMORY.remove("thirty")
        ConfigStore.instance().repo["memory"].pop("thirty_schema.yaml", None)  # no schema node without its YAML


def _expected(pack: Path) -> dict[str, Any]:
    """The summary's figures, recomputed here from the pack's files alone."""
    manifest = rows(pack / "memory/manifest.jsonl")
    predictions = rows(pack / "predictions.jsonl")
    (method,) = {m["method"] for m in manifest}
    if not manifest[0]["question_dependent"]:
        tokens = {m["sample_id"]: m["metadata"]["memory_tokens"] for m in manifest}
        per_question = [tokens[p["sample_id"]] for p in predictions]
        return {"context_tokens_mean": np.mean(per_question), "context_tokens_p95": np.percentile(per_question, 95)}
    retrievals = {r["question_id"]: r for r in rows(pack / f"memory/{method}/retrievals.jsonl")}
    mine = [retrievals[p["question_id"]] for p in predictions]
    return {
        "context_tokens_mean": np.mean([r["memory_tokens"] for r in mine]),
        "context_tokens_p50": np.percentile([r["memory_tokens"] for r in mine], 50),
        "context_tokens_p95": np.percentile([r["memory_tokens"] for r in mine], 95),
        "retrieval_latency_p50_s": np.percentile([r["latency_s"] for r in mine], 50),
        "retrieval_latency_p95_s": np.percentile([r["latency_s"] for r in mine], 95),
        "returned_max": max(r["returned"] for r in mine),
        "over_top_k": sum(r["returned"] > TOP_K for r in mine),
    }


def test_each_pack_records_what_its_system_returned_and_whether_the_budget_held(packs):
    _, found = packs
    for name, pack in found.items():
        assert verify_pack(pack) == [], name  # budget.json recomputed by verify; v3 rows validate
        stored = json.loads((pack / "memory/budget.json").read_text("utf-8"))
        assert stored["schema"] == "memory_budget.v1" and stored["top_k"] == TOP_K and stored["max_memory_tokens"] == CAP
        assert stored["held"] is RUNS[name][1], (name, stored["why"])
        assert stored["questions"] == 6
        for key, value in _expected(pack).items():
            assert stored[key] == pytest.approx(value, rel=1e-9), (name, key)
        assert budget_summary(pack).model_dump(by_alias=True) == stored
    thirty = json.loads((found["thirty"] / "memory/budget.json").read_text("utf-8"))
    assert thirty["returned_max"] == 30 and thirty["over_top_k"] == 6 and thirty["whole_memory"] == 0
    assert thirty["why"].startswith("returned up to 30 items per question where budget.top_k is 10")
    for row in rows(found["thirty"] / "memory/thirty/retrievals.jsonl"):
        # the system's 30, the budget applied, and the reader got at most 10 of them, best first
        assert row["schema"] == "memory_retrieval.v3" and row["returned"] == 30 and row["top_k"] == TOP_K
        assert 0 < len(row["hits"]) <= TOP_K and row["returned"] == len(row["hits"]) + row["dropped_by_budget"]
        assert row["memory_items"] == 42 and row["memory_tokens"] <= CAP
        assert [h["item_id"] for h in row["hits"]] == [f"chunk_{i}" for i in range(len(row["hits"]))]
    mem0 = json.loads((found["mem0"] / "memory/budget.json").read_text("utf-8"))
    # asked for 10 per speaker (its protocol): up to 20 returned, and flagged
    assert TOP_K < mem0["returned_max"] <= 2 * TOP_K and mem0["over_top_k"] > 0
    config = yaml.safe_load((found["mem0"] / "config.resolved.yaml").read_text("utf-8"))
    assert config["memory"]["top_k"] == 30 and config["budget"]["top_k"] == TOP_K  # the budget asks, the YAML is kept
    for name in ("raw_chunks", "rag"):
        held = json.loads((found[name] / "memory/budget.json").read_text("utf-8"))
        assert (
            held["returned_max"] <= TOP_K and held["over_top_k"] == held["whole_memory"] == 0 and held["why"].startswith("held")
        )
        assert held["retrieval_latency_p95_s"] >= held["retrieval_latency_p50_s"] > 0
    full = json.loads((found["full_context"] / "memory/budget.json").read_text("utf-8"))
    assert full["retrieved"] is False and full["retrieval_latency_p50_s"] is None and full["returned_max"] is None
    assert "question-independent" in full["why"] and "budget.top_k does not apply" in full["why"]
    assert full["context_tokens_mean"] <= CAP  # its text was capped
    meta = json.loads((found["rag"] / "run_meta.json").read_text("utf-8"))
    assert any(note.startswith("Retrieval is held to budget.top_k=10") for note in meta["notes"])
    meta = json.loads((found["full_context"] / "run_meta.json").read_text("utf-8"))
    assert "budget.top_k=10 does not apply to memory=full_context: it retrieves nothing per question." in meta["notes"]


def test_verify_flags_an_edited_or_missing_budget(packs, tmp_path):
    _, found = packs
    edited = tmp_path / "edited"
    shutil.copytree(found["thirty"], edited)
    path = edited / "memory/budget.json"
    data = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**data, "held": True, "over_top_k": 0}), "utf-8")
    findings = verify_pack(edited)
    flagged = [f for f in findings if f.code == "memory.budget"]
    assert len(flagged) == 1 and "held, over_top_k" in flagged[0].message, findings
    gone = tmp_path / "gone"
    shutil.copytree(found["thirty"], gone)
    (gone / "memory/budget.json").unlink()
    codes = {f.code for f in verify_pack(gone)}
    assert {"memory.budget", "success.file_missing"} <= codes


def test_the_runs_table_has_the_budget_columns(packs, tmp_path):
    root, found = packs
    result = aggregate([root / "packs"], tmp_path)
    table = pq.read_table(result.runs)
    assert table.schema.metadata[b"memorybench.schema"] == b"runs.v5"
    assert table.schema.names[: len(RUNS_SCHEMA)] == RUNS_SCHEMA.names and set(BUDGET_COLUMNS) <= set(RUNS_SCHEMA.names)
    by_memory = {r["cfg.memory.name"]: r for r in table.to_pylist()}
    for name, (_, held) in RUNS.items():
        row = by_memory[name]
        stored = json.loads((found[name] / "memory/budget.json").read_text("utf-8"))
        assert row["budget_held"] is held and row["budget_top_k"] == TOP_K, name
        assert row["context_tokens_mean"] == pytest.approx(stored["context_tokens_mean"]), name
        assert (row["budget_flag"] is None) == (held is not False), name
    assert by_memory["thirty"]["budget_flag"].startswith("returned up to 30 items per question where budget.top_k is 10")
    assert by_memory["thirty"]["budget_returned_max"] == 30
    assert by_memory["rag"]["retrieval_latency_p50_s"] > 0 and by_memory["full_context"]["retrieval_latency_p50_s"] is None


def test_mlflow_logs_the_budget_of_each_run(packs):
    from memorybench.tracking import pack_metrics

    _, found = packs
    thirty, rag = pack_metrics(found["thirty"]), pack_metrics(found["rag"])
    assert (thirty["budget_held"], thirty["budget_returned_max"], thirty["budget_top_k"]) == (0.0, 30.0, float(TOP_K))
    assert rag["budget_held"] == 1.0 and rag["retrieval_latency_p50_s"] > 0
    assert thirty["context_tokens_mean"] == pytest.approx(
        json.loads((found["thirty"] / "memory/budget.json").read_text("utf-8"))["context_tokens_mean"]
    )


def test_compare_warns_for_the_side_whose_budget_did_not_hold(packs, capsys):
    _, found = packs
    assert main(["compare", str(found["rag"]), "--vs", str(found["thirty"])]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if "retrieval budget did not hold" in line]
    assert len(warnings) == 1, out
    assert warnings[0].startswith(
        "warning: B (thirty (writer scripted-writer) / scripted): the retrieval budget did not hold: run thirty-"
    )
    assert "returned up to 30 items per question where budget.top_k is 10" in warnings[0]
    retrieval = [line for line in out.splitlines() if line.startswith("  retrieval: ")]
    assert len(retrieval) == 2 and retrieval[0].endswith(": held") and retrieval[1].endswith(": did not hold"), out
    assert "context tokens per question mean" in retrieval[0] and "retrieval latency p50" in retrieval[0]
    assert main(["compare", str(found["raw_chunks"]), "--vs", str(found["rag"])]) == 0
    assert "retrieval budget did not hold" not in capsys.readouterr().out
    assert main(["compare", str(found["mem0"])]) == 0  # one condition: its own warning
    assert "warning: mem0 (writer scripted-writer) / scripted: the retrieval budget did not hold" in capsys.readouterr().out


def test_the_report_shows_the_budget_and_notes_each_run_that_did_not_hold(packs, tmp_path):
    root, _ = packs
    design = AnalysisDesign(
        name="budget", packs=[str(root / "packs")], conditions=["cfg.memory.name"], tables=["latency_tokens"], figures=[]
    )
    report = run_report(design, tmp_path / "out")
    table = report.tables["latency_tokens"].set_index("condition")
    columns = list(report.tables["latency_tokens"].columns)
    assert columns.index("budget_held") < columns.index("search_p50_s")
    for name, (_, held) in RUNS.items():
        assert (table.loc[name, "budget_held"] if held is not None else None) == held, name
    assert table.loc["thirty", "returned_max"] == 30 and table.loc["thirty", "budget_top_k"] == TOP_K
    text = report.markdown.read_text("utf-8")
    assert "The retrieval budget did not hold for thirty" in text and "The retrieval budget did not hold for mem0" in text
    assert "did not hold for rag" not in text and "`budget_held`" in text


def test_a_run_without_a_budget_keeps_its_run_id():
    from memorybench.run_id import identity_config, run_id

    golden = Path(__file__).resolve().parents[1] / "pack" / "golden_mini_pack" / "config.resolved.yaml"
    config = yaml.safe_load(golden.read_text("utf-8"))
    assert config["budget"] == {"max_memory_tokens": None, "top_k": None}
    config["dataset"]["path"] = str(Path(__file__).resolve().parents[1] / "fixtures" / "mini_locomo.json")
    before = {**config, "budget": {"max_memory_tokens": None}}  # a config from before budget.top_k existed
    assert "top_k" not in identity_config(config)["budget"]
    # the id the code before budget.top_k gave this config (its prompt and fixture as they are)
    assert run_id(config) == run_id(before) == "full_context-reader-scripted-e3791b229c29"
    assert run_id({**config, "budget": {"max_memory_tokens": None, "top_k": 10}}) != run_id(config)


def test_a_budget_of_no_items_is_one_line():
    from memorybench.errors import UserError
    from memorybench.plan import plan_runs

    with pytest.raises(UserError, match=r"budget.top_k=0 must be a whole number of at least 1") as info:
        from memorybench.memory import build_memory_method

        (spec,) = plan_runs(["memory=rag", "embedder=hashing", "budget.top_k=0"])
        build_memory_method(spec.cfg)
    assert "\n" not in str(info.value)


def test_an_old_pack_gets_its_budget_from_its_rows(packs, tmp_path):
    """A pack written before memory_retrieval.v3 and budget.json: returned = hits kept + those the
    token cap dropped, the memory's size from the manifest; the summary is computed on demand."""
    _, found = packs
    old = tmp_path / "old"
    shutil.copytree(found["rag"], old)
    (old / "memory/budget.json").unlink()
    path = old / "memory/rag/retrievals.jsonl"
    v2 = [
        {**{k: v for k, v in r.items() if k not in ("returned", "top_k", "memory_items")}, "schema": "memory_retrieval.v2"}
        for r in rows(path)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in v2), "utf-8")
    new = json.loads((found["rag"] / "memory/budget.json").read_text("utf-8"))
    assert budget_summary(old).model_dump(by_alias=True) == new  # the same account from the v2 rows


def test_whole_memory_and_a_handful_of_items():
    config = {"memory": {"name": "m"}, "budget": {"top_k": None, "max_memory_tokens": None}}
    manifest = [{"sample_id": "s", "method": "m", "question_dependent": True, "item_count": 8}]
    predictions = [{"question_id": f"q{i}", "sample_id": "s"} for i in range(3)]

    def retrieval(qid: str, returned: int, items: int) -> dict[str, Any]:
        hits = [{"item_id": str(i)} for i in range(returned)]
        return {"question_id": qid, "sample_id": "s", "hits": hits, "memory_tokens": 10, "latency_s": 0.1, "memory_items": items}

    # a top_k above the memory's size: every item handed over on two questions, a bypass without any budget
    whole = summarize_budget(config, manifest, [retrieval("q0", 8, 8), retrieval("q1", 8, 8), retrieval("q2", 3, 8)], predictions)
    assert whole.whole_memory == 2 and whole.held is False and whole.why.startswith("handed over the whole memory on 2 of 3")
    small = [retrieval(f"q{i}", WHOLE_MEMORY_MIN_ITEMS, WHOLE_MEMORY_MIN_ITEMS) for i in range(3)]
    handful = summarize_budget(config, manifest, small, predictions)
    assert handful.whole_memory == 0 and handful.held is None and handful.why.startswith("no retrieval budget set")
    # no rows at all: an imported pack
    assert summarize_budget({}, [], [], predictions).held is None


def test_compute_budget_reads_a_pack_without_a_budget(packs):
    """compute_budget over a finished pack equals its stored summary (what verify compares)."""
    from memorybench.pack.reader import PackReader

    _, found = packs
    for pack in found.values():
        stored = json.loads((pack / "memory/budget.json").read_text("utf-8"))
        assert json.loads(compute_budget(PackReader.open(pack)).model_dump_json(by_alias=True)) == stored


def test_clone_vs_real_holds_every_system_to_one_budget():
    """experiment=clone_vs_real: each of its run specs is asked for 10 items under a 4096-token cap."""
    from memorybench.plan import hydra_context, plan_runs, sweep_jobs

    with hydra_context():
        jobs = sweep_jobs(["experiment=clone_vs_real"])
    assert len(jobs) == 5
    (spec,) = plan_runs([*next(j for j in jobs if "memory=mem0" in j), "embedder=hashing", "writer=openai"])
    assert spec.cfg.budget.top_k == 10 and spec.cfg.budget.max_memory_tokens == 4096

"""LongMemEval's retrieval metrics of a rag pack: each question's ranking is the turns of the
chunks it retrieved, in hit order, scored against the dataset's has_answer turns as the
authors score them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import scripted_reader

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench.benchmarks.longmemeval.data import load_longmemeval  # noqa: E402
from memorybench.benchmarks.longmemeval.pack_retrieval import pack_retrieval  # noqa: E402
from memorybench.benchmarks.longmemeval.retrieval import build_corpus, evaluate_retrieval, ranking_from_keys  # noqa: E402
from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.testing.scripted_server import ScriptedOpenAIServer  # noqa: E402


def _run(tmp: Path, data: Path, memory: str, *extra: str) -> Path:
    with ScriptedOpenAIServer() as server:
        assert (
            main(
                [
                    "qa",
                    "dataset=longmemeval_oracle",
                    f"dataset.path={data}",
                    *scripted_reader(server.base_url),
                    f"memory={memory}",
                    "embedder=hashing",
                    *extra,
                    f"paths.packs={tmp / 'packs'}",
                    f"paths.cache={tmp / 'cache'}",
                    f"name={memory}",
                ]
            )
            == 0
        )
    (pack,) = (tmp / "packs" / memory / "runs").iterdir()
    return pack


def test_a_rag_packs_rankings_are_scored_against_the_has_answer_turns(tmp_path):
    data = make_longmemeval(tmp_path / "lme.json", questions=10)
    # small chunks: a chunk is about one turn, so the ranking tells sessions apart
    pack = _run(tmp_path, data, "rag", "memory.chunk_tokens=24", "memory.chunk_overlap=0", "memory.top_k=3")
    found = pack_retrieval(pack)
    assert found.script == "print_retrieval_metrics.py" and found.n == 8 and len(found.skipped_abstention) == 2
    # recompute one question by hand from the pack's own rows and the authors' formula
    lineage = {
        (r["sample_id"], r["item_id"]): r["sources"]
        for r in map(json.loads, (pack / "memory/lineage.jsonl").read_text().splitlines())
    }
    rows = {r["question_id"]: r for r in map(json.loads, (pack / "memory/rag/retrievals.jsonl").read_text().splitlines())}
    haystacks = {h.sample_id: h for h in load_longmemeval(data)}
    per_question = []
    for qid, row in rows.items():
        if "_abs" in qid:
            continue
        h = haystacks[qid]
        evidence = set(h.questions[0].evidence)
        corpus = build_corpus(
            [s.session_id for s in h.sessions],
            [[{"role": t.speaker, "has_answer": t.dia_id in evidence} for t in s.turns] for s in h.sessions],
            "turn",
        )
        keys = [(d.rpartition(":")[0], int(d.rpartition(":")[2])) for hit in row["hits"] for d in lineage[(qid, hit["item_id"])]]
        ranking = ranking_from_keys(corpus, keys)
        per_question.append(evaluate_retrieval(ranking, corpus.correct_docs, corpus.ids, k=5)[1])
    assert found.metrics["turn"]["recall_all@5"] == pytest.approx(sum(per_question) / len(per_question))
    # run_retrieval.py's average also skips questions with no user-side target (none here)
    assert pack_retrieval(pack, script="run_retrieval.py").n == 8


def test_a_method_that_retrieves_nothing_has_no_retrieval_metrics(tmp_path):
    data = make_longmemeval(tmp_path / "lme.json", questions=3)
    assert pack_retrieval(_run(tmp_path, data, "full_context")) is None


def test_a_locomo_pack_is_refused(tmp_path):
    from conftest import FIXTURES

    with ScriptedOpenAIServer() as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=l",
                    "max_questions=2",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs" / "l" / "runs").iterdir()
    with pytest.raises(UserError, match="is not a LongMemEval pack"):
        pack_retrieval(pack)


def test_the_report_shows_a_retrieval_table_for_longmemeval_rag(tmp_path):
    import csv

    import yaml

    from memorybench.compare.report import run_report

    data = make_longmemeval(tmp_path / "lme.json", questions=10)
    pack = _run(tmp_path, data, "rag", "memory.chunk_tokens=24", "memory.chunk_overlap=0", "memory.top_k=3")
    design = tmp_path / "d.yaml"
    design.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "packs": [str(tmp_path / "packs")],
                "conditions": ["memory"],
                "tables": ["retrieval", "scores_by_category"],
                "figures": ["scores_by_category"],
            }
        )
    )
    report = run_report(design, tmp_path / "out")
    (row,) = list(csv.DictReader(report.table_files["retrieval"].open()))
    expected = pack_retrieval(pack)
    assert row["condition"] == "rag" and int(row["questions"]) == expected.n == 8
    assert float(row["turn_recall_all@5"]) == pytest.approx(expected.metrics["turn"]["recall_all@5"])
    text = report.markdown.read_text()
    assert "LongMemEval's retrieval metrics" in text
    # LoCoMo's categories and J read no LongMemEval pack: those tables are left out, and the report says so
    assert "scores_by_category" not in report.tables and "are not LoCoMo: only the tables" in text

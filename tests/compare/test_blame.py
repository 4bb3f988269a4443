"""Per-question blame (memorybench.compare.blame): the classes on real packs of the scripted
server, each fact against the pack's own files, the examples columns and the report table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tracking.pack_factory import add_autorater, make_packs

from memorybench.compare.aggregate import EXAMPLES_SCHEMA, aggregate
from memorybench.compare.blame import BASIS_F1, CLASSES, evidence_ids, pack_blame
from memorybench.compare.report import run_report
from memorybench.pack.walk import PackWalker


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("blame")
    full, summaries = make_packs(root)
    judge = add_autorater(full, passes=2)
    (rag,) = make_packs(
        root,
        memories=("rag",),
        name="rag",
        extra=("embedder=hashing", "memory.top_k=1", "memory.chunk_tokens=16", "memory.chunk_overlap=0"),
    )
    return root, full, summaries, rag, judge


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _blame(pack: Path):
    return pack_blame(PackWalker.open(pack))


def test_evidence_ids_keep_every_well_formed_id_of_the_released_strings():
    assert evidence_ids(["D1:3", "D8:6; D9:17", "D", "D9:1 D4:4", "D1:3"]) == ("D1:3", "D8:6", "D9:17", "D9:1", "D4:4")


def test_every_answered_question_has_one_class(packs):
    _, full, summaries, rag, _ = packs
    for pack in (full, summaries, rag):
        blames = _blame(pack)
        assert list(blames) == [r["question_id"] for r in _rows(pack / "predictions.jsonl")]
        assert all(b.blame in CLASSES for b in blames.values())


def test_correctness_is_the_judges_where_it_judged_else_locomo_f1(packs):
    _, full, summaries, _, judge = packs
    blames = _blame(full)
    # mini-1-q-0 quotes the pottery line: pass 1 CORRECT, pass 2 flipped: mean 0.5 counts as right
    assert blames["mini-1-q-0"].basis == f"judge {judge}" and blames["mini-1-q-0"].blame == "correct"
    # category 5 is never judged: LoCoMo's refusal rule decides
    assert blames["mini-1-q-4"].basis == BASIS_F1 and blames["mini-1-q-4"].blame == "ignored"
    plain = _blame(summaries)
    assert all(b.basis == BASIS_F1 for b in plain.values())
    assert plain["mini-1-q-4"].blame == "correct"  # "Not mentioned in the conversation" on category 5


def test_a_full_context_memory_stores_and_gives_every_evidence_turn(packs):
    _, full, *_ = packs
    blames = _blame(full)
    with_evidence = [b for b in blames.values() if b.evidence]
    assert with_evidence and all(b.evidence_stored and b.evidence_given for b in with_evidence)
    # category 3 rows of the fixture have no evidence ids: unknown, never a class of their own
    assert blames["mini-1-q-3"].evidence == () and blames["mini-1-q-3"].evidence_stored is None
    # the reader quoted the Lisbon line for "When did Ana move?": the date's stems were given and dropped
    moved = blames["mini-1-q-1"]
    assert moved.blame == "ignored" and moved.answer_used_evidence is False
    assert set(moved.gold_dropped) == {"20", "may", "2023"} == set(moved.gold_in_prompt)


def test_a_session_the_lineage_does_not_list_is_not_stored(packs, tmp_path):
    _, full, *_ = packs
    pack = tmp_path / full.name
    shutil.copytree(full, pack)
    lineage = [
        r for r in _rows(pack / "memory/lineage.jsonl") if not (r["sample_id"] == "mini-1" and r["item_id"] == "session_2")
    ]
    (pack / "memory/lineage.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lineage))
    blames = _blame(pack)
    assert blames["mini-1-q-1"].blame == "not_stored" and blames["mini-1-q-1"].not_stored == ("D2:2",)
    assert blames["mini-2-q-1"].blame == "ignored"  # the other conversation keeps its session 2


def test_a_writer_task_given_up_does_not_store_its_turns(packs, tmp_path):
    _, _, summaries, *_ = packs
    pack = tmp_path / summaries.name
    shutil.copytree(summaries, pack)
    failure = {
        "schema": "writer_failure.v1",
        "sample_id": "mini-2",
        "method": "session_summaries",
        "role": "summary",
        "session": 2,
        "sources": ["D2:1", "D2:2"],
        "error": "no reply",
        "action": "the session has no summary",
    }
    (pack / "memory/writer").mkdir(parents=True, exist_ok=True)
    (pack / "memory/writer/failures.jsonl").write_text(json.dumps(failure) + "\n")
    blames = _blame(pack)
    assert blames["mini-2-q-2"].evidence_stored is False and blames["mini-2-q-2"].blame == "not_stored"
    assert blames["mini-1-q-2"].evidence_stored is True


def test_retrieval_hits_decide_what_was_given(packs):
    _, _, _, rag, _ = packs
    blames = _blame(rag)
    retrieved = {r["question_id"]: {h["item_id"] for h in r["hits"]} for r in _rows(rag / "memory/rag/retrievals.jsonl")}
    sources = {(r["sample_id"], r["item_id"]): set(r["sources"]) for r in _rows(rag / "memory/lineage.jsonl")}
    predictions = {r["question_id"]: r for r in _rows(rag / "predictions.jsonl")}
    for qid, b in blames.items():
        if not b.evidence:
            assert b.evidence_given is None
            continue
        seen = set().union(*(sources[(predictions[qid]["sample_id"], item)] for item in retrieved[qid]))
        assert b.evidence_given == (set(b.evidence) <= seen), qid
    assert any(b.blame == "not_retrieved" for b in blames.values())


def test_the_answer_carrying_the_gold_yet_judged_wrong_is_wrong_judged(packs, tmp_path):
    _, full, *_ = packs
    pack = tmp_path / full.name
    shutil.copytree(full, pack, ignore=shutil.ignore_patterns("autorater"))
    add_autorater(pack, passes=1, threshold=0.99)  # WRONG for every answer below F1 0.99
    blames = _blame(pack)
    assert blames["mini-1-q-0"].blame == "wrong_judged" and blames["mini-1-q-0"].answer_used_evidence is True


def test_examples_carry_the_blame_and_the_report_table_sums_to_the_rows(packs, tmp_path):
    _, full, summaries, rag, _ = packs
    result = aggregate([full, summaries, rag], tmp_path)
    table = pq.read_table(result.examples)
    for name in ("blame", "blame_basis", "evidence_stored", "evidence_given", "answer_used_evidence"):
        assert name in EXAMPLES_SCHEMA.names and name in table.schema.names
    rows = table.to_pylist()
    assert len(rows) == 30 and all(r["blame"] in CLASSES for r in rows)
    expected = {(p.name, qid): b for p in (full, summaries, rag) for qid, b in _blame(p).items()}
    for r in rows:
        b = expected[(r["pack"].rstrip("/").rsplit("/", 1)[-1], r["question_id"])]
        assert (r["blame"], r["evidence_stored"], r["evidence_given"], r["answer_used_evidence"]) == (
            b.blame,
            b.evidence_stored,
            b.evidence_given,
            b.answer_used_evidence,
        )

    design = tmp_path / "design.yaml"
    design.write_text(json.dumps({"packs": [str(full), str(summaries), str(rag)], "tables": ["blame"], "figures": []}))
    report = run_report(design, tmp_path / "report")
    blame = report.tables["blame"]
    frame = table.to_pandas()
    for _, row in blame.iterrows():
        sel = frame if row["category"] == "all" else frame[frame["category"] == row["category"]]
        sel = sel[sel["memory"] == row["condition"].split(" / ")[0]]
        assert row["rows"] == len(sel) == sum(row[f"{c}_n"] for c in CLASSES)
        assert sum(row[c] for c in CLASSES) == pytest.approx(1.0)
    assert (tmp_path / "report" / "tables" / "blame.csv").is_file()
    assert "## blame" in (tmp_path / "report" / "report.md").read_text()


def test_a_miscited_question_of_the_pinned_locomo_takes_the_audits_corrected_evidence(tmp_path):
    """conv-26-q-1 cites D1:12; the outside audit (errors.json) corrects it to D1:14. On the
    pinned locomo10.json blame checks the corrected turn, and on other data the cited one."""
    from conftest import scripted_reader

    from memorybench.cli import main
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    with ScriptedOpenAIServer(responder=lambda body: Reply("Not mentioned in the conversation")) as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    "max_questions=2",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs").glob("*/runs/*")
    blame = pack_blame(PackWalker.open(pack))
    assert blame["conv-26-q-1"].evidence == ("D1:14",)
    assert blame["conv-26-q-0"].evidence != ("D1:14",)  # no finding: the dataset's own ids

"""`memorybench import`: other projects' released LoCoMo results into packs, and their tables reproduced.

The released files are the real ones pinned in ../shared/pins/peers (PINS.md gives their
sources). The figures below are the ones each project published (memobase's README,
Zep's README) or shipped (Honcho's stats file); the code computes its table from the
files' rows and knows none of them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import PINS

from memorybench.answer.imported import REPRODUCTION, ROWS, SOURCE, ImportedRow, ImportSource, Reproduction
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results, parse_source

PEERS = PINS / "peers"
MEMOBASE = PEERS / "memobase_eval_0710_3000.json"
ZEP_GRADES = PEERS / "zep_locomo_grades.json"
ZEP_RESPONSES = PEERS / "zep_locomo_responses.json"
HONCHO = PEERS / "locomo10_qa_honcho_base.json"
HONCHO_STATS = PEERS / "locomo10_qa_stats_honcho_base.json"

#: memobase v0.0.37's README (docs/experiments/locomo-benchmark), categories 1-4 and overall
MEMOBASE_README = {
    "mem0_bleu1": {"1": 0.3516, "2": 0.4758, "3": 0.1758, "4": 0.4089, "overall": 0.3978},
    "mem0_f1": {"1": 0.4629, "2": 0.6423, "3": 0.2293, "4": 0.5155, "overall": 0.5145},
    "j": {"1": 0.7092, "2": 0.8505, "3": 0.4688, "4": 0.7717, "overall": 0.7578},
}
#: Zep's README (kg_architecture_agent_memory/locomo_eval), J in percent, categories 1-4
ZEP_README = {"1": 74.11, "2": 66.04, "3": 67.71, "4": 79.79}


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("packs")


@pytest.fixture(scope="module")
def memobase(packs):
    return import_results(
        [MEMOBASE],
        "mem0_evals",
        name="memobase",
        packs=packs,
        source="memodb-io/memobase@358c16bbc6d687937d79bc2f984a11c3be8da901:docs/experiments/"
        "locomo-benchmark/fixture/memobase/memobase_eval_0710_3000.json",
    )


@pytest.fixture(scope="module")
def zep(packs):
    return import_results([ZEP_GRADES, ZEP_RESPONSES], "zep", name="zep", packs=packs)


@pytest.fixture(scope="module")
def honcho(packs):
    return import_results([HONCHO, HONCHO_STATS], "locomo_task_eval", model_key="honcho", name="honcho", packs=packs)


def _figures(metric, attribute: str) -> dict[str, float]:
    out = {c: round(getattr(f, attribute), 4) for c, f in metric.by_category.items()}
    out["overall"] = round(getattr(metric.overall, attribute), 4)
    return out


# -- the published figures, from the files' rows -----------------------------------------
def test_memobase_reproduces_its_readme_row_by_row_and_per_category(memobase):
    rep = memobase.reproduction
    for name in ("mem0_bleu1", "mem0_f1", "j"):
        metric = rep.metrics[name]
        assert metric.rows is not None and (metric.rows.rows, metric.rows.equal, metric.rows.mismatched) == (1540, 1540, 0), name
        assert metric.rows.examples == []
        assert _figures(metric, "reported") == MEMOBASE_README[name], name
        assert _figures(metric, "ours") == MEMOBASE_README[name], name
    assert [metric.rows.reported_field for metric in (rep.metrics["mem0_bleu1"], rep.metrics["mem0_f1"], rep.metrics["j"])] == [
        "bleu_score",
        "f1_score",
        "llm_score",
    ]
    # LoCoMo F1: ours only (the file has none), over the file's 1,540 rows
    assert rep.metrics["locomo_f1"].rows is None and rep.metrics["locomo_f1"].overall.rows == 1540


def test_zep_reproduces_its_readme_j(zep):
    j = zep.reproduction.metrics["j"]
    assert (j.rows.rows, j.rows.equal, j.rows.reported_field) == (1540, 1540, "grade")
    for attribute in ("reported", "ours"):
        assert {c: round(100 * getattr(f, attribute), 2) for c, f in j.by_category.items()} == ZEP_README
    # no per-row lexical score in the file: ours stand alone
    assert zep.reproduction.metrics["mem0_f1"].rows is None and zep.reproduction.metrics["mem0_f1"].overall.ours is not None


def test_honcho_reproduces_its_stats_file(honcho):
    stats = json.loads(HONCHO_STATS.read_text("utf-8"))["honcho"]
    f1 = honcho.reproduction.metrics["locomo_f1"]
    assert (f1.rows.rows, f1.rows.equal, f1.rows.reported_field) == (1986, 1986, "honcho_f1")
    assert sorted(f1.by_category) == ["1", "2", "3", "4", "5"]
    for c, figure in f1.by_category.items():
        published = stats["cum_accuracy_by_category"][c] / stats["category_counts"][c]
        assert figure.stated_rows == figure.rows == stats["category_counts"][c]
        assert round(figure.stated, 4) == round(figure.reported, 4) == round(figure.ours_rounded, 4) == round(published, 4), c
    overall = sum(stats["cum_accuracy_by_category"].values()) / sum(stats["category_counts"].values())
    assert round(f1.overall.stated, 4) == round(f1.overall.ours_rounded, 4) == round(overall, 4)
    assert "j" not in honcho.reproduction.metrics  # LoCoMo's files carry no judge label


# -- the pack -------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["memobase", "zep", "honcho"])
def test_an_imported_pack_verifies(which, request):
    result = request.getfixturevalue(which)
    assert failures(verify_pack(result.pack_root)) == []


def test_the_pack_keeps_the_files_scores_beside_ours_and_its_source(memobase):
    pack = PackReader.open(memobase.pack_root)
    source = pack.record(SOURCE, ImportSource)
    assert source.format == "mem0_evals" and source.rows == 1540
    assert source.files[0].sha256 == "171489e7a60dd6275027a9897270ad5a9bce83193c2b64863ecd43eba9582b5a"
    assert source.source.repository == "memodb-io/memobase" and source.source.commit.startswith("358c16bb")
    assert source.absent == {"5": 446} and len(source.absent_question_ids) == 446
    rows = list(pack.records(ROWS, ImportedRow))
    assert len(rows) == 1540 and all(r.reported_mem0_bleu1 == r.mem0_bleu1 and r.reported_mem0_f1 == r.mem0_f1 for r in rows)
    # the pack holds the file's categories only (mem0 drops 5): no empty answer scored 0
    predictions = pack.predictions()
    assert len(predictions) == 1540 and {p.category for p in predictions} == {1, 2, 3, 4}
    meta = pack.meta()
    assert meta.categories == [1, 2, 3, 4] and meta.question_count == 1540 and meta.questions_total == 1986
    assert meta.choices["answerer"] == "imported" and any("446 questions" in n for n in meta.notes)
    metrics = pack.metrics()
    assert metrics.counts["by_kind"]["5"] == 0 and metrics.by_kind("locomo_f1", 5) is None
    # the overall is over the file's own rows, as the file's is
    scored = {r.question_id: r.locomo_f1 for r in rows}
    assert metrics.overall("locomo_f1") == pytest.approx(sum(scored.values()) / len(scored))
    # the twelve repeated questions of LoCoMo each took their own question id
    assert len({r.question_id for r in rows}) == 1540
    assert pack.record(REPRODUCTION, Reproduction) == memobase.reproduction


def test_the_files_labels_are_a_judge_of_their_own(memobase, zep):
    for result in (memobase, zep):
        pack = PackReader.open(result.pack_root)
        judges = pack.judges()
        assert judges == [result.reproduction.judge_id] and judges[0].startswith("imported-")
        metrics = pack.autorater_metrics(judges[0])
        assert metrics.counts.judged == 1540 and metrics.counts.skipped == 0 and metrics.counts.failed == 0
        assert metrics.j.overall == result.reproduction.metrics["j"].overall.ours
    assert PackReader.open(memobase.pack_root).judges() != PackReader.open(zep.pack_root).judges()


def test_importing_the_same_files_again_finds_the_finished_pack(memobase, packs):
    again = import_results([MEMOBASE], "mem0_evals", name="memobase", packs=packs)
    assert not again.created and again.pack_root == memobase.pack_root and again.reproduction == memobase.reproduction


def test_aggregate_and_report_read_imported_packs(memobase, zep, honcho, packs, tmp_path):
    import pyarrow.parquet as pq

    from memorybench.compare.aggregate import aggregate
    from memorybench.compare.report import run_report

    result = aggregate([packs], tmp_path / "agg")
    table = pq.read_table(result.runs).to_pylist()
    by_name = {row["experiment"]: row for row in table}
    assert set(by_name) == {"memobase", "zep", "honcho"}
    judge = memobase.reproduction.judge_id
    assert by_name["memobase"][f"j_mean/{judge}"] == pytest.approx(memobase.reproduction.metrics["j"].overall.ours)
    assert by_name["memobase"]["mem0_bleu1"] == pytest.approx(memobase.reproduction.metrics["mem0_bleu1"].overall.ours)
    assert by_name["honcho"]["judges"] is None
    assert pq.read_table(result.examples).num_rows == 1540 + 1540 + 1986  # memobase and Zep: categories 1-4
    design = tmp_path / "design.yaml"
    design.write_text(
        f"name: imported\npacks: [{packs}]\nconditions: [experiment]\n"
        "tables: [scores_by_category, judge_agreement, refusals]\nfigures: [scores_by_category]\n",
        "utf-8",
    )
    report = run_report(design, tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text("utf-8")
    assert "memobase" in text and "honcho" in text and report is not None


def test_rescore_leaves_an_imported_pack_as_it_was(honcho):
    from memorybench.stages.rescore import rescore

    before = (honcho.pack_root / "metrics.json").read_bytes()
    rescore(honcho.pack_root)
    assert (honcho.pack_root / "metrics.json").read_bytes() == before
    assert failures(verify_pack(honcho.pack_root)) == []


def test_the_cli_prints_the_table_and_the_pack(memobase, packs, capsys):
    source = "memodb-io/memobase@358c16bbc6d687937d79bc2f984a11c3be8da901:x.json"
    assert (
        main(["import", str(MEMOBASE), "--format", "mem0_evals", "--name", "memobase", "--packs", str(packs), "--source", source])
        == 0
    )
    out = capsys.readouterr().out
    assert "Mem0 BLEU-1 (bleu_score): 1540 of 1540 rows equal ours" in out
    assert f"pack: {memobase.pack_root}" in out


# -- what does not map is an error, with counts ------------------------------------------
def _edited_memobase(tmp_path: Path, edit) -> Path:
    data = json.loads(MEMOBASE.read_text("utf-8"))
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


def test_unmapped_and_contradicting_rows_are_one_error_with_counts(tmp_path):
    def edit(data):
        rows = data["0"]
        rows[0]["question"] = "Which question is not in LoCoMo?"
        rows[1]["answer"] = "not the gold"
        rows[2]["category"] = "3" if rows[2]["category"] != "3" else "1"

    with pytest.raises(UserError) as error:
        import_results([_edited_memobase(tmp_path, edit)], "mem0_evals", packs=tmp_path / "packs")
    message = error.value.message
    assert "3 of 1540 rows" in message and "1 unmapped, 2 contradicting" in message
    assert "not the gold" in message and "Which question is not in LoCoMo?" in message
    assert not (tmp_path / "packs").exists() or not any((tmp_path / "packs").rglob("_SUCCESS"))


def test_a_file_without_some_category_1_to_4_rows_is_refused(tmp_path):
    with pytest.raises(UserError, match=r"no row for 2 questions .*category [1-4]"):
        import_results(
            [_edited_memobase(tmp_path, lambda d: d["0"].__delitem__(slice(0, 2)))], "mem0_evals", packs=tmp_path / "p"
        )


def test_rows_without_a_judge_label_are_judge_failures_not_wrong(tmp_path):
    def edit(data):
        del data["0"][0]["llm_score"], data["0"][1]["llm_score"]

    result = import_results([_edited_memobase(tmp_path, edit)], "mem0_evals", packs=tmp_path / "packs")
    j = result.reproduction.metrics["j"]
    assert (j.rows.rows, j.rows.equal) == (1538, 1538)
    metrics = PackReader.open(result.pack_root).autorater_metrics(result.reproduction.judge_id)
    assert metrics.counts.failed == 2 and metrics.counts.judged == 1538
    assert failures(verify_pack(result.pack_root)) == []


def test_bad_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="Did you mean 'mem0_evals'"):
        import_results([MEMOBASE], "mem0_eval", packs=tmp_path)
    with pytest.raises(UserError, match="REPOSITORY@COMMIT:PATH"):
        parse_source("memodb-io/memobase")
    with pytest.raises(UserError, match="no nobody_prediction field; its models are honcho"):
        import_results([HONCHO], "locomo_task_eval", model_key="nobody", packs=tmp_path)
    with pytest.raises(UserError, match="is not a zep file"):
        import_results([MEMOBASE], "zep", packs=tmp_path)
    with pytest.raises(UserError, match="--model honcho is for locomo_task_eval"):
        import_results([MEMOBASE], "mem0_evals", model_key="honcho", packs=tmp_path)


def test_mem0_search_output_imports_every_category(tmp_path, locomo_raw):
    # mem0's search output, made here from the dataset itself: the gold as the answer
    data = {}
    for i, conversation in enumerate(locomo_raw):
        data[str(i)] = [
            {
                "question": q["question"],
                "answer": q.get("answer", ""),
                "category": q["category"],
                "evidence": q.get("evidence", []),
                "response": "Not mentioned in the conversation" if q["category"] == 5 else str(q["answer"]),
                "adversarial_answer": q.get("adversarial_answer", ""),
                "speaker_1_memories": [],
                "speaker_2_memories": [],
            }
            for q in conversation["qa"]
        ]
    path = tmp_path / "search.json"
    path.write_text(json.dumps(data), "utf-8")
    result = import_results([path], "mem0_search", packs=tmp_path / "packs")
    f1 = result.reproduction.metrics["locomo_f1"]
    assert f1.rows is None and f1.overall.rows == 1986 and f1.by_category["5"].ours == 1.0
    assert result.source.absent == {} and result.reproduction.judge_id is None
    assert failures(verify_pack(result.pack_root)) == []
    shutil.rmtree(tmp_path / "packs")

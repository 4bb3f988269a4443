"""`--format memos_eval`: the MemOS/EverMemOS evaluation output, judged three times per row.

The files are dial481/locomo-audit's deliberately wrong answers (pinned in
../shared/pins/locomo-audit; PINS.md gives the figures): the published figure is the mean
over the three judgment runs (10.61% and 62.81%), not the majority vote (10.65%, 62.73%).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PINS

from memorybench.answer.imported import SOURCE, ImportSource
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results
from memorybench.benchmarks.locomo.importers.memos import judgment_runs

AUDIT = PINS / "locomo-audit"
SPECIFIC = AUDIT / "ap_v1_specific_wrong_scored.json"
VAGUE = AUDIT / "ap_v2_vague_wrong_scored.json"
#: PINS.md: each run's trues, the file's correct, the majority vote (of 1,540)
FIGURES = {SPECIFIC: ((163, 166, 161), 163, 164), VAGUE: ((970, 962, 970), 967, 966)}


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("packs")


@pytest.fixture(scope="module")
def specific(packs):
    return import_results([SPECIFIC], "memos_eval", name="audit-specific", packs=packs)


@pytest.mark.parametrize("path", [SPECIFIC, VAGUE], ids=["specific", "vague"])
def test_the_runs_their_mean_and_the_majority_vote(path):
    figures = judgment_runs(path)
    runs, correct, majority = FIGURES[path]
    data = json.loads(path.read_text("utf-8"))
    assert figures.rows == 1540 and tuple(r.correct for r in figures.runs) == runs
    assert [r.name for r in figures.runs] == ["judgment_1", "judgment_2", "judgment_3"]
    # the file's accuracy is the mean over the runs, every digit; its correct is that mean x n, rounded
    assert figures.mean == data["accuracy"] and figures.reproduced
    assert data["correct"] == correct == round(figures.mean * 1540) and figures.correct_reproduced
    assert figures.majority.correct == majority != correct
    assert sum(f.rows for f in figures.by_category.values()) == 1540 and sorted(figures.by_category) == ["1", "2", "3", "4"]


def test_the_cli_prints_the_mean_each_run_and_the_majority_vote(specific, packs, capsys):
    published = {
        SPECIFIC: ("0.1061", "0.1058", "0.1078", "0.1045", "0.1065", "0.10606060606060606"),
        VAGUE: ("0.6281", "0.6299", "0.6247", "0.6299", "0.6273", "0.6281385281385282"),
    }
    for path, name in ((SPECIFIC, "audit-specific"), (VAGUE, "audit-vague")):
        assert main(["import", str(path), "--format", "memos_eval", "--name", name, "--packs", str(packs)]) == 0
        out = capsys.readouterr().out
        mean, run1, run2, run3, majority, exact = published[path]
        assert f"mean over the 3 runs {mean} (the published figure" in out and f"reproduced exactly: {exact})" in out
        assert f"judgment_1 {run1} " in out and f"judgment_2 {run2} " in out and f"judgment_3 {run3} " in out
        assert f"majority vote {majority} " in out
        assert "DELIBERATELY WRONG ANSWERS: dial481/locomo-audit" in out
        # the table's J is the majority vote, every row's label equal to the pack's
        assert f"  1-4 overall       1540   {majority}   {majority}" in out


def test_the_pack_says_its_answers_are_wrong_and_keeps_every_run(specific):
    assert failures(verify_pack(specific.pack_root)) == []
    pack = PackReader.open(specific.pack_root)
    meta = pack.meta()
    assert meta.categories == [1, 2, 3, 4] and meta.question_count == 1540
    assert any(n.startswith("DELIBERATELY WRONG ANSWERS") for n in meta.notes)
    source = pack.record(SOURCE, ImportSource)
    assert source.format == "memos_eval" and any("reproduced exactly: 0.10606060606060606" in n for n in source.notes)
    j = pack.autorater_metrics(specific.reproduction.judge_id).j
    assert round(j.overall, 4) == 0.1065  # the majority vote: each row's label
    row = specific.reproduction.metrics["j"].rows
    assert (row.rows, row.equal, row.reported_field) == (1540, 1540, "llm_judgments")


def test_another_release_of_this_format_imports_the_same_way(tmp_path):
    # two runs, one conversation (a partial file), not the audit's: no "wrong answers" label
    data = json.loads(SPECIFIC.read_text("utf-8"))
    rows = data["detailed_results"]["locomo_exp_user_0"]
    for i, row in enumerate(rows):
        row["generated_answer"] = row["golden_answer"]
        row["llm_judgments"] = {"judgment_1": True, "judgment_2": i % 2 == 0}
    data["detailed_results"] = {"locomo_exp_user_0": rows}
    n = len(rows)
    data.update(total_questions=n, accuracy=(1 + (n + 1) // 2 / n) / 2, correct=round((1 + (n + 1) // 2 / n) / 2 * n))
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(UserError, match="--allow-partial"):
        import_results([path], "memos_eval", packs=tmp_path / "packs")
    result = import_results([path], "memos_eval", packs=tmp_path / "packs", allow_partial=True)
    source = PackReader.open(result.pack_root).record(SOURCE, ImportSource)
    assert not any("DELIBERATELY" in note for note in source.notes)
    assert any("reproduced exactly" in note for note in source.notes)
    # two runs: a majority is both true (half is not more than half)
    assert round(result.reproduction.metrics["j"].overall.ours, 4) == round(((n + 1) // 2) / n, 4)
    assert result.reproduction.metrics["locomo_f1"].overall.ours > 0.9  # the gold as the answer


def _edited(tmp_path: Path, edit) -> Path:
    data = json.loads(SPECIFIC.read_text("utf-8"))
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


def test_a_stated_accuracy_that_is_not_the_mean_says_so(tmp_path):
    figures = judgment_runs(_edited(tmp_path, lambda d: d.update(accuracy=0.1065)))
    assert not figures.reproduced and any("NOT reproduced" in line for line in figures.lines())


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.pop("accuracy"), r"is not a memos_eval file: expected .* found an object without accuracy"),
        (
            lambda d: d["detailed_results"]["locomo_exp_user_0"][3]["llm_judgments"].update(judgment_2="yes"),
            r"row locomo_exp_user_0\[3\] has llm_judgments .*true or false",
        ),
        (
            lambda d: d["detailed_results"]["locomo_exp_user_1"][0]["llm_judgments"].pop("judgment_3"),
            r"row locomo_exp_user_1\[0\] was judged by runs judgment_1, judgment_2, the first row by judgment_1, judgment_2, judgment_3",
        ),
        (
            lambda d: d["detailed_results"]["locomo_exp_user_0"][0].pop("generated_answer"),
            r"row locomo_exp_user_0\[0\] has no generated_answer",
        ),
    ],
    ids=["no-accuracy", "not-bool", "other-runs", "no-answer"],
)
def test_a_malformed_file_is_one_line(tmp_path, capsys, edit, message):
    path = _edited(tmp_path, edit)
    with pytest.raises(UserError, match=message):
        import_results([path], "memos_eval", packs=tmp_path / "packs")
    assert main(["import", str(path), "--format", "memos_eval", "--packs", str(tmp_path / "packs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_memos_eval_takes_one_file_and_no_model(tmp_path):
    with pytest.raises(UserError, match="--model x is for locomo_task_eval"):
        import_results([SPECIFIC], "memos_eval", model_key="x", packs=tmp_path)
    with pytest.raises(UserError, match="reads one file, got 2"):
        import_results([SPECIFIC, VAGUE], "memos_eval", packs=tmp_path)

"""`report` on LongMemEval packs: the `accuracy_by_type` table (the judge's accuracy per question type
with n, task-averaged, overall, abstention: the numbers of the judge's autorater_metrics.json), type
names from the benchmark record (a third benchmark needs no report change), and no LoCoMo F1 or J
column in the tables made for them."""

from __future__ import annotations

import csv
import json
import math
import shutil

import pandas as pd
import pytest
from tracking.pack_factory import make_longmemeval_pack, make_packs

from memorybench import benchmark as benchmarks
from memorybench.benchmark import LONGMEMEVAL, Benchmark, Dataset
from memorybench.compare.report import AnalysisDesign, run_report
from memorybench.compare.report_scores import Bootstrap, accuracy_by_type


@pytest.fixture(scope="module")
def lme(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-lme")
    pack = make_longmemeval_pack(root)
    report = run_report(AnalysisDesign(name="lme", packs=[str(root / "packs")], conditions=["memory"]), root / "out")
    return pack, report


def _rows(report) -> dict[str, dict]:
    with report.table_files["accuracy_by_type"].open(newline="") as f:
        return {r["type"]: r for r in csv.DictReader(f)}


def test_the_table_is_the_judges_longmemeval_block_per_type(lme):
    pack, report = lme
    (folder,) = (pack / "autorater").iterdir()
    block = json.loads((folder / "autorater_metrics.json").read_text())["longmemeval"]
    first = block["passes"][0]
    rows = _rows(report)
    # the types in the benchmark record's order, numbered and named by it
    assert [(k, r["type_name"]) for k, r in rows.items()][:6] == [
        (str(n), name) for n, name in LONGMEMEVAL.category_names.items()
    ]
    for number, name in LONGMEMEVAL.category_names.items():
        row = rows[str(number)]
        assert int(row["n"]) == first["by_type"][name]["n"]
        assert float(row["accuracy"]) == pytest.approx(block["accuracy_by_type"][name])
        assert row["judge"] == folder.name and row["condition"] == "full_context" and row["benchmark"] == "longmemeval"
    assert float(rows["task-averaged"]["accuracy"]) == pytest.approx(block["task_averaged_accuracy"])
    assert (
        float(rows["overall"]["accuracy"]) == pytest.approx(block["overall_accuracy"]) and int(rows["overall"]["n"]) == first["n"]
    )
    assert float(rows["abstention"]["accuracy"]) == pytest.approx(block["abstention_accuracy"])
    assert int(rows["abstention"]["n"]) == first["abstention_n"] == 4
    # LongMemEval's unit is the question and a verdict is right or wrong: Wilson's interval, inside [0, 1]
    assert rows["overall"]["interval"] == "Wilson score, 20 questions (right or wrong, independent)"
    assert 0 <= float(rows["4"]["ci_low"]) <= float(rows["4"]["ci_high"]) <= 1
    assert float(rows["4"]["accuracy"]) == pytest.approx(1 / 3)  # the made pack's types differ
    # the task average has its interval too: Wilson's on the effective size of a mean of six rates
    average = rows["task-averaged"]
    assert 0 <= float(average["ci_low"]) <= float(average["accuracy"]) <= float(average["ci_high"]) <= 1
    assert average["interval"].startswith("Wilson score on the effective size") and "in 6 strata" in average["interval"]


def test_the_markdown_shows_it_and_no_locomo_f1_or_j(lme):
    _, report = lme
    text = report.markdown.read_text()
    assert "## accuracy_by_type" in text and "| 4 | multi-session | 1 | 3 | 0.3333 |" in text
    assert "their own figure, the judge's accuracy per question type, is `accuracy_by_type`" in text
    for name in ("cost_latency", "latency_tokens", "requests_budget"):
        columns = list(report.tables[name].columns)
        assert "diagnostic_stemmed_token_f1" in columns and any(c.startswith("longmemeval_accuracy/") for c in columns)
        assert not [c for c in columns if c.startswith(("locomo_f1", "j/"))], name
    # the accuracy beside cost is the overall one (every type), not a J over types 1-4
    (folder,) = (lme[0] / "autorater").iterdir()
    overall = json.loads((folder / "autorater_metrics.json").read_text())["longmemeval"]["overall_accuracy"]
    assert report.tables["cost_latency"][f"longmemeval_accuracy/{folder.name}"].iloc[0] == pytest.approx(overall)
    assert f"longmemeval_accuracy by judge {folder.name}" in text and f"J by judge {folder.name}" not in text


def test_an_unjudged_pack_has_no_table_and_says_why(lme, tmp_path):
    pack, _ = lme
    unjudged = tmp_path / "packs" / "lme" / "runs" / pack.name
    shutil.copytree(pack, unjudged)
    shutil.rmtree(unjudged / "autorater")
    report = run_report(AnalysisDesign(name="u", packs=[str(tmp_path / "packs")], conditions=["memory"]), tmp_path / "out")
    assert "accuracy_by_type" not in report.tables
    assert (
        "No judge on the longmemeval_oracle packs: no accuracy_by_type table (run `memorybench autorater PACK "
        "judge=longmemeval`)." in report.markdown.read_text()
    )


def test_a_locomo_report_has_no_such_table(tmp_path):
    make_packs(tmp_path, memories=("full_context",), name="mini")
    report = run_report(
        AnalysisDesign(name="l", packs=[str(tmp_path / "packs")], conditions=["memory"], figures=[]), tmp_path / "out"
    )
    assert "accuracy_by_type" not in report.tables and "accuracy_by_type" not in report.markdown.read_text()
    assert "locomo_f1_1_4" in report.tables["cost_latency"].columns


def test_a_third_benchmark_takes_its_kinds_from_its_record(monkeypatch):
    toy = Benchmark(
        name="toy",
        datasets=(Dataset("toy_small", pin="toy:PIN"),),
        unit="question",
        category_names={1: "recall", 2: "update"},
        loader="toy:load",
        figure_key="toy_accuracy",
        task_averaged=True,
        id_marks={"unanswerable": "_na"},
    )
    monkeypatch.setitem(benchmarks._builtins(), "toy", toy)
    judge = "toy-judge-00000000"
    frame = pd.DataFrame(
        {
            "condition": "c",
            "dataset": "toy_small",
            "pack": "p",
            "question_id": ["a", "b", "c_na", "d"],
            "sample_id": ["a", "b", "c_na", "d"],
            "category": [1, 1, 2, 2],
            f"j_score/{judge}": [1.0, 0.0, 1.0, 1.0],
            f"j_passes/{judge}": [1, 1, 1, 1],
        }
    )
    table = accuracy_by_type(frame, Bootstrap())
    assert list(table["type"]) == ["1", "2", "task-averaged", "overall", "unanswerable"]
    assert list(table["type_name"][:2]) == ["recall", "update"] and list(table["n"]) == [2, 2, 4, 4, 1]
    assert list(table["accuracy"]) == pytest.approx([0.5, 1.0, 0.75, 0.75, 1.0])
    assert table["benchmark"].eq("toy").all() and table["type_name"][2] == "mean of the 2 per-category accuracies"
    # a kind without questions: no task-averaged accuracy, and the row says which kind is missing
    table = accuracy_by_type(frame[frame["category"] == 1], Bootstrap())
    average = table[table["type"] == "task-averaged"].iloc[0]
    assert math.isnan(average["accuracy"]) and "no question of update" in average["type_name"]


def test_a_kind_without_questions_has_no_row(monkeypatch):
    """Issue 40, item 9: a report of a prefix printed a row per empty kind, each 'no values:
    nothing to estimate'; the task average still says which kind it lacks."""
    toy = Benchmark(
        name="toy",
        datasets=(Dataset("toy_small", pin="toy:PIN"),),
        unit="question",
        category_names={1: "recall", 2: "update", 3: "abstain"},
        loader="toy:load",
        figure_key="toy_accuracy",
        task_averaged=True,
    )
    monkeypatch.setitem(benchmarks._builtins(), "toy", toy)
    judge = "toy-judge-00000000"
    frame = pd.DataFrame(
        {
            "condition": "c",
            "dataset": "toy_small",
            "pack": "p",
            "question_id": ["a", "b"],
            "sample_id": ["a", "b"],
            "category": [1, 1],
            f"j_score/{judge}": [1.0, 0.0],
            f"j_passes/{judge}": [1, 1],
        }
    )
    table = accuracy_by_type(frame, Bootstrap())
    assert list(table["type"]) == ["1", "task-averaged", "overall"]
    assert "no question of update, abstain" in table[table["type"] == "task-averaged"].iloc[0]["type_name"]
    assert not table["interval"].fillna("").str.contains("nothing to estimate").any()

"""The runs table on a LongMemEval pack: its lexical score is a diagnostic named for what it is
(`diagnostic_stemmed_token_f1`, as MLflow names it), overall, task-averaged and per question type by
LongMemEval's own type names (all six, type 6 included), and its row leaves the LoCoMo-named
`locomo_f1*` columns null (LongMemEval's type 5 is temporal-reasoning, not LoCoMo's category 5). A
LoCoMo pack's row beside it is as ever, with the LongMemEval columns null; with LoCoMo packs only, the
schema is RUNS_SCHEMA, the judges' and the identity columns, as before (tests/compare/test_aggregate.py).
Its judge's columns are LongMemEval's accuracy (`longmemeval_accuracy/<judge id>`: overall, task-averaged,
abstention, per type, all six), never Mem0's J over LoCoMo's categories 1-4 (`j_mean`, `j_cat1..4`: null)."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from tracking.pack_factory import add_autorater, make_longmemeval_pack, make_packs

from memorybench.benchmark import LOCOMO, LONGMEMEVAL
from memorybench.compare.aggregate import RUNS_SCHEMA, aggregate, runs_table
from memorybench.compare.collected_schemas import (
    J_COLUMNS,
    LEXICAL_RUN_COLUMNS,
    benchmark_judge_columns,
    benchmark_run_columns,
)
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.tracking.pack_figures import benchmark_metrics

DIAGNOSTIC = "diagnostic_stemmed_token_f1"


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("agg-lme")
    lme = make_longmemeval_pack(root)
    (locomo,) = make_packs(root, memories=("full_context",))
    add_autorater(locomo)  # a LoCoMo judge beside the LongMemEval one: its J as ever
    return lme, locomo


def test_the_columns_are_longmemevals_own():
    columns = list(benchmark_run_columns(LONGMEMEVAL))
    assert columns == [
        DIAGNOSTIC,
        f"{DIAGNOSTIC}_task_avg",
        *(f"{DIAGNOSTIC}_{name}" for name in LONGMEMEVAL.category_names.values()),
    ]
    assert f"{DIAGNOSTIC}_knowledge-update" in columns and benchmark_run_columns(LOCOMO) == {}
    assert not set(columns) & set(RUNS_SCHEMA.names)


def test_a_longmemeval_row_has_its_diagnostic_by_type_and_no_locomo_f1(packs, tmp_path):
    lme, locomo = packs
    result = aggregate([lme, locomo], tmp_path)
    table = pq.read_table(result.runs)
    assert table.schema.metadata[b"memorybench.schema"] == b"runs.v5"
    assert table.schema.names[: len(RUNS_SCHEMA)] == RUNS_SCHEMA.names
    assert all(table.schema.field(c).type == "double" for c in benchmark_run_columns(LONGMEMEVAL))
    runs = {r["pack"]: r for r in table.to_pylist()}
    row, metrics = runs[str(lme)], json.loads((lme / "metrics.json").read_text())["scores"]["locomo_f1"]
    assert all(row[c] is None for c in LEXICAL_RUN_COLUMNS)
    assert row[DIAGNOSTIC] == metrics["overall"]["value"]
    assert row[f"{DIAGNOSTIC}_task_avg"] == metrics["task_average"]["value"]
    for number, name in LONGMEMEVAL.category_names.items():
        assert row[f"{DIAGNOSTIC}_{name}"] == metrics["by_kind"][str(number)]["value"]
    assert row[f"{DIAGNOSTIC}_temporal-reasoning"] is not None and row[f"{DIAGNOSTIC}_knowledge-update"] is not None
    assert row["overall_covers"] == "types 1-6"
    # the LoCoMo row beside it: its own columns as ever, LongMemEval's null
    other, own = runs[str(locomo)], json.loads((locomo / "metrics.json").read_text())["scores"]["locomo_f1"]
    assert other["locomo_f1"] == own["overall"]["value"]
    assert all(other[f"locomo_f1_cat{c}"] == own["by_kind"][c]["value"] for c in "12345")
    assert all(other[c] is None for c in benchmark_run_columns(LONGMEMEVAL))
    with result.runs_csv.open(newline="") as f:
        header = next(csv.reader(f))
    assert f"{DIAGNOSTIC}_single-session-preference" in header


def test_locomo_packs_alone_get_no_longmemeval_column(packs):
    _, locomo = packs
    names = runs_table([locomo]).schema.names
    assert not any(n.startswith(DIAGNOSTIC) for n in names) and set(LEXICAL_RUN_COLUMNS) <= set(names)


FIGURE = LONGMEMEVAL.figure_key  # longmemeval_accuracy


def test_a_longmemeval_judge_has_its_accuracy_by_type_and_no_j(packs, tmp_path):
    """A LongMemEval judge's columns are LongMemEval's accuracy as MLflow names it (overall, sd,
    task-averaged, abstention and all six types, from the judge's `longmemeval` block), never J's
    j_mean, j_sd, j_cat1..4 (left null); the judge-neutral columns stay; a LoCoMo judge's are as ever."""
    lme, locomo = packs
    result = aggregate([lme, locomo], tmp_path)
    table = pq.read_table(result.runs)
    assert table.schema.metadata[b"memorybench.schema"] == b"runs.v5"
    runs = {r["pack"]: r for r in table.to_pylist()}
    row, (judge_id,) = runs[str(lme)], PackReader.open(lme).judges()
    metrics = json.loads((lme / layout.autorater_file(judge_id, layout.JUDGE_METRICS)).read_text())
    block = metrics["longmemeval"]
    assert all(row[f"{c}/{judge_id}"] is None for c in J_COLUMNS)
    assert row[f"{FIGURE}/{judge_id}"] == block["overall_accuracy"] is not None
    assert row[f"{FIGURE}_task_avg/{judge_id}"] == block["task_averaged_accuracy"]
    assert row[f"{FIGURE}_abstention/{judge_id}"] == block["abstention_accuracy"] is not None
    assert row[f"{FIGURE}_sd/{judge_id}"] == metrics["j"]["sd"]
    for name in LONGMEMEVAL.category_names.values():
        assert row[f"{FIGURE}_{name}/{judge_id}"] == block["accuracy_by_type"][name]
    assert row[f"{FIGURE}_knowledge-update/{judge_id}"] is not None and row[f"{FIGURE}_temporal-reasoning/{judge_id}"] is not None
    # what means the same on every benchmark stays
    assert row[f"j_passes/{judge_id}"] == metrics["passes"] and row[f"judge_model/{judge_id}"] == "judge-x"
    assert row[f"judge_failed/{judge_id}"] == metrics["counts"]["failed"] and row[f"judge_calls/{judge_id}"] is not None
    # the columns are MLflow's names for the same numbers
    logged = benchmark_metrics(lme, {})
    assert {k: v for k, v in row.items() if k.startswith(f"{FIGURE}")} == {
        k: logged[k] for k in logged if k.startswith(FIGURE) and "_pass" not in k
    }
    assert list(benchmark_judge_columns(LONGMEMEVAL, judge_id)) == [
        f"{FIGURE}/{judge_id}",
        f"{FIGURE}_sd/{judge_id}",
        f"{FIGURE}_task_avg/{judge_id}",
        f"{FIGURE}_abstention/{judge_id}",
        *(f"{FIGURE}_{name}/{judge_id}" for name in LONGMEMEVAL.category_names.values()),
    ]
    assert all(table.schema.field(c).type == "double" for c in benchmark_judge_columns(LONGMEMEVAL, judge_id))
    # the LoCoMo row beside it: its judges' J as ever, no LongMemEval judge column
    other = runs[str(locomo)]
    for locomo_judge in other["judges"].split(","):
        own = json.loads((locomo / layout.autorater_file(locomo_judge, layout.JUDGE_METRICS)).read_text())["j"]
        assert other[f"j_mean/{locomo_judge}"] == own["mean"] is not None
        assert all(other[f"j_cat{c}/{locomo_judge}"] == own["by_category"][str(c)] for c in "1234")
    assert all(other[c] is None for c in benchmark_judge_columns(LONGMEMEVAL, judge_id))
    with result.runs_csv.open(newline="") as f:
        header = next(csv.reader(f))
    assert f"{FIGURE}_single-session-preference/{judge_id}" in header and f"{FIGURE}_abstention/{judge_id}" in header


def test_locomo_packs_alone_get_no_longmemeval_judge_column(packs):
    _, locomo = packs
    table = runs_table([locomo])
    assert not any(n.startswith(FIGURE) for n in table.schema.names)
    assert benchmark_judge_columns(LOCOMO, "any-judge") == {}

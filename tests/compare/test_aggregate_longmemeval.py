"""The runs table on a LongMemEval pack: its lexical score is a diagnostic named for what it is
(`diagnostic_stemmed_token_f1`, as MLflow names it), overall, task-averaged and per question type by
LongMemEval's own type names (all six, type 6 included), and its row leaves the LoCoMo-named
`locomo_f1*` columns null (LongMemEval's type 5 is temporal-reasoning, not LoCoMo's category 5). A
LoCoMo pack's row beside it is as ever, with the LongMemEval columns null; with LoCoMo packs only, the
schema is RUNS_SCHEMA, the judges' and the identity columns, as before (tests/compare/test_aggregate.py)."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from tracking.pack_factory import make_longmemeval_pack, make_packs

from memorybench.compare.aggregate import RUNS_SCHEMA, aggregate, runs_table
from memorybench.compare.collected_schemas import LOCOMO_RUN_COLUMNS, benchmark_run_columns
from memorybench.data.benchmarks import LOCOMO, LONGMEMEVAL

DIAGNOSTIC = "diagnostic_stemmed_token_f1"


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("agg-lme")
    lme = make_longmemeval_pack(root)
    (locomo,) = make_packs(root, memories=("full_context",))
    return lme, locomo


def test_the_columns_are_longmemevals_own():
    columns = list(benchmark_run_columns(LONGMEMEVAL))
    assert columns == [DIAGNOSTIC, f"{DIAGNOSTIC}_task_avg", *(f"{DIAGNOSTIC}_{name}" for name in LONGMEMEVAL.category_names.values())]
    assert f"{DIAGNOSTIC}_knowledge-update" in columns and benchmark_run_columns(LOCOMO) == {}
    assert not set(columns) & set(RUNS_SCHEMA.names)


def test_a_longmemeval_row_has_its_diagnostic_by_type_and_no_locomo_f1(packs, tmp_path):
    lme, locomo = packs
    result = aggregate([lme, locomo], tmp_path)
    table = pq.read_table(result.runs)
    assert table.schema.metadata[b"memorybench.schema"] == b"runs.v4"
    assert table.schema.names[:len(RUNS_SCHEMA)] == RUNS_SCHEMA.names
    assert all(table.schema.field(c).type == "double" for c in benchmark_run_columns(LONGMEMEVAL))
    runs = {r["pack"]: r for r in table.to_pylist()}
    row, metrics = runs[str(lme)], json.loads((lme / "metrics.json").read_text())["locomo_f1"]
    assert all(row[c] is None for c in LOCOMO_RUN_COLUMNS)
    assert row[DIAGNOSTIC] == metrics["overall"] and row[f"{DIAGNOSTIC}_task_avg"] == metrics["task_averaged"]
    for number, name in LONGMEMEVAL.category_names.items():
        assert row[f"{DIAGNOSTIC}_{name}"] == metrics["by_category"][str(number)]
    assert row[f"{DIAGNOSTIC}_temporal-reasoning"] is not None and row[f"{DIAGNOSTIC}_knowledge-update"] is not None
    assert row["overall_covers"] == "longmemeval: 6 of 6 kinds"
    # the LoCoMo row beside it: its own columns as ever, LongMemEval's null
    other, own = runs[str(locomo)], json.loads((locomo / "metrics.json").read_text())["locomo_f1"]
    assert other["locomo_f1"] == own["overall"] and all(other[f"locomo_f1_cat{c}"] == own["by_category"][c] for c in "12345")
    assert all(other[c] is None for c in benchmark_run_columns(LONGMEMEVAL))
    with result.runs_csv.open(newline="") as f:
        header = next(csv.reader(f))
    assert f"{DIAGNOSTIC}_single-session-preference" in header


def test_locomo_packs_alone_get_no_longmemeval_column(packs):
    _, locomo = packs
    names = runs_table([locomo]).schema.names
    assert not any(n.startswith(DIAGNOSTIC) for n in names) and set(LOCOMO_RUN_COLUMNS) <= set(names)

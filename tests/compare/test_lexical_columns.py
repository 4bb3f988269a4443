"""The lexical scorer's columns (issue 41): the runs table's, MLflow's, the report's and the sweep
table's names follow from `memorybench.score.scorers.LEXICAL` and the default benchmark's record
(its subsets, kinds and judged kinds), and stay the names every earlier runs.parquet and MLflow
run holds."""

from __future__ import annotations

import json
import subprocess
import sys

from memorybench.benchmark import benchmark_named
from memorybench.compare import summary
from memorybench.compare.collected_schemas import J_COLUMNS, LEXICAL_RUN_COLUMNS, RUNS_SCHEMA
from memorybench.score.scorers import LEXICAL, kind_column, subset_column

#: the names runs.v5 and MLflow have always had: renaming one breaks every collected table and run
CATS = tuple(f"locomo_f1_cat{c}" for c in (1, 2, 3, 4, 5))
RUN_COLUMNS = ("locomo_f1", "locomo_f1_1_4", "locomo_f1_1_5", *CATS)


def test_the_helpers_name_a_scorers_figure_over_a_subset_and_a_kind() -> None:
    assert LEXICAL == "locomo_f1"
    assert subset_column("1-4") == "locomo_f1_1_4" and subset_column("1-5", "token_f1") == "token_f1_1_5"
    assert kind_column(1) == "locomo_f1_cat1" and kind_column(3, "exact_match") == "exact_match_cat3"


def test_the_summary_takes_its_kinds_and_subsets_from_the_default_record() -> None:
    default = benchmark_named(None)
    assert summary.CATEGORIES == tuple(default.category_names) == (1, 2, 3, 4, 5)
    assert summary.JUDGED_CATEGORIES == default.judged == (1, 2, 3, 4)
    assert summary.SUBSETS == tuple(default.subsets) == ("1-4", "1-5")
    assert summary.KIND_SCORERS[0] == LEXICAL


def test_the_runs_table_keeps_its_column_names_and_order() -> None:
    assert LEXICAL_RUN_COLUMNS == RUN_COLUMNS
    assert J_COLUMNS == ("j_mean", "j_sd", "j_cat1", "j_cat2", "j_cat3", "j_cat4")
    names = RUNS_SCHEMA.names
    start = names.index(LEXICAL)
    assert names[start : start + 9] == ["locomo_f1", "overall_covers", "locomo_f1_1_4", "locomo_f1_1_5", *CATS]


def test_mlflow_keeps_its_metric_names() -> None:
    from memorybench.tracking.mlflow_log import JUDGE_METRICS, METRIC_NAMES
    from memorybench.tracking.pack_figures import _LEXICAL_OR_J_NAMED

    per_kind = [f"{m}{c}" for m in ("locomo_f1", "exact_match", "token_f1") for c in ("", *(f"_cat{k}" for k in range(1, 6)))]
    assert list(METRIC_NAMES)[:21] == ["questions", *per_kind, "locomo_f1_1_4", "locomo_f1_1_5"]
    assert all(METRIC_NAMES[name] == name for name in per_kind)
    judged = ("j_cat1", "j_cat2", "j_cat3", "j_cat4")
    assert JUDGE_METRICS == (
        "j_mean",
        "j_sd",
        "j_passes",
        *judged,
        "j_agreement",
        "judge_failed",
        "judge_calls",
        "judge_cost_usd",
    )
    assert _LEXICAL_OR_J_NAMED.pattern == (
        r"^(?:(?:locomo_f1|exact_match|token_f1)(?:_.*)?|conversations|"
        r"(?:j_mean|j_sd|j_passes|j_agreement|j_cat\d+|j_pass\d+)/.*)$"
    )


def test_the_sweep_table_keeps_its_headers_and_reads_both_metrics_versions() -> None:
    from memorybench.sweep_table import COLUMNS, _subset

    assert COLUMNS == ("overrides", "run_id", "questions", "F1 1-4", "F1 1-5", "cost", "status")
    v2 = {"scores": {"locomo_f1": {"subsets": {"1-4": {"value": 0.5}, "1-5": {"value": 0.25}}}}}
    v1 = {"locomo_f1": {"overall_1_4": 0.5, "overall_1_5": 0.25}}
    assert [_subset(m, s) for m in (v2, v1) for s in ("1-4", "1-5")] == [0.5, 0.25, 0.5, 0.25]


def test_the_scorers_module_stays_light() -> None:
    """Naming a column loads neither NLTK nor a benchmark's package."""
    probe = "import json, sys; import memorybench.score.scorers; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not {m for m in loaded if m.split(".")[0] == "nltk" or m.startswith("memorybench.benchmark")}

"""MLflow logs a LongMemEval pack under LongMemEval's names: its judge's accuracy per question type,
task-averaged, overall and abstention as `longmemeval_accuracy*/<judge id>` (the numbers of the
judge's autorater_metrics.json, which print_qa_metrics.py gives), never as Mem0's J, and its lexical
scores as `diagnostic_*`, never as LoCoMo F1 or by LoCoMo category. A LoCoMo pack logged beside it
keeps its names."""

from __future__ import annotations

import json

import pytest
from tracking.pack_factory import add_autorater, make_longmemeval_pack, make_packs

from memorybench.benchmark import LONGMEMEVAL
from memorybench.tracking import default_tracking_uri, log_packs, pack_metrics


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow-lme")
    lme = make_longmemeval_pack(root)
    (locomo,) = make_packs(root, memories=("full_context",), name="mini")
    add_autorater(locomo, passes=1)
    uri = default_tracking_uri(root / "packs")
    result = log_packs([lme, locomo], tracking_uri=uri, experiment_name="lme", parent_run_name="lme sweep")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    runs = {r.pack: client.get_run(r.mlflow_run_id).data for r in result.runs}
    return lme, locomo, runs


def test_longmemeval_accuracy_is_logged_under_its_own_names(logged):
    lme, _, runs = logged
    metrics = runs[lme].metrics
    (folder,) = (lme / "autorater").iterdir()
    judge = folder.name
    block = json.loads((folder / "autorater_metrics.json").read_text())["longmemeval"]
    assert metrics[f"longmemeval_accuracy/{judge}"] == pytest.approx(block["overall_accuracy"])
    assert metrics[f"longmemeval_accuracy_task_avg/{judge}"] == pytest.approx(block["task_averaged_accuracy"])
    assert metrics[f"longmemeval_accuracy_abstention/{judge}"] == pytest.approx(block["abstention_accuracy"])
    assert metrics[f"longmemeval_accuracy_pass1/{judge}"] == pytest.approx(block["passes"][0]["overall_accuracy"])
    for name in LONGMEMEVAL.category_names.values():  # the six types, by the benchmark's own names
        assert metrics[f"longmemeval_accuracy_{name}/{judge}"] == pytest.approx(block["accuracy_by_type"][name])
    assert metrics[f"longmemeval_accuracy_multi-session/{judge}"] == pytest.approx(1 / 3)
    assert metrics[f"judge_passes/{judge}"] == 1 and metrics[f"judge_calls/{judge}"] == 20
    # neither Mem0's J nor LoCoMo's F1, categories, overalls or conversations name a LongMemEval figure
    assert not [k for k in metrics if k.startswith(("j_", "locomo_f1", "exact_match", "token_f1", "conversations"))]


def test_lexical_scores_are_logged_as_diagnostics(logged):
    lme, _, runs = logged
    metrics = runs[lme].metrics
    local = json.loads((lme / "metrics.json").read_text())
    assert metrics["diagnostic_stemmed_token_f1"] == pytest.approx(local["scores"]["locomo_f1"]["overall"]["value"])
    assert metrics["diagnostic_stemmed_token_f1_task_avg"] == pytest.approx(local["scores"]["locomo_f1"]["task_average"]["value"])
    assert metrics["diagnostic_exact_match_temporal-reasoning"] == pytest.approx(
        local["scores"]["exact_match"]["by_kind"]["5"]["value"]
    )
    assert metrics["diagnostic_token_f1_knowledge-update"] == pytest.approx(local["scores"]["token_f1"]["by_kind"]["6"]["value"])
    assert metrics["questions"] == 20 and metrics["answer_calls"] == 20


def test_a_locomo_pack_keeps_its_names(logged):
    _, locomo, runs = logged
    metrics = runs[locomo].metrics
    assert {"locomo_f1", "locomo_f1_cat5", "locomo_f1_1_4", "exact_match", "token_f1", "conversations"} <= set(metrics)
    assert any(k.startswith("j_mean/") for k in metrics) and not any(
        k.startswith(("longmemeval", "diagnostic_")) for k in metrics
    )
    assert pack_metrics(locomo) == metrics

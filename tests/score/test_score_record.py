"""metrics.json's one score record (metrics.v2) for every benchmark, and old packs' metrics.v1.

The record's figures are read back the same from both shapes (`scores_of`); its `se` and `df`
give exactly the interval `compare` prints; an old pack (metrics.v1) still verifies against a
rescore in its own shape, and a changed figure in it is still found.
"""

from __future__ import annotations

import json
import math

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.benchmark import LOCOMO, LONGMEMEVAL, benchmark_of_pack
from memorybench.cli import main
from memorybench.compare.intervals import cluster_robust_se, mean_interval
from memorybench.pack.scores import compute_scores
from memorybench.pack.success import reclose
from memorybench.score.rows import metrics_v1
from memorybench.score.score_record import SCHEMA, local_metrics, scores_of


def _rows(spec: list[tuple[str, int, float]]) -> list[dict]:
    """Scored rows: (sample id, kind, score), every scorer given the same score."""
    return [
        {
            "question_id": f"{sample}-q-{i}",
            "sample_id": sample,
            "category": kind,
            "locomo_f1": score,
            "exact_match": float(score == 1.0),
            "token_f1": score / 2,
        }
        for i, (sample, kind, score) in enumerate(spec)
    ]


ROWS = _rows(
    [("a", 1, 1.0), ("a", 2, 0.5), ("a", 4, 0.0), ("b", 1, 0.25), ("b", 4, 1.0), ("c", 3, 0.75), ("c", 4, 0.5), ("c", 2, 0.0)]
)


def test_locomo_subsets_and_what_each_covers():
    metrics = local_metrics(ROWS, {"run_id": "r"}, LOCOMO)
    f1 = metrics["scores"]["locomo_f1"]
    assert metrics["schema"] == SCHEMA and metrics["benchmark"] == {"name": "locomo", "version": LOCOMO.version}
    assert f1["role"] == "score" and metrics["scores"]["exact_match"]["role"] == "diagnostic"
    judged = [r["locomo_f1"] for r in ROWS if r["category"] in (1, 2, 3, 4)]
    assert f1["subsets"]["1-4"]["value"] == pytest.approx(sum(judged) / len(judged))
    assert f1["subsets"]["1-4"]["n"] == 8 and f1["subsets"]["1-4"]["covers"] == "categories 1-4"
    # category 5 was not asked: LoCoMo's 1-5 would be the 1-4 figure under another name
    assert f1["subsets"]["1-5"]["value"] is None and f1["subsets"]["1-5"]["covers"] == "category 5 not asked"
    assert f1["overall"]["covers"] == "categories 1-4 (category 5 not asked)"
    assert f1["by_kind"]["5"] == {"value": None, "n": 0, "units": 0, "se": None, "df": None}
    assert metrics["counts"] == {"total": 8, "units": 3, "by_kind": {"1": 2, "2": 2, "3": 1, "4": 3, "5": 0}}
    with_five = local_metrics([*ROWS, *_rows([("b", 5, 1.0)])], {}, LOCOMO)["scores"]["locomo_f1"]["subsets"]["1-5"]
    assert with_five["n"] == 9 and with_five["value"] == pytest.approx((sum(judged) + 1.0) / 9)


def test_the_standard_error_gives_the_interval_compare_prints():
    metrics = local_metrics(ROWS, {}, LOCOMO)
    overall = metrics["scores"]["locomo_f1"]["overall"]
    values, clusters = [r["locomo_f1"] for r in ROWS], [r["sample_id"] for r in ROWS]
    assert overall["se"] == pytest.approx(cluster_robust_se(values, clusters), rel=1e-12)
    assert overall["df"] == 2 and overall["units"] == 3
    from scipy import stats

    printed = mean_interval(values, clusters)
    half = float(stats.t.ppf(0.975, overall["df"])) * overall["se"]
    assert (max(0.0, overall["value"] - half), min(1.0, overall["value"] + half)) == pytest.approx((printed.low, printed.high))
    one = local_metrics([r for r in ROWS if r["sample_id"] == "a"], {}, LOCOMO)["scores"]["locomo_f1"]["overall"]
    assert one["se"] is None and one["df"] is None  # one unit: no spread between units to estimate


def test_another_benchmark_gets_diagnostics_and_its_task_average_only_over_every_kind():
    rows = _rows([(f"q{k}", k, k / 10) for k in range(1, 7)])
    block = local_metrics(rows, {}, LONGMEMEVAL)["scores"]["token_f1"]
    assert block["role"] == "diagnostic" and "subsets" not in block
    assert block["task_average"]["value"] == pytest.approx(sum(k / 20 for k in range(1, 7)) / 6)
    partial = local_metrics(rows[:3], {}, LONGMEMEVAL)["scores"]["token_f1"]["task_average"]
    assert partial["value"] is None and partial["covers"] == "the mean of 3 of 6 types: only over every one"


def test_a_metrics_v1_reads_as_the_same_figures():
    v1 = metrics_v1(ROWS, {"run_id": "r"}, LOCOMO)
    v2 = local_metrics(ROWS, {"run_id": "r"}, LOCOMO)
    old, new = scores_of(v1), scores_of(v2)
    for metric in ("locomo_f1", "exact_match", "token_f1"):
        assert old[metric]["overall"]["value"] == new[metric]["overall"]["value"]
        assert {k: b["value"] for k, b in old[metric]["by_kind"].items()} == {
            k: b["value"] for k, b in new[metric]["by_kind"].items()
        }
        assert {k: b["value"] for k, b in old[metric]["subsets"].items()} == {
            k: b["value"] for k, b in new[metric]["subsets"].items()
        }


def _pack(tmp_path, server) -> object:
    args = [
        "qa",
        *scripted_reader(server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=record",
    ]
    assert main(args) == 0
    (pack,) = (tmp_path / "packs" / "record" / "runs").iterdir()
    return pack


def test_a_pack_records_its_benchmark_and_an_old_pack_still_verifies(tmp_path, scripted_server, capsys):
    pack = _pack(tmp_path, scripted_server)
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    metrics = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert meta["benchmark"] == metrics["benchmark"] == {"name": "locomo", "version": LOCOMO.version}
    assert benchmark_of_pack(meta) is LOCOMO and metrics["schema"] == "metrics.v2"
    # the pack as memorybench wrote it before metrics.v2: its metrics.json in the v1 shape, no benchmark recorded
    _, old = compute_scores(pack, schema="metrics.v1")
    (pack / "metrics.json").write_text(json.dumps(old, indent=2), "utf-8")
    del meta["benchmark"]
    (pack / "run_meta.json").write_text(json.dumps(meta, indent=2), "utf-8")
    reclose(pack, ("metrics.json", "run_meta.json"))
    capsys.readouterr()
    assert main(["verify", str(pack)]) == 0, capsys.readouterr()
    assert benchmark_of_pack(meta) is LOCOMO  # from its dataset, as before
    old["locomo_f1"]["overall_1_4"] = 0.5  # a figure the rows do not give
    (pack / "metrics.json").write_text(json.dumps(old, indent=2), "utf-8")
    reclose(pack, ("metrics.json",))
    capsys.readouterr()
    assert main(["verify", str(pack)]) != 0
    said = capsys.readouterr()
    assert "metrics.json" in said.out + said.err


def test_rescore_upgrades_an_old_pack_to_the_one_record(tmp_path, scripted_server, capsys):
    pack = _pack(tmp_path, scripted_server)
    _, old = compute_scores(pack, schema="metrics.v1")
    (pack / "metrics.json").write_text(json.dumps(old, indent=2), "utf-8")
    reclose(pack, ("metrics.json",))
    assert main(["rescore", str(pack)]) == 0
    printed = capsys.readouterr().out
    new = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert new["schema"] == "metrics.v2" and "overall 1-4" in printed and "overall 1-5" in printed
    assert math.isclose(new["scores"]["locomo_f1"]["subsets"]["1-4"]["value"], old["locomo_f1"]["overall_1_4"])
    assert main(["verify", str(pack)]) == 0

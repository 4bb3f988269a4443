"""The report's LoCoMo-shaped tables and figures follow the record of the rows' benchmark (issue 41:
a benchmark is one package): a plugin-like benchmark whose lexical F1 is its own shows its own kinds,
their names, its own overalls (`Benchmark.subsets`, with their labels), its judge's kinds and its
refusal kind, never LoCoMo's categories 1-5, 1-4 and 1-5; and LoCoMo's own wording comes from its
record."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from memorybench import benchmark as benchmarks
from memorybench.benchmark import LOCOMO, Benchmark, Dataset, Subset
from memorybench.compare.category_tests import metric_kind
from memorybench.compare.report_figures import _category_label, figure_scores_by_category
from memorybench.compare.report_scores import Bootstrap, paired_differences, scores_by_category
from memorybench.compare.report_tables import (
    answer_length,
    category_name,
    cost_latency,
    gold_token_drop,
    judge_agreement,
    refusals,
)

JUDGE, OTHER = "toy-judge-00000000", "toy-judge-11111111"
KINDS = [1, 1, 1, 2, 2, 2, 3, 3]

TOY = Benchmark(
    name="toy",
    title="Toy",
    datasets=(Dataset("toy_small", pin="toy:PIN"),),
    unit="question",
    category_names={1: "recall", 2: "update", 3: "unanswerable"},
    loader="toy:load",
    own_lexical_rules=True,
    # recall by the single-hop rule, update by the multi-hop one, unanswerable by the refusal rule
    lexical_rules={1: 4, 2: 1, 3: 5},
    judged=(1, 2),
    subsets={"answerable": Subset((1, 2)), "every": Subset((1, 2, 3), asked=(3,), label="overall (Toy's own)")},
)


@pytest.fixture
def toy(monkeypatch) -> Benchmark:
    monkeypatch.setitem(benchmarks._builtins(), "toy", TOY)
    return TOY


def _frame() -> pd.DataFrame:
    """Two conditions over the same eight questions, each its own sample, judged by two judges."""
    parts = []
    for condition, f1, refusal in (("a", [1, 0, 1, 0.5, 1, 0, 1, 0], [0, 0, 0, 0, 0, 1, 1, 0]), ("b", [1] * 8, [1] * 8)):
        ids = [f"q{i}" for i in range(len(KINDS))]
        parts.append(
            pd.DataFrame(
                {
                    "condition": condition,
                    "dataset": "toy_small",
                    "pack": f"pack-{condition}",
                    "run_id": f"run-{condition}",
                    "question_id": ids,
                    "sample_id": ids,
                    "category": KINDS,
                    "locomo_f1": [float(x) for x in f1],
                    "prediction": ["not mentioned" if r else "the answer is blue" for r in refusal],
                    "gold": [None if k == 3 else "blue" for k in KINDS],
                    "memory_sha256": None,
                    "prompt_tokens": 10.0,
                    "completion_tokens": 2.0,
                    "cache_hit": False,
                    "latency_s": 0.5,
                    **{
                        f"{column}/{judge}": values
                        for judge, shift in ((JUDGE, 0), (OTHER, 1))
                        for column, values in (
                            ("j_score", [float(x >= 0.5) if k != 3 else None for x, k in zip(np.roll(f1, shift), KINDS)]),
                            ("j_passes", [1 if k != 3 else 0 for k in KINDS]),
                            ("j_failed", [0.0 if k != 3 else None for k in KINDS]),
                            ("j_agree", [None] * len(KINDS)),
                            (
                                "j_verdict",
                                [
                                    ("CORRECT" if x >= 0.5 else "WRONG") if k != 3 else None
                                    for x, k in zip(np.roll(f1, shift), KINDS)
                                ],
                            ),
                        )
                    },
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_scores_by_category_shows_the_records_kinds_and_overalls(toy):
    table = scores_by_category(_frame(), Bootstrap(resamples=200))
    mine = table[table["condition"] == "a"]
    assert list(mine["category"]) == [1, 2, 3, "answerable", "every"]
    assert list(mine["category_name"]) == ["recall", "update", "unanswerable", "overall answerable", "overall (Toy's own)"]
    rows = mine.set_index("category")
    f1 = np.array([1, 0, 1, 0.5, 1, 0, 1, 0])
    assert rows.at["answerable", "locomo_f1"] == pytest.approx(f1[:6].mean()) and rows.at["answerable", "n"] == 6
    assert rows.at["every", "locomo_f1"] == pytest.approx(f1.mean()) and rows.at["every", "n"] == 8
    # its judge scores kinds 1 and 2: no J on the refusal kind, J over the answerable overall
    assert rows.at[3, f"j_n/{JUDGE}"] == 0 and math.isnan(rows.at[3, f"j/{JUDGE}"])
    assert rows.at["answerable", f"j/{JUDGE}"] == pytest.approx(np.mean(f1[:6] >= 0.5))
    # the refusal kind alone is a rate, its interval inside [0, 1]; the others are scores
    assert metric_kind("locomo_f1", "toy", [3]) == "rate" and metric_kind("locomo_f1", "toy", [1]) == "score"
    assert 0 <= rows.at[3, "f1_ci_low"] <= rows.at[3, "f1_ci_high"] <= 1


def test_an_overall_whose_asked_kind_has_no_questions_has_no_number(toy):
    frame = _frame()
    table = scores_by_category(frame[frame["category"] != 3], Bootstrap(resamples=200)).set_index(["condition", "category"])
    # the refusal kind was not asked: its row stays (n=0), and "every" is no "answerable" under another name
    assert table.at[("a", 3), "n"] == 0 and table.at[("a", "every"), "n"] == 0
    assert math.isnan(table.at[("a", "every"), "locomo_f1"]) and table.at[("a", "answerable"), "n"] == 6


def test_paired_differences_test_the_records_overalls_and_kinds(toy):
    table = paired_differences(_frame(), Bootstrap(resamples=200))
    f1 = table[table["metric"] == "locomo_f1"]
    assert list(f1["categories"]) == ["answerable", "every", "1", "2", "3"]
    # J over the overalls its judge scores every kind of, and its judged kinds only
    assert list(table[table["metric"] == f"j/{JUDGE}"]["categories"]) == ["answerable", "1", "2"]
    assert set(f1["family"][2:]) == {"Holm over the 3 category tests of locomo_f1, a vs b"}


def test_the_other_tables_follow_the_record(toy):
    frame = _frame()
    shares = refusals(frame).set_index("condition")
    # the refusal kind's column is named by its number, the others by their subset
    assert shares.at["a", "cat3_n"] == 2 and shares.at["a", "cat3_refusal_rate"] == pytest.approx(0.5)
    assert shares.at["a", "catanswerable_n"] == 6 and shares.at["a", "catanswerable_refusal_rate"] == pytest.approx(1 / 6)
    assert not [c for c in shares.columns if c.startswith(("cat5", "cat1_4"))]
    drop = gold_token_drop(frame)
    assert list(drop[drop["condition"] == "a"]["category"]) == [1, 2, "answerable"]
    assert list(drop["category_name"][:3]) == ["recall", "update", "answerable"]
    agreement = judge_agreement(frame)
    assert list(agreement[agreement["condition"] == "a"]["category"]) == [1, 2, "all"]
    assert list(agreement["category_name"][:3]) == ["recall", "update", "answerable"]
    assert answer_length(frame).groupby("condition")["answers"].first().to_dict() == {"a": 6, "b": 6}
    runs = pd.DataFrame(
        {
            "condition": ["a", "b"],
            "questions": [8, 8],
            "build_prompt_tokens": 0.0,
            "build_completion_tokens": 0.0,
            "build_cost_usd": 0.0,
            "answer_cost_usd": 0.0,
        }
    )
    costs = cost_latency(frame, runs)
    assert {"locomo_f1_answerable", "locomo_f1_every", f"j/{JUDGE}"} <= set(costs.columns)
    assert not [c for c in costs.columns if c.startswith(("locomo_f1_1_", "diagnostic_"))]
    assert costs.set_index("condition").at["a", "locomo_f1_answerable"] == pytest.approx(3.5 / 6)


def test_the_figure_names_the_records_kinds(toy, tmp_path):
    assert _category_label(3, toy) == "3 unanswerable\n(refusal rule)" and _category_label(1, toy) == "1 recall"
    assert _category_label(5, LOCOMO) == "5 adversarial\n(refusal rule)"
    table = scores_by_category(_frame(), Bootstrap(resamples=200))
    path = figure_scores_by_category(table, tmp_path / "scores.png", toy)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_locomos_wording_is_its_records():
    assert category_name("1-5", LOCOMO) == "overall 1-5 (LoCoMo)" and category_name("1-4", LOCOMO) == "overall 1-4"
    assert LOCOMO.refusal_kinds == (5,) and "category 5 as a two-way choice" in LOCOMO.protocol_note

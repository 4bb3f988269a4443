"""TRACE.md's scorer-side section: the gold, LoCoMo's category rule and the arithmetic of the
LoCoMo F1, worked out from the stored answer; numbers with 4 decimals, no Python dict reprs."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from memorybench.pack.trace_md import render_trace_md
from memorybench.pack.walk import PackWalker
from memorybench.score.rows import score_row

GOLDEN = Path(__file__).resolve().parent / "golden_mini_pack"
SCORER_SIDE = "## 6. Scorer side (after the answer, never seen by a model)"


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    """The golden pack's first walk (its scrubbed latencies put back as numbers so the rows parse)."""
    pack = tmp_path_factory.mktemp("trace") / "pack"
    shutil.copytree(GOLDEN, pack)
    traces = pack / "reader/traces.jsonl"
    traces.write_text(traces.read_text().replace('"<latency_s>"', "0.25"))
    return PackWalker.open(pack, join_dataset=False).walk("mini-1-q-0")


def _trace(walk, prediction: str, gold: str | int | None, category: int) -> str:
    source = dataclasses.replace(walk.source, gold=gold, category=category)
    scores = score_row({"prediction": prediction, "gold": gold, "category": category, "adversarial_answer": None})
    return render_trace_md(dataclasses.replace(walk, prediction=prediction, category=category, source=source, scores=scores))


def test_the_golden_trace_ends_scorer_side_with_gold_rule_and_arithmetic():
    trace = (GOLDEN / "TRACE.md").read_text()
    before, side = trace.split(SCORER_SIDE)
    assert "pottery" not in before  # the walk of what the model saw holds no gold
    assert "- Gold: 'pottery'" in side and "Rule (LoCoMo, category 4, single-hop)" in side
    assert "-> 2 token(s): `script`, `07d103bc`" in side and "-> 1 token(s): `potteri`" in side
    assert "no shared token, so F1 = 0.0000" in side and "The same as `locomo_f1` in `predictions.csv` line 2." in side
    assert "usage prompt_tokens 125, completion_tokens 2" in trace and "{'" not in trace
    assert not re.search(r"\d\.\d{5,}", trace)


def test_a_partial_match_shows_tokens_overlap_precision_recall_and_f1(walk):
    side = _trace(walk, "Ana started pottery classes", "pottery", 4).split(SCORER_SIDE)[1]
    assert "-> 4 token(s): `ana`, `start`, `potteri`, `class`" in side
    assert "overlap (shared tokens, with repeats): 1 (`potteri`)" in side
    assert "precision = overlap / prediction tokens = 1/4 = 0.2500; recall = overlap / gold tokens = 1/1 = 1.0000" in side
    assert "F1 = 2 x precision x recall / (precision + recall) = 0.4000" in side
    assert "LoCoMo F1 = 0.4000." in side and "The same as `locomo_f1`" in side


@pytest.mark.parametrize(
    ("prediction", "gold", "category", "rule", "score"),
    [
        ("Paris, Rome", "Rome, Oslo", 1, "split on `,`", "LoCoMo F1 = mean of 2 part(s) (1.0000 + 0.0000) / 2 = 0.5000."),
        ("Biscuit", "Biscuit; his dog", 3, "before its first `;` ('Biscuit')", "LoCoMo F1 = 1.0000."),
        ("Not mentioned in the chat", None, 5, "the gold is ignored", "LoCoMo F1 = 1.0000."),
        ("20 May 2023", 2023, 2, "one token F1", "LoCoMo F1 = 0.5000."),
    ],
)
def test_each_category_states_its_rule_and_reaches_the_stored_score(walk, prediction, gold, category, rule, score):
    trace = _trace(walk, prediction, gold, category)
    side = trace.split(SCORER_SIDE)[1]
    assert rule in side and score in side and "The same as `locomo_f1`" in side
    assert not re.search(r"\d\.\d{5,}", trace)

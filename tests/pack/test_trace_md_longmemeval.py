"""TRACE.md of a LongMemEval pack speaks LongMemEval: the question's type and abstention flag, and
scorer-side the rule its lexical score was actually computed by (`score.rows.PLAIN_RULE` for every
type, a diagnostic named stemmed_token_f1) with the arithmetic, beside where LongMemEval's score comes
from (its judge's accuracy). Never LoCoMo's category rules: LongMemEval's type 5 (temporal-reasoning)
is not LoCoMo's adversarial category 5, its type 1 not LoCoMo's comma-split multi-hop. LoCoMo packs'
TRACE.md is as before (tests/pack/test_trace_md.py, the golden pack)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tracking.pack_factory import make_longmemeval_pack

from memorybench.benchmark import LONGMEMEVAL
from memorybench.pack.trace_md import render_trace_md
from memorybench.pack.walk import PackWalker

SCORER_SIDE = "## 6. Scorer side (after the answer, never seen by a model)"
#: what LoCoMo's scorer side says and a LongMemEval one never may
LOCOMO_WORDS = (
    "Rule (LoCoMo",
    "LoCoMo F1",
    "category 5",
    "category 1",
    "adversarial",
    "the gold is ignored",
    "split on `,`",
    "multi-hop",
    "{sample_id}-q-{qa_index}",
)


@pytest.fixture(scope="module")
def lme(tmp_path_factory) -> Path:
    return make_longmemeval_pack(tmp_path_factory.mktemp("trace-lme"))


def _trace(pack: Path, question_id: str) -> str:
    return render_trace_md(PackWalker.open(pack, join_dataset=False).walk(question_id), bench=LONGMEMEVAL)


def test_the_written_trace_names_the_type_and_the_plain_rule_never_a_locomo_category(lme):
    trace = (lme / "TRACE.md").read_text()  # the first question, lme000: type 1, single-session-user
    before, side = trace.split(SCORER_SIDE)
    assert "; type 1 (single-session-user), abstention: no ('_abs' not in its id)." in before
    assert "- Lexical diagnostics, not longmemeval's score" in before and "stemmed_token_f1 1.0000" in before
    assert "`memorybench.score.rows.PLAIN_RULE`, category 4" in side and "whatever its type" in side
    assert "`memorybench autorater PACK judge=longmemeval`" in side
    assert "- stemmed_token_f1 = 1.0000." in side and "The same as `locomo_f1` (shown as `stemmed_token_f1`)" in side
    for word in LOCOMO_WORDS:
        assert word not in trace, word


def test_type_5_is_temporal_reasoning_scored_by_token_f1_with_its_arithmetic(lme):
    side = _trace(lme, "lme010").split(SCORER_SIDE)[1]  # '12 days' against the integer gold 12
    assert "- Gold: 12 (" in side and "- Kind: type 5 (temporal-reasoning), abstention: no" in side
    assert "-> 2 token(s): `12`, `day`" in side and "overlap (shared tokens, with repeats): 1 (`12`)" in side
    assert "precision = overlap / prediction tokens = 1/2 = 0.5000; recall = overlap / gold tokens = 1/1 = 1.0000" in side
    assert "- stemmed_token_f1 = 0.6667." in side and "The same as `locomo_f1`" in side
    for word in LOCOMO_WORDS:
        assert word not in side, word


def test_an_abstention_question_is_flagged_and_scored_against_its_gold(lme):
    trace = _trace(lme, "lme004_abs")  # type 5 too; LoCoMo's category-5 phrase rule would give 1.0
    side = trace.split(SCORER_SIDE)[1]
    assert "- Kind: type 5 (temporal-reasoning), abstention: yes ('_abs' in its id)." in side
    assert "- Gold: 'The information provided is not enough.'" in side and "- stemmed_token_f1 = 0.2222." in side
    assert "The same as `locomo_f1`" in side and "not mentioned" not in side.lower().split("- prediction")[0]
    assert not re.search(r"\d\.\d{5,}", trace)
    for word in LOCOMO_WORDS:
        assert word not in trace, word

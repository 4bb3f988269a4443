"""Blame's basis on a LongMemEval pack is named for LongMemEval: the judge (`judge <judge id>`) where
it gave a verdict, else the lexical diagnostic by its own name (`stemmed_token_f1>=0.5`), never
LoCoMo F1's `locomo_f1>=0.5`; wherever the basis is shown: `Blame`, examples.parquet's `blame_basis`
(what report reads), `show` and `view`. LoCoMo packs' basis is as before (tests/compare/test_blame.py)."""

from __future__ import annotations

import pytest
from tracking.pack_factory import make_longmemeval_pack

from memorybench.benchmark import LOCOMO, LONGMEMEVAL
from memorybench.compare.aggregate import pack_examples
from memorybench.compare.blame import BASIS_F1, f1_basis, pack_blame
from memorybench.pack.walk import PackWalker
from memorybench.viewers.show import show
from memorybench.viewers.view import view_payload

DIAGNOSTIC = "stemmed_token_f1>=0.5"


@pytest.fixture(scope="module")
def unjudged(tmp_path_factory):
    return make_longmemeval_pack(tmp_path_factory.mktemp("blame-lme"), questions=12, judged=False, name="lme-plain")


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    return make_longmemeval_pack(tmp_path_factory.mktemp("blame-lme-judged"), questions=12)


def test_the_basis_is_named_for_the_benchmark():
    assert f1_basis(LOCOMO) == BASIS_F1 == "locomo_f1>=0.5" and f1_basis(LONGMEMEVAL) == DIAGNOSTIC


def test_without_a_judge_the_basis_is_the_diagnostic_by_its_name(unjudged):
    blames = pack_blame(PackWalker.open(unjudged))
    assert {b.basis for b in blames.values()} == {DIAGNOSTIC}
    assert blames["lme000"].correct and not blames["lme004_abs"].correct  # the stemmed F1 of each, at 0.5
    examples = pack_examples(unjudged).to_pydict()
    assert set(examples["blame_basis"]) == {DIAGNOSTIC}


def test_a_judged_pack_is_blamed_by_its_judge(judged):
    (judge,) = PackWalker.open(judged).judges()
    blames = pack_blame(PackWalker.open(judged))
    assert {b.basis for b in blames.values()} == {f"judge {judge}"}
    assert blames["lme004_abs"].correct  # the judge accepts its refusal; the diagnostic would not
    assert set(pack_examples(judged).to_pydict()["blame_basis"]) == {f"judge {judge}"}


def test_show_and_view_name_the_basis(unjudged, judged):
    brief = show(str(unjudged), "lme010", brief=True)
    assert f"(correctness by {DIAGNOSTIC}: no judge verdict, a lexical diagnostic, not longmemeval's score)" in brief
    full = show(str(unjudged), "lme010")
    assert f"(correctness by {DIAGNOSTIC}: no judge verdict" in full and "locomo_f1>=0.5" not in full + brief
    (judge,) = PackWalker.open(judged).judges()
    assert f"(correctness by judge {judge})\n" in show(str(judged), "lme010", brief=True)
    data, _ = view_payload([unjudged, judged])
    assert [p["noJudge"] for p in data["packs"]] == [DIAGNOSTIC, DIAGNOSTIC]  # the paired view's "no judge: ..." per pack
    bases = {r["basis"] for q in data["questions"] for r in q["r"] if r}
    assert bases == {DIAGNOSTIC, f"judge {judge}"}

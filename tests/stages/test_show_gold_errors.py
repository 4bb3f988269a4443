"""`show` and `view` flag a question with a known gold error (dial481/locomo-audit errors.json):
the corrected answer (or evidence) and the audit's reasoning, beside the unchanged gold."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import PINS
from test_view import dom, needs_chromium

from memorybench.cli import main
from memorybench.benchmarks.locomo.gold_audit import known_gold_errors
from memorybench.stages.import_results import import_results
from memorybench.viewers.show import show
from memorybench.viewers.view import build_view, view_payload

SCORED = PINS / "locomo-audit" / "ap_v1_specific_wrong_scored.json"


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    """The audit's wrong answers for conv-26 (a partial import): a pack on the pinned locomo10.json."""
    root = tmp_path_factory.mktemp("gold-errors")
    data = json.loads(SCORED.read_text("utf-8"))
    data["detailed_results"] = {"locomo_exp_user_0": data["detailed_results"]["locomo_exp_user_0"]}
    path = root / "conv26.json"
    path.write_text(json.dumps(data), "utf-8")
    return import_results([path], "memos_eval", name="conv26", packs=root / "packs", allow_partial=True).pack_root


def test_show_prints_the_corrected_answer_and_the_reasoning(pack, capsys):
    error = known_gold_errors()["conv-26-q-5"]
    assert main(["show", str(pack), "conv-26-q-5"]) == 0
    out = capsys.readouterr().out
    assert "gold: 'The sunday before 25 May 2023'" in out  # the dataset's gold, unchanged
    assert "KNOWN GOLD ERROR (dial481/locomo-audit errors.json locomo_0_qa5, TEMPORAL_ERROR)" in out
    assert "corrected answer: 'The Saturday before 25 May 2023 (approximately May 20, 2023)'" in out
    assert error.reasoning in out
    assert (
        json.loads(show(str(pack), "conv-26-q-5", as_json=True))["walk"]["source"]["gold_error"]["corrected_answer"]
        == error.corrected_answer
    )


def test_a_citation_only_finding_shows_the_corrected_evidence(pack):
    out = show(str(pack), "conv-26-q-1")
    assert "KNOWN CITATION ERROR (dial481/locomo-audit errors.json locomo_0_qa1, WRONG_CITATION): the gold answer stands" in out
    assert "corrected evidence: D1:14" in out and "I painted that lake sunrise last year!" in out
    assert "corrected answer" not in out


def test_a_question_without_a_finding_is_not_flagged(pack):
    out = show(str(pack), "conv-26-q-0")
    assert "KNOWN" not in out and "known gold errors" not in out


def test_without_the_overlay_show_says_it_was_not_checked(pack, tmp_path, monkeypatch):
    pins = tmp_path / "pins"
    shutil.copytree(PINS / "data", pins / "data")
    monkeypatch.setenv("MEMORYBENCH_PINS", str(pins))
    out = show(str(pack), "conv-26-q-5")
    assert (
        "known gold errors not checked: pinned file" in out
        and "locomo-audit/errors.json is missing; run `memorybench fetch`" in out
    )
    assert "corrected answer" not in out


def test_the_view_payload_carries_the_finding(pack):
    data, _ = view_payload([pack])
    by_id = {q["id"]: q for q in data["questions"]}
    assert by_id["conv-26-q-5"]["ge"]["kind"] == "answer" and by_id["conv-26-q-5"]["ge"]["answer"].startswith("The Saturday")
    assert by_id["conv-26-q-1"]["ge"]["kind"] == "evidence" and [e["id"] for e in by_id["conv-26-q-1"]["ge"]["evidence"]] == [
        "D1:14"
    ]
    assert by_id["conv-26-q-0"]["ge"] is None


@needs_chromium
def test_the_viewer_filters_and_flags_known_gold_errors(pack, tmp_path):
    page = build_view([pack], tmp_path / "view.html")
    errors = known_gold_errors()
    asked = list(dom(page).rows)
    wrong = dom(page, "gold=answer")
    assert wrong.visible == [q for q in asked if q in errors and errors[q].kind == "answer"] and wrong.visible
    cited = dom(page, "gold=evidence")
    assert cited.visible == [q for q in asked if q in errors and errors[q].kind == "evidence"] and cited.visible
    assert dom(page, "gold=none").shown == len(asked) - len(wrong.visible) - len(cited.visible)
    panel = dom(page, "open=conv-26-q-5").panel_text
    assert "Known gold error: the gold answer is wrong (locomo_0_qa5, TEMPORAL_ERROR)" in panel
    assert "The Saturday before 25 May 2023 (approximately May 20, 2023)" in panel and "explicitly says 'Saturday'" in panel


def test_brief_flags_a_known_gold_error_as_the_full_walk_does(pack, capsys):
    """Issue 40, item 7: `show --brief` left out the finding the full walk prints."""
    assert main(["show", str(pack), "conv-26-q-5", "--brief"]) == 0
    out = capsys.readouterr().out
    assert (
        "gold error: KNOWN GOLD ERROR (dial481/locomo-audit errors.json locomo_0_qa5, TEMPORAL_ERROR): corrected answer "
        "'The Saturday before 25 May 2023 (approximately May 20, 2023)'"
    ) in out
    assert main(["show", str(pack), "conv-26-q-1", "--brief"]) == 0
    assert "KNOWN CITATION ERROR" in capsys.readouterr().out
    assert main(["show", str(pack), "conv-26-q-0", "--brief"]) == 0
    assert "gold error" not in capsys.readouterr().out


def test_compare_corrected_gold_corrects_the_paired_difference_too(pack, tmp_path_factory, capsys):
    """Issue 40, item 7: --corrected-gold corrected each condition's figure, not their difference."""
    root = tmp_path_factory.mktemp("vague")
    data = json.loads((PINS / "locomo-audit" / "ap_v2_vague_wrong_scored.json").read_text("utf-8"))
    data["detailed_results"] = {"locomo_exp_user_0": data["detailed_results"]["locomo_exp_user_0"]}
    path = root / "conv26_vague.json"
    path.write_text(json.dumps(data), "utf-8")
    other = import_results([path], "memos_eval", name="vague", packs=root / "packs", allow_partial=True).pack_root
    capsys.readouterr()
    out_json = root / "c.json"
    assert main(["compare", str(pack), "--vs", str(other), "--corrected-gold", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    fixed = json.loads(out_json.read_text("utf-8"))["difference"]["locomo_f1"]["corrected_gold"]
    assert fixed["rescored"] > 0 and fixed["difference"] is not None
    assert f"B minus A with the audit's {fixed['rescored']} corrected answers (n {fixed['n']})" in out

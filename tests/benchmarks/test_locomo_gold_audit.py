"""The known-gold-error overlay (dial481/locomo-audit errors.json) joined to our question ids."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memorybench.benchmarks.locomo import gold_audit
from memorybench.data import iter_questions
from memorybench.benchmarks.locomo.gold_audit import (
    evidence_for,
    known_gold_errors,
    overlay_provenance,
    overlay_sha256,
    without_gold_errors,
)
from memorybench.benchmarks.locomo.pins import AUDIT_ERRORS
from memorybench.errors import DataError
from memorybench.hashing import sha256_file
from tests.conftest import PINS

ERRORS = PINS / AUDIT_ERRORS.relpath


def test_all_156_findings_map_to_the_question_of_the_same_text(locomo_raw, conversations):
    errors = known_gold_errors()
    raw = json.loads(ERRORS.read_text("utf-8"))
    assert len(raw) == len(errors) == 156
    by_id = {q.question_id: q for q in iter_questions(conversations)}
    for finding in raw:
        c, i = (int(x) for x in finding["question_id"].removeprefix("locomo_").split("_qa"))
        ours = f"{locomo_raw[c]['sample_id']}-q-{i}"
        error = errors[ours]
        assert error.audit_id == finding["question_id"]
        # the question text, from the pinned locomo10.json read here independently
        assert locomo_raw[c]["qa"][i]["question"] == finding["question"] == error.question == by_id[ours].question
        assert error.corrected_evidence == tuple(finding["correct_evidence"])
        assert error.reasoning == finding["reasoning"]


def test_the_counts_are_the_audits():
    errors = known_gold_errors()
    kinds = Counter(e.kind for e in errors.values())
    assert kinds == {"answer": 99, "evidence": 57}
    answer = [e for e in errors.values() if e.kind == "answer"]
    assert Counter(e.error_type for e in answer) == {
        "HALLUCINATION": 33,
        "TEMPORAL_ERROR": 26,
        "ATTRIBUTION_ERROR": 24,
        "AMBIGUOUS": 13,
        "INCOMPLETE": 3,
    }
    assert Counter(e.category for e in answer) == {1: 28, 2: 26, 3: 9, 4: 36}
    assert {e.error_type for e in errors.values() if e.kind == "evidence"} == {"WRONG_CITATION"}
    assert overlay_provenance(errors) == {
        "name": "locomo-audit errors.json",
        "repository": "dial481/locomo-audit",
        "commit": AUDIT_ERRORS.commit,
        "source_path": "errors.json",
        "sha256": sha256_file(ERRORS),
        "findings": 156,
        "answer": 99,
        "evidence": 57,
    }
    assert overlay_sha256() == sha256_file(ERRORS)


def test_only_a_wrong_answer_removes_a_question(conversations):
    errors = known_gold_errors()
    ids = [q.question_id for q in iter_questions(conversations)]
    kept = without_gold_errors(ids, errors)
    assert len(kept) == len(ids) - 99
    assert kept == [q for q in ids if q not in {k for k, e in errors.items() if e.kind == "answer"}]
    citation_only = next(k for k, e in errors.items() if e.kind == "evidence")
    assert citation_only in kept and without_gold_errors(list(reversed(ids)))[::-1] == kept


def test_corrected_answer_and_evidence(conversations):
    errors = known_gold_errors()
    by_id = {q.question_id: q for q in iter_questions(conversations)}
    # conv-26 qa[1]: right gold ("2022"), wrong citation D1:12 -> D1:14
    cited = errors["conv-26-q-1"]
    assert cited.kind == "evidence" and cited.scoring_answer == "2022" == str(by_id["conv-26-q-1"].answer)
    assert evidence_for(by_id["conv-26-q-1"]) == ("D1:14",) and by_id["conv-26-q-1"].evidence == ("D1:12",)
    # a citation finding whose correct_answer carries a remark is never a gold to score against
    remarked = [e for e in errors.values() if e.kind == "evidence" and e.corrected_answer != e.gold_answer]
    assert remarked and all(e.scoring_answer == e.gold_answer for e in remarked)
    # conv-26 qa[5]: the gold says Sunday, D2:1 says Saturday
    wrong = errors["conv-26-q-5"]
    assert wrong.kind == "answer" and wrong.error_type == "TEMPORAL_ERROR"
    assert wrong.scoring_answer == wrong.corrected_answer == "The Saturday before 25 May 2023 (approximately May 20, 2023)"
    # a question without a finding keeps the dataset's evidence
    assert evidence_for(by_id["conv-26-q-0"]) == by_id["conv-26-q-0"].evidence


def test_the_data_file_is_untouched(locomo_path):
    before = sha256_file(locomo_path)
    gold_audit._load.cache_clear()
    known_gold_errors()
    assert sha256_file(locomo_path) == before


def test_another_errors_file_is_refused_in_one_line(tmp_path):
    altered = tmp_path / "errors.json"
    data = json.loads(ERRORS.read_text("utf-8"))
    data[0]["correct_answer"] = "edited"
    altered.write_text(json.dumps(data), "utf-8")
    with pytest.raises(DataError, match=r"has sha256 .* expected f298ef46.*memorybench fetch") as info:
        known_gold_errors(altered)
    assert "\n" not in str(info.value)
    with pytest.raises(DataError, match="does not exist; run `memorybench fetch`"):
        known_gold_errors(tmp_path / "absent.json")


def test_a_finding_that_does_not_join_is_refused(tmp_path, locomo_raw):
    # the overlay joined through another dataset file: the first finding's row says otherwise
    raw = json.loads(json.dumps(locomo_raw))
    raw[0]["qa"][1]["question"] = "When did Melanie paint a sunset?"
    other = tmp_path / "locomo10.json"
    other.write_text(json.dumps(raw), "utf-8")
    with pytest.raises(DataError, match=r"locomo_0_qa1 has question 'When did Melanie paint a sunrise\?', but conv-26-q-1"):
        known_gold_errors(dataset=other)

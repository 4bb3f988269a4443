"""Peers compared as a careful reviewer would: on the real released files pinned in
../shared/pins/peers (PINS.md), imported into packs, and an own full run beside them.

A Mem0- or Zep-format file holds categories 1-4 only, and each was judged by its own
grader: their overall is a 1-4 overall, LoCoMo F1 compares over the questions both hold,
and J is left out with the reason instead of refusing the comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PINS, scripted_reader

from memorybench.cli import main
from memorybench.compare.compare_command import compare_main, format_compare
from memorybench.compare.conditions import paired_difference, parse_categories
from memorybench.stages.import_results import import_results
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

PEERS = PINS / "peers"
NOT_ASKED = "categories 1-4 (category 5 not asked)"


@pytest.fixture(scope="module")
def peers(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("peers")
    memobase = import_results([PEERS / "memobase_eval_0710_3000.json"], "mem0_evals", name="memobase", packs=root)
    zep = import_results([PEERS / "zep_locomo_grades.json", PEERS / "zep_locomo_responses.json"], "zep", name="zep", packs=root)
    return {"memobase": memobase.pack_root, "zep": zep.pack_root, "root": root}


def test_an_imported_packs_overalls_read_1_to_4(peers):
    for name in ("memobase", "zep"):
        metrics = json.loads((peers[name] / "metrics.json").read_text())
        f1 = metrics["scores"]["locomo_f1"]
        assert f1["overall"]["covers"] == NOT_ASKED and metrics["questions"] == 1540
        assert f1["subsets"]["1-5"]["value"] is None and f1["subsets"]["1-5"]["covers"] == "category 5 not asked"
        assert f1["subsets"]["1-4"]["value"] == pytest.approx(f1["overall"]["value"])
        assert "overall includes category 5" not in json.dumps(metrics)


def test_memobase_against_zep_compares_locomo_f1_and_says_why_j_is_left_out(peers):
    result = paired_difference([peers["memobase"]], [peers["zep"]], categories=parse_categories("1-4"))
    assert result["questions"] == 1540 and result["conversations"] == 10
    f1 = result["locomo_f1"]
    assert f1["covers"] == NOT_ASKED and f1["clusters"] == 10 and "10 conversations, 9 df" in f1["method"]
    assert f1["low"] < f1["difference"] < f1["high"] and f1["mdd"] > 0
    # two graders, two protocols: J is not compared, and the line says so
    assert "j" not in result and result["j_available"] is False
    assert "different judges" in result["j_left_out"]
    text = format_compare({"difference": result})
    assert "J left out: judged by different judges" in text and "noise" not in text
    assert (
        f"minimum detectable difference {f1['mdd']:.4f}: the true difference this design (10 conversations) detects "
        "with 80% power at two-sided alpha 0.05; this difference is significant"
    ) in text
    # each category 1-4 tested too, Holm-adjusted over that family of four
    family = f1["by_category"]
    assert family["family"] == "Holm over the 4 category tests of LoCoMo F1 in this comparison"
    assert [t["category"] for t in family["tests"]] == [1, 2, 3, 4]
    assert all(t["p_adjusted"] >= t["p_two_sided"] for t in family["tests"])
    # the conversation-level interval is wider than the question-level one, conditional on these conversations
    conditional = f1["conditional"]
    assert "conditional on these 10 conversations" in conditional["method"]
    assert f1["high"] - f1["low"] > conditional["high"] - conditional["low"]


def test_an_own_full_run_against_memobase_compares_on_the_1540_common_questions(peers, tmp_path, capsys):
    def answer(body: dict) -> Reply:  # plumbing: some answers right by chance, never gold
        return Reply("Not mentioned in the conversation" if len(body["messages"][-1]["content"]) % 3 else "May 2023")

    with ScriptedOpenAIServer(responder=answer) as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    "memory=session_summaries",
                    f"paths.packs={tmp_path / 'own'}",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
    (own,) = sorted((tmp_path / "own").glob("*/runs/*"))
    metrics = json.loads((own / "metrics.json").read_text())
    f1 = metrics["scores"]["locomo_f1"]
    assert metrics["questions"] == 1986 and f1["overall"]["covers"] == "categories 1-5"
    assert f1["subsets"]["1-5"]["value"] is not None and f1["subsets"]["1-5"]["units"] == 10
    capsys.readouterr()
    assert compare_main([str(own), "--vs", str(peers["memobase"]), "--resamples", "500", "--json", "-"]) == 0
    result = json.loads(capsys.readouterr().out)
    difference = result["difference"]
    assert difference["questions"] == 1540 and difference["only_a"] == 446 and difference["only_b"] == 0
    assert difference["locomo_f1"]["covers"] == NOT_ASKED
    # each side's summary covers exactly the compared questions: A's 1-4 overall, not its 1-5 one
    assert result["summary_a"]["locomo_f1"]["estimate"] == pytest.approx(
        metrics["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
    )
    # and so does the pack's own number beside it (not its 1-5 overall from metrics.json)
    assert result["summary_a"]["locomo_f1"]["values"] == [
        pytest.approx(metrics["scores"]["locomo_f1"]["subsets"]["1-4"]["value"])
    ]
    assert difference["protocols_differ"] is True and difference["protocols"]["b"] == ["imported"]
    assert "j_left_out" in difference  # the own run has no judge


def test_memobase_is_shown_without_the_known_gold_errors_and_with_the_corrected_answers(peers, capsys):
    """The audit's 99 wrong gold answers are all in categories 1-4: memobase's figure on all
    1,540 questions, on the 1,441 without a known wrong gold, and with the corrected answers."""
    from memorybench.compare.conditions import load_pack_scores, seed_summary
    from memorybench.benchmarks.locomo.gold_audit import known_gold_errors
    from memorybench.benchmarks.locomo.score import locomo_score

    result = seed_summary([peers["memobase"]], corrected_gold=True)
    f1 = result["locomo_f1"]
    assert f1["interval"]["n"] == 1540 and "99 wrong gold answers" in result["gold_errors"]
    clean = f1["without_gold_errors"]
    assert clean["removed"] == 99 and clean["n"] == 1441
    scores = load_pack_scores(peers["memobase"])
    errors = known_gold_errors()
    wrong = {q for q, e in errors.items() if e.wrong_answer}
    kept = [q for q in scores.question_ids if q not in wrong]
    assert clean["estimate"] == pytest.approx(sum(scores.lexical[q] for q in kept) / len(kept))
    fixed = [
        locomo_score(scores.predictions[q], errors[q].scoring_answer, scores.categories[q]) if q in wrong else scores.lexical[q]
        for q in scores.question_ids
    ]
    assert f1["corrected_gold"]["estimate"] == pytest.approx(sum(fixed) / len(fixed)) and f1["corrected_gold"]["rescored"] == 99
    assert compare_main([str(peers["memobase"]), "--corrected-gold"]) == 0
    text = capsys.readouterr().out
    assert "without the 99 questions of known wrong gold (n 1441)" in text and "with the audit's 99 corrected answers" in text


def test_a_report_over_memobase_shows_all_questions_and_those_without_a_known_gold_error(peers, tmp_path):
    import csv

    import yaml

    from memorybench.compare.report import run_report

    design = tmp_path / "design.yaml"
    design.write_text(
        yaml.safe_dump(
            {
                "name": "memobase",
                "packs": [str(peers["memobase"])],
                "conditions": ["experiment"],
                "tables": ["scores_by_category"],
                "figures": [],
                "corrected_gold": True,
            }
        )
    )
    report = run_report(design, tmp_path / "out")
    with report.table_files["scores_by_category"].open(newline="") as f:
        rows = {r["category"]: r for r in csv.DictReader(f)}
    overall = rows["1-4"]
    assert overall["n"] == "1540" and overall["n_no_gold_error"] == "1441" and rows["1-5"]["locomo_f1"] == ""
    assert sum(int(rows[c]["n"]) - int(rows[c]["n_no_gold_error"]) for c in "1234") == 99
    assert float(overall["f1_corrected_gold"]) != float(overall["locomo_f1"])
    assert "99 wrong gold answers" in report.markdown.read_text("utf-8")

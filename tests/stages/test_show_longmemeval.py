"""`memorybench show` on a LongMemEval pack: the question's type and abstention flag, its lexical
scores labelled the diagnostics they are (never LoCoMo F1), and beside each judge's verdicts the
pack's LongMemEval accuracy by that judge (per type, task-averaged, overall, abstention), the numbers
of its autorater_metrics.json. LoCoMo packs print as before (tests/stages/test_show.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tracking.pack_factory import make_longmemeval_pack

from memorybench.viewers.show import show


@pytest.fixture(scope="module")
def lme(tmp_path_factory) -> Path:
    return make_longmemeval_pack(tmp_path_factory.mktemp("show-lme"))


def _block(pack: Path) -> dict:
    (folder,) = (pack / "autorater").iterdir()
    return json.loads((folder / "autorater_metrics.json").read_text())["longmemeval"]


def _walk_lines(text: str) -> list[str]:
    """The walk without the quoted texts (the prompt, the memory): what show itself says."""
    return [line for line in text.splitlines() if not line.startswith("    |")]


def test_a_question_is_shown_by_its_type_and_abstention_flag_never_by_a_locomo_category(lme):
    text = "\n".join(_walk_lines(show(str(lme), "lme009_abs")))
    assert "  type: 4 (multi-session; abstention ('_abs' in its id))" in text
    assert "  type: 5 (temporal-reasoning)\n" in "\n".join(_walk_lines(show(str(lme), "lme010"))) + "\n"
    # no LoCoMo rule, category or Mem0 score names a LongMemEval question's figures
    for locomo in ("LoCoMo", "locomo_f1", "category", "mem0 F1", "BLEU-1"):
        assert locomo not in text, locomo


def test_lexical_scores_are_labelled_diagnostics(lme):
    row = next(
        json.loads(line)
        for line in (lme / "predictions.jsonl").read_text().splitlines()
        if json.loads(line)["question_id"] == "lme010"
    )
    lines = _walk_lines(show(str(lme), "lme010"))
    (scores,) = [line for line in lines if "lexical diagnostics" in line]
    assert (
        scores.startswith("  lexical diagnostics stemmed_token_f1 ")
        and "(not longmemeval's score, which is its judge's)" in scores
    )
    assert row["prediction"] == "12 days"  # the scores are the pack's own (predictions.csv), renamed only
    csv_row = next(r for r in (lme / "predictions.csv").read_text().splitlines() if r.startswith("lme010,"))
    assert f"stemmed_token_f1 {float(csv_row.split(',')[-3])!r}" in scores


def test_each_judge_is_followed_by_the_packs_longmemeval_accuracy(lme):
    block = _block(lme)
    lines = _walk_lines(show(str(lme), "lme010"))
    at = next(i for i, line in enumerate(lines) if line.startswith("  over the whole pack, by this judge (autorater/"))
    table = lines[at + 1 : at + 16]
    first = block["passes"][0]
    for name in ("single-session-user", "multi-session", "knowledge-update"):
        (line,) = [t for t in table if t.strip().startswith(name + " ")]
        assert line.split()[1:] == [str(first["by_type"][name]["n"]), f"{block['accuracy_by_type'][name]:.4f}"]
    assert f"{block['task_averaged_accuracy']:.4f}" in next(t for t in table if "task-averaged" in t)
    assert next(t for t in table if t.strip().startswith("overall")).split()[1:] == [
        str(first["n"]),
        f"{block['overall_accuracy']:.4f}",
    ]
    assert next(t for t in table if t.strip().startswith("abstention")).split()[1:] == [
        str(first["abstention_n"]),
        f"{block['abstention_accuracy']:.4f}",
    ]
    assert block["accuracy_by_type"]["multi-session"] == pytest.approx(1 / 3)  # the made pack's types differ


def test_brief_gives_the_type_the_diagnostics_and_the_packs_accuracy(lme):
    block = _block(lme)
    text = show(str(lme), "lme009_abs", brief=True)
    assert "(type 4, multi-session; abstention ('_abs' in its id))" in text
    assert "lexical diagnostics stemmed_token_f1 " in text and "locomo_f1" not in text
    (pack_line,) = [line for line in text.splitlines() if line.startswith("  pack:     ")]
    assert (
        f"overall {block['overall_accuracy']:.4f} (n 20), task-averaged {block['task_averaged_accuracy']:.4f}, "
        f"abstention {block['abstention_accuracy']:.4f} (n 4), multi-session 0.3333 (n 3)"
    ) in pack_line


def test_blame_takes_the_gold_of_type_5_whole(lme):
    # LongMemEval's type 5 is temporal-reasoning, with a gold answer: not LoCoMo's category 5
    lines = _walk_lines(show(str(lme), "lme010"))
    assert "  answer_used_evidence True (gold stems given: 12; missing from the answer: none)" in lines


def test_an_unjudged_pack_says_its_score_is_the_judges(lme, tmp_path):
    pack = tmp_path / "unjudged"
    shutil.copytree(lme, pack)
    shutil.rmtree(pack / "autorater")
    text = show(str(pack), "lme010")
    assert "  no finished judge, so no longmemeval score (run `memorybench autorater PACK judge=longmemeval`)" in text
    assert "over the whole pack" not in text and "  pack:     " not in show(str(pack), "lme010", brief=True)

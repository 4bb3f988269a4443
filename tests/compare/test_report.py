"""`report`: an analysis design -> Markdown, CSV tables, PNG figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from tracking.pack_factory import add_autorater, make_packs

from memorybench import CONF_DIR
from memorybench.compare.report import (
    FIGURES,
    TABLES,
    all_tables,
    bootstrap_interval,
    load_design,
    report_main,
    run_report,
    stems,
)
from memorybench.errors import UserError
from memorybench.benchmarks.locomo.score import normalize_answer

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def packs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    full, summaries = make_packs(root)
    # two judges on the same answers: a lenient one (F1 > 0) and a strict one (F1 > 0.5)
    lenient = add_autorater(full, passes=2)
    strict = add_autorater(full, passes=2, model="strict-judge", threshold=0.5)
    return root, full, summaries, lenient, strict


def write_design(path: Path, packs_root: Path, **extra) -> Path:
    path.write_text(
        yaml.safe_dump({"name": "t", "packs": [str(packs_root)], "bootstrap": {"resamples": 500, "seed": 7}, **extra})
    )
    return path


def _csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _scores(pack: Path) -> list[dict]:
    return _csv(pack / "predictions.csv")


def test_report_writes_markdown_tables_and_figures(packs, tmp_path):
    root, full, summaries, lenient, strict = packs
    design = write_design(tmp_path / "d.yaml", root / "packs")
    report = run_report(design, tmp_path / "out")
    # LoCoMo packs: every table but LongMemEval's retrieval metrics (tests/compare/test_pack_retrieval.py)
    # and another benchmark's accuracy by type (tests/compare/test_report_longmemeval.py)
    locomo_tables = set(TABLES) - {"retrieval", "accuracy_by_type"}
    assert set(report.tables) == locomo_tables and set(report.figures) == set(FIGURES)
    for name in locomo_tables:
        assert (tmp_path / "out" / "tables" / f"{name}.csv").is_file()
    for path in report.figures.values():
        assert path.read_bytes().startswith(PNG) and path.stat().st_size > 5000
    text = report.markdown.read_text()
    for name in locomo_tables:
        assert f"## {name}" in text
    assert "![scores_by_category](figures/scores_by_category.png)" in text
    assert "| full_context / scripted | 1 |" in text

    # LoCoMo F1 by category: the mean of the pack's rows, inside its interval
    table = {(r["condition"], r["category"]): r for r in _csv(report.table_files["scores_by_category"])}
    rows = _scores(full)
    for category in "12345":
        values = [float(r["locomo_f1"]) for r in rows if r["category"] == category]
        row = table[("full_context / scripted", category)]
        assert float(row["locomo_f1"]) == pytest.approx(np.mean(values))
        assert float(row["f1_ci_low"]) <= float(row["locomo_f1"]) <= float(row["f1_ci_high"])
    # two overalls, each over the categories it names: 1-5 (LoCoMo's) and 1-4 (Mem0's basis)
    subsets = json.loads((full / "metrics.json").read_text())["scores"]["locomo_f1"]["subsets"]
    overall = table[("full_context / scripted", "1-4")]
    assert overall["category_name"] == "overall 1-4" and int(overall["n"]) == 8
    assert float(overall["locomo_f1"]) == pytest.approx(subsets["1-4"]["value"])
    assert float(table[("full_context / scripted", "1-5")]["locomo_f1"]) == pytest.approx(subsets["1-5"]["value"])
    assert "all" not in {c for _, c in table}
    # the interval resamples the two conversations, and says so
    assert overall["conversations"] == "2" and "cluster-robust t (CR1), 2 conversations, 1 df" in overall["interval"]
    # J per judge, each in its own column; none where the condition was not judged
    for judge in (lenient, strict):
        assert overall[f"j/{judge}"] != "" and table[("session_summaries / scripted", "1-4")][f"j/{judge}"] == ""
    assert "j" not in overall and overall[f"j/{lenient}"] != overall[f"j/{strict}"]
    assert lenient in text and strict in text  # the report names both judges
    # every judge here failed on one row: J with that failure counted WRONG stands beside J, never above it
    for judge in (lenient, strict):
        assert float(overall[f"j_failed_wrong/{judge}"]) <= float(overall[f"j/{judge}"])

    # the second condition against the first, paired over their questions, with its MDD
    paired = {(r["metric"], r["categories"]): r for r in _csv(report.table_files["paired_differences"])}
    f1 = paired[("locomo_f1", "1-5")]
    assert f1["baseline"] == "full_context / scripted" and f1["condition"] == "session_summaries / scripted"
    assert int(f1["questions"]) == 10 and f1["conversations"] == "2" and f1["protocols"] == "same (open-ended)"
    assert float(f1["difference"]) == pytest.approx(float(f1["b"]) - float(f1["a"]))
    assert ("locomo_f1", "1-4") in paired and not any(m.startswith("j/") for m, _ in paired)  # J: one side unjudged
    # an overall is one test; the categories are a family, their p Holm-adjusted over it (by hand)
    assert f1["family"] == "one test (an overall): not adjusted" and f1["p_adjusted"] == f1["p"]
    cats = [paired[("locomo_f1", str(c))] for c in range(1, 6)]
    assert {r["family"] for r in cats} == {
        "Holm over the 5 category tests of locomo_f1, full_context / scripted vs session_summaries / scripted"
    }
    ps = [float(r["p"]) for r in cats]
    order = sorted(range(5), key=lambda i: ps[i])
    running, holm_p = 0.0, {}
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (5 - rank) * ps[i]))
        holm_p[i] = running
    assert [float(r["p_adjusted"]) for r in cats] == pytest.approx([holm_p[i] for i in range(5)], rel=1e-5)
    assert "the true difference it detects with 80% power" in text and "noise" not in text
    # whether each difference reaches the MDD, per row, and a note per metric and overall naming the pairs that do
    for row in paired.values():
        if row["mdd"] not in ("", "nan") and row["difference"] not in ("", "nan"):
            assert row["exceeds_mdd"] == str(abs(float(row["difference"])) >= float(row["mdd"]))
    detectable = [n for n in report.notes if n.startswith("Detectable differences (locomo_f1, overall 1-5)")]
    exceeds = f1["exceeds_mdd"] == "True"
    assert len(detectable) == 1 and (f"{1 if exceeds else 0} of 1 pair(s)" in detectable[0])
    assert ("session_summaries / scripted - full_context / scripted" in detectable[0]) == exceeds
    assert ("not evidence that they do not differ" in detectable[0]) != exceeds and detectable[0] in text

    refusals = {r["condition"]: r for r in _csv(report.table_files["refusals"])}
    for pack, condition in ((full, "full_context / scripted"), (summaries, "session_summaries / scripted")):
        rows = _scores(pack)
        refused = ["not mentioned" in r["prediction"].lower() for r in rows]
        cat5 = [x for x, r in zip(refused, rows) if r["category"] == "5"]
        rest = [x for x, r in zip(refused, rows) if r["category"] != "5"]
        assert float(refusals[condition]["cat5_refusal_rate"]) == pytest.approx(np.mean(cat5))
        assert float(refusals[condition]["cat1_4_refusal_rate"]) == pytest.approx(np.mean(rest))
        # each a rate: an interval inside [0, 1] over the conversations, with a width even at 0 or 1
        for name in ("cat5", "cat1_4"):
            row = refusals[condition]
            low, high = float(row[f"{name}_ci_low"]), float(row[f"{name}_ci_high"])
            assert 0 <= low <= float(row[f"{name}_refusal_rate"]) <= high <= 1 and high > low
            assert row[f"{name}_interval"].startswith(("Korn-Graubard", "Wilson score"))  # Wilson: one question a conversation

    passes = _csv(report.table_files["judge_passes"])
    assert [(r["condition"], r["judge"]) for r in passes] == [("full_context / scripted", j) for j in sorted((lenient, strict))]
    assert all(r["passes"] == "2" and r["failed_rows"] == "1" for r in passes)
    # J's sd over passes never stands alone: its interval over the conversations is beside it
    for r in passes:
        assert 0 <= float(r["j_ci_low"]) <= float(r["j_ci_high"]) <= 1 and "2 conversations" in r["interval"]

    # two judges on the same rows: pass 1's labels, by hand
    labels = [(float(r["locomo_f1"]) > 0, float(r["locomo_f1"]) > 0.5) for r in _scores(full) if r["category"] != "5"]
    agreement = {r["category"]: r for r in _csv(report.table_files["judge_agreement"])}
    both = agreement["all"]
    assert {both["judge_a"], both["judge_b"]} == {lenient, strict} and int(both["rows"]) == len(labels) == 8
    assert float(both["equal_share"]) == pytest.approx(np.mean([a == b for a, b in labels]))
    assert set(agreement) == {"1", "2", "3", "4", "all"}
    # kappa with its leave-one-conversation-out interval (or none, said why)
    assert both["interval"].startswith("leave-one-conversation-out jackknife, t 1 df, 2 conversations")
    if both["kappa_ci_low"]:
        assert -1 <= float(both["kappa_ci_low"]) <= float(both["kappa"]) <= float(both["kappa_ci_high"]) <= 1


def test_gold_token_drop_counts_stems_in_memory_but_not_in_the_answer(packs, tmp_path):
    root, full, *_ = packs
    report = run_report(write_design(tmp_path / "d.yaml", full, tables=["gold_token_drop"], figures=[]), tmp_path / "out")
    memory = {p.stem: stems(p.read_text()) for p in (full / "memory" / "dumps").iterdir()}
    expected = {}
    for r in _scores(full):
        category = int(r["category"])
        if category == 5:
            continue
        gold = r["gold"].split(";")[0] if category == 3 else r["gold"]
        g = {t for t in stems(gold)}
        in_memory = g & memory[r["sample_id"]]
        dropped = in_memory - stems(r["prediction"])
        tot = expected.setdefault(category, [0, 0])
        tot[0] += len(in_memory)
        tot[1] += len(dropped)
    rows = {r["category"]: r for r in _csv(report.table_files["gold_token_drop"])}
    for category, (in_memory, dropped) in expected.items():
        assert int(rows[str(category)]["in_memory"]) == in_memory
        assert int(rows[str(category)]["dropped"]) == dropped
    assert int(rows["1-4"]["dropped"]) == sum(d for _, d in expected.values()) > 0
    # the answer "Hi Ben! I started pottery last week." keeps the gold stem "potteri"
    assert "potteri" in stems("pottery") and normalize_answer("Self-care, 7:30") == "selfcare 730"


def test_the_same_design_gives_the_same_numbers(packs, tmp_path):
    root, *_ = packs
    design = write_design(tmp_path / "d.yaml", root / "packs", figures=[])
    first = run_report(design, tmp_path / "a")
    second = run_report(design, tmp_path / "b")
    for name, path in first.table_files.items():
        assert path.read_bytes() == second.table_files[name].read_bytes(), name


def test_bootstrap_interval_is_seeded_and_keyed():
    from memorybench.compare.report import Bootstrap

    values = np.linspace(0.0, 1.0, 41)
    boot = Bootstrap(resamples=1000, seed=3)
    assert bootstrap_interval(values, boot, "a") == bootstrap_interval(values, boot, "a")
    assert bootstrap_interval(values, boot, "a") != bootstrap_interval(values, boot, "b")
    low, high = bootstrap_interval(values, boot, "a")
    assert 0.25 < low < 0.5 < high < 0.75
    assert all(np.isnan(bootstrap_interval(np.array([1.0]), boot, "a")))


def test_bad_designs_fail_with_one_line(tmp_path, packs):
    root = packs[0] / "packs"
    with pytest.raises(UserError, match="does not exist"):
        load_design(tmp_path / "missing.yaml")
    with pytest.raises(UserError, match="tables: Value error, unknown table score_by_cat. Tables: scores_by_category"):
        load_design(write_design(tmp_path / "a.yaml", root, tables=["score_by_cat"]))
    with pytest.raises(UserError, match="colour: Extra inputs are not permitted"):
        load_design(write_design(tmp_path / "b.yaml", root, colour="red"))
    with pytest.raises(UserError, match="condition column 'model' is unknown; choices: run_id"):
        run_report(write_design(tmp_path / "c.yaml", root, conditions=["model"]), tmp_path / "out")
    with pytest.raises(UserError, match="no finished pack"):
        run_report(write_design(tmp_path / "d.yaml", root, experiment="nope"), tmp_path / "out")


def test_category_names_are_locomos():
    from memorybench.benchmark import LOCOMO
    from memorybench.compare.report_tables import category_name

    # a LoCoMo report names its kinds and overalls by LoCoMo's record (any record's: test_report_record.py)
    assert [category_name(k, LOCOMO) for k in (*LOCOMO.category_names, *LOCOMO.subsets)] == [
        *LOCOMO.category_names.values(),
        "overall 1-4",
        "overall 1-5 (LoCoMo)",
    ]


@pytest.mark.parametrize("path", sorted((CONF_DIR / "analysis").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_design_is_valid(path):
    design = load_design(path)
    assert design.name == path.stem and design.tables
    if path.stem != "example":  # a named experiment's design reads that experiment's packs
        assert design.experiment == path.stem and (CONF_DIR / "experiment" / f"{path.stem}.yaml").is_file()


def test_example_design_is_valid():
    design = load_design(CONF_DIR / "analysis" / "example.yaml")
    assert design.name == "example" and set(design.tables) == set(all_tables()) and set(design.figures) == set(FIGURES)


def test_report_main(packs, tmp_path, capsys):
    root, *_ = packs
    design = write_design(tmp_path / "d.yaml", root / "packs", conditions=["choice.memory"], figures=["scores_by_category"])
    assert report_main([str(design), "--out", str(tmp_path / "out")]) == 0
    assert "report:" in capsys.readouterr().out
    assert "| full_context |" in (tmp_path / "out" / "report.md").read_text()


def test_categories_restrict_the_report_and_say_so(packs, tmp_path):
    root, full, *_ = packs
    report = run_report(write_design(tmp_path / "d.yaml", root / "packs", figures=[]), tmp_path / "out", categories="1-4")
    table = {(r["condition"], r["category"]): r for r in _csv(report.table_files["scores_by_category"])}
    # no category 5 asked here: the 1-5 overall stays empty rather than carry a 1-4 number
    assert table[("full_context / scripted", "5")]["n"] == "0"
    assert table[("full_context / scripted", "1-5")]["locomo_f1"] == "" and table[("full_context / scripted", "1-4")]["n"] == "8"
    assert "Only categories 1, 2, 3, 4 are reported (categories=1-4)." in report.markdown.read_text()
    with pytest.raises(UserError, match="'1-9' names categories outside LoCoMo's 1-5"):
        run_report(write_design(tmp_path / "e.yaml", root / "packs", categories="1-9"), tmp_path / "out2")


def test_answer_length_is_shown_per_condition_and_bin(packs, tmp_path):
    root, full, *_ = packs
    report = run_report(write_design(tmp_path / "d.yaml", full, tables=["answer_length"], figures=[]), tmp_path / "out")
    rows = {r["length_bin"]: r for r in _csv(report.table_files["answer_length"])}
    answers = [r["prediction"] for r in _scores(full) if r["category"] != "5"]
    lengths = [len(a.split()) for a in answers]
    assert int(rows["all"]["answers"]) == len(answers) == 8
    assert float(rows["all"]["tokens_mean"]) == pytest.approx(np.mean(lengths))
    assert sum(int(r["n"]) for name, r in rows.items() if name != "all") == 8
    assert set(rows) == {"all", "0-5", "6-10", "11-20", "21+"}


def test_compare_and_report_give_one_interval_for_the_same_two_packs(packs, tmp_path):
    """One helper serves every interval: the report's paired row and `compare` agree to the
    last digit, the conversation-level interval and the conditional bootstrap alike."""
    from memorybench.compare.conditions import load_pack_scores, paired_difference
    from memorybench.compare.intervals import Resampling

    root, full, summaries, lenient, _ = packs
    report = run_report(
        write_design(tmp_path / "d.yaml", root / "packs", tables=["paired_differences"], figures=[]), tmp_path / "out"
    )
    row = {(r["metric"], r["categories"]): r for r in _csv(report.table_files["paired_differences"])}[("locomo_f1", "1-5")]
    a, b = load_pack_scores(full, judge=lenient), load_pack_scores(summaries)
    ours = paired_difference([a], [b], resampling=Resampling(resamples=500, seed=7))["locomo_f1"]
    assert float(row["difference"]) == pytest.approx(ours["difference"], abs=1e-6)
    assert float(row["ci_low"]) == pytest.approx(ours["low"], abs=1e-6) and float(row["ci_high"]) == pytest.approx(
        ours["high"], abs=1e-6
    )
    conditional = ours["conditional"]
    assert float(row["conditional_ci_low"]) == pytest.approx(conditional["low"], abs=1e-6)
    assert float(row["conditional_ci_high"]) == pytest.approx(conditional["high"], abs=1e-6)


def test_report_takes_packs_and_conditions_on_the_command_line(packs, tmp_path, capsys):
    """Issue 30, item 5: no design file needed; the command line's conditions override a design's,
    and a pooling refusal says which flag fixes it."""
    root, *_ = packs
    out = tmp_path / "cli"
    assert (
        report_main(["--packs", str(root / "packs"), "--conditions", "choice.memory", "--name", "mine", "--out", str(out)]) == 0
    )
    assert "| full_context |" in (out / "report.md").read_text()
    design = write_design(tmp_path / "d.yaml", tmp_path / "nowhere", conditions=["reader_model"], figures=["scores_by_category"])
    assert (
        report_main(
            [str(design), "--packs", str(root / "packs"), "--conditions", "choice.memory", "--out", str(tmp_path / "over")]
        )
        == 0
    )
    assert "| full_context |" in (tmp_path / "over" / "report.md").read_text()
    with pytest.raises(UserError, match=r"a design file or --packs"):
        report_main([])
    with pytest.raises(UserError, match=r"would pool .* --conditions \.\.\. "):
        report_main(["--packs", str(root / "packs"), "--conditions", "reader_model", "--out", str(tmp_path / "pool")])


def test_the_example_design_keeps_runs_of_different_lengths_apart(tmp_path):
    """Issue 30, item 5: a newcomer's 20-question run and a longer one of the same method are
    two conditions of the example design, not a refusal to pool them."""
    make_packs(tmp_path, memories=("full_context",), name="mine", extra=("max_questions=4",))
    make_packs(tmp_path, memories=("full_context",), name="mine", extra=("max_questions=6",))
    example = yaml.safe_load((CONF_DIR / "analysis" / "example.yaml").read_text())
    design = write_design(
        tmp_path / "d.yaml",
        tmp_path / "packs",
        conditions=example["conditions"],
        replicates=example["replicates"],
        tables=["scores_by_category"],
        figures=[],
    )
    report = run_report(design, tmp_path / "out")
    rows = _csv(report.table_files["scores_by_category"])
    asked: dict[str, int] = {}
    for r in rows:
        if r["category"] in "12345":
            asked[r["condition"]] = asked.get(r["condition"], 0) + int(r["n"])
    assert sorted(asked.values()) == [4, 6], asked


def test_judge_sensitivity_ranks_each_condition_under_each_judge(packs, tmp_path):
    """The same answers under two judges: each judge's figure with its interval, the
    conditions' ranks under it and how many places each moves; no judge-check, so no
    acceptance of wrong answers, said so."""
    import shutil

    root, full, summaries, lenient, strict = packs
    copied = tmp_path / "packs"
    shutil.copytree(root / "packs", copied)
    own_summaries = copied / summaries.relative_to(root / "packs")
    # the summaries are judged too, by the same two judges
    assert add_autorater(own_summaries, passes=2) == lenient
    assert add_autorater(own_summaries, passes=2, model="strict-judge", threshold=0.5) == strict
    report = run_report(write_design(tmp_path / "d.yaml", copied, tables=["judge_sensitivity"], figures=[]), tmp_path / "out")
    rows = {(r["condition"], r["judge"]): r for r in _csv(report.table_files["judge_sensitivity"])}
    conditions = ("full_context / scripted", "session_summaries / scripted")
    assert set(rows) == {(c, j) for c in conditions for j in (lenient, strict)}
    for judge in (lenient, strict):
        figures = {c: float(rows[(c, judge)]["figure"]) for c in conditions}
        for c in conditions:
            row = rows[(c, judge)]
            better = sum(1 for other in conditions if figures[other] > figures[c])
            assert int(row["rank"]) == 1 + better and row["of"] == "2"
            assert 0 <= float(row["ci_low"]) <= figures[c] <= float(row["ci_high"]) <= 1
            assert row["calibration"] == "not calibrated" and row["specific_wrong_accepted"] == ""
    for c in conditions:
        ranks = [int(rows[(c, j)]["rank"]) for j in (lenient, strict)]
        assert int(rows[(c, lenient)]["places_moved"]) == max(ranks) - min(ranks)
    assert set(report.table_files) == {"judge_sensitivity"}  # only the table asked for is made

"""`compare`: seeds of one config (mean ± sd, interval over conversations) and a paired
difference between two conditions, on packs made over real HTTP with the scripted server."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.compare.compare_command import compare_main, format_compare
from memorybench.compare.conditions import (
    load_pack_scores,
    paired_difference,
    parse_categories,
    seed_summary,
)
from memorybench.compare.intervals import Resampling
from memorybench.errors import UserError
from memorybench.stages.autorater import run_autorater
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"

#: scripted answers per reader seed (plumbing: they make the packs differ, nothing more)
ANSWERS = {
    0: {"What did Ana start?": "pottery", "When did Ana move?": "20 May 2023", "What might Ana enjoy?": "Lisbon"},
    1: {"What did Ana start?": "pottery", "How old is Dev's dog?": "5", "What might Cleo enjoy?": "Oslo"},
    2: {"What did Cleo start?": "rowing", "When did Cleo move?": "May 2023"},
}


def _reader(body: dict) -> Reply:
    content = body["messages"][-1]["content"]
    question = content.rsplit("Question: ", 1)[1].split("\n", 1)[0]
    return Reply(ANSWERS.get(body.get("seed"), {}).get(question, "Not mentioned in the conversation"))


def _judge(model: str = "judge-x"):
    def respond(body: dict) -> Reply:
        content = body["messages"][0]["content"]
        generated = content.rsplit("\nGenerated answer: ", 1)[1].split("\n", 1)[0]
        return Reply(json.dumps({"label": "WRONG" if generated.startswith("Not mentioned") else "CORRECT"}), model=model)

    return respond


def _judge_node(server, model: str = "judge-x"):
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {
            "name": "openai_compatible",
            "provider": "openai_compatible",
            "model": model,
            "base_url": server.base_url,
            "api_key_env": None,
            "temperature": 0.0,
            "max_tokens": 256,
            "seed": None,
            "prompt": None,
            "timeout_s": 30.0,
            "max_retries": 0,
            "retry_max_wait_s": 1.0,
            "min_request_interval_s": 0.0,
            "cache": False,
            "n_ctx": None,
        }
    )


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> dict[str, Path]:
    """seed0..seed2: full_context, reader seeds 0-2; summaries: another memory; all judged."""
    root = tmp_path_factory.mktemp("compare")
    made: dict[str, Path] = {}
    runs = {
        "seed0": ["reader.seed=0"],
        "seed1": ["reader.seed=1"],
        "seed2": ["reader.seed=2"],
        "summaries": ["reader.seed=1", "memory=session_summaries"],
    }
    with ScriptedOpenAIServer(responder=_reader) as server, ScriptedOpenAIServer(responder=_judge()) as judge:
        for name, extra in runs.items():
            args = [
                "qa",
                *scripted_reader(server.base_url),
                f"dataset.path={MINI}",
                f"paths.packs={root / name}",
                f"paths.cache={root / 'cache'}",
                *extra,
            ]
            assert main(args) == 0
            (made[name],) = sorted((root / name).glob("*/runs/*"))
            run_autorater(made[name], _judge_node(judge))
    return made


def _reported(pack: Path) -> tuple[float, float]:
    f1 = json.loads((pack / "metrics.json").read_text())["scores"]["locomo_f1"]["overall"]["value"]
    (judged,) = (pack / "autorater").glob("*/autorater_metrics.json")  # the one judge's folder
    j = json.loads(judged.read_text())["j"]["overall"]
    return f1, j


# -- packs ----------------------------------------------------------------------------------------
def test_seed_summary_of_three_seeds(packs):
    seeds = [packs["seed0"], packs["seed1"], packs["seed2"]]
    result = seed_summary(seeds, resampling=Resampling(resamples=1000))
    f1s, js = zip(*(_reported(p) for p in seeds))
    assert len(set(f1s)) > 1  # the seeds differ: the check has teeth
    assert result["locomo_f1"]["values"] == list(f1s)
    assert result["locomo_f1"]["mean"] == pytest.approx(statistics.fmean(f1s))
    assert result["locomo_f1"]["sd"] == pytest.approx(statistics.stdev(f1s))
    assert result["j"]["values"] == list(js) and result["j"]["sd"] == pytest.approx(statistics.stdev(js))
    # the main interval resamples conversations: the mini dataset's 2, so 1 degree of freedom
    interval = result["locomo_f1"]["interval"]
    assert interval["estimate"] == pytest.approx(statistics.fmean(f1s)) and interval["n"] == 10
    assert interval["clusters"] == 2 and "2 conversations, 1 df" in interval["method"]
    assert interval["low"] <= result["locomo_f1"]["mean"] <= interval["high"]
    assert result["j"]["interval"]["n"] == 8 and result["j"]["covers"] == "categories 1-4 (category 5 not asked)"
    assert result["locomo_f1"]["covers"] == "categories 1-5" and result["conversations"] == 2
    # the question-level bootstrap stays beside it, labelled for what it is
    assert "conditional on these 2 conversations" in result["locomo_f1"]["conditional"]["method"]
    assert result == seed_summary(seeds, resampling=Resampling(resamples=1000))


def test_paired_difference_between_two_conditions(packs):
    a, b = packs["seed1"], packs["summaries"]
    result = paired_difference([a], [b], resampling=Resampling(resamples=1000))
    (fa, ja), (fb, jb) = _reported(a), _reported(b)
    assert result["locomo_f1"]["difference"] == pytest.approx(fb - fa)
    assert result["locomo_f1"]["a"] == pytest.approx(fa) and result["locomo_f1"]["b"] == pytest.approx(fb)
    assert result["j"]["difference"] == pytest.approx(jb - ja) and result["j"]["n"] == 8
    assert result["locomo_f1"]["n"] == 10 and result["j_available"] is True
    assert result["locomo_f1"]["clusters"] == 2 and result["locomo_f1"]["mdd"] is not None
    assert result["locomo_f1"]["mdd"] >= 0 and result["protocols_differ"] is False
    assert result == paired_difference([a], [b], resampling=Resampling(resamples=1000))


def test_one_conversation_says_it_has_no_interval(packs, tmp_path):
    """A prefix inside one conversation: no between-conversation uncertainty, said plainly."""
    prefix = _cut(packs["seed0"], tmp_path / "prefix", 5)
    result = seed_summary([prefix], resampling=Resampling(resamples=200))
    interval = result["locomo_f1"]["interval"]
    assert interval["low"] is None and "no between-conversation uncertainty" in interval["note"]
    assert result["conversations"] == 1


def test_categories_restrict_both_sides_and_label_the_overall(packs):
    result = paired_difference(
        [packs["seed1"]], [packs["summaries"]], resampling=Resampling(resamples=200), categories=parse_categories("1-4")
    )
    assert result["questions"] == 8 and result["locomo_f1"]["covers"] == "categories 1-4 (category 5 not asked)"
    whole = paired_difference([packs["seed1"]], [packs["summaries"]], resampling=Resampling(resamples=200))
    assert whole["locomo_f1"]["covers"] == "categories 1-5" and whole["questions"] == 10
    assert parse_categories("1,2,5") == {1, 2, 5} and parse_categories(None) is None
    for bad in ("one-four", "0-4", "6"):
        with pytest.raises(UserError, match="--categories"):
            parse_categories(bad)


def test_conditions_of_different_questions_compare_on_the_common_ones(packs, tmp_path):
    """An own run against a pack that holds fewer questions (a peer's 1-4, a partial file):
    compared on the questions both hold, and the count left out is said."""
    prefix = _cut(packs["seed1"], tmp_path / "prefix", 7)
    result = paired_difference([packs["seed0"]], [prefix], resampling=Resampling(resamples=200))
    assert result["questions"] == 7 and result["only_a"] == 3 and result["only_b"] == 0
    qa, qb = load_pack_scores(packs["seed0"]), load_pack_scores(prefix)
    common = [q for q in qa.question_ids if q in qb.lexical]
    expected = sum(qb.lexical[q] - qa.lexical[q] for q in common) / len(common)
    assert result["locomo_f1"]["difference"] == pytest.approx(expected)


def test_per_question_scores_match_the_pack(packs):
    scores = load_pack_scores(packs["seed0"])
    assert len(scores.lexical) == 10 and len(scores.j) == 8
    assert sum(scores.lexical.values()) / 10 == pytest.approx(_reported(packs["seed0"])[0])
    assert "reader" in scores.config and "judge" not in scores.config
    assert set(scores.conversations.values()) == {"mini-1", "mini-2"} and scores.protocol == "open-ended"


def _cut(pack: Path, to: Path, keep: int) -> Path:
    shutil.copytree(pack, to)
    kept = (to / "predictions.jsonl").read_text().splitlines(keepends=True)[:keep]
    (to / "predictions.jsonl").write_text("".join(kept))
    return to


def test_refusals(packs, tmp_path):
    with pytest.raises(UserError, match="differ in more than their seeds .*memory"):
        seed_summary([packs["seed0"], packs["summaries"]])
    prefix = _cut(packs["seed1"], tmp_path / "prefix", 6)
    with pytest.raises(UserError, match="different questions"):
        seed_summary([packs["seed0"], prefix])
    with pytest.raises(UserError, match="no question in common"):
        paired_difference([packs["seed0"]], [_cut(packs["seed1"], tmp_path / "four", 4)], categories=parse_categories("5"))
    unfinished = tmp_path / "unfinished"
    shutil.copytree(packs["seed0"], unfinished)
    (unfinished / "_SUCCESS").unlink()
    with pytest.raises(UserError, match="not finished"):
        load_pack_scores(unfinished)
    with pytest.raises(UserError, match="resamples=0"):
        seed_summary([packs["seed0"]], resampling=Resampling(resamples=0))
    with pytest.raises(UserError, match="the following arguments are required: packs; usage: memorybench compare"):
        compare_main([])


def test_j_is_left_out_with_the_reason_when_judges_differ(packs, tmp_path):
    other = tmp_path / "other" / packs["seed2"].name
    shutil.copytree(packs["seed2"], other)
    shutil.rmtree(other / "autorater")
    with ScriptedOpenAIServer(responder=_judge("judge-y")) as judge:
        run_autorater(other, _judge_node(judge, model="judge-y"))
    result = seed_summary([packs["seed0"], other], resampling=Resampling(resamples=100))
    assert "j" not in result and "different judges" in result["j_left_out"] and "judge-y" in result["j_left_out"]
    assert result["locomo_f1"]["interval"]["n"] == 10  # LoCoMo F1 is still compared
    difference = paired_difference([packs["seed1"]], [other], resampling=Resampling(resamples=100))
    assert difference["j_available"] is False and "Mem0's pinned judge prompt" in difference["j_left_out"]
    # without an autorater, only LoCoMo F1 is compared
    shutil.rmtree(other / "autorater")
    result = seed_summary([packs["seed0"], other], resampling=Resampling(resamples=100))
    assert result["j_available"] is False and "j" not in result and "no finished autorater" in result["j_left_out"]


def test_question_protocols_that_differ_are_marked(packs, tmp_path):
    locomo = tmp_path / "locomo"
    shutil.copytree(packs["summaries"], locomo)
    config = (locomo / "config.resolved.yaml").read_text()
    assert "prompt: readers/qa_v1.txt" in config
    (locomo / "config.resolved.yaml").write_text(config.replace("prompt: readers/qa_v1.txt", "prompt: locomo"))
    result = paired_difference([packs["seed1"]], [locomo], resampling=Resampling(resamples=100))
    assert result["protocols_differ"] is True and result["protocols"] == {"a": ["open-ended"], "b": ["locomo"]}
    assert "question protocols differ (A open-ended; B locomo)" in format_compare({"difference": result})


def test_compare_main_prints_and_writes_json(packs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert (
        compare_main(
            [str(packs["seed0"]), str(packs["seed1"]), "--vs", str(packs["summaries"]), "--resamples", "200", "--json", str(out)]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "B minus A, paired over 10 questions in 2 conversation(s)" in text
    assert "condition A (full_context / scripted): 10 questions" in text  # what A and B are, in words
    assert "condition B (session_summaries / scripted)" in text and "sd over 1" not in text
    assert "LoCoMo F1 (categories 1-5)" in text and "J (categories 1-4 (category 5 not asked))" in text
    assert "cluster-robust t (CR1), 2 conversations, 1 df" in text and "noise" not in text
    assert "conditional on these 2 conversations" in text
    result = json.loads(out.read_text())
    assert result["schema"] == "compare.v2" and "200 resamples" in result["difference"]["locomo_f1"]["conditional"]["method"]
    f1 = result["difference"]["locomo_f1"]
    # what the MDD is, in words: never "cannot be told from noise"
    verdict = (
        "this difference is significant" + (" although smaller than it" if abs(f1["difference"]) < f1["mdd"] else "")
        if f1["p_two_sided"] < 0.05
        else "this difference is not significant, which does not show there is none "
        "(a true difference below the MDD is detected with less than 80% power)"
    )
    assert (
        f"    minimum detectable difference {f1['mdd']:.4f}: the true difference this design (2 conversations) "
        f"detects with 80% power at two-sided alpha 0.05; {verdict}\n"
    ) in text
    # the question-level bootstrap: an interval only, labelled conditional, no p-value
    c = f1["conditional"]
    assert (
        f"    paired question-level percentile bootstrap (200 resamples), conditional on these 2 conversations: "
        f"[{c['low']:.4f}, {c['high']:.4f}] (an interval only, no p-value)\n"
    ) in text and c["p_two_sided"] is None
    # per category, Holm over the five category tests of LoCoMo F1 (by hand: sorted p times 5, 4, ... made monotone)
    family = f1["by_category"]
    assert family["family"] == "Holm over the 5 category tests of LoCoMo F1 in this comparison"
    assert "    by category (Holm over the 5 category tests of LoCoMo F1 in this comparison):\n" in text
    tests = family["tests"]
    order = sorted(range(len(tests)), key=lambda i: tests[i]["p_two_sided"])
    expected, running = {}, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[i]["p_two_sided"]))
        expected[i] = running
    for i, t in enumerate(tests):
        assert t["p_adjusted"] == pytest.approx(expected[i]) and t["p_adjusted"] >= t["p_two_sided"]
        line = (
            f"      {t['category']} {t['name']:<13} {t['difference']:+.4f} (n {t['n']}, 2 conversations) "
            f"[{t['low']:.4f}, {t['high']:.4f}], p {t['p_text']}, Holm p {expected[i]:.4f}\n"
        )
        assert line in text, line
    assert [t["category"] for t in tests] == [1, 2, 3, 4, 5]
    assert compare_main([str(packs["seed0"]), "--vs", str(packs["summaries"]), "--adjust", "none", "--json", "-"]) == 0
    unadjusted = json.loads(capsys.readouterr().out)["difference"]["locomo_f1"]["by_category"]
    assert unadjusted["family"].startswith("unadjusted: 5 category tests")
    assert all(t["p_adjusted"] == t["p_two_sided"] for t in unadjusted["tests"])
    assert compare_main([str(packs["seed0"]), "--resamples", "200", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["questions"] == 10
    assert compare_main([str(packs["seed0"]), "--vs", str(packs["summaries"]), "--categories", "1-4", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["difference"]["questions"] == 8


def test_answer_lengths_are_shown_and_a_2x_difference_warns(packs, capsys):
    from memorybench.compare.conditions import length_warning

    assert length_warning({"mean": 3.0, "p95": 5}, {"mean": 6.5, "p95": 9}).startswith("answer lengths differ 2.2x")
    assert length_warning({"mean": 3.0, "p95": 5}, {"mean": 6.0, "p95": 9}) is None
    scores = load_pack_scores(packs["seed0"])
    result = seed_summary([packs["seed0"]], resampling=Resampling(resamples=100))
    lengths = sorted(
        len(str(p).split())
        for p in (json.loads(line)["prediction"] for line in (packs["seed0"] / "predictions.jsonl").read_text().splitlines())
    )
    assert result["answer_tokens"]["mean"] == pytest.approx(sum(lengths) / len(lengths))
    assert scores.answer_tokens and max(scores.answer_tokens.values()) == lengths[-1]
    assert compare_main([str(packs["seed0"]), "--resamples", "100"]) == 0
    assert "answer length: mean" in capsys.readouterr().out


def test_j_carries_what_its_judge_accepts_once_calibrated(packs, capsys):
    """Before `judge-check`: "not calibrated"; after it (a prefix, into the runs' paths.cache),
    the same judge's J carries the rates the check measured."""
    from conftest import cli_in_process

    from memorybench.pack.judge_calibration import load_calibration

    result = seed_summary([packs["seed0"]], resampling=Resampling(resamples=100))
    assert result["judge_calibration"] == "not calibrated"
    cache = packs["seed0"].parents[3] / "cache"
    with ScriptedOpenAIServer(responder=_judge()) as judge:
        outcome = cli_in_process(
            [
                "judge-check",
                "judge=openai_compatible",
                f"judge.base_url={judge.base_url}",
                "judge.model=judge-x",
                f"paths.cache={cache}",
                "max_questions=12",
                "--quiet",
            ]
        )
    assert outcome.returncode == 0, outcome.stderr
    identity = load_pack_scores(packs["seed0"]).judge_identity
    calibration = load_calibration(identity, cache)
    assert calibration is not None and calibration.is_prefix
    result = seed_summary([packs["seed0"]], resampling=Resampling(resamples=100))
    assert result["judge_calibration"] == calibration.summary() and "of vague wrong answers" in result["judge_calibration"]
    assert compare_main([str(packs["seed0"]), "--resamples", "100"]) == 0
    assert f"J's judge: Mem0's pinned judge prompt, model judge-x; {calibration.summary()}" in capsys.readouterr().out


def test_compare_lists_every_setting_that_differs_besides_the_factor_and_names_the_writer(tmp_path, capsys):
    """Issue 40, item 3: two conditions that differ in the writer model and in a reader setting
    list both, with each side's value, and warn that more than one group differs; a
    condition's label names its writer."""
    from conftest import FIXTURES, scripted_reader
    from memory.memtest import writer_responder

    from memorybench.cli import main
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        for name, model, tokens in (("a", "writer-small", "64"), ("b", "writer-big", "96")):
            assert (
                main(
                    [
                        "qa",
                        *scripted_reader(reader.base_url),
                        "memory=graph",
                        "writer=openai_compatible",
                        f"writer.base_url={writer.base_url}",
                        f"writer.model={model}",
                        "writer.max_retries=0",
                        f"reader.max_tokens={tokens}",
                        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                        f"paths.packs={tmp_path / 'packs'}",
                        f"paths.cache={tmp_path / 'cache'}",
                        f"name={name}",
                    ]
                )
                == 0
            )
    (a,) = (tmp_path / "packs" / "a" / "runs").iterdir()
    (b,) = (tmp_path / "packs" / "b" / "runs").iterdir()
    capsys.readouterr()
    assert main(["compare", str(a), "--vs", str(b), "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "A and B differ in 2 setting(s): reader.max_tokens 64 -> 96; writer.model writer-small -> writer-big" in out
    assert "warning: more than one group of settings differs" in out
    assert "graph (writer writer-small) / scripted" in out and "graph (writer writer-big) / scripted" in out
    import json

    saved = json.loads((tmp_path / "c.json").read_text("utf-8"))["difference"]["config_differences"]
    assert [d["key"] for d in saved] == ["reader.max_tokens", "writer.model"]

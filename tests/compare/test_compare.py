"""`compare`: seeds of one config (mean ± sd, bootstrap interval) and a paired bootstrap
between two conditions, on packs made over real HTTP with the scripted server."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, scripted_reader
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.stages.autorater import run_autorater
from memorybench.compare.conditions import (
    DEFAULT_RESAMPLES,
    bootstrap_interval,
    compare_main,
    load_pack_scores,
    paired_bootstrap,
    paired_difference,
    seed_summary,
)
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

    return OmegaConf.create({
        "name": "openai_compatible", "provider": "openai_compatible", "model": model, "base_url": server.base_url,
        "api_key_env": None, "temperature": 0.0, "max_tokens": 256, "seed": None, "prompt": None, "timeout_s": 30.0,
        "max_retries": 0, "retry_max_wait_s": 1.0, "min_request_interval_s": 0.0, "cache": False, "n_ctx": None,
    })


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> dict[str, Path]:
    """seed0..seed2: full_context, reader seeds 0-2; summaries: another memory; all judged."""
    root = tmp_path_factory.mktemp("compare")
    made: dict[str, Path] = {}
    runs = {
        "seed0": ["reader.seed=0"], "seed1": ["reader.seed=1"], "seed2": ["reader.seed=2"],
        "summaries": ["reader.seed=1", "memory=session_summaries"],
    }
    with ScriptedOpenAIServer(responder=_reader) as server, ScriptedOpenAIServer(responder=_judge()) as judge:
        for name, extra in runs.items():
            args = ["qa", *scripted_reader(server.base_url), f"dataset.path={MINI}", f"paths.packs={root / name}",
                    f"paths.cache={root / 'cache'}", *extra]
            assert main(args) == 0
            (made[name],) = sorted((root / name).glob("*/runs/*"))
            run_autorater(made[name], _judge_node(judge))
    return made


def _reported(pack: Path) -> tuple[float, float]:
    f1 = json.loads((pack / "metrics.json").read_text())["locomo_f1"]["overall"]
    (judged,) = (pack / "autorater").glob("*/autorater_metrics.json")  # the one judge's folder
    j = json.loads(judged.read_text())["j"]["overall"]
    return f1, j


# -- statistics ---------------------------------------------------------------------------------
def test_bootstrap_is_deterministic_for_a_seed():
    values = np.random.default_rng(7).random(300)
    a = bootstrap_interval(values, resamples=2000, seed=3)
    assert a == bootstrap_interval(values, resamples=2000, seed=3)
    assert a != bootstrap_interval(values, resamples=2000, seed=4)
    assert a["low"] < a["estimate"] < a["high"] and a["estimate"] == pytest.approx(values.mean())
    assert bootstrap_interval(values)["resamples"] == DEFAULT_RESAMPLES == 10_000


def test_bootstrap_interval_has_the_normal_width_on_a_large_sample():
    values = np.random.default_rng(0).normal(0.5, 0.2, size=2000)
    b = bootstrap_interval(values, resamples=4000, seed=1)
    half = 1.96 * values.std(ddof=1) / np.sqrt(values.size)
    assert (b["high"] - b["low"]) / 2 == pytest.approx(half, rel=0.1)


def test_a_constant_sample_gives_a_point_interval():
    b = bootstrap_interval([1.0] * 50, resamples=100)
    assert b["low"] == b["high"] == b["estimate"] == 1.0


def test_paired_bootstrap_of_a_constant_shift():
    a = np.random.default_rng(2).random(100)
    d = paired_bootstrap(a, a + 0.25, resamples=500, seed=0)
    assert d["difference"] == pytest.approx(0.25)
    assert d["low"] == pytest.approx(0.25) and d["high"] == pytest.approx(0.25)
    assert d["share_above_zero"] == 1.0 and d["p_two_sided"] == 0.0
    same = paired_bootstrap(a, a, resamples=500, seed=0)
    assert same["difference"] == 0.0 and same["p_two_sided"] == 1.0


def test_paired_bootstrap_pairs_items():
    # a large shared spread per item cancels in the pairing: the interval stays narrow
    rng = np.random.default_rng(5)
    base = rng.normal(0, 10, size=400)
    d = paired_bootstrap(base, base + 1 + rng.normal(0, 0.1, size=400), resamples=1000, seed=0)
    assert 0.98 < d["low"] < d["difference"] < d["high"] < 1.02


# -- packs ----------------------------------------------------------------------------------------
def test_seed_summary_of_three_seeds(packs):
    seeds = [packs["seed0"], packs["seed1"], packs["seed2"]]
    result = seed_summary(seeds, resamples=1000, seed=0)
    f1s, js = zip(*(_reported(p) for p in seeds))
    assert len(set(f1s)) > 1  # the seeds differ: the check has teeth
    assert result["locomo_f1"]["values"] == list(f1s)
    assert result["locomo_f1"]["mean"] == pytest.approx(statistics.fmean(f1s))
    assert result["locomo_f1"]["sd"] == pytest.approx(statistics.stdev(f1s))
    assert result["j"]["values"] == list(js) and result["j"]["sd"] == pytest.approx(statistics.stdev(js))
    # the interval is over questions of the per-question mean over seeds
    assert result["locomo_f1"]["bootstrap"]["estimate"] == pytest.approx(statistics.fmean(f1s))
    assert result["locomo_f1"]["bootstrap"]["n"] == 10 and result["j"]["bootstrap"]["n"] == 8
    assert result["locomo_f1"]["bootstrap"]["low"] <= result["locomo_f1"]["mean"] <= result["locomo_f1"]["bootstrap"]["high"]
    assert result == seed_summary(seeds, resamples=1000, seed=0)


def test_paired_difference_between_two_conditions(packs):
    a, b = packs["seed1"], packs["summaries"]
    result = paired_difference([a], [b], resamples=1000, seed=0)
    (fa, ja), (fb, jb) = _reported(a), _reported(b)
    assert result["locomo_f1"]["difference"] == pytest.approx(fb - fa)
    assert result["locomo_f1"]["a"] == pytest.approx(fa) and result["locomo_f1"]["b"] == pytest.approx(fb)
    assert result["j"]["difference"] == pytest.approx(jb - ja) and result["j"]["n"] == 8
    assert result["locomo_f1"]["n"] == 10 and result["j_available"] is True
    assert result == paired_difference([a], [b], resamples=1000, seed=0)


def test_per_question_scores_match_the_pack(packs):
    scores = load_pack_scores(packs["seed0"])
    assert len(scores.locomo_f1) == 10 and len(scores.j) == 8
    assert sum(scores.locomo_f1.values()) / 10 == pytest.approx(_reported(packs["seed0"])[0])
    assert "reader" in scores.config and "judge" not in scores.config


def test_refusals(packs, tmp_path):
    with pytest.raises(UserError, match="differ in more than their seeds .*memory"):
        seed_summary([packs["seed0"], packs["summaries"]])
    prefix = tmp_path / "prefix"
    shutil.copytree(packs["seed1"], prefix)
    kept = (prefix / "predictions.jsonl").read_text().splitlines(keepends=True)[:6]
    (prefix / "predictions.jsonl").write_text("".join(kept))
    with pytest.raises(UserError, match="different questions"):
        paired_difference([packs["seed0"]], [prefix])
    with pytest.raises(UserError, match="different questions"):
        seed_summary([packs["seed0"], prefix])
    unfinished = tmp_path / "unfinished"
    shutil.copytree(packs["seed0"], unfinished)
    (unfinished / "_SUCCESS").unlink()
    with pytest.raises(UserError, match="not finished"):
        load_pack_scores(unfinished)
    with pytest.raises(UserError, match="resamples=0"):
        seed_summary([packs["seed0"]], resamples=0)
    with pytest.raises(UserError, match="the following arguments are required: packs; usage: memorybench compare"):
        compare_main([])


def test_j_is_compared_only_under_one_judge(packs, tmp_path):
    other = tmp_path / "other" / packs["seed2"].name
    shutil.copytree(packs["seed2"], other)
    shutil.rmtree(other / "autorater")
    with ScriptedOpenAIServer(responder=_judge("judge-y")) as judge:
        run_autorater(other, _judge_node(judge, model="judge-y"))
    with pytest.raises(UserError, match="different judges"):
        seed_summary([packs["seed0"], other])
    # without an autorater, only LoCoMo F1 is compared
    shutil.rmtree(other / "autorater")
    result = seed_summary([packs["seed0"], other], resamples=100)
    assert result["j_available"] is False and "j" not in result


def test_compare_main_prints_and_writes_json(packs, tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert compare_main([str(packs["seed0"]), str(packs["seed1"]), "--vs", str(packs["summaries"]),
                         "--resamples", "200", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "B minus A, paired over 10 question ids" in text and "LoCoMo F1" in text and "J (cat 1-4)" in text
    result = json.loads(out.read_text())
    assert result["schema"] == "compare.v1" and result["difference"]["locomo_f1"]["resamples"] == 200
    assert compare_main([str(packs["seed0"]), "--resamples", "200", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["questions"] == 10

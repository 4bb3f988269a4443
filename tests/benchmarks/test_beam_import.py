"""Others' BEAM results as packs (issue 42, item 5): `memorybench import --format cognee_beam|amb_beam`.

Cognee's four pinned runs on the 128K tier import as four packs that verify, each question found
in the tier by its text, and the figures its summary states (mean 0.7944, run sd 0.0046, per
question type, kendall_tau) come back bit for bit from the files' per-question values, with the
pinned aggregate_cross_run.py's own functions run here as the check. AMB's BEAM files are not on
our machines: the tests write them in the layout of runner.py (the same as AMB's pinned LoCoMo
file) over the pinned tier. An imported pack is judged again by `judge=beam_official` as a qa
pack is.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from conftest import PINS

from memorybench.answer.imported import REPRODUCTION, Reproduction
from memorybench.benchmarks.beam.data import ABILITIES, read_tier
from memorybench.benchmarks.beam.importer import BeamImport
from memorybench.benchmarks.beam.pins import COGNEE_CONFIG, COGNEE_PINS, COGNEE_RUNS, COGNEE_SUMMARY
from memorybench.cli import main
from memorybench.data.pins import pin_path
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import verify_pack
from memorybench.stages.import_results import import_results

TIER = PINS / "beam" / "chats" / "100K"
RUNS = [pin_path(p) for p in COGNEE_RUNS]
SUMMARY, CONFIG = pin_path(COGNEE_SUMMARY), pin_path(COGNEE_CONFIG)
STATED = json.loads(SUMMARY.read_text("utf-8"))


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _own(root: Path) -> BeamImport:
    rep = PackReader.open(root).record(REPRODUCTION, Reproduction)
    return BeamImport.model_validate(rep.own)


@pytest.fixture(scope="module")
def tier():
    return read_tier(TIER)


@pytest.fixture(scope="module")
def cognee(tmp_path_factory):
    packs = tmp_path_factory.mktemp("cognee") / "packs"
    result = import_results([*RUNS, CONFIG, SUMMARY], "cognee_beam", packs=packs, name="cognee")
    return result, packs


# -- Cognee ---------------------------------------------------------------------------------------------------


def test_the_cognee_pins_are_the_shared_files():
    assert len(COGNEE_PINS) == 11 and all(pin_path(p).is_file() for p in COGNEE_PINS)


def test_cognees_four_runs_are_four_packs_that_verify(cognee, tier):
    result, packs = cognee
    roots = sorted((packs / "cognee" / "runs").iterdir())
    assert len(roots) == 4 and result.created and result.pack_root in roots
    conversation = [q.question_id for q in tier.conversations[1].questions]  # their conversation_id "2"
    judges = set()
    for root in roots:
        assert verify_pack(root) == []
        predictions = _rows(root / "predictions.jsonl")
        assert [p["question_id"] for p in predictions] == conversation
        meta = json.loads((root / "run_meta.json").read_text("utf-8"))
        assert meta["data"]["name"] == "beam_128k" and meta["data"]["pinned"] is True
        assert meta["partial"]["questions"] == 20 and meta["partial"]["of"] == 400
        (folder,) = (root / "autorater").iterdir()
        judge = json.loads((folder / "autorater_meta.json").read_text("utf-8"))
        assert judge["identity"]["protocol"] == "imported" and judge["judge_model_sent"] == "openai/gpt-5"
        assert judge["judge_config"]["profile"] == "beam_paper"
        judges.add(folder.name)
        own = _own(root)
        assert own.profile == "beam_paper" and own.judge_model == "openai/gpt-5" and own.conversations == {"2": "beam-100K-2"}
        assert [r.run_idx for r in own.runs] == [0, 1, 2, 3]
    assert len(judges) == 1  # one judge: the pinned beam_rubric.py's prompt with gpt-5, four times


def test_each_runs_scores_are_the_judge_folders_and_come_back_from_their_reasons(cognee, tier):
    result, _ = cognee
    rep = result.reproduction
    assert rep.metrics["score"].rows.equal == 20 and rep.metrics["score"].rows.mismatched == 0
    run0 = json.loads(gzip.decompress(RUNS[0].read_bytes()))
    by_text = {q.question: q for q in tier.questions.values()}
    (folder,) = (result.pack_root / "autorater").iterdir()
    verdicts = {v["question_id"]: v for v in _rows(folder / "autorater_verdicts.jsonl")}
    for item in run0:
        verdict = verdicts[by_text[item["question"]].question_id]
        assert verdict["score"] == item["metrics"]["beam_rubric"]["score"]
        assert verdict["label_raw"] == item["metrics"]["beam_rubric"]["reason"]
    metrics = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))
    assert metrics["j"]["overall"] == pytest.approx(sum(i["metrics"]["beam_rubric"]["score"] for i in run0) / 20, abs=1e-15)


def _their_aggregate(tmp_path: Path) -> dict:
    """The pinned aggregate_cross_run.py, run on the runs (unzipped, as it reads them), with its one
    import stubbed by the upstream function's mean (metrics_calculator.bootstrap_ci returns np.mean
    of the scores first; its interval is an unseeded bootstrap, left out)."""
    for name in ("cognee", "cognee.eval_framework", "cognee.eval_framework.analysis"):
        sys.modules.setdefault(name, types.ModuleType(name))
    stub = types.ModuleType("cognee.eval_framework.analysis.metrics_calculator")
    stub.bootstrap_ci = lambda scores: (np.mean(scores), math.nan, math.nan)
    sys.modules[stub.__name__] = stub
    try:
        namespace: dict = {"__name__": "aggregate_cross_run"}
        code = (PINS / "peers/cognee-beam/eval/aggregate_cross_run.py").read_text("utf-8")
        exec(compile(code, "aggregate_cross_run.py", "exec"), namespace)  # noqa: S102 - a pinned file, its functions only
    finally:
        for name in (stub.__name__, "cognee.eval_framework.analysis", "cognee.eval_framework", "cognee"):
            if isinstance(sys.modules.get(name), types.ModuleType) and not getattr(sys.modules[name], "__file__", None):
                sys.modules.pop(name, None)
    paths = []
    for run in RUNS:
        plain = tmp_path / run.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(run.read_bytes()))
        paths.append(plain)
    return namespace["aggregate_cross_run"]("hybrid_completion_20_20_qa_v1", 1, paths)


def test_the_summary_comes_back_bit_for_bit_as_their_own_code_gives_it(cognee, tmp_path):
    result, _ = cognee
    own = _own(result.pack_root)
    theirs = _their_aggregate(tmp_path)
    for metric in ("beam_rubric", "kendall_tau"):
        stated, cell = STATED["overall"][metric], own.overall[metric]
        assert theirs["overall"][metric]["mean"] == stated["mean"] == cell.mean.recomputed == cell.mean.stated
        assert theirs["overall"][metric]["run_std"] == stated["run_std"] == cell.run_sd.recomputed
        assert cell.mean.agreement == cell.run_sd.agreement == "equal"
        assert cell.ci_stated == [stated["ci_lower"], stated["ci_upper"]]
    assert (
        own.overall["beam_rubric"].mean.stated == 0.7943749999999999 and round(own.overall["beam_rubric"].mean.stated, 2) == 0.79
    )
    assert round(own.overall["beam_rubric"].run_sd.stated, 3) == 0.005
    for ability, entry in STATED["by_question_type"].items():
        cell = own.by_ability[ability]["beam_rubric"]
        assert cell.mean.recomputed == entry["beam_rubric"]["mean"] == theirs["by_question_type"][ability]["beam_rubric"]["mean"]
        assert cell.run_sd.recomputed == entry["beam_rubric"]["run_std"]
        assert cell.questions == entry["question_count"] == 2
    assert own.by_ability["event_ordering"]["kendall_tau"].mean.agreement == "equal"
    assert not any("NOT reproduced" in n for n in own.notes)
    # the packs' own figures: each run's judge folder, then mean and sd over the four
    means = [r.mean_ours for r in own.runs]
    assert own.overall["beam_rubric"].mean.ours == pytest.approx(statistics.mean(means), abs=1e-15)
    assert own.overall["beam_rubric"].mean.ours_agreement in ("equal", "rounding")
    assert own.overall["beam_rubric"].run_sd.ours == pytest.approx(STATED["overall"]["beam_rubric"]["run_std"], abs=1e-12)


def test_the_command_prints_the_table_and_a_rerun_finds_the_packs(cognee, capsys):
    _, packs = cognee
    capsys.readouterr()
    assert (
        main(
            [
                "import",
                *map(str, RUNS),
                str(SUMMARY),
                str(CONFIG),
                "--format",
                "cognee_beam",
                "--packs",
                str(packs),
                "--name",
                "cognee",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "already imported" in captured.err
    out = captured.out
    assert "overall beam_rubric mean" in out and "0.7943749999999999" in out and "equal" in out
    assert "profile: beam_paper" in out and "openai/gpt-5" in out and "PARTIAL: 20 of 400" in out and "pack: " in out


def test_a_cognee_run_without_some_of_its_conversations_questions_needs_allow_partial(tmp_path):
    items = json.loads(gzip.decompress(RUNS[0].read_bytes()))
    short = tmp_path / "run0.json"
    short.write_text(json.dumps(items[:-1]), "utf-8")
    with pytest.raises(UserError, match="--allow-partial"):
        import_results([short], "cognee_beam", packs=tmp_path / "packs")
    result = import_results([short], "cognee_beam", packs=tmp_path / "packs", allow_partial=True)
    assert verify_pack(result.pack_root) == [] and result.reproduction.partial.questions == 19
    assert not _own(result.pack_root).overall["beam_rubric"].mean.stated  # no summary given: nothing stated


def test_a_cognee_row_the_tier_lacks_is_one_line(tmp_path):
    items = json.loads(gzip.decompress(RUNS[0].read_bytes()))
    items[3]["question"] = "What is the airspeed of an unladen swallow?"
    bad = tmp_path / "run0.json"
    bad.write_text(json.dumps(items), "utf-8")
    with pytest.raises(UserError, match=r"row 3 .*which no question of beam_128k"):
        import_results([bad], "cognee_beam", packs=tmp_path / "packs")


def _mechanical(body):
    """The scripted judge (plumbing, not a judgement): rubric items 1 / 0.5 / 0 by turn, alignments no."""
    from memorybench.testing.scripted_server import Reply

    user = body["messages"][-1]["content"]
    if body["messages"][0]["role"] == "system":
        return Reply("no")
    if '"score"' in user:
        return Reply('{"score": %s, "reason": "scripted"}' % ("1.0", "0.5", "0.0")[len(user) % 3])
    return Reply("1. a fact")


def test_an_imported_pack_is_judged_again_by_the_official_protocol(cognee, tier, tmp_path):
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    result, _ = cognee
    root = result.pack_root
    with ScriptedOpenAIServer(responder=_mechanical) as judge:
        assert (
            main(
                [
                    "autorater",
                    str(root),
                    "--quiet",
                    "judge=openai_compatible",
                    f"judge.base_url={judge.base_url}",
                    "judge.model=gpt-4.1-mini",
                    "judge.protocol=beam_official",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
        bodies = list(judge.requests)
    rubric_items = sum(len(tier.questions[q.question_id].rubric) for q in tier.conversations[1].questions)
    assert sum('"score"' in b["messages"][-1]["content"] for b in bodies) == rubric_items
    assert verify_pack(root) == []
    (folder,) = [f for f in (root / "autorater").iterdir() if f.name.startswith("beam_official")]
    figures = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["figures"]
    official, paper = (figures["profiles"][p] for p in ("beam_official", "beam_paper"))
    assert set(official["per_ability"]) == set(ABILITIES) and official["overall"] is not None
    assert official["overall"] <= paper["overall"]


# -- AMB ---------------------------------------------------------------------------------------------------------


def _amb(tier, questions=None, *, scored=True, split="100k", judge="gemini:gemini-3.5-flash") -> dict:
    """AMB's runner.py output over the tier's questions, as it writes it: query ids
    `<conversation>_<ability>_<index>`, its own conversation names, score = the nugget mean,
    correct = score >= 0.5; one row with no context, so no score (left out of its accuracy)."""
    chosen = questions if questions is not None else [q for c in tier.conversations for q in c.questions]
    results = []
    for n, q in enumerate(chosen):
        gold = tier.questions[q.question_id]
        conversation = f"beam_{q.sample_id.rsplit('-', 1)[1]}x"
        score = [1.0, 0.75, 0.5, 0.0, 2 / 3][n % 5] if scored else None
        if scored and n == 7:
            score = None  # an empty context: runner.py judges nothing
        correct = (score is not None and score >= 0.5) if scored else n % 3 == 0
        results.append(
            {
                "query_id": f"{conversation}_{gold.ability}_{gold.index}",
                "query": q.question,
                "answer": f"An answer to {q.question_id} \u00e9t\u00e9",
                "reasoning": "",
                "context": "" if n == 7 else "## Memory 1\n...",
                "context_tokens": 12,
                "retrieve_time_ms": 3.5,
                "gold_answers": [gold.ideal_response],
                "correct": correct,
                "judge_reason": "empty context \u2014 no memories retrieved"
                if score is None and scored
                else (f"score={score:.3f}" if scored else "one sentence"),
                **({"score": score} if scored else {}),
                "meta": {"question_category": gold.ability, "conversation_id": conversation, "rubric": list(gold.rubric)},
                "raw_response": None,
                "trajectory": None,
                "git_history": None,
                "category_axes": {"Question Category": [gold.ability], "Conversation": [conversation]},
            }
        )
    with_scores = [r["score"] for r in results if r.get("score") is not None]
    accuracy = sum(with_scores) / len(with_scores) if scored else sum(r["correct"] for r in results) / len(results)
    return {
        "dataset": "beam",
        "split": split,
        "category": None,
        "memory_provider": "cognee",
        "run_name": "cognee",
        "mode": "rag",
        "oracle": False,
        "total_queries": len(results),
        "correct": sum(r["correct"] for r in results),
        "accuracy": accuracy,
        "ingestion_time_ms": 1.0,
        "ingested_docs": 3,
        "description": None,
        "answer_llm": "gemini:gemini-3.1-pro-preview",
        "judge_llm": judge,
        "avg_retrieve_time_ms": 3.5,
        "avg_context_tokens": 12.0,
        "results": results,
    }


def _write(path: Path, data: dict) -> Path:
    raw = json.dumps(data, indent=2).encode("utf-8")
    path.write_bytes(gzip.compress(raw) if path.name.endswith(".gz") else raw)
    return path


def test_an_amb_file_imports_and_its_accuracy_comes_back(tier, tmp_path):
    data = _amb(tier)
    path = _write(tmp_path / "100k.json.gz", data)
    result = import_results([path], "amb_beam", packs=tmp_path / "packs", name="amb")
    root = result.pack_root
    assert verify_pack(root) == []
    predictions = _rows(root / "predictions.jsonl")
    assert len(predictions) == 400 and result.reproduction.partial is None
    by_text = {q.question: q.question_id for q in tier.questions.values()}
    answers = {by_text[r["query"]]: r["answer"] for r in data["results"]}
    assert {p["question_id"]: p["prediction"] for p in predictions} == answers
    own = _own(root)
    assert own.profile == "mem0_nugget" and own.judge_model == "gemini:gemini-3.5-flash"
    assert own.overall["accuracy"].mean.stated == data["accuracy"] and own.overall["accuracy"].mean.agreement == "equal"
    assert own.overall["accuracy"].mean.ours == pytest.approx(data["accuracy"], abs=1e-12)
    assert own.overall["correct"].mean.agreement == own.overall["total_queries"].mean.agreement == "equal"
    assert own.conversations["beam_1x"] == "beam-100K-1" and len(own.conversations) == 20
    (folder,) = (root / "autorater").iterdir()
    verdicts = _rows(folder / "autorater_verdicts.jsonl")
    assert sum(v["status"] == "FAILED" for v in verdicts) == 1  # the row without a score, outside the mean as outside AMB's
    meta = json.loads((folder / "autorater_meta.json").read_text("utf-8"))
    assert meta["judge_config"]["profile"] == "mem0_nugget" and meta["judge_model_sent"] == "gemini:gemini-3.5-flash"
    assert result.reproduction.metrics["score"].rows.mismatched == 0


def test_an_amb_file_from_before_scores_is_its_binary_judges(tier, tmp_path):
    data = _amb(tier, scored=False)
    result = import_results([_write(tmp_path / "100k.json", data)], "amb_beam", packs=tmp_path / "packs")
    own = _own(result.pack_root)
    assert own.profile == "amb_binary" and own.overall["accuracy"].mean.agreement == "equal"
    assert verify_pack(result.pack_root) == []


def test_a_partial_amb_file_needs_allow_partial_and_says_so(tier, tmp_path):
    data = _amb(tier, tier.conversations[0].questions)
    path = _write(tmp_path / "100k.json.gz", data)
    with pytest.raises(UserError, match="--allow-partial"):
        import_results([path], "amb_beam", packs=tmp_path / "packs")
    result = import_results([path], "amb_beam", packs=tmp_path / "packs", allow_partial=True)
    assert result.reproduction.partial.questions == 20 and verify_pack(result.pack_root) == []


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["results"][2].update(query_id=d["results"][2]["query_id"][:-1] + "7"), "which no question of beam_128k"),
        (lambda d: d.update(split="1m"), "dataset=beam_1m"),
        (lambda d: d.update(dataset="locomo"), "not BEAM"),
        (lambda d: d["results"][0].pop("correct"), "key 'correct'"),
    ],
)
def test_a_bad_amb_file_is_one_line(tier, tmp_path, change, message):
    data = _amb(tier, tier.conversations[0].questions)
    change(data)
    path = _write(tmp_path / "100k.json.gz", data)
    with pytest.raises(UserError, match=message):
        import_results([path], "amb_beam", packs=tmp_path / "packs", allow_partial=True)

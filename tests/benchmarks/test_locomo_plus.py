"""LoCoMo-Plus as one benchmark package (issue 41, item 5): its stitching follows the authors'
build_conv.py and is reproducible from its seed; its judge sends the bytes the authors'
llm_as_judge.py sends and reads replies as it does; a scripted run verifies and is judged.

The authors' own functions run here from the pinned files (../shared/pins/locomo-plus).
"""

from __future__ import annotations

import importlib
import json
import sys
from types import SimpleNamespace

import pytest
from conftest import PINS, scripted_reader

from memorybench.benchmark import benchmark_of
from memorybench.benchmarks.locomo_plus import BENCHMARK
from memorybench.benchmarks.locomo_plus.data import SEED, load_locomo_plus, stitches
from memorybench.benchmarks.locomo_plus.judge import LocomoPlusJudge, parse_judge_response
from memorybench.benchmarks.locomo_plus.pins import DATA
from memorybench.benchmarks.locomo_plus.stitch import LOCOMO_TIME, stitch
from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

ROOT = PINS / "locomo-plus"


@pytest.fixture(scope="module")
def authors(tmp_path_factory):
    """The authors' modules, imported from the pinned files (build_conv, unified_input, and
    the judge's prompt/utils/llm_as_judge as the package task_eval)."""
    for folder in (ROOT / "data", ROOT / "evaluation_framework"):
        sys.path.insert(0, str(folder))
    try:
        yield SimpleNamespace(
            build_conv=importlib.import_module("build_conv"),
            unified=importlib.import_module("unified_input"),
            judge=importlib.import_module("task_eval.llm_as_judge"),
            utils=importlib.import_module("task_eval.utils"),
        )
    finally:
        for folder in (ROOT / "data", ROOT / "evaluation_framework"):
            sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def samples():
    return load_locomo_plus(PINS / DATA.relpath)


def test_it_is_one_benchmark_with_two_datasets_and_six_categories(samples):
    assert benchmark_of("locomo_plus") is BENCHMARK is benchmark_of("locomo_plus_cognitive")
    assert BENCHMARK.category_names[6] == "Cognitive" and BENCHMARK.category_names[3] == "common-sense"
    assert len(samples) == 10 + 401
    questions = [q for s in samples for q in s.questions]
    assert len(questions) == 1986 + 401 and sum(q.category == 6 for q in questions) == 401


def test_the_stitching_follows_build_conv_py_item_by_item(samples, authors):
    locomo = {s["sample_id"]: s for s in json.loads((PINS / "data" / "locomo10.json").read_text("utf-8"))}
    items = json.loads((PINS / DATA.relpath).read_text("utf-8"))
    by_id = {s.sample_id: s for s in samples}
    for sid, record in stitches().items():
        theirs = authors.build_conv.build_context(items[record.item], locomo[record.conversation])
        ours = by_id[sid]
        assert record.query_time == _locomo(theirs["query_time"]) and record.cue_time == _locomo(theirs["cue_time"])
        # build_conv's cue_session_idx is the last session at or before the cue: ours follows it
        assert record.after_session == (theirs["cue_session_idx"] if theirs["cue_session_idx"] is not None else -1) + 1
        cue = ours.sessions[record.cue_position]
        assert [(t.speaker, t.text) for t in cue.turns] == [(t["speaker"], t["text"]) for t in theirs["cue_turns"]]
        (question,) = ours.questions
        assert question.question == "\n".join(f"{t['speaker']}: {t['text']}" for t in theirs["query_turns"])
        # the stitched dialogue up to the trigger is ours, turn for turn
        dialogue = [(t["speaker"], t["text"]) for t in theirs["dialogue"]][: -len(theirs["query_turns"])]
        assert [(t.speaker, t.text) for s in ours.sessions for t in s.turns] == dialogue
        # the gold the judge reads is the authors' evidence of the item
        assert question.answer == authors.unified._cue_dialogue_to_evidence(
            items[record.item]["cue_dialogue"], locomo[record.conversation]
        )


def _locomo(stamp: str) -> str:
    from datetime import datetime

    from memorybench.benchmarks.locomo_plus.stitch import locomo_time

    return locomo_time(datetime.strptime(stamp, "%Y-%m-%d %H:%M"))


def test_locomo_sessions_are_in_time_order(samples):
    """What placing the cue by counting earlier sessions rests on (build_conv sorts by time)."""
    from datetime import datetime

    for conversation in samples[:10]:
        times = [datetime.strptime(s.date_time.strip(), LOCOMO_TIME) for s in conversation.sessions]
        assert times == sorted(times)


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_picks(samples):
    again = load_locomo_plus(PINS / DATA.relpath)
    assert again == samples
    items = json.loads((PINS / DATA.relpath).read_text("utf-8"))
    mine = [r.conversation for _, r in stitch(items, samples[:10], SEED)]
    other = [r.conversation for _, r in stitch(items, samples[:10], SEED + 1)]
    assert mine == [stitches()[f"plus-{i:03d}"].conversation for i in range(401)] and mine != other


def _row(question, prediction: str):
    return SimpleNamespace(
        question_id=question.question_id,
        category=question.category,
        gold=question.answer,
        question=question.question,
        prediction=prediction,
    )


def test_the_judge_sends_the_authors_bytes(samples, authors):
    """20 rows of all six categories (an int gold, adversarial rows without one, the Cognitive
    rows' cue): each message equals _prepend_conv_prefix(get_judge_prompt(...)) of the pinned code."""
    judge = LocomoPlusJudge.load()
    unified = {(s["category"], s["trigger"]): s for s in authors.unified._process_locomo(str(PINS / "data" / "locomo10.json"))}
    questions = [q for s in samples for q in s.questions]
    chosen = [q for c in range(1, 6) for q in [q for q in questions if q.category == c][:3]]
    chosen += [next(q for q in questions if isinstance(q.answer, int))] + [q for q in questions if q.category == 6][:4]
    assert len(chosen) == 20
    for n, question in enumerate(chosen):
        prediction = f"answer {n}: not mentioned {{braces}}"
        row = _row(question, prediction)
        if question.category == 6:
            evidence, gold = question.answer, ""
        else:
            sample = unified[(BENCHMARK.category_names[question.category], question.question)]
            evidence, gold = sample["evidence"], sample.get("answer") or ""
        theirs = authors.utils._prepend_conv_prefix(
            authors.judge.get_judge_prompt(BENCHMARK.category_names[question.category], evidence, prediction, gold)
        )
        call = judge.request(row, model="gpt-4o-mini", sampling={"temperature": 0.0, "max_tokens": 512})
        assert call.request.messages == ({"role": "user", "content": theirs},), question.question_id
        assert call.request.temperature == 0.0 and call.request.max_tokens == 512 and call.request.response_format is None
        # the stored template and slots rebuild the message (what verify checks)
        assert LocomoPlusJudge.fill(judge.templates[call.template_file], call.slots) == theirs


@pytest.mark.parametrize(
    "reply",
    [
        '{"label": "correct", "reason": "same"}',
        '{"label": "partial", "reason": "close"}',
        '{"reason": "x", "label": "wrong"}',
        '```json\n{"label": "Correct", "reason": "ok"}\n```',
        "The answer is wrong.",
        "partially correct",
        "no idea",
        "",
        '{"label": 3}',
        '{"label": "partial"}',
    ],
)
def test_replies_are_read_as_the_authors_read_them(reply, authors):
    assert parse_judge_response(reply) == authors.judge._parse_judge_response(reply)
    label, _ = parse_judge_response(reply)
    verdict = LocomoPlusJudge.load().verdict(reply)
    if label:
        assert verdict.score == authors.judge.label_to_score(label)
    else:
        assert verdict.status == "FAILED"  # the authors score it 0; here it is a counted failure


def test_a_scripted_run_of_the_cognitive_category_verifies_and_is_judged(tmp_path, capsys):
    with ScriptedOpenAIServer() as reader:
        code = main(
            [
                "qa",
                "dataset=locomo_plus_cognitive",
                *scripted_reader(reader.base_url),
                "max_questions=3",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
                "name=lp",
            ]
        )
    assert code == 0
    (pack,) = (tmp_path / "packs" / "lp" / "runs").iterdir()
    assert verify_pack(pack) == []
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text("utf-8").splitlines()]
    assert [r["sample_id"] for r in rows] == ["plus-000", "plus-001", "plus-002"] and {r["category"] for r in rows} == {6}
    metrics = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert metrics["benchmark"]["name"] == "locomo_plus" and "task_average" not in metrics["scores"]["token_f1"]
    replies = iter(['{"label": "correct", "reason": "a"}', '{"label": "partial", "reason": "b"}', "nothing readable"])
    with ScriptedOpenAIServer(responder=lambda body: Reply(next(replies))) as judge:
        code = main(
            [
                "autorater",
                str(pack),
                "judge=openai_compatible",
                f"judge.base_url={judge.base_url}",
                "judge.model=scripted-judge",
                "judge.protocol=locomo_plus",
            ]
        )
    assert code == 0
    out = capsys.readouterr().out
    assert "6   Cognitive" in out and "0.7500" in out and "1 unreadable, excluded from the figure" in out
    assert verify_pack(pack) == []
    # its figure reaches MLflow and the runs table by its own name, never as Mem0's J
    import pyarrow.parquet as pq

    from memorybench.compare.aggregate import aggregate
    from memorybench.tracking import pack_metrics

    (judge,) = (p.name for p in (pack / "autorater").iterdir())
    (row,) = pq.read_table(aggregate([pack], tmp_path / "collected").runs).to_pylist()
    logged = pack_metrics(pack)
    for figures in (row, logged):
        assert figures[f"locomo_plus_score/{judge}"] == pytest.approx(0.75)
        assert figures[f"locomo_plus_score_Cognitive/{judge}"] == pytest.approx(0.75)
    assert row[f"j_mean/{judge}"] is None and logged[f"locomo_plus_score_pass1/{judge}"] == pytest.approx(0.75)


def test_show_says_how_a_stitched_question_was_built(tmp_path, capsys):
    with ScriptedOpenAIServer() as reader:
        assert (
            main(
                [
                    "qa",
                    "dataset=locomo_plus_cognitive",
                    *scripted_reader(reader.base_url),
                    "max_questions=1",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=lp",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs" / "lp" / "runs").iterdir()
    capsys.readouterr()
    assert main(["show", str(pack), "plus-000-q-0"]) == 0
    out = capsys.readouterr().out
    record = stitches()["plus-000"]
    assert (
        f"built: LoCoMo-Plus item 0 stitched into {record.conversation}: the cue ({record.time_gap}, "
        f"{record.gap_days} days before the trigger) as a session at {record.cue_time}"
    ) in out
    assert f"(seed {SEED})" in out and "evidence: CUE:1, CUE:2" in out


def test_plan_refuses_a_whole_stitched_conversation_for_the_embedded_reader_before_any_call(capsys):
    assert main(["plan", "dataset=locomo_plus_cognitive"]) != 0
    err = capsys.readouterr().err
    assert "memory=full_context hands the reader whole haystacks" in err and "do not fit the local reader's context" in err
    assert main(["plan", "--questions", "dataset=locomo_plus_cognitive", "memory=raw_chunks"]) == 0
    out = capsys.readouterr().out
    assert "plus-000-q-0" in out and "Cognitive" in out

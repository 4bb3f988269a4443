"""`judge-check dataset=beam_128k` over real HTTP: a scripted rubric judge with a known rule
scores BEAM's sets (specific wrong, vague wrong, one-sided, ideal responses) over the first
conversation of the pinned 128K tier; the acceptance it reports is recomputed here from the
pinned files alone (the answers rebuilt from the JSON by the rules judge_sets.py states, each
scored by the rule through score.py's arithmetic, accepted at 0.5). The record says which
benchmark and sets it holds; a BEAM pack's report carries it beside every figure."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict

import pytest
from conftest import PINS, cli_in_process, scripted_reader

from memorybench.benchmarks.beam.score import Equivalence, JudgedQuestion, align, score_question, system_lines
from memorybench.compare.intervals import mean_interval
from memorybench.errors import UserError
from memorybench.pack.judge_calibration import Calibration, load_calibration
from memorybench.stages.judge_check import format_calibration, judge_check_main
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

TIER = PINS / "beam" / "chats" / "100K"
ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
REFERENCE = {"abstention": "ideal_response", "contradiction_resolution": "ideal_answer", "summarization": "ideal_summary"}
REFERENCE |= {"instruction_following": "expected_compliance", "preference_following": "expected_compliance"}
FIRST = 20  # the first conversation's questions


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def item_score(item: str, answer: str) -> float:
    """The scripted judge's rule for one rubric item: the share of the item's words (after its
    "LLM response should ...:" prefix) that the answer holds: 1.0 from 3/4, 0.5 from 2/5."""
    wanted = words(item.split(":", 1)[1] if item.lower().startswith("llm response should") else item)
    share = len(wanted & words(answer)) / len(wanted) if wanted else 0.0
    return 1.0 if share >= 0.75 else 0.5 if share >= 0.4 else 0.0


def same_event(first: str, second: str) -> bool:
    wanted = words(first)
    return bool(wanted) and len(wanted & words(second)) / len(wanted) >= 0.5


def rule_judge(body: dict) -> Reply:
    messages = body["messages"]
    user = messages[-1]["content"]
    if messages[0]["role"] == "system":  # the alignment: First snippet / Second snippet
        first, _, second = user.partition("Second snippet:")
        return Reply("YES" if same_event(first.replace("First snippet:", ""), second) else "NO", model="rubric-x-1")
    item = user.split("- RUBRIC CRITERION (what to check): ", 1)[1].split("\n- RESPONSE TO EVALUATE: ", 1)
    answer = item[1].split("\n\n## EVALUATION RUBRIC:", 1)[0]
    return Reply(json.dumps({"score": item_score(item[0], answer), "reason": "scripted"}), model="rubric-x-1")


def tier_questions() -> list[tuple[str, int, int, str, dict]]:
    """(sample id, conversation number, position within its ability, ability, question) in tier order."""
    out = []
    numbers = sorted(int(p.name) for p in TIER.iterdir() if p.name.isdigit())
    for n in numbers:
        data = json.loads((TIER / str(n) / "probing_questions" / "probing_questions.json").read_text("utf-8"))
        out += [(f"beam-100K-{n}", n, i, ability, q) for ability, qs in data.items() for i, q in enumerate(qs)]
    return out


def expected_answers() -> dict[str, list[tuple[str, str, dict, str]]]:
    """Per set, (question id, ability, question, answer) of the first conversation, by the rules
    judge_sets.py states, straight from the pinned JSON."""
    every = tier_questions()
    numbers = sorted({n for _, n, _, _, _ in every})
    at = {(n, ability, i): q for _, n, i, ability, q in every}
    out: dict[str, list] = defaultdict(list)
    for k, (sample, n, i, ability, q) in enumerate(every[:FIRST]):
        qid = f"{sample}-q-{k}"
        reference = q[REFERENCE.get(ability, "answer")]
        following = numbers[(numbers.index(n) + 1) % len(numbers)]
        other = at[(following, ability, i)]
        out["specific_wrong"].append((qid, ability, q, other[REFERENCE.get(ability, "answer")]))
        topic = q["question"].strip().rstrip("?.! ")
        vague = f'About "{topic}": we went over this in our conversations, and several points and details about it shaped how things went.'
        out["vague_wrong"].append((qid, ability, q, vague))
        if ability == "contradiction_resolution":
            side = next(r for r in q["rubric"] if r.startswith("LLM response should mention:")).split(":", 1)[1].strip()
            out["one_side"].append((qid, ability, q, f"Based on what you told me, {side[0].lower() + side[1:]}."))
        out["gold"].append((qid, ability, q, reference))
    return out


def figure(ability: str, rubric: list[str], answer: str) -> float:
    """The question's beam_paper figure under the rule: its items' mean, event ordering's tau_norm."""
    verdicts = tuple(item_score(item, answer) for item in rubric)
    equivalences = []
    if ability == "event_ordering":
        lines = system_lines(answer)

        def same(r: int, s: int) -> bool:
            equivalences.append(Equivalence(r, s, "YES" if same_event(rubric[r], lines[s]) else "NO"))
            return equivalences[-1].same

        align(rubric, lines, same)
    scored = score_question(JudgedQuestion("q", "s", ability, tuple(rubric), verdicts, answer, tuple(equivalences)))
    return scored.figure("beam_paper")


def judge_args(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return [
        "judge=openai_compatible",
        f"judge.base_url={server.base_url}",
        "judge.model=rubric-x",
        "judge.protocol=beam",
        *extra,
    ]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    with ScriptedOpenAIServer(responder=rule_judge) as server:
        outcome = cli_in_process(
            ["judge-check", *judge_args(server), "dataset=beam_128k", f"paths.cache={cache}", f"max_questions={FIRST}", "--quiet"]
        )
        requests = list(server.requests)
    assert outcome.returncode == 0, outcome.stderr
    (path,) = (cache / "judge_check").glob(f"beam-rubric-x-*/prefix-{FIRST}/calibration.json")
    return Calibration.model_validate_json(path.read_bytes()), requests, path.parent, outcome.stdout


def test_acceptance_per_set_and_ability_is_the_rule_applied_to_the_pinned_files(checked):
    calibration, _, _, _ = checked
    expected = expected_answers()
    assert list(calibration.sets) == ["specific_wrong", "vague_wrong", "one_side", "gold"]
    assert calibration.questions == FIRST and calibration.categories == list(range(1, 11))
    for name, rows in expected.items():
        accepted = [(qid, ability, float(figure(ability, q["rubric"], answer) >= 0.5)) for qid, ability, q, answer in rows]
        rates = calibration.sets[name]
        assert (rates.overall.accepted, rates.overall.judged, rates.overall.failed) == (
            sum(a for *_, a in accepted),
            len(rows),
            0,
        ), name
        for number, ability in enumerate(ABILITIES, 1):
            these = [a for _, ab, a in accepted if ab == ability]
            got = rates.by_category[str(number)]
            assert (got.accepted, got.judged) == (sum(these), len(these)), (name, ability)
        interval = mean_interval([a for *_, a in accepted], ["beam-100K-1"] * len(accepted), kind="rate")
        assert rates.overall.rate == pytest.approx(interval.estimate)
        assert calibration.accepted[name] == rates.overall.rate
    # the rule is no constant: it accepts some ideal responses and rejects some wrong answers
    assert 0 < calibration.gold_accepted and calibration.vague_wrong_accepted < 1
    assert calibration.sets["one_side"].overall.judged == 2  # contradiction resolution only
    assert calibration.sets["gold"].overall.rate > calibration.sets["vague_wrong"].overall.rate


def test_every_call_is_traced_and_sends_the_rows_answer_and_question(checked):
    calibration, requests, folder, _ = checked
    expected = expected_answers()
    traced = 0
    for name, rows in expected.items():
        verdicts = [json.loads(line) for line in (folder / name / "verdicts.jsonl").read_text("utf-8").splitlines()]
        traces = [json.loads(line) for line in (folder / name / "traces.jsonl").read_text("utf-8").splitlines()]
        assert [v["question_id"] for v in verdicts] == [qid for qid, *_ in rows]
        by_question = defaultdict(list)
        for trace in traces:
            by_question[trace["question_id"]].append(trace)
        for qid, _, q, answer in rows:
            rubric = [t for t in by_question[qid] if t["part"].startswith("rubric")]
            assert len(rubric) == len(q["rubric"])  # one call per rubric item
            assert all(t["request"]["slots"]["<llm_response>"] == answer for t in rubric)
            assert all(t["request"]["slots"]["<question>"] == q["question"] for t in rubric)  # ours fills it
        traced += len(traces)
    assert traced == len(requests) == calibration.requests and calibration.cached == 0
    assert calibration.models_answered == ["rubric-x-1"]
    assert (folder / "prompts" / "beam_rubric_judge.txt").is_file()


def test_the_record_says_which_benchmark_sets_and_pass_level(checked):
    calibration, _, folder, stdout = checked
    assert calibration.benchmark == "beam" and calibration.dataset["name"] == "beam_128k"
    assert calibration.identity.protocol == "beam" and calibration.pass_level == 0.5
    assert calibration.is_prefix and calibration.max_questions == FIRST
    assert all(s.source.get("made") for s in calibration.sets.values())
    summary = calibration.summary()
    assert re.fullmatch(
        r"accepts \d+% of vague wrong answers, \d+% of specific ones, \d+% of one-sided contradiction answers, "
        r"\d+% of ideal responses \(abilities 1-10, 20 questions; prefix of 20; accepted: figure >= 0.5 .*\)",
        summary,
    )
    assert "prefix: the 20 questions of abilities 1-10 among BEAM's first 20" in stdout
    assert "an answer counts as accepted when figure >= 0.5" in stdout
    assert "2 contradiction_resolution, 3 event_ordering" in stdout and f"summary: {summary}" in stdout
    assert format_calibration(calibration, folder).splitlines()[0] == stdout.splitlines()[0]
    assert load_calibration(calibration.identity, folder.parents[2]) == calibration


def test_a_locomo_judge_is_refused_on_beams_sets_and_an_unpinned_tier_too(tmp_path):
    with ScriptedOpenAIServer(responder=rule_judge) as server:
        with pytest.raises(UserError, match="judge-check dataset=beam_128k is a beam pack and judge.protocol=mem0") as info:
            judge_check_main(
                [
                    "judge=openai_compatible",
                    f"judge.base_url={server.base_url}",
                    "judge.model=x",
                    "dataset=beam_128k",
                    f"paths.cache={tmp_path}",
                    "max_questions=1",
                ]
            )
        assert "\n" not in info.value.message
        with pytest.raises(UserError, match="pinned 128K tier only .*use dataset=beam_128k"):
            judge_check_main([*judge_args(server), "dataset=beam_1m", f"paths.cache={tmp_path}", "max_questions=1"])
        with pytest.raises(UserError, match="no calibration sets for LongMemEval; use dataset=locomo10 or dataset=beam_128k"):
            judge_check_main([*judge_args(server), "dataset=longmemeval_s", f"paths.cache={tmp_path}"])
        assert not server.requests


def test_a_beam_packs_report_carries_its_judges_acceptance_beside_every_figure(checked, tmp_path):
    """qa over the first conversation, judged by the same judge, calibrated into the run's cache:
    the report's note and every row of `beam_profiles` carry what the judge accepts."""
    from memorybench.cli import main
    from memorybench.compare.report import AnalysisDesign, run_report

    cache = tmp_path / "cache"
    with ScriptedOpenAIServer() as reader:
        args = ["qa", "dataset=beam_128k", *scripted_reader(reader.base_url), f"max_questions={FIRST}"]
        assert main([*args, f"paths.packs={tmp_path / 'packs'}", f"paths.cache={cache}", "name=beam"]) == 0
    (pack,) = (tmp_path / "packs" / "beam" / "runs").iterdir()
    with ScriptedOpenAIServer(responder=rule_judge) as server:
        assert main(["autorater", str(pack), *judge_args(server)]) == 0
        design = AnalysisDesign(name="beam", packs=[str(pack.parent)], conditions=["memory"], figures=[])
        before = run_report(design, tmp_path / "before")
        outcome = cli_in_process(
            ["judge-check", *judge_args(server), "dataset=beam_128k", f"paths.cache={cache}", f"max_questions={FIRST}", "--quiet"]
        )
        assert outcome.returncode == 0, outcome.stderr
    with before.table_files["beam_profiles"].open(newline="") as f:
        assert {r["judge_calibration"] for r in csv.DictReader(f)} == {"not calibrated"}
    report = run_report(design, tmp_path / "after")
    (judge_id,) = [p.name for p in (pack / "autorater").glob("beam-rubric-x-*")]
    calibration = load_calibration(judge_id, cache)
    assert calibration is not None
    assert f"beam_score by judge {judge_id}: {calibration.summary()}." in report.markdown.read_text("utf-8")
    with report.table_files["beam_profiles"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 11  # ten abilities and the overall
    for row in rows:
        assert row["judge_calibration"] == calibration.summary()
        for name in ("vague_wrong", "specific_wrong", "one_side", "gold"):
            assert float(row[f"judge_accepts_{name}"]) == pytest.approx(calibration.sets[name].overall.rate)


def test_a_v1_record_of_a_locomo_check_is_read_as_locomos_v2(checked, tmp_path):
    """A calibration written before v2 (LoCoMo's three sets, no benchmark named) still stands
    beside its judge's J, with the same summary line as when it was written."""
    calibration, _, _, _ = checked
    rate = calibration.sets["vague_wrong"].overall.model_dump(mode="json")
    v1 = {
        "schema": "judge_calibration.v1",
        **calibration.model_dump(
            mode="json",
            include={"judge_id", "identity_sha256", "model_sent", "models_answered", "confidence", "judge_config", "prompt"},
        ),
        "identity": calibration.identity.model_dump(mode="json", by_alias=True),
        "categories": [1, 2, 3, 4],
        "questions": 233,
        "is_prefix": True,
        "max_questions": 304,
        "sets": {
            name: {"overall": {**rate, "rate": value}, "by_category": {}, "source": {}}
            for name, value in (("specific_wrong", 0.11), ("vague_wrong", 0.63), ("gold", 0.98))
        },
        "specific_wrong_accepted": 0.11,
        "vague_wrong_accepted": 0.63,
        "gold_accepted": 0.98,
        "dataset": {"file": "data/locomo10.json"},
        "requests": 699,
        "cached": 0,
        "created_at": "2026-01-01T00:00:00Z",
    }
    folder = tmp_path / "judge_check" / calibration.judge_id / "prefix-304"
    folder.mkdir(parents=True)
    (folder / "calibration.json").write_text(json.dumps(v1), "utf-8")
    found = load_calibration(calibration.judge_id, tmp_path)
    assert found is not None and found.benchmark == "locomo" and found.pass_level is None
    assert (
        found.summary()
        == "accepts 63% of vague wrong answers, 11% of specific ones, 98% of gold (categories 1-4, 233 questions; prefix of 304)"
    )
    assert [found.sets[n].label for n in found.sets] == ["specific wrong", "vague wrong", "gold"]
    assert format_calibration(found).splitlines()[2].startswith("specific wrong")


def test_mlflow_gets_every_sets_acceptance_one_side_included(checked, tmp_path):
    """What a judge accepts goes to MLflow beside its figure: BEAM's one-sided answers too."""
    from memorybench.tracking.pack_figures import calibration_metrics

    calibration, _, folder, _ = checked
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "config.resolved.yaml").write_text(f"paths:\n  cache: {folder.parents[2]}\n", "utf-8")
    figures = calibration_metrics(calibration.judge_id, pack)
    judge = calibration.judge_id
    assert figures[f"judge_one_side_accepted/{judge}"] == calibration.accepted["one_side"]
    assert figures[f"judge_vague_wrong_accepted/{judge}"] == calibration.vague_wrong_accepted
    assert figures[f"judge_gold_accepted/{judge}"] == calibration.gold_accepted
    assert len(figures) == 4  # each set once: gold is the right set, not logged twice

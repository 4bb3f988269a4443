"""`judge-check` over real HTTP: a scripted judge with a known rule labels the LoCoMo audit's
wrong-answer sets and the gold answers; the rates it reports are recomputed here from the
pinned files alone. The calibration is stored and found by the judge's identity; the strict
protocol's prompt is pinned and sent; a prefix check says it is one."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest
from conftest import PINS, cli_in_process

from memorybench.compare.intervals import mean_interval
from memorybench.errors import UserError
from memorybench.pack.autorater_schemas import JudgeIdentity
from memorybench.pack.judge_calibration import Calibration, calibration_line, load_calibration, stored_calibrations
from memorybench.score.judge import STRICT_PROMPT, STRICT_PROMPT_SHA256, StrictJudge, check_judge_template, text_sha256
from memorybench.stages.judge_check import judge_check_main, run_judge_check
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

AUDIT = PINS / "locomo-audit"
SETS = {"specific_wrong": AUDIT / "ap_v1_specific_wrong.json", "vague_wrong": AUDIT / "ap_v2_vague_wrong.json"}
#: the first two conversations of locomo10.json: 199 + 105 questions (every category)
TWO_CONVERSATIONS = 304


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def accepts(gold: str, answer: str) -> bool:
    """The scripted judge's rule: CORRECT when any token of the gold answer is in the answer."""
    return bool(tokens(gold) & tokens(answer))


def slots(body: dict) -> tuple[str, str]:
    """The gold and generated answer a judge request carries (the template's own example comes first)."""
    tail = body["messages"][-1]["content"].rsplit("\nGold answer: ", 1)[1]
    gold, rest = tail.split("\nGenerated answer: ", 1)
    return gold, rest.split("\n\n", 1)[0]


def token_judge(body: dict) -> Reply:
    gold, answer = slots(body)
    return Reply(json.dumps({"label": "CORRECT" if accepts(gold, answer) else "WRONG"}), model="judge-x-2025")


def judge_args(server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return ["judge=openai_compatible", f"judge.base_url={server.base_url}", "judge.model=judge-x", *extra]


def expected_rates(max_questions: int) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """Per set and category, (conversation, accepted) of each question, straight from the pinned
    files: the audit's rows by `locomo_{conversation}_qa{index}`, the questions of LoCoMo in file order."""
    locomo = json.loads((PINS / "data" / "locomo10.json").read_text("utf-8"))
    order = [(c, i) for c, conv in enumerate(locomo) for i in range(len(conv["qa"]))][:max_questions]
    out: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for name, path in {**SETS, "gold": None}.items():
        answers = {}
        if path is not None:
            data = json.loads(path.read_text("utf-8"))
            answers = {row["question_id"]: row["generated_answer"] for rows in data["detailed_results"].values() for row in rows}
        by_category: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for c, i in order:
            qa = locomo[c]["qa"][i]
            if qa["category"] == 5:
                continue
            gold = str(qa["answer"])
            answer = gold if path is None else answers[f"locomo_{c}_qa{i}"]
            by_category[str(qa["category"])].append((locomo[c]["sample_id"], int(accepts(gold, answer))))
        out[name] = dict(by_category)
    return out


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """One scripted check of the first two conversations: its calibration, the requests, the cache folder."""
    cache = tmp_path_factory.mktemp("cache")
    with ScriptedOpenAIServer(responder=token_judge) as server:
        outcome = cli_in_process(
            ["judge-check", *judge_args(server), f"paths.cache={cache}", f"max_questions={TWO_CONVERSATIONS}", "--quiet"]
        )
        requests = list(server.requests)
    assert outcome.returncode == 0, outcome.stderr
    return load_calibration(_identity(), cache), requests, cache, outcome.stdout


def _identity() -> JudgeIdentity:
    from memorybench.data.pins import MEM0_ACCURACY_PROMPT

    return JudgeIdentity(
        protocol="mem0",
        model="judge-x",
        prompt_sha256=MEM0_ACCURACY_PROMPT.sha256,
        temperature=0.0,
        response_format={"type": "json_object"},
    )


def test_rates_per_category_equal_the_rule_applied_to_the_pinned_files(checked):
    calibration, requests, _, _ = checked
    expected = expected_rates(TWO_CONVERSATIONS)
    questions = sum(len(v) for v in expected["gold"].values())
    assert calibration is not None and calibration.questions == questions == 233
    assert len(requests) == 3 * questions  # one call per answer of each set
    for name, by_category in expected.items():
        rates = calibration.sets[name]
        for category in ("1", "2", "3", "4"):
            pairs = by_category[category]
            got = rates.by_category[category]
            assert (got.accepted, got.judged, got.failed) == (sum(a for _, a in pairs), len(pairs), 0), (name, category)
            assert got.rate == pytest.approx(sum(a for _, a in pairs) / len(pairs))
        every = [p for pairs in by_category.values() for p in pairs]
        # an acceptance is a rate: Korn-Graubard's interval, inside [0, 1] and with a width at 0 or 1
        interval = mean_interval([a for _, a in every], [c for c, _ in every], kind="rate")
        assert rates.overall.rate == pytest.approx(interval.estimate)
        assert (rates.overall.low, rates.overall.high) == pytest.approx((interval.low, interval.high))
        assert rates.overall.conversations == 2 and rates.overall.low <= rates.overall.rate <= rates.overall.high
        assert 0 <= rates.overall.low < rates.overall.high <= 1 and rates.overall.method.startswith("Korn-Graubard")
        if name != "gold":
            assert rates.overall.low < rates.overall.rate < rates.overall.high
    assert calibration.gold_accepted == 1.0  # the rule accepts every gold answer against itself
    assert calibration.vague_wrong_accepted == calibration.sets["vague_wrong"].overall.rate
    assert 0 < calibration.specific_wrong_accepted < 1


def test_every_call_is_traced_with_its_verdict(checked):
    calibration, requests, cache, _ = checked
    folder = cache / "judge_check" / calibration.judge_id / f"prefix-{TWO_CONVERSATIONS}"
    assert (folder / "prompts" / "mem0_accuracy_prompt.txt").is_file()
    for name in ("specific_wrong", "vague_wrong", "gold"):
        verdicts = [json.loads(line) for line in (folder / name / "verdicts.jsonl").read_text("utf-8").splitlines()]
        traces = [json.loads(line) for line in (folder / name / "traces.jsonl").read_text("utf-8").splitlines()]
        assert len(verdicts) == len(traces) == calibration.questions
        assert [v["request_sha256"] for v in verdicts] == [t["request_sha256"] for t in traces]
        assert all(t["response"]["model_answered"] == "judge-x-2025" for t in traces)
        assert {v["question_id"].rsplit("-q-", 1)[0] for v in verdicts} == {"conv-26", "conv-30"}
    gold = [json.loads(line) for line in (folder / "gold" / "traces.jsonl").read_text("utf-8").splitlines()]
    assert all(t["request"]["slots"]["gold_answer"] == t["request"]["slots"]["generated_answer"] for t in gold)


def test_a_prefix_check_says_so(checked):
    calibration, _, _, stdout = checked
    assert calibration.is_prefix and calibration.max_questions == TWO_CONVERSATIONS
    assert calibration.summary().endswith("(categories 1-4, 233 questions; prefix of 304)")
    assert re.fullmatch(r"accepts \d+% of vague wrong answers, \d+% of specific ones, 100% of gold \(.*\)", calibration.summary())
    assert "prefix: the 233 questions of categories 1-4 among LoCoMo's first 304" in stdout
    assert any("Prefix check" in note for note in calibration.notes)


def test_stored_and_loaded_by_identity_or_judge_id(checked, tmp_path):
    calibration, _, cache, _ = checked
    identity = _identity()
    assert calibration.judge_id == identity.judge_id and calibration.identity_sha256 == identity.sha256()
    assert load_calibration(identity.judge_id, cache) == calibration
    assert load_calibration(identity.model_dump(exclude={"schema_"}), cache) == calibration
    assert calibration_line(identity, cache) == calibration.summary()
    other = identity.model_copy(update={"temperature": 0.7})
    assert load_calibration(other, cache) is None and calibration_line(other, cache) == "not calibrated"
    assert load_calibration(identity, tmp_path) is None  # another cache: never calibrated there
    assert (
        Calibration.model_validate_json(
            (cache / "judge_check" / identity.judge_id / f"prefix-{TWO_CONVERSATIONS}" / "calibration.json").read_bytes()
        )
        == calibration
    )


def test_a_recheck_is_free_and_the_widest_check_wins(checked, tmp_path):
    _, _, cache, _ = checked
    with ScriptedOpenAIServer(responder=token_judge) as server:
        again = run_judge_check(_node(server), cache_dir=cache, max_questions=TWO_CONVERSATIONS)
        assert not server.requests  # every answer from the response cache
        assert again.cached == again.requests == 3 * 233
        small = run_judge_check(_node(server), cache_dir=cache, max_questions=10)
        assert len(server.requests) == 0  # its questions are the first of the larger prefix: cached too
    assert small.questions == 10 and small.max_questions == 10
    stored = stored_calibrations(_identity(), cache)
    assert [c.max_questions for c in stored] == [TWO_CONVERSATIONS, 10]
    assert load_calibration(_identity(), cache).max_questions == TWO_CONVERSATIONS


def _node(server: ScriptedOpenAIServer, **extra):
    from omegaconf import OmegaConf

    node = {
        "name": "openai_compatible",
        "provider": "openai_compatible",
        "model": "judge-x",
        "base_url": server.base_url,
        "api_key_env": None,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": None,
        "protocol": "mem0",
        "timeout_s": 30.0,
        "max_retries": 0,
        "retry_max_wait_s": 1.0,
        "min_request_interval_s": 0.0,
        "cache": True,
        "n_ctx": None,
    }
    node.update(extra)
    return OmegaConf.create(node)


# -- the strict protocol ---------------------------------------------------------------------
def test_the_strict_prompt_is_pinned_by_its_hash():
    from memorybench import PROMPTS_DIR

    template = (PROMPTS_DIR / STRICT_PROMPT).read_bytes().decode("utf-8")
    assert text_sha256(template) == STRICT_PROMPT_SHA256
    check_judge_template(template)
    assert "\nQuestion: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n" in template
    assert "touches on the same topic" not in template and "specific" in template


def test_an_edited_strict_prompt_is_refused(monkeypatch, tmp_path):
    from memorybench.score import judge

    (tmp_path / "judges").mkdir()
    (tmp_path / STRICT_PROMPT).write_text(
        "Question: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n"
    )
    monkeypatch.setattr(judge, "PROMPTS_DIR", tmp_path)
    with pytest.raises(UserError, match="strict_v2.txt") as info:
        StrictJudge.load()
    assert "\n" not in info.value.message


def test_strict_protocol_sends_its_prompt_and_is_calibrated_the_same_way(tmp_path):
    with ScriptedOpenAIServer(responder=token_judge) as server:
        outcome = cli_in_process(
            [
                "judge-check",
                *judge_args(server, "judge.protocol=strict"),
                f"paths.cache={tmp_path}",
                "max_questions=20",
                "--quiet",
            ]
        )
        requests = list(server.requests)
    assert outcome.returncode == 0, outcome.stderr
    identity = JudgeIdentity(
        protocol="strict",
        model="judge-x",
        prompt_sha256=STRICT_PROMPT_SHA256,
        temperature=0.0,
        response_format={"type": "json_object"},
    )
    calibration = load_calibration(identity, tmp_path)
    assert calibration is not None and calibration.judge_id.startswith("strict-judge-x-")
    assert calibration.prompt["sha256"] == STRICT_PROMPT_SHA256 and calibration.prompt["path"] == "prompts/judges/strict_v1.txt"
    template = StrictJudge.load().template
    assert len(requests) == 3 * 20 and all(r["response_format"] == {"type": "json_object"} for r in requests)
    first = requests[0]["messages"]
    assert len(first) == 1 and first[0]["role"] == "user"
    assert first[0]["content"].startswith(template.split("{question}")[0])
    folder = tmp_path / "judge_check" / calibration.judge_id / "prefix-20"
    assert (folder / "prompts" / "strict_v1.txt").read_text("utf-8") == template
    # mem0's judge of the same model is another judge, not calibrated by this check
    assert load_calibration(_identity(), tmp_path) is None


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["max_questions=abc"], "max_questions='abc' is not a number"),
        (["max_questions=0"], "max_questions=0 must be at least 1"),
        (["reader=local"], "judge-check takes only"),
        (["judge=openai_compatible"], "judge.base_url is required"),
        (["judge.protocol=lenient"], "lenient"),
    ],
)
def test_bad_input_is_one_line(args, expected, tmp_path):
    with pytest.raises(UserError, match=re.escape(expected)) as info:
        judge_check_main([*args, f"paths.cache={tmp_path}"])
    assert "\n" not in info.value.message


def test_missing_audit_files_say_fetch(tmp_path, monkeypatch):
    pins = tmp_path / "pins"
    (pins / "data").mkdir(parents=True)
    (pins / "data" / "locomo10.json").write_bytes((PINS / "data" / "locomo10.json").read_bytes())
    (pins / "prompts").mkdir()
    (pins / "prompts" / "mem0_accuracy_prompt.txt").write_bytes((PINS / "prompts" / "mem0_accuracy_prompt.txt").read_bytes())
    with ScriptedOpenAIServer(responder=token_judge) as server:
        with pytest.raises(UserError, match="memorybench fetch") as info:
            run_judge_check(_node(server), cache_dir=tmp_path / "cache", max_questions=5, pins=pins)
        assert not server.requests
    assert "ap_v1_specific_wrong.json" in info.value.message


def test_every_audit_row_maps_to_our_question_of_the_same_text(conversations):
    from memorybench.stages.judge_check import calibration_rows

    rows = calibration_rows(PINS)
    by_id = {q.question_id: q for conv in conversations for q in conv.questions}
    for name, path in SETS.items():
        data = json.loads(path.read_text("utf-8"))
        audit = {r["question_id"]: r for rs in data["detailed_results"].values() for r in rs}
        assert len(audit) == len(rows[name]) == 1540
        for row in rows[name]:
            conv, index = row.question_id.split("-q-")
            position = next(c for c, conversation in enumerate(conversations) if conversation.sample_id == conv)
            source = audit[f"locomo_{position}_qa{index}"]
            assert source["question"] == row.question == by_id[row.question_id].question
            assert source["generated_answer"] == row.prediction
    assert [r.prediction for r in rows["gold"]] == [str(r.gold) for r in rows["gold"]]


def test_autorater_judges_a_pack_with_the_strict_protocol_in_a_folder_of_its_own(tmp_path):
    from conftest import FIXTURES, scripted_reader

    from memorybench.cli import main
    from memorybench.stages.autorater import run_autorater

    with ScriptedOpenAIServer(responder=lambda body: Reply("May 2023")) as reader:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(reader.base_url),
                    f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=mini",
                ]
            )
            == 0
        )
    (pack,) = sorted((tmp_path / "packs").glob("*/runs/*"))
    with ScriptedOpenAIServer(responder=token_judge) as server:
        strict = run_autorater(pack, _node(server, protocol="strict", cache=False))
        mem0 = run_autorater(pack, _node(server, protocol="mem0", cache=False))
        bodies = list(server.requests)
    template = StrictJudge.load().template
    assert strict["judge_prompt_sha256"] == STRICT_PROMPT_SHA256 != mem0["judge_prompt_sha256"]
    (folder,) = (pack / "autorater").glob("strict-judge-x-*")
    assert (folder / "prompts" / "strict_v1.txt").read_text("utf-8") == template
    meta = json.loads((folder / "autorater_meta.json").read_text("utf-8"))
    assert meta["identity"]["protocol"] == "strict" and meta["prompt"]["path"] == "prompts/judges/strict_v1.txt"
    judged = strict["counts"]["requests"]
    assert judged > 0 and all(b["messages"][0]["content"].startswith(template.split("{question}")[0]) for b in bodies[:judged])
    assert len(list((pack / "autorater").glob("mem0-judge-x-*"))) == 1

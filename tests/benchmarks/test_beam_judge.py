"""BEAM's judge protocols send what they say: `beam_official` the pinned compute_metrics.py's
requests byte for byte (run here, from the pinned file, with a stub model that records them),
`beam` the same prompts with the question filled in and no fact extraction; and its figures,
replayed from the stored calls, are what `score.py` gives for the replies."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest
from conftest import scripted_reader
from benchmarks.beam_authors import ROOT, compute_metrics

from memorybench.benchmarks.beam.data import ABILITIES, read_tier
from memorybench.benchmarks.beam.figures import scores
from memorybench.benchmarks.beam.judge import BeamJudge, BeamOfficialJudge
from memorybench.benchmarks.beam.score import OFFICIAL, PAPER, profile_figures
from memorybench.cli import main
from memorybench.compare.report import AnalysisDesign, run_report
from memorybench.hashing import sha256_text
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

TIER = ROOT / "chats" / "100K"
SAMPLING = {"temperature": 0.0, "max_tokens": None, "seed": None}
RUBRIC_REPLY = '{"score": 0.5, "reason": "half of it"}'


@pytest.fixture(scope="module")
def tier():
    return read_tier(TIER)


def first_of(tier, ability):
    """The first question of conversation 1 of `ability`, as a stored prediction row."""
    conversation = tier.conversations[0]
    question = next(q for q in conversation.questions if tier.questions[q.question_id].ability == ability)
    gold = tier.questions[question.question_id]
    # an answer with a line matching the rubric's second item, a blank line and a line of its own
    answer = (
        f"Here is the order:\n{gold.rubric[1] if len(gold.rubric) > 1 else 'x'}\n\nsomething else"
        if ability == "event_ordering"
        else f"An answer about {ability} with {{braces}} and <rubric_item>."
    )
    return SimpleNamespace(
        question_id=question.question_id,
        sample_id=question.sample_id,
        category=question.category,
        question=question.question,
        gold=question.answer,
        prediction=answer,
    ), gold


def reply_for(request) -> str:
    """The stub's replies, the same for the authors' run and ours: a rubric item gets 0.5; an
    alignment says yes only for the answer line that is the rubric's second item."""
    if isinstance(request, str):
        return RUBRIC_REPLY if '"score"' in request or "<rubric_item>" not in request else "1. a fact"
    user = request[-1]["content"]
    first, _, second = user.partition("Second snippet:")
    return "YES" if first.replace("First snippet:", "").strip(" \n") == second.strip() else "no"


class Recorder:
    """The authors' `model`: every request kept, answered by `reply_for`."""

    def __init__(self) -> None:
        self.requests = []

    def invoke(self, request):
        self.requests.append(request)
        return SimpleNamespace(content=reply_for(request))


def ours(judge, row):
    sent = []

    def ask(call, part):
        messages = call.request.messages
        request = messages[0]["content"] if len(messages) == 1 else [dict(m) for m in messages]
        sent.append((part, request))
        assert judge.fill(judge.templates[call.template_file], call.slots) == messages[-1]["content"]
        return reply_for(request)

    verdict = judge.judge_question(row, ask, model="gpt-4.1-mini", sampling=SAMPLING)
    return sent, verdict


@pytest.mark.parametrize("ability", ABILITIES)
def test_the_official_protocol_sends_the_pinned_codes_requests_byte_for_byte(tier, ability):
    row, gold = first_of(tier, ability)
    authors = Recorder()
    compute_metrics()[f"evaluate_{ability}"](
        rubric=list(gold.rubric), llm_response=row.prediction, probing_question=row.question, model=authors
    )
    judge = BeamOfficialJudge.load()
    judge.bind(TIER)
    sent, verdict = ours(judge, row)
    assert [request for _, request in sent] == authors.requests
    assert sum(part.startswith("rubric") for part, _ in sent) == len(gold.rubric)
    if ability == "event_ordering":
        assert sent[0][0].startswith("facts") and any(part.startswith("align") for part, _ in sent)
        assert "<question>" not in sent[0][1]  # the fact extraction fills it; its reply is thrown away
    else:
        # the judge never sees the question: `<question>` goes out as the literal text
        assert all("<question>" in request for _, request in sent)
        assert verdict.score == 0.0 and verdict.label == ",".join(["0.5"] * len(gold.rubric))  # int(0.5) is 0


@pytest.mark.parametrize("ability", ["abstention", "event_ordering"])
def test_ours_fills_the_question_and_skips_the_discarded_call(tier, ability):
    row, gold = first_of(tier, ability)
    judge = BeamJudge.load()
    judge.bind(TIER)
    sent, verdict = ours(judge, row)
    rubric = [request for part, request in sent if part.startswith("rubric")]
    assert len(rubric) == len(gold.rubric)
    assert all(row.question in r and "<question>" not in r for r in rubric)
    assert not any(part.startswith("facts") for part, _ in sent)
    if ability == "abstention":
        assert verdict.score == 0.5  # beam_paper keeps the judge's 0.5
        # a value is never searched for slots: the answer's own "<rubric_item>" stays as written
        assert all(row.prediction in r for r in rubric)


def test_the_figures_replay_the_stored_calls_as_score_py_scores_them(tier):
    """Every question of conversation 1 judged through `judge_question`; the traces its calls
    would store, replayed by `figures.scores`, give `profile_figures` of the same replies."""
    judge = BeamOfficialJudge.load()
    judge.bind(TIER)
    verdicts, traces = [], []
    for question in tier.conversations[0].questions:
        row = SimpleNamespace(
            question_id=question.question_id,
            sample_id=question.sample_id,
            category=question.category,
            question=question.question,
            gold=question.answer,
            prediction="first line\nsecond line",
        )

        def ask(call, part, row=row):
            text = reply_for(
                call.request.messages[0]["content"]
                if len(call.request.messages) == 1
                else [dict(m) for m in call.request.messages]
            )
            traces.append(
                {
                    "question_id": row.question_id,
                    "pass": 1,
                    "part": part,
                    "request": {"slots": call.slots},
                    "response": {"text": text},
                }
            )
            return text

        judge.judge_question(row, ask, model="m", sampling=SAMPLING)
        verdicts.append(SimpleNamespace(question_id=row.question_id, sample_id=row.sample_id, category=row.category, pass_=1))
    figures = scores(verdicts, 1, "beam_official", None, traces=traces)
    assert figures["official_requests"] and not figures["ours"]
    official, paper = figures["profiles"][OFFICIAL], figures["profiles"][PAPER]
    assert set(official["per_ability"]) == set(ABILITIES)
    # every rubric reply is 0.5: beam_official truncates it to 0, beam_paper keeps it
    rubric_only = [a for a in ABILITIES if a != "event_ordering"]
    assert all(official["per_ability"][a] == 0.0 for a in rubric_only)
    assert all(paper["per_ability"][a] == 0.5 for a in rubric_only)
    # event ordering is tau_norm in both profiles
    assert official["per_ability"]["event_ordering"] == paper["per_ability"]["event_ordering"]
    assert figures["passes"][0][PAPER]["questions"] == profile_figures([], PAPER).questions | {a: 2 for a in ABILITIES}


def mechanical(body):
    """The scripted judge's replies, derived from the request (plumbing, not a judgement): an
    alignment says yes to an exact match, a rubric item gets 1, 0.5 or 0 by its message's hash."""
    messages = body["messages"]
    user = messages[-1]["content"]
    if messages[0]["role"] == "system":
        return Reply(reply_for([dict(m) for m in messages]))
    if '"score"' in user:
        return Reply('{"score": %s, "reason": "scripted"}' % ("1.0", "0.5", "0.0")[int(sha256_text(user)[:8], 16) % 3])
    return Reply("1. a fact")


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """The first conversation answered by the scripted reader, then judged by beam_official."""
    root = tmp_path_factory.mktemp("beam_judged")
    with ScriptedOpenAIServer() as reader:
        assert (
            main(
                [
                    "qa",
                    "dataset=beam_128k",
                    *scripted_reader(reader.base_url),
                    "max_questions=20",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=beam",
                ]
            )
            == 0
        )
    (pack,) = (root / "packs" / "beam" / "runs").iterdir()
    with ScriptedOpenAIServer(responder=mechanical) as judge:
        assert (
            main(
                [
                    "autorater",
                    str(pack),
                    "judge=openai_compatible",
                    f"judge.base_url={judge.base_url}",
                    "judge.model=gpt-4.1-mini",
                    "judge.protocol=beam_official",
                ]
            )
            == 0
        )
        bodies = list(judge.requests)
    (folder,) = (pack / "autorater").glob("beam_official*")
    return pack, folder, bodies


def test_a_judged_pack_verifies_and_every_question_scores_as_the_pinned_code_scores_it(judged):
    pack, folder, bodies = judged
    assert verify_pack(pack) == []
    traces = [json.loads(line) for line in (folder / "traces.jsonl").read_text("utf-8").splitlines()]
    assert len(traces) == len(bodies) and all("max_tokens" not in b for b in bodies)  # the authors send none
    rows = {r["question_id"]: r for r in map(json.loads, (pack / "predictions.jsonl").read_text("utf-8").splitlines())}
    verdicts = [json.loads(line) for line in (folder / "autorater_verdicts.jsonl").read_text("utf-8").splitlines()]
    functions = compute_metrics()
    tier = read_tier(TIER)
    for verdict in verdicts:
        gold, row = tier.questions[verdict["question_id"]], rows[verdict["question_id"]]
        authors = Recorder()
        authors.invoke = lambda request, authors=authors: (
            authors.requests.append(request),
            SimpleNamespace(
                content=mechanical(
                    {"messages": [{"role": "user", "content": request}] if isinstance(request, str) else request}
                ).text
            ),
        )[1]
        theirs = functions[f"evaluate_{gold.ability}"](
            rubric=list(gold.rubric), llm_response=row["prediction"], probing_question=row["question"], model=authors
        )
        expected = theirs["tau_norm"] if gold.ability == "event_ordering" else theirs["llm_judge_score"]
        assert verdict["score"] == pytest.approx(expected, abs=0) or (expected != expected and verdict["score"] is None)
        sent = [t for t in traces if t["question_id"] == verdict["question_id"]]
        assert len(sent) == len(authors.requests)  # the discarded fact extraction and every alignment call too
    metrics = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))
    official, paper = (metrics["figures"]["profiles"][p] for p in (OFFICIAL, PAPER))
    assert set(official["per_ability"]) == set(ABILITIES) and official["overall"] is not None
    assert all(official["per_ability"][a] <= paper["per_ability"][a] for a in ABILITIES)
    assert any(official["per_ability"][a] < paper["per_ability"][a] for a in ABILITIES)  # some 0.5 was given


def test_show_prints_each_rubric_items_verdict_under_both_profiles(judged, capsys):
    pack, _, _ = judged
    capsys.readouterr()
    assert main(["show", str(pack), "beam-100K-1-q-0"]) == 0
    out = capsys.readouterr().out
    assert "BEAM's rubric" in out and "item 0:" in out and "beam_official:" in out and "beam_paper:" in out
    assert "pass 1, rubric 0" in out  # each call of the question, named


def test_the_report_gives_both_profiles_per_ability_with_intervals_and_their_difference(judged, tmp_path):
    pack, folder, _ = judged
    report = run_report(
        AnalysisDesign(name="beam", packs=[str(pack.parent)], conditions=["memory"], figures=[]), tmp_path / "out"
    )
    with report.table_files["beam_profiles"].open(newline="") as f:
        rows = {r["ability"]: r for r in csv.DictReader(f)}
    metrics = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["figures"]["profiles"]
    for ability in ABILITIES:
        row = rows[ability]
        assert int(row["n"]) == 2 and int(row["conversations"]) == 1  # one conversation: no interval can be estimated
        # one pack, one conversation: the question mean is the authors' mean over conversations of its means
        for profile in (OFFICIAL, PAPER):
            assert float(row[profile]) == pytest.approx(metrics[profile]["per_ability"][ability], abs=1e-6)
        assert float(row["difference"]) == pytest.approx(float(row[PAPER]) - float(row[OFFICIAL]), abs=2e-6)
    overall = rows["overall (mean of the ten)"]
    assert float(overall[OFFICIAL]) == pytest.approx(metrics[OFFICIAL]["overall"], abs=1e-6)
    assert "## beam_profiles" in report.markdown.read_text("utf-8")


def test_the_runs_table_and_mlflow_carry_beams_figure_by_its_own_name(judged, tmp_path):
    """`beam_score/<judge id>`: the protocol's profile (beam_official here), both profiles' overalls and
    each ability's figure, from the judge's `figures`; never Mem0's J (its columns null)."""
    import pyarrow.parquet as pq

    from memorybench.compare.aggregate import aggregate
    from memorybench.tracking import pack_metrics

    pack, folder, _ = judged
    judge = folder.name
    own = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["figures"]["profiles"]
    (row,) = pq.read_table(aggregate([pack], tmp_path).runs).to_pylist()
    logged = pack_metrics(pack)
    for figures in (row, logged):
        assert figures[f"beam_score/{judge}"] == pytest.approx(own[OFFICIAL]["overall"])
        assert figures[f"beam_score_paper/{judge}"] == pytest.approx(own[PAPER]["overall"])
        for ability in ABILITIES:
            assert figures[f"beam_score_{ability}/{judge}"] == pytest.approx(own[OFFICIAL]["per_ability"][ability])
    assert row[f"j_mean/{judge}"] is None and not [k for k in logged if k.startswith("j_mean")]
    assert logged[f"beam_score_pass1/{judge}"] == pytest.approx(own[OFFICIAL]["overall"])


def test_show_brief_gives_the_judges_own_figures_over_the_pack(judged, capsys):
    pack, folder, _ = judged
    capsys.readouterr()
    assert main(["show", str(pack), "beam-100K-1-q-0", "--brief"]) == 0
    out = capsys.readouterr().out
    overall = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["figures"]["profiles"][OFFICIAL]["overall"]
    assert f"score by judge {folder.name}: beam_official overall {overall:.4f}" in out

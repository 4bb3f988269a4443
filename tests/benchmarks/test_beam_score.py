"""BEAM's two profiles (issue 42, item 3): on stored verdicts this test writes (0.5s, strings,
fenced and chatty replies, event-ordering alignments with misses and false matches), the pinned
compute_metrics.py and report_results.py, run as they are with a stub judge answering from the
stored replies, give `beam_official` to the last digit; run with `int` read as `float`, they give
`beam_paper`."""

from __future__ import annotations

import json
import math
import random
import warnings

import pytest
from benchmarks.beam_authors import ROOT, StubJudge, compute_metrics, report_results
from scipy.stats import kendalltau

from memorybench.benchmarks.beam.data import ABILITIES, read_tier
from memorybench.benchmarks.beam.prompts import equivalence_messages, official_rubric_prompt
from memorybench.benchmarks.beam.score import (
    OFFICIAL,
    PAPER,
    Equivalence,
    JudgedQuestion,
    align,
    event_ordering_score,
    kendall_tau_b,
    parse_judge_reply,
    profile_figures,
    score_question,
)

ROW = "evaluation-results-run.json"
SCORES = (1.0, 0.5, 0.0, 0.5, 1, 0, "1", "0", 1.0, 0.5)


def reply_text(rng: random.Random, score) -> str:
    body = json.dumps({"score": score, "reason": "the criterion is met in part"})
    return rng.choice([body, f"```json\n{body}\n```", f"Here is my evaluation: {body} That is all.", f"  {body}\n"])


def same_text(rng: random.Random, same: bool) -> str:
    return rng.choice(["YES", "Yes.", "yes, the same event"]) if same else rng.choice(["NO", "No.", "no", "Nope"])


class Stored:
    """One judge pass over every pinned question, as the tests write it: an answer per question,
    a reply per rubric item, a reply per alignment pair."""

    def __init__(self, tier, seed: int = 42) -> None:
        rng = random.Random(seed)
        self.tier = tier
        self.asked = {q.question_id: q.question for c in tier.conversations for q in c.questions}
        self.responses: dict[str, str] = {}
        self.replies: dict[str, str] = {}  # the stub's key (prompt or user message) -> reply
        for record in tier.questions.values():
            if record.ability == "event_ordering":
                response, pairs = self._ordering_answer(rng, record.rubric)
                for (item, line), same in pairs.items():
                    self.replies[equivalence_messages(item, line)[1]["content"]] = same_text(rng, same)
            else:
                response = f"My answer to {record.question_id}:\n{rng.choice(record.rubric)}"
            self.responses[record.question_id] = response
            for item in record.rubric:
                self.replies.setdefault(official_rubric_prompt(item, response), reply_text(rng, rng.choice(SCORES)))

    @staticmethod
    def _ordering_answer(rng: random.Random, rubric: tuple[str, ...]) -> tuple[str, dict[tuple[str, str], bool]]:
        """An answer listing some items, in some order, some reworded, with a preamble or blank
        lines at times; and whether the judge calls each (item, line) pair the same event
        (mostly right, sometimes not)."""
        picked = rng.sample(range(len(rubric)), rng.randint(1, len(rubric)))
        if rng.random() < 0.5:
            picked.sort()
        lines = [rubric[i] if rng.random() < 0.5 else f"{n}. {rubric[i]}, as you said" for n, i in enumerate(picked, 1)]
        origin = dict(zip(lines, picked))
        if rng.random() < 0.3:
            lines.insert(0, "Here is the order in which you brought them up:")
        if rng.random() < 0.3:
            lines = [x for line in lines for x in (line, "")][:-1]
        if rng.random() < 0.2:
            lines.append("Something you never mentioned")
        pairs = {}
        for line in lines:
            for r, item in enumerate(rubric):
                right = origin.get(line) == r
                pairs[(item, line)] = right if rng.random() < 0.9 else not right
        return "\n".join(lines), pairs

    def judged(self, record) -> JudgedQuestion:
        response = self.responses[record.question_id]
        verdicts = tuple(parse_judge_reply(self.replies[official_rubric_prompt(item, response)]).score for item in record.rubric)
        equivalences = ()
        if record.ability == "event_ordering":
            equivalences = tuple(
                Equivalence(r, s, self.replies[equivalence_messages(item, line)[1]["content"]])
                for s, line in enumerate(response.split("\n"))
                for r, item in enumerate(record.rubric)
            )
        return JudgedQuestion(
            record.question_id, record.sample_id, record.ability, record.rubric, verdicts, response, equivalences
        )


@pytest.fixture(scope="module")
def tier():
    return read_tier(ROOT / "chats" / "100K")


@pytest.fixture(scope="module")
def stored(tier):
    return Stored(tier)


def run_authors(stored: Stored, folder, *, keep_half: bool) -> dict[str, dict]:
    """The authors' evaluate_<ability> over every question (as run_evaluation.py calls them), one
    evaluation file per conversation folder as it writes them; their result per question id."""
    functions = compute_metrics(keep_half=keep_half)
    judge = StubJudge(stored.replies, prompt="1. a fact")  # the fact extraction's reply is discarded
    results = {}
    for n, conversation in enumerate(stored.tier.conversations, 1):
        values: dict[str, list] = {}
        for question in conversation.questions:
            record = stored.tier.questions[question.question_id]
            result = functions[f"evaluate_{record.ability}"](
                rubric=list(record.rubric),
                llm_response=stored.responses[question.question_id],
                probing_question=question.question,
                model=judge,
            )
            values.setdefault(record.ability, []).append(result)
            results[question.question_id] = result
        (folder / str(n)).mkdir(parents=True)
        with open(folder / str(n) / ROW, "w", encoding="utf-8") as f:
            json.dump(values, f, indent=4)
    return results


@pytest.mark.parametrize("profile", [OFFICIAL, PAPER])
def test_our_arithmetic_is_the_pinned_codes_to_the_last_digit(tmp_path, tier, stored, profile):
    authors = run_authors(stored, tmp_path, keep_half=profile == PAPER)
    ours = [score_question(stored.judged(tier.questions[qid])) for qid in authors]
    for score in ours:
        theirs = authors[score.question_id]
        if score.ability == "event_ordering":
            assert (score.event.precision, score.event.recall, score.event.f1, score.event.final_score, score.judge_official) == (
                theirs["precision"],
                theirs["recall"],
                theirs["f1"],
                theirs["final_score"],
                theirs["llm_judge_score"],
            )
            assert score.figure(profile) == theirs["tau_norm"]
        else:
            assert score.figure(profile) == theirs["llm_judge_score"], score.question_id
    rows, table, columns = report_results(tmp_path, [ROW])
    assert rows == [ROW] and columns == list(ABILITIES)
    figures = profile_figures(ours, profile)
    assert [figures.per_ability[a] for a in ABILITIES] == table[0]  # float equality: every digit
    assert figures.overall == sum(table[0]) / 10 and not figures.failures
    assert set(figures.conversations.values()) == {20} and set(figures.questions.values()) == {40}


def test_the_profiles_differ_only_where_the_judge_gave_a_half(tier, stored):
    scores = [score_question(stored.judged(q)) for q in tier.questions.values()]
    halves = [s for s in scores if s.ability != "event_ordering" and any(i.paper == 0.5 for i in s.items)]
    assert len(halves) > 100
    for s in scores:
        if s in halves:
            assert s.figure(PAPER) > s.figure(OFFICIAL)
        else:
            assert s.figure(PAPER) == s.figure(OFFICIAL)
    official, paper = profile_figures(scores, OFFICIAL), profile_figures(scores, PAPER)
    assert official.per_ability["event_ordering"] == paper.per_ability["event_ordering"]
    assert all(paper.per_ability[a] > official.per_ability[a] for a in ABILITIES if a != "event_ordering")


def test_kendall_tau_b_is_scipys_bit_for_bit():
    rng = random.Random(7)
    for _ in range(3000):
        size = rng.randint(0, 14)
        x = [rng.randint(1, rng.randint(1, 8)) for _ in range(size)]
        y = [rng.randint(1, rng.randint(1, 8)) for _ in range(size)]
        with warnings.catch_warnings():  # scipy warns where it returns NaN (fewer than two values)
            warnings.simplefilter("ignore")
            theirs = float(kendalltau(x, y, variant="b", method="auto").statistic)
        ours = kendall_tau_b(x, y)
        assert (math.isnan(ours) and math.isnan(theirs)) or ours.hex() == theirs.hex(), (x, y)


def _exact_judge(reference, lines):
    """A judge that calls a line the same event as an item only when the texts are equal."""
    return StubJudge({equivalence_messages(r, s)[1]["content"]: "YES" if r == s else "NO" for r in reference for s in lines})


@pytest.mark.parametrize(
    "answer, tau_norm",
    [
        ("a\nb\nc", 1.0),  # the three events in order
        ("c\nb\na", 0.0),  # reversed
        ("Here is the order:\na\nb\nc", 0.5),  # in order, after one line of preamble
        ("a\n\nb\n\nc", (4 / 6 + 1) / 2),  # in order, blank lines between
        ("I do not know.", (-3 / math.sqrt(6) / math.sqrt(3) + 1) / 2),  # nothing: still 0.146
        ("a", (2 / math.sqrt(3) / math.sqrt(2) + 1) / 2),  # the first event alone: 0.908 (F1 is not read)
        ("c", (-2 / math.sqrt(3) / math.sqrt(2) + 1) / 2),  # the last event alone: 0.092
    ],
)
def test_event_ordering_scores_every_line_of_the_answer(answer, tau_norm):
    """The official figure splits the answer on newlines and ranks every line: a preamble or a
    blank line is an event of its own. Our numbers and the authors' agree on each."""
    reference = ["a", "b", "c"]
    lines = answer.split("\n")
    theirs = compute_metrics()["event_ordering_score"](
        reference_list=reference, system_list=lines, align_type="llm", llm=_exact_judge(reference, lines)
    )
    alignment = align(reference, lines, lambda r, s: reference[r] == lines[s])
    ours = event_ordering_score(alignment.reference, alignment.system)
    assert ours.tau_norm == theirs["tau_norm"] == pytest.approx(tau_norm)


def test_a_one_item_union_is_nan_as_in_the_authors_files():
    with pytest.warns(RuntimeWarning, match="too small"):  # scipy: a sample too small, NaN
        theirs = compute_metrics()["event_ordering_score"](
            reference_list=["only"], system_list=["only"], align_type="llm", llm=_exact_judge(["only"], ["only"])
        )
    judged = JudgedQuestion("q", "s", "event_ordering", ("only",), (1.0,), "only", (Equivalence(0, 0, "yes"),))
    score = score_question(judged)
    assert math.isnan(theirs["tau_norm"]) and math.isnan(score.figure(OFFICIAL))
    assert math.isnan(profile_figures([score], OFFICIAL).per_ability["event_ordering"])


def test_a_score_the_official_int_cannot_read_is_a_failure_not_a_zero():
    judge = StubJudge(prompt='{"score": "0.5", "reason": "partly"}')
    with pytest.raises(ValueError):  # int("0.5"): the authors' run stops here
        compute_metrics()["evaluate_abstention"](rubric=["x"], llm_response="r", probing_question="q", model=judge)
    score = score_question(JudgedQuestion("q", "s", "abstention", ("x", "y"), ("0.5", 1.0)))
    assert score.figure(OFFICIAL) is None and score.figure(PAPER) == 0.75
    assert "'0.5' is not a score" in score.failures[OFFICIAL] and PAPER not in score.failures
    figures = profile_figures([score], OFFICIAL)
    assert figures.failures == {"q": score.failures[OFFICIAL]} and figures.per_ability == {}


def test_replies_are_read_as_parse_json_response_reads_them():
    parse = compute_metrics()["parse_json_response"]
    replies = [
        '{"score": 0.5}',
        '```json\n{"score": 1.0, "reason": "x"}\n```',
        '```\n{"score": 0}\n```',
        'Sure. {"score": 0.0, "reason": "no"} Done.',
        '{"score": 1.0, "reason": "a {nested} brace"}',
        '[{"score": 1}]',
        '{"reason": "no score"}',
        "no json at all",
        '```json\n{"score": 1.0,\n```',
        '{"score": 1.0} and {"score": 0.0}',
    ]
    for reply in replies:
        ours = parse_judge_reply(reply)
        try:
            theirs = parse(reply.strip())["score"]
        except (ValueError, KeyError, TypeError):
            assert ours.score is None and ours.error, reply
        else:
            assert ours.error is None and ours.score == theirs and type(ours.score) is type(theirs), reply


def test_a_prefix_has_per_ability_figures_with_their_n_and_no_overall(tier, stored):
    first = [score_question(stored.judged(tier.questions[q.question_id])) for q in tier.conversations[0].questions[:5]]
    figures = profile_figures(first, OFFICIAL)
    assert figures.overall is None and set(figures.per_ability) == {"abstention", "contradiction_resolution", "event_ordering"}
    assert figures.conversations == {"abstention": 1, "contradiction_resolution": 1, "event_ordering": 1}
    assert figures.questions == {"abstention": 2, "contradiction_resolution": 2, "event_ordering": 1}

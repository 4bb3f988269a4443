"""LongMemEval's format read into the shared records: one haystack per question, gold and
`has_answer` scorer-side, a malformed file one line naming the place."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench.benchmark import LONGMEMEVAL, benchmark_of  # noqa: E402
from memorybench.benchmarks.longmemeval.data import TYPES, load_longmemeval  # noqa: E402
from memorybench.data.source import load_dataset, resolve_dataset  # noqa: E402
from memorybench.errors import DataError  # noqa: E402


@pytest.fixture()
def lme(tmp_path) -> Path:
    return make_longmemeval(tmp_path / "lme.json")


def test_each_question_is_a_haystack_of_its_own(lme):
    haystacks = load_longmemeval(lme)
    assert len(haystacks) == 20 and all(len(h.questions) == 1 for h in haystacks)
    first = haystacks[0]
    (q,) = first.questions
    assert first.sample_id == q.question_id == q.sample_id == "lme000"
    assert (first.speaker_a, first.speaker_b) == ("user", "assistant")
    # file order kept (the oracle's ids are not sorted by time); ids and dates ride along
    assert [s.session_id for s in first.sessions] == ["answer_000_a", "noise_000_b", "noise_000_c"]
    assert first.sessions[0].date_time == "2023/05/20 (Sat) 10:15" and first.sessions[0].index == 1
    assert first.sessions[0].turns[0].speaker == "user" and first.sessions[0].turns[0].dia_id == "answer_000_a:0"
    # gold, evidence turns and answer sessions are the question's, scorer-side
    assert q.answer == "Lisbon" and q.evidence == ("answer_000_a:0",) and q.answer_session_ids == ("answer_000_a",)
    assert q.question_type == TYPES[q.category] == "single-session-user" and q.question_date == "2023/06/01 (Thu) 12:00"
    assert q.asked().question_date == q.question_date and not hasattr(q.asked(), "answer")


def test_types_abstention_and_an_integer_answer(lme):
    questions = [h.questions[0] for h in load_longmemeval(lme)]
    assert {q.question_type for q in questions} == set(TYPES.values())
    abstention = [q for q in questions if q.abstention]
    assert len(abstention) == 4 and all(q.question_id.endswith("_abs") and not q.answer_session_ids for q in abstention)
    assert any(isinstance(q.answer, int) for q in questions)


def test_has_answer_never_reaches_a_turn(lme):
    for haystack in load_longmemeval(lme):
        for session in haystack.sessions:
            for turn in session.turns:
                assert "has_answer" not in repr(turn) and not hasattr(turn, "has_answer")


def test_the_benchmark_reads_its_datasets(lme):
    assert benchmark_of("longmemeval_oracle") is LONGMEMEVAL and LONGMEMEVAL.unit == "question"
    assert LONGMEMEVAL.units(500) == "500 questions"
    assert [h.sample_id for h in load_dataset(lme, "longmemeval_s")] == [h.sample_id for h in load_longmemeval(lme)]
    path, info = resolve_dataset(OmegaConf.create({"name": "longmemeval_oracle", "path": str(lme)}), None)
    assert path == lme and info["pinned"] is False and len(info["sha256"]) == 64 and info["name"] == "longmemeval_oracle"


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d[0].pop("haystack_dates"), "missing key 'haystack_dates'"),
        (lambda d: d[0].update(question_type="single-hop"), "question_type 'single-hop' is not one of single-session-user"),
        (lambda d: d[0]["haystack_sessions"][1].append({"role": "system", "content": "x"}), "role 'user' or 'assistant'"),
        (lambda d: d[0]["haystack_dates"].pop(), "must be non-empty lists of one length, got 3, 2 and 3"),
        (lambda d: d[1].update(question_id=d[0]["question_id"]), "occurs twice"),
        (lambda d: d[0].update(question_id="../x"), "cannot be a folder or file name"),
    ],
)
def test_a_malformed_file_is_one_line_naming_the_place(lme, edit, message):
    data = json.loads(lme.read_text())
    edit(data)
    lme.write_text(json.dumps(data))
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        load_longmemeval(lme)
    assert "\n" not in str(info.value)

"""The loader on the real pinned file, and one-line errors on broken copies of it."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.data import iter_questions
from memorybench.errors import DataError


def test_real_file_counts_match_the_release(conversations):
    assert len(conversations) == 10
    assert sum(len(c.sessions) for c in conversations) == 272
    assert sum(c.turn_count for c in conversations) == 5882
    questions = list(iter_questions(conversations))
    assert len(questions) == 1986
    assert Counter(q.category for q in questions) == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}


def test_question_ids_follow_source_order(conversations, locomo_raw):
    questions = list(iter_questions(conversations))
    expected = [f"{c['sample_id']}-q-{i}" for c in locomo_raw for i in range(len(c["qa"]))]
    assert [q.question_id for q in questions] == expected
    assert [q.question for q in questions] == [row["question"] for c in locomo_raw for row in c["qa"]]


def test_gold_quirks_are_kept_raw(conversations):
    questions = list(iter_questions(conversations))
    cat5 = [q for q in questions if q.category == 5]
    assert sum(1 for q in cat5 if q.answer is None) == 444
    assert all(q.adversarial_answer for q in cat5 if q.answer is None)
    ints = [q for q in questions if isinstance(q.answer, int)]
    assert len(ints) == 6 and {q.sample_id for q in ints} == {"conv-26"}
    assert any(isinstance(q.answer, str) and q.answer.startswith(" ") for q in questions)
    assert any(isinstance(q.answer, str) and "\u200b" in q.answer for q in questions)


def test_sessions_are_lists_sorted_by_number_with_their_dates(conversations, locomo_raw):
    conv26 = conversations[0]
    raw = locomo_raw[0]["conversation"]
    # conv-26 has date keys up to session_35 but only 19 sessions
    assert any(k == "session_35_date_time" for k in raw)
    assert [s.index for s in conv26.sessions] == list(range(1, 20))
    assert conv26.sessions[0].date_time == "1:56 pm on 8 May, 2023"
    for conversation in conversations:
        indexes = [s.index for s in conversation.sessions]
        assert indexes == sorted(indexes)


def test_image_turns_render_their_caption(conversations):
    captioned = [t for c in conversations for s in c.sessions for t in s.turns if t.blip_caption]
    assert len(captioned) == 1226
    assert captioned[0].render().endswith(f" [image: {captioned[0].blip_caption}]")


def test_asked_question_has_no_gold_slot(conversations):
    asked = conversations[0].questions[0].asked()
    # when it is asked is not gold (LongMemEval's question_date; None for LoCoMo)
    assert set(asked.__slots__) == {"question_id", "sample_id", "category", "question", "question_date"}
    assert asked.question_date is None


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")
    return path


def _mutations(raw: list[dict]):
    """(description, mutate) pairs; each mutation breaks one thing of a copy of the file."""

    def drop(*keys):
        def mutate(data):
            target = data[1]
            for k in keys[:-1]:
                target = target[k]
            del target[keys[-1]]

        return mutate

    def set_(value, *keys):
        def mutate(data):
            target = data[1]
            for k in keys[:-1]:
                target = target[k]
            target[keys[-1]] = value

        return mutate

    return [
        ("sample_id", drop("sample_id"), "missing key 'sample_id'"),
        ("conversation", drop("conversation"), "sample conv-30: missing key 'conversation'"),
        ("qa", drop("qa"), "sample conv-30: missing key 'qa'"),
        ("speaker_a", drop("conversation", "speaker_a"), "missing key 'speaker_a'"),
        ("session date", drop("conversation", "session_1_date_time"), "missing key 'session_1_date_time'"),
        ("turn text", drop("conversation", "session_1", 0, "text"), "session_1[0]: missing key 'text'"),
        ("turn speaker type", set_(7, "conversation", "session_1", 0, "speaker"), "key 'speaker' must be str, got int"),
        ("question", drop("qa", 0, "question"), "qa[0]: missing key 'question'"),
        ("category type", set_("2", "qa", 0, "category"), "key 'category' must be int, got str"),
        ("category value", set_(9, "qa", 0, "category"), "category 9 is not one of 1, 2, 3, 4, 5"),
        ("answer missing", drop("qa", 0, "answer"), "qa[0]: missing key 'answer'"),
        ("answer type", set_([1], "qa", 0, "answer"), "key 'answer' must be str or int, got list"),
        ("sessions", set_({}, "conversation"), "missing key 'speaker_a'"),
        ("qa type", set_({}, "qa"), "key 'qa' must be list, got dict"),
    ]


@pytest.mark.parametrize("case", range(14))
def test_broken_file_gives_one_line_naming_sample_and_key(case, locomo_raw, tmp_path):
    description, mutate, expected = _mutations(locomo_raw)[case]
    data = copy.deepcopy(locomo_raw[:2])
    mutate(data)
    with pytest.raises(DataError) as info:
        load_locomo(_write(tmp_path, data))
    message = str(info.value)
    assert "\n" not in message
    assert expected in message, (description, message)
    if description not in ("sample_id",):
        assert "conv-30" in message


@pytest.mark.parametrize(
    "content, expected",
    [
        ("{not json", "is not valid JSON"),
        ("{}", "must hold a non-empty JSON list"),
        ("[]", "must hold a non-empty JSON list"),
        ("[1]", "a conversation must be a JSON object"),
    ],
)
def test_not_locomo_at_all(content, expected, tmp_path):
    with pytest.raises(DataError, match=expected):
        load_locomo(_write(tmp_path, content))


def test_wrong_encoding_and_missing_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"sample_id": "caf\xe9"}]'.encode("latin-1"))
    with pytest.raises(DataError, match="is not UTF-8"):
        load_locomo(path)
    with pytest.raises(DataError, match="run `memorybench fetch`"):
        load_locomo(tmp_path / "absent.json")

"""The LongMemEval authors' hypothesis and judged files, read into typed records (issue 32, item 5):
made files in their format, every malformed line a one-line error naming the line and the fix,
and the per-type table of a judged file reproduced as print_qa_metrics.py prints it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memorybench.benchmarks.longmemeval.files import (
    Hypothesis,
    check_authors_judge,
    judge_models,
    judged_questions,
    parse_hypotheses,
    parse_judged,
    read_hypotheses,
    read_judged,
)
from memorybench.benchmarks.longmemeval.score import JUDGE_MODEL, QUESTION_TYPES, authors_report, qa_metrics
from memorybench.data import pins
from memorybench.benchmarks.longmemeval.pins import PRINT_QA_METRICS
from memorybench.errors import DataError, UserError


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def test_a_hypothesis_file_reads_into_records(tmp_path):
    path = tmp_path / "hyp.jsonl"
    path.write_bytes(
        _jsonl(
            [
                {"question_id": "e47becba", "hypothesis": "You moved to Oslo.\u2028(May)"},
                {"question_id": "gpt4_2655b836_abs", "hypothesis": "", "model": "x"},
            ]
        )
        + b"\n"
    )
    rows = read_hypotheses(path)
    assert rows == [
        Hypothesis("e47becba", "You moved to Oslo.\u2028(May)", 1),
        Hypothesis("gpt4_2655b836_abs", "", 2, {"model": "x"}),
    ]


def test_a_json_list_of_hypotheses_reads_as_evaluate_qa_reads_it(tmp_path):
    path = tmp_path / "hyp.json"
    path.write_text(json.dumps([{"question_id": "a", "hypothesis": "x"}, {"question_id": "b", "hypothesis": "y"}]))
    assert [(r.question_id, r.line) for r in read_hypotheses(path)] == [("a", 1), ("b", 2)]
    path.write_text(json.dumps([{"question_id": "a", "hypothesis": "x"}, "b"]))
    with pytest.raises(DataError, match=r"hyp.json: item 2 is a string, not an object"):
        read_hypotheses(path)


@pytest.mark.parametrize(
    "line,message",
    [
        (
            b'{"question_id": "q2", "hypothesis": "x"',
            r"f.jsonl:2: not valid JSON \(Expecting ',' delimiter at column 40\); "
            r"each line is one JSON object",
        ),
        (b'["q2", "x"]', r"f.jsonl:2: a list, not an object"),
        (b'{"question_id": "q2"}', r"f.jsonl:2: no hypothesis; each row is \{\"question_id\""),
        (b'{"hypothesis": "x"}', r"f.jsonl:2: no question_id;"),
        (b'{"question_id": 7, "hypothesis": "x"}', r"f.jsonl:2: question_id must be a non-empty string, got number 7"),
        (b'{"question_id": "q2", "hypothesis": null}', r"f.jsonl:2: question q2: hypothesis must be a string, got null"),
        (b'{"question_id": "q1", "hypothesis": "again"}', r"f.jsonl:2: question q1 again \(first at line 1\); keep one answer"),
        (b"\xff\xfe", r"f.jsonl is not UTF-8"),
    ],
)
def test_a_malformed_hypothesis_line_is_one_line_naming_it(line, message):
    data = b'{"question_id": "q1", "hypothesis": "x"}\n' + line + b"\n"
    with pytest.raises(DataError, match=message) as info:
        parse_hypotheses(data, "f.jsonl")
    assert "\n" not in info.value.message and isinstance(info.value, UserError)


def test_an_empty_file_says_what_it_should_hold():
    with pytest.raises(DataError, match="holds no answers; a hypothesis file has one JSON object per line"):
        parse_hypotheses(b"\n\n", "f.jsonl")
    with pytest.raises(DataError, match="holds no judged answers"):
        parse_judged(b"", "j.jsonl")


def _judged_row(qid: str, label, model: str = JUDGE_MODEL, **extra) -> dict:
    return {"question_id": qid, "hypothesis": f"answer to {qid}", **extra, "autoeval_label": {"model": model, "label": label}}


def test_a_judged_file_reads_into_records(tmp_path):
    path = tmp_path / "hyp.jsonl.eval-results-gpt-4o"
    path.write_bytes(_jsonl([_judged_row("a", True), _judged_row("b_abs", False, note="kept")]))
    rows = read_judged(path)
    assert [(r.question_id, r.label, r.model, r.line) for r in rows] == [
        ("a", True, JUDGE_MODEL, 1),
        ("b_abs", False, JUDGE_MODEL, 2),
    ]
    assert rows[1].extra == {"note": "kept"} and judge_models(rows) == (JUDGE_MODEL,)
    check_authors_judge(rows, str(path))


@pytest.mark.parametrize(
    "row,message",
    [
        ({"question_id": "q2", "hypothesis": "x"}, r"j.jsonl:2: question q2 has no autoeval_label; this is a hypothesis file"),
        (
            {"question_id": "q2", "hypothesis": "x", "autoeval_label": True},
            r"j.jsonl:2: question q2: autoeval_label must be an object",
        ),
        (
            {"question_id": "q2", "hypothesis": "x", "autoeval_label": {"label": True}},
            r"autoeval_label must be an object with model and label",
        ),
        (_judged_row("q2", "yes"), r"j.jsonl:2: question q2: autoeval_label.label must be true or false, got \"yes\""),
        (_judged_row("q2", 1), r"autoeval_label.label must be true or false, got 1"),
        (_judged_row("q2", True, model=""), r"autoeval_label.model must be the judge model's name"),
        (_judged_row("q1", True), r"j.jsonl:2: question q1 again \(first at line 1\)"),
    ],
)
def test_a_malformed_judged_line_is_one_line_naming_it(row, message):
    with pytest.raises(DataError, match=message):
        parse_judged(_jsonl([_judged_row("q1", True), row]), "j.jsonl")


def test_another_judge_model_is_named_with_its_line():
    rows = parse_judged(_jsonl([_judged_row("q1", True), _judged_row("q2", True, model="gpt-4o-mini-2024-07-18")]), "j.jsonl")
    assert judge_models(rows) == ("gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18")
    with pytest.raises(DataError, match="j.jsonl:2: question q2 was judged by gpt-4o-mini-2024-07-18, not gpt-4o-2024-08-06"):
        check_authors_judge(rows, "j.jsonl")


def test_a_judged_file_reproduces_print_qa_metrics_table(tmp_path):
    """Item 5: the report over an imported judged file gives the script's per-type table exactly."""
    ref = [
        {
            "question_id": f"q{i:03d}" + ("_abs" if i % 9 == 4 else ""),
            "question_type": QUESTION_TYPES[i % 6],
            "question": "q",
            "answer": i,
        }
        for i in range(47)
    ]
    (tmp_path / "ref.json").write_text(json.dumps(ref))
    judged = [_judged_row(r["question_id"], (i * 7) % 5 < 3) for i, r in enumerate(ref) if i != 11]  # one unanswered
    (tmp_path / "judged.jsonl").write_bytes(_jsonl(judged))
    proc = subprocess.run(
        [
            sys.executable,
            str(pins.pin_path(PRINT_QA_METRICS)),
            str(tmp_path / "judged.jsonl"),
            str(tmp_path / "ref.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = read_judged(tmp_path / "judged.jsonl")
    types = {r["question_id"]: r["question_type"] for r in ref}
    metrics = qa_metrics(judged_questions(rows, types, "judged.jsonl"))
    assert authors_report(metrics) == proc.stdout
    assert metrics.n == 46 and metrics.abstention_n == 5


def test_a_judged_question_missing_from_the_dataset_is_named():
    rows = parse_judged(_jsonl([_judged_row("q1", True), _judged_row("zz", False)]), "j.jsonl")
    with pytest.raises(DataError, match="j.jsonl:2: question zz is not in the dataset"):
        judged_questions(rows, {"q1": "multi-session"}, "j.jsonl")

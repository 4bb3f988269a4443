"""LongMemEval's judge and QA metrics against the authors' own pinned code (issue 32, item 4).

Every comparison runs the authors' function or script on the same made input: the judge's
prompts are the bytes `get_anscheck_prompt` returns, the metrics are the text
print_qa_metrics.py prints.
"""

from __future__ import annotations

import ast
import json
import random
import re
import subprocess
import sys

import pytest

from memorybench.benchmarks.longmemeval.score import (
    ABSTENTION,
    JUDGE_MAX_TOKENS,
    JUDGE_MODEL,
    JUDGE_N,
    JUDGE_TEMPERATURE,
    QUESTION_TYPES,
    JudgedQuestion,
    anscheck_prompt,
    anscheck_templates,
    anscheck_templates_sha256,
    authors_report,
    is_abstention,
    judge_label,
    judge_request,
    qa_metrics,
)
from memorybench.data import pins
from memorybench.data.pinned_source import function_node, pinned_function
from memorybench.data.pins import Pin
from memorybench.benchmark import LONGMEMEVAL
from memorybench.benchmarks.longmemeval.pins import CODE_PINS, EVALUATE_QA, PRINT_QA_METRICS
from memorybench.errors import UserError
from memorybench.hashing import sha256_bytes
from score.longmemeval_authors import load
from tests.conftest import PINS


@pytest.fixture(scope="module")
def authors():
    return load(EVALUATE_QA)


def _main_block(pin: Pin) -> ast.If:
    tree = ast.parse(pins.pin_path(pin).read_text("utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test))


# -- the pins ---------------------------------------------------------------------------------


def test_the_seven_files_are_pinned_with_the_hashes_of_pins_md():
    table = {}
    for line in (PINS / "PINS.md").read_text("utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]
        if len(cells) > 3 and cells[1].startswith("longmemeval/"):
            table[cells[1]] = (cells[2], cells[3])
    assert set(table) == {p.relpath for p in CODE_PINS}
    for pin in CODE_PINS:
        source, sha = table[pin.relpath]
        # fetched with every pin as the benchmark's own (`memorybench fetch`)
        assert pin.sha256 == sha and pin in LONGMEMEVAL.own_pins() and pin.licence == "MIT"
        assert pin.url == f"https://raw.githubusercontent.com/xiaowu0162/LongMemEval/{pin.commit}/{pin.source_path}"
        assert pin.commit.startswith("9e0b455") and (pin.commit in source or "same commit" in source)
        assert pin.source_path in source or pin.relpath == "longmemeval/LICENSE"
        assert sha256_bytes(pins.pin_path(pin).read_bytes()) == pin.sha256


def test_an_altered_evaluate_qa_is_refused_naming_both_hashes(tmp_path):
    target = tmp_path / EVALUATE_QA.relpath
    target.parent.mkdir(parents=True)
    data = pins.pin_path(EVALUATE_QA).read_bytes().replace(b"answer yes", b"answer YES", 1)
    target.write_bytes(data)
    with pytest.raises(UserError) as info:
        anscheck_prompt("multi-session", "q", "a", "r", False, pins=tmp_path)
    assert EVALUATE_QA.sha256 in info.value.message and sha256_bytes(data) in info.value.message


@pytest.mark.parametrize(
    "body",
    [
        "    import os\n    return os.getcwd()\n",
        "    return open('/etc/passwd').read()\n",
        "    return task.__class__\n",
        "    return [x for x in task]\n",
        "    return eval(task)\n",
    ],
)
def test_a_function_that_does_more_than_format_strings_is_never_run(tmp_path, body):
    source = f"def get_anscheck_prompt(task, question, answer, response, abstention=False):\n{body}".encode()
    (tmp_path / "evil.py").write_bytes(source)
    pin = Pin(
        relpath="evil.py", sha256=sha256_bytes(source), repository="x/y", commit="0" * 40, source_path="evil.py", licence="MIT"
    )
    with pytest.raises(UserError, match="which memorybench does not run"):
        pinned_function(pin, "get_anscheck_prompt", tmp_path)


# -- the judge's prompts ----------------------------------------------------------------------

VALUES = [
    (
        "How many days passed between my two trips?",
        "18 days. 19 days (including the last day) is also acceptable.",
        "It was 19 days.",
    ),
    ("Which {city} did I move to? {}", 3, "The answer is {0} {question} {{x}}"),  # braces copied, an int answer
    ("Qu\u2019est-ce que j\u2019ai achet\u00e9 ?\n", "Un v\u00e9lo \U0001f6b2", "\n  I don't know.  \n"),
    ("", "", ""),
]


@pytest.mark.parametrize("abstention", [False, True])
@pytest.mark.parametrize("question_type", QUESTION_TYPES)
def test_the_prompt_is_the_bytes_the_authors_function_returns(authors, question_type, abstention):
    for question, answer, response in VALUES:
        ours = anscheck_prompt(question_type, question, answer, response, abstention)
        assert ours == authors.get_anscheck_prompt(question_type, question, answer, response, abstention=abstention)
        assert ours.encode("utf-8") == authors.get_anscheck_prompt(question_type, question, answer, response, abstention).encode(
            "utf-8"
        )


def test_abstention_ids_take_the_abstention_prompt_whatever_their_type(authors):
    templates = anscheck_templates()
    for question_type in QUESTION_TYPES:
        request = judge_request("gpt4_2655b836_abs", question_type, "Q?", "The user never said.", "Not mentioned.")
        assert request.messages[0]["content"] == templates[ABSTENTION].format("Q?", "The user never said.", "Not mentioned.")
        assert request.messages[0]["content"] == authors.get_anscheck_prompt(
            question_type, "Q?", "The user never said.", "Not mentioned.", abstention=True
        )
        plain = judge_request("gpt4_2655b836", question_type, "Q?", "A", "R").messages[0]["content"]
        assert plain == templates[question_type].format("Q?", "A", "R") != request.messages[0]["content"]
    assert is_abstention("x_abs") and is_abstention("x_abs_2") and not is_abstention("x_ab")


def test_an_unknown_type_is_refused_unless_the_question_is_an_abstention_question(authors):
    with pytest.raises(UserError, match="no question type 'open-domain'; the types are single-session-user"):
        anscheck_prompt("open-domain", "q", "a", "r", False)
    with pytest.raises(NotImplementedError):
        authors.get_anscheck_prompt("open-domain", "q", "a", "r", abstention=False)
    assert anscheck_prompt("open-domain", "q", "a", "r", True) == authors.get_anscheck_prompt("open-domain", "q", "a", "r", True)


def test_the_five_templates_are_the_functions_literals():
    templates = anscheck_templates()
    assert list(templates) == [*QUESTION_TYPES, ABSTENTION]
    assert len(set(templates.values())) == 5
    shared = {templates[t] for t in ("single-session-user", "single-session-assistant", "multi-session")}
    assert len(shared) == 1
    for template in templates.values():
        assert template.count("{}") == 3 and template.endswith("Answer yes or no only.")
    assert "off-by-one" in templates["temporal-reasoning"] and "Rubric: {}" in templates["single-session-preference"]
    assert "unanswerable" in templates[ABSTENTION]
    assert len(anscheck_templates_sha256()) == 64


def test_the_request_is_the_one_evaluate_qa_sends(authors):
    """model_zoo['gpt-4o'] (the README's command), and __main__'s kwargs dict literal."""
    assert JUDGE_MODEL == authors.model_zoo["gpt-4o"][0]
    kwargs = next(
        n.value for n in ast.walk(_main_block(EVALUATE_QA)) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "kwargs"
    )
    literal = {k.value: v for k, v in zip(kwargs.keys, kwargs.values)}
    assert ast.literal_eval(literal["temperature"]) == JUDGE_TEMPERATURE
    assert ast.literal_eval(literal["max_tokens"]) == JUDGE_MAX_TOKENS
    assert ast.literal_eval(literal["n"]) == JUDGE_N
    assert ast.unparse(literal["messages"]) == "[{'role': 'user', 'content': prompt}]"
    request = judge_request("q1", "knowledge-update", "Where do I live now?", "Oslo", "Oslo, since May.")
    assert request.model == "gpt-4o-2024-08-06" and request.temperature == 0 and request.max_tokens == 10
    assert request.messages == (
        {
            "role": "user",
            "content": authors.get_anscheck_prompt("knowledge-update", "Where do I live now?", "Oslo", "Oslo, since May."),
        },
    )
    assert request.response_format is None and request.seed is None and request.stop is None


def test_the_label_is_yes_in_the_lowercased_stripped_reply():
    main = _main_block(EVALUATE_QA)
    statements = {ast.unparse(n) for n in ast.walk(main) if isinstance(n, ast.Assign)}
    assert "eval_response = completion.choices[0].message.content.strip()" in statements
    assert "label = 'yes' in eval_response.lower()" in statements
    for reply, label in [
        ("yes", True),
        ("Yes.", True),
        (" YES ", True),
        ("no", False),
        ("No, it is not.", False),
        ("eyes", True),
        ("", False),
        ("The answer: yes or no? no", True),
    ]:
        assert judge_label(reply) is label
        assert ("yes" in reply.strip().lower()) is label
    assert judge_label(None) is None


# -- the QA metrics -----------------------------------------------------------------------------


def test_the_question_types_are_print_qa_metrics_types_in_its_order():
    tree = ast.parse(pins.pin_path(PRINT_QA_METRICS).read_text("utf-8"))
    comp = next(n.value for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "type2acc")
    assert tuple(ast.literal_eval(comp.generators[0].iter)) == QUESTION_TYPES


def _authors_print(tmp_path, rows: list[tuple[str, str, bool]]) -> str:
    """What print_qa_metrics.py prints for these (question_id, type, label) rows."""
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps([{"question_id": q, "question_type": t, "question": "q", "answer": "a"} for q, t, _ in rows]))
    judged = tmp_path / "judged.jsonl"
    judged.write_text(
        "".join(
            json.dumps({"question_id": q, "hypothesis": "h", "autoeval_label": {"model": JUDGE_MODEL, "label": label}}) + "\n"
            for q, _, label in rows
        )
    )
    script = pins.pin_path(PRINT_QA_METRICS)
    proc = subprocess.run(
        [sys.executable, str(script), str(judged), str(ref)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _made_rows(seed: int, n: int, types=QUESTION_TYPES) -> list[tuple[str, str, bool]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        qtype = types[i % len(types)]
        qid = f"{rng.getrandbits(32):08x}" + ("_abs" if rng.random() < 0.15 else "")
        rows.append((qid, qtype, rng.random() < 0.6))
    return rows


@pytest.mark.parametrize("seed,n", [(1, 61), (2, 500), (3, 7)])
def test_metrics_print_as_the_authors_script_prints_them(tmp_path, seed, n):
    rows = _made_rows(seed, n)
    metrics = qa_metrics(JudgedQuestion(q, t, label) for q, t, label in rows)
    assert authors_report(metrics) == _authors_print(tmp_path, rows)
    # and the numbers behind the text
    per_type = {t: [label for _, tt, label in rows if tt == t] for t in QUESTION_TYPES}
    assert metrics.n == n and metrics.overall_accuracy == sum(label for *_, label in rows) / n
    assert [a.accuracy for a in metrics.by_type] == [sum(v) / len(v) for v in per_type.values()]
    assert metrics.task_averaged_accuracy == pytest.approx(sum(sum(v) / len(v) for v in per_type.values()) / 6)
    abstention = [label for q, _, label in rows if "_abs" in q]
    assert metrics.abstention_n == len(abstention) and metrics.abstention_correct == sum(abstention)


def test_a_missing_type_and_no_abstention_print_nan_as_the_script_does(tmp_path):
    rows = [(f"q{i}", t, i % 3 == 0) for i, t in enumerate(QUESTION_TYPES[:4] * 3)]
    metrics = qa_metrics(JudgedQuestion(*r) for r in rows)
    assert metrics.task_averaged_accuracy is None and metrics.abstention_accuracy is None
    assert metrics.missing_types == QUESTION_TYPES[4:]
    text = authors_report(metrics)
    assert text == _authors_print(tmp_path, rows)
    assert "\ttemporal-reasoning: nan (0)\n" in text and "Task-averaged Accuracy: nan\n" in text
    assert text.endswith("Abstention Accuracy: nan (0)\n")


def test_rounding_is_numpys_as_in_the_script(tmp_path):
    # 2/3, 1/7, 5/6 ... rounded to 4 places by numpy's round, then printed by str()
    rows = [
        (f"q{t}{i}", t, i < k)
        for t, (k, n) in zip(QUESTION_TYPES, [(2, 3), (1, 7), (5, 6), (0, 1), (1, 1), (3, 8)])
        for i in range(n)
    ]
    metrics = qa_metrics(JudgedQuestion(*r) for r in rows)
    assert authors_report(metrics) == _authors_print(tmp_path, rows)
    assert "\tsingle-session-user: 0.6667 (3)\n" in authors_report(metrics)


def test_an_unknown_type_is_refused_in_one_line():
    with pytest.raises(UserError, match="question q1 has type 'adversarial', which LongMemEval does not have"):
        qa_metrics([JudgedQuestion("q1", "adversarial", True)])


def test_metrics_as_dict_round_trips_through_json():
    metrics = qa_metrics(JudgedQuestion(q, t, label) for q, t, label in _made_rows(4, 30))
    data = json.loads(json.dumps(metrics.as_dict()))
    assert list(data["by_type"]) == list(QUESTION_TYPES) and data["n"] == 30
    assert function_node(EVALUATE_QA, "get_anscheck_prompt").name == "get_anscheck_prompt"

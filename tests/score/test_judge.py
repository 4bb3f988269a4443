"""Mem0's judge protocol: the prompt it sends and how its reply is read (no model)."""

from __future__ import annotations

import json
import re

import pytest

from memorybench.data.pins import MEM0_ACCURACY_PROMPT, pin_path
from memorybench.score.judge import (
    build_judge_prompt,
    check_judge_template,
    extract_json,
    label_score,
    parse_judge_label,
    parse_judge_reply,
    text_sha256,
)


@pytest.fixture(scope="module")
def template() -> str:
    return pin_path(MEM0_ACCURACY_PROMPT).read_bytes().decode("utf-8")


def test_the_pinned_template_has_the_three_fields_and_no_other_brace(template):
    assert text_sha256(template) == MEM0_ACCURACY_PROMPT.sha256
    assert sorted(re.findall(r"\{[^{}]*\}", template)) == ["{generated_answer}", "{gold_answer}", "{question}"]
    assert template.count("{") == template.count("}") == 3
    check_judge_template(template)


def test_prompt_is_mem0s_format_call(template):
    prompt = build_judge_prompt(template, "How old is Ben's dog?", 3, "three years")
    assert prompt == template.format(question="How old is Ben's dog?", gold_answer="3", generated_answer="three years")
    assert "\nQuestion: How old is Ben's dog?\nGold answer: 3\nGenerated answer: three years\n\n" in prompt
    # the template's own bytes are kept: the leading newline, U+2019 quotes, trailing spaces
    assert prompt.startswith("\nYour task is to label an answer to a question as \u2019CORRECT\u2019 or \u2019WRONG\u2019.")
    assert "    (1) a question (posed by one user to another user), \n" in prompt
    assert prompt.endswith('with the key as "label".\n')


def test_braces_in_answers_are_copied_not_filled(template):
    tricky = "{gold_answer} {question} {} {{x}} {0}"
    prompt = build_judge_prompt(template, "Q {generated_answer}?", "gold {question}", tricky)
    assert prompt == template.format(question="Q {generated_answer}?", gold_answer="gold {question}", generated_answer=tricky)
    assert f"Generated answer: {tricky}\n" in prompt
    assert "Question: Q {generated_answer}?\nGold answer: gold {question}\n" in prompt
    # a naive slot-by-slot str.replace would fill the slot typed inside the question
    naive = (
        template.replace("{question}", "Q {generated_answer}?").replace("{gold_answer}", "g").replace("{generated_answer}", "p")
    )
    assert naive != build_judge_prompt(template, "Q {generated_answer}?", "g", "p")


def test_gold_and_answers_are_str_of_the_raw_values(template):
    assert "Gold answer: 2022\n" in build_judge_prompt(template, "When?", 2022, "x")
    assert "Gold answer: None\n" in build_judge_prompt(template, "When?", None, "x")  # str(), as Mem0's evals.py


def test_a_template_with_other_fields_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        check_judge_template("{question} {gold_answer} {generated_answer} {memory}")
    with pytest.raises(ValueError, match="missing"):
        check_judge_template("{question} {gold_answer}")


FENCE = "```"

#: Mem0's script raises here (the fence regex keeps the "JSON" tag); we recover the object
RECOVERED = f'Here you go:\n{FENCE}JSON\n{{"label": "CORRECT"}}\n{FENCE}\nbye'

# reply, label_raw, score, status, standard
CASES = [
    ('{"label": "CORRECT"}', "CORRECT", 1, "CORRECT", True),
    ('{"label": "WRONG"}', "WRONG", 0, "WRONG", True),
    (f'{FENCE}json\n{{"label": "CORRECT"}}\n{FENCE}', "CORRECT", 1, "CORRECT", True),
    (f'{FENCE}\n{{"label": "WRONG"}}\n{FENCE}', "WRONG", 0, "WRONG", True),
    (RECOVERED, "CORRECT", 1, "CORRECT", True),
    ('The answer names the same city. {"label": "CORRECT"} Hope this helps.', "CORRECT", 1, "CORRECT", True),
    ('It is CORRECT that the year matches but WRONG on the month.\n{"label": "WRONG"}', "WRONG", 0, "WRONG", True),
    ('Not WRONG at all: {"reasoning": "same topic", "label": "CORRECT"}', "CORRECT", 1, "CORRECT", True),
    ('{"label": "correct"}', "correct", 0, "WRONG", False),
    ('{"label": "Correct"}', "Correct", 0, "WRONG", False),
    ('{"label": " CORRECT"}', " CORRECT", 0, "WRONG", False),
    ('{"label": "CORRECT or WRONG"}', "CORRECT or WRONG", 0, "WRONG", False),
    ('{"label": "CORRECT", "label": "CORRECT"}', "CORRECT", 1, "CORRECT", True),
    ("CORRECT", None, None, "FAILED", None),
    ("The answer is CORRECT, not WRONG.", None, None, "FAILED", None),
    ('{"label": CORRECT}', None, None, "FAILED", None),
    ('{"label": "CORRECT"', None, None, "FAILED", None),
    ('{"verdict": "CORRECT"}', None, None, "FAILED", None),
    ('{"result": {"label": "CORRECT"}}', None, None, "FAILED", None),
    ('["CORRECT"]', None, None, "FAILED", None),
    ('{"label": true}', None, None, "FAILED", None),
    ('{"label": null}', None, None, "FAILED", None),
    ('{"label": 1}', None, None, "FAILED", None),
    ('{"label": "CORRECT", "label": "WRONG"}', None, None, "FAILED", None),
    ('{"label": "CORRECT"} and also {"label": "WRONG"}', None, None, "FAILED", None),
    ("", None, None, "FAILED", None),
    ("   \n", None, None, "FAILED", None),
]


@pytest.mark.parametrize("reply, label, score, status, standard", CASES)
def test_reply_table(reply, label, score, status, standard):
    parsed = parse_judge_reply(reply)
    assert parsed.label == label
    assert parsed.score == score
    assert parsed.status == status
    assert parsed.standard is standard
    assert parse_judge_label(reply) == label
    assert (parsed.error is None) == (label is not None)


def _mem0(reply: str) -> int:
    """mem0 evaluation/metrics/llm_judge.py at the pinned commit, on one reply."""
    label = json.loads(extract_json(reply))["label"]
    return 1 if label == "CORRECT" else 0


@pytest.mark.parametrize("reply, label, score, status, standard", CASES)
def test_where_mem0_scores_we_score_the_same(reply, label, score, status, standard):
    try:
        theirs = _mem0(reply)
    except (ValueError, KeyError, TypeError):
        # Mem0's script raises on this reply: we record a failure (or recover a fenced object)
        assert status == "FAILED" or reply == RECOVERED
        return
    if status == "FAILED":
        # our two documented departures: a non-string label, two different labels
        data = json.loads(extract_json(reply), object_pairs_hook=list)
        values = [v for k, v in data if k == "label"]
        assert len(set(map(json.dumps, values))) > 1 or not isinstance(values[-1], str)
        return
    assert theirs == score


def test_extract_json_is_mem0s():
    assert extract_json('  {"a": 1}  ') == '{"a": 1}'
    assert extract_json('x {"a": {"b": 2}} y') == '{"a": {"b": 2}}'
    assert extract_json(f'{FENCE}json\n{{"a": 1}}\n{FENCE} {{"b": 2}}') == '{"a": 1}'
    assert extract_json("no json") == "no json"


def test_label_score():
    assert label_score("CORRECT") == 1
    assert label_score("WRONG") == 0
    assert label_score("correct") == 0
    assert label_score(None) is None


# -- the protocol as a registered judge -------------------------------------------------------
def test_mem0_is_the_registered_default_judge_protocol(template):
    from types import SimpleNamespace

    from memorybench.errors import UserError
    from memorybench.registry import JUDGES
    from memorybench.score.judge import DEFAULT_PROTOCOL, Mem0Judge

    assert DEFAULT_PROTOCOL == "mem0" and JUDGES.get("mem0") is Mem0Judge
    judge = Mem0Judge(template)
    assert judge.template_sha256 == MEM0_ACCURACY_PROMPT.sha256
    row = SimpleNamespace(question="How old is Ben's dog?", gold=3, prediction="3, or {gold_answer}", category=4)
    call = judge.request(row, model="judge-x", sampling={"temperature": 0.0, "max_tokens": 256, "seed": None})
    content = template.format(question="How old is Ben's dog?", gold_answer="3", generated_answer="3, or {gold_answer}")
    assert call.request.messages == ({"role": "user", "content": content},)  # one user message, no system message
    assert call.request.response_format == {"type": "json_object"} and call.request.temperature == 0.0
    assert call.request.stop is None and call.request.seed is None and call.request.model == "judge-x"
    assert call.slots == {"question": "How old is Ben's dog?", "gold_answer": "3", "generated_answer": "3, or {gold_answer}"}
    assert call.payload_sha256 == text_sha256(content) and judge.prompt_text(row) == content
    assert [judge.skips(SimpleNamespace(category=c)) for c in (1, 2, 3, 4, 5)] == [False] * 4 + [True]
    verdict = judge.verdict('{"label": "correct"}')
    assert (verdict.status, verdict.label, verdict.score, verdict.standard) == ("WRONG", "correct", 0, False)
    assert judge.verdict("CORRECT").status == "FAILED"
    assert judge.prompt_info("autorater/prompts/x.txt")["stored_at"] == "autorater/prompts/x.txt"
    with pytest.raises(UserError, match=r"unknown judge protocol 'mem1' \(judge.protocol=mem1\)"):
        JUDGES.get("mem1")

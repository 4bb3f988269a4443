"""BEAM's judge requests (issue 42, item 3): for every ability, what the pinned compute_metrics.py
sends is what `official_rubric_prompt` gives, byte for byte (`<question>` left as it is), and
event ordering's fact-extraction and alignment messages too; ours fills the question in."""

from __future__ import annotations

import ast

import pytest
from benchmarks.beam_authors import COMPUTE_METRICS, ROOT, StubJudge, compute_metrics, prompt_strings

from memorybench.benchmarks.beam.data import ABILITIES, read_tier
from memorybench.benchmarks.beam.prompts import (
    FACTS_PROMPT,
    JUDGE_MODEL,
    JUDGE_PROMPT,
    JUDGE_TEMPERATURE,
    equivalence_messages,
    fact_extraction_prompt,
    judge_template,
    official_rubric_messages,
    official_rubric_prompt,
    our_rubric_prompt,
    prompt_literal,
    rubric_chain,
)

VERDICT = '{"score": 1.0, "reason": "ok"}'


@pytest.fixture(scope="module")
def authors():
    return compute_metrics()


@pytest.fixture(scope="module")
def tier():
    return read_tier(ROOT / "chats" / "100K")


def test_the_templates_are_the_pinned_literals():
    strings = prompt_strings()
    assert judge_template() == strings[JUDGE_PROMPT] and prompt_literal(FACTS_PROMPT) == strings[FACTS_PROMPT]
    template = judge_template()
    assert [template.count(s) for s in ("<question>", "<rubric_item>", "<llm_response>")] == [1, 1, 1]
    assert "1.0, 0.5, or 0.0" in template  # the judge is asked for halves


@pytest.mark.parametrize("ability", ABILITIES)
def test_each_ability_sends_the_pinned_bytes_for_every_rubric_item(authors, tier, ability):
    questions = [q for q in tier.questions.values() if q.ability == ability][:4]
    asked = {q.question_id: q.question for c in tier.conversations for q in c.questions}
    assert rubric_chain(ability).steps == (("<rubric_item>", "item"), ("<llm_response>", "llm_response"))
    for record in questions:
        response = f"Answer to {record.question_id}.\nIt has two lines; the second names <question> literally."
        judge = StubJudge(prompt=VERDICT, messages="NO")
        authors[f"evaluate_{ability}"](
            rubric=list(record.rubric), llm_response=response, probing_question=asked[record.question_id], model=judge
        )
        rubric_requests = judge.requests
        if ability == "event_ordering":
            # first the fact extraction (its reply is discarded), then one alignment call per line
            # and unused item, then the rubric judge
            assert judge.requests[0] == fact_extraction_prompt(response, asked[record.question_id])
            lines = response.split("\n")
            alignment = [r for r in judge.requests[1:] if isinstance(r, list)]
            assert alignment == [list(equivalence_messages(item, line)) for line in lines for item in record.rubric]
            rubric_requests = judge.requests[1 + len(alignment) :]
        expected = [official_rubric_prompt(item, response, ability=ability) for item in record.rubric]
        assert rubric_requests == expected
        for text, item in zip(expected, record.rubric):
            assert "- QUESTION (what the user asked): <question>\n" in text  # never filled
            assert f"- RUBRIC CRITERION (what to check): {item}\n" in text
            assert official_rubric_messages(item, response) == ({"role": "user", "content": text},)


def test_ours_fills_the_question_in_one_pass(tier):
    record = next(iter(tier.questions.values()))
    question = "What did I say about <rubric_item>?"
    ours = our_rubric_prompt(question, record.rubric[0], "my <llm_response> answer")
    assert f"- QUESTION (what the user asked): {question}\n" in ours and "<question>" not in ours.replace(question, "")
    assert "- RESPONSE TO EVALUATE: my <llm_response> answer\n" in ours  # a value is never searched for slots
    # the official chain runs str.replace over the whole text, one slot after the other: a rubric
    # item that names <llm_response> gets the answer put into it
    official = official_rubric_prompt("mentions <llm_response>", "ANSWER")
    assert "- RUBRIC CRITERION (what to check): mentions ANSWER\n" in official
    ours = our_rubric_prompt("Q", "mentions <llm_response>", "ANSWER")
    assert "- RUBRIC CRITERION (what to check): mentions <llm_response>\n" in ours
    # with no slot text in any value, ours is the official text with the question in its place
    plain = official_rubric_prompt(record.rubric[0], "An answer.")
    assert our_rubric_prompt("Q?", record.rubric[0], "An answer.") == plain.replace("<question>", "Q?")


def test_the_alignment_messages_are_the_functions_literals(authors):
    judge = StubJudge(messages="Yes.")
    assert authors["llm_equivalence"](first_paragraph="first", second_paragraph="second", llm=judge) is True
    assert judge.requests == [list(equivalence_messages("first", "second"))]
    system, user = equivalence_messages("A", "B")
    assert system["content"].startswith("\n            You are a binary classifier.")
    assert user["content"] == "First snippet: A \n\n                       Second snippet: B\n                    "


def test_the_judge_model_is_gpt_4_1_mini_at_temperature_0():
    llm = ast.parse((ROOT / "src/llm.py").read_text())
    call = next(n.value for n in llm.body if isinstance(n, ast.Assign) and n.targets[0].id == "gpt_llm_obj")
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("model_name", "temperature")}
    assert keywords == {"model_name": JUDGE_MODEL, "temperature": JUDGE_TEMPERATURE}
    main = (ROOT / "src/evaluation/run_evaluation.py").read_text()
    assert "model=gpt_llm," in main.split('if __name__ == "__main__":')[1]
    assert COMPUTE_METRICS.is_file()

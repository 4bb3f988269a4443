"""The longest reply a grammar-constrained writer can give, on our writers' real schemas,
and bounds that fit the writer's max_tokens (memorybench/memory/_schema_budget.py)."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from memorybench import CONF_DIR
from memorybench.errors import UserError
from memorybench.memory._schema_budget import UnboundedSchema, fit_bounds, worst_case_json, worst_case_tokens
from memorybench.memory._writer import bounded_json_schema, grammar_schema, validate_reply
from memorybench.memory.graph import GraphReply
from memorybench.memory.mem0 import FactsReply, UpdateReply
from memorybench.memory.mem0g import ConflictReply

SHOWN = {"shown": ["m1", "m2", "m12"]}
#: (name, model, validation context) of every JSON task our writer methods send
SCHEMAS = [
    ("graph", GraphReply, None),
    ("mem0 extract", FactsReply, None),
    ("mem0 update", UpdateReply, SHOWN),
    ("mem0 update, nothing shown", UpdateReply, {"shown": []}),
    ("mem0g conflict", ConflictReply, {"shown": ["r1", "r2", "r30"]}),
    ("openai_memory update (mem0's facts, max_facts items)", FactsReply, None),
]


@pytest.mark.parametrize(("name", "model", "context"), SCHEMAS, ids=[s[0] for s in SCHEMAS])
def test_the_longest_reply_parses_and_no_reply_of_the_schema_is_longer(name, model, context):
    schema = bounded_json_schema(grammar_schema(model, context), max_items=3, max_chars=20)
    worst = worst_case_json(schema, len)
    # the worst case is a reply the parser takes: the grammar's shape is the parser's
    validate_reply(worst.filled, model, context)
    assert json.loads(worst.filled)  # compact or spaced, it is JSON
    # one token per character bounds it under any ASCII tokenizer, the count adds the margin
    assert len(worst.filled) <= worst.tokens(len)
    # a shorter instance (fewer items, shorter strings) costs fewer tokens
    smaller = bounded_json_schema(grammar_schema(model, context), max_items=2, max_chars=10)
    assert worst_case_tokens(smaller, len) <= worst_case_tokens(schema, len)


def test_graph_worst_case_at_the_old_local_bounds_is_far_over_512_tokens():
    """The filed failure: 8 items and 120 characters a string allow ~5,000 tokens, so a
    reply filled to the bounds ended at max_tokens=512 and did not parse."""
    schema = bounded_json_schema(grammar_schema(GraphReply), max_items=8, max_chars=120)
    worst = worst_case_json(schema, len)
    assert worst.string_chars == 8 * 1 * 120 + 8 * 4 * 120  # entity names; source, relation, target, when
    assert worst_case_tokens(schema, len) > 5000


def test_the_grammar_shapes_are_what_the_parser_requires():
    # mem0: ADD and UPDATE carry a text, UPDATE and DELETE an id of the memories shown
    shapes = {s["properties"]["event"]["const"]: s for s in grammar_schema(UpdateReply, SHOWN)["anyOf"]}
    assert set(shapes) == {"ADD", "UPDATE", "DELETE", "NOOP"}
    assert shapes["ADD"]["required"] == ["event", "text"] and shapes["UPDATE"]["required"] == ["event", "id", "text"]
    assert shapes["DELETE"]["properties"]["id"] == {"enum": ["m1", "m2", "m12"]}
    only = {s["properties"]["event"]["const"] for s in grammar_schema(UpdateReply, {"shown": []})["anyOf"]}
    assert only == {"ADD", "NOOP"}  # no id to name: no UPDATE or DELETE
    # graph: an entity's type is one of the prompt's types, not free text
    entity = grammar_schema(GraphReply)["properties"]["entities"]["items"]
    assert entity["properties"]["type"]["enum"][0] == "person"
    # mem0g conflict: only ids shown
    assert grammar_schema(ConflictReply, {"shown": ["r1"]})["properties"]["obsolete"]["items"] == {"enum": ["r1"]}


def test_fit_lowers_strings_then_items_and_says_when_nothing_fits():
    def bound(items: int, chars: int):
        return bounded_json_schema(grammar_schema(GraphReply), max_items=items, max_chars=chars)

    same = fit_bounds(bound, max_items=2, max_chars=10, budget=10_000, count=len)
    assert (same.max_items, same.max_chars, same.tightened) == (2, 10, False)
    assert same.worst_case_tokens == worst_case_tokens(bound(2, 10), len)
    fitted = fit_bounds(bound, max_items=8, max_chars=120, budget=1024, count=len)
    assert fitted.tightened and fitted.worst_case_tokens <= 1024
    assert fitted.max_items < 8 and fitted.max_chars >= 16  # strings no shorter than 16 before fewer items
    assert worst_case_tokens(bound(fitted.max_items, fitted.max_chars + 1), len) > 1024  # the longest that fits
    assert fitted.record() == {
        "max_items": fitted.max_items,
        "max_chars": fitted.max_chars,
        "worst_case_tokens": fitted.worst_case_tokens,
        "tightened": True,
    }
    with pytest.raises(UserError, match="writer.max_tokens=20; raise writer.max_tokens"):
        fit_bounds(bound, max_items=8, max_chars=120, budget=20, count=len, what="graph")


def test_an_unbounded_schema_has_no_worst_case():
    with pytest.raises(UnboundedSchema, match="facts has no maxItems"):
        worst_case_json(FactsReply.model_json_schema())
    with pytest.raises(UnboundedSchema, match="no maxLength"):
        worst_case_json({"type": "object", "properties": {"a": {"type": "string"}}})


def test_the_local_writer_defaults_fit_every_task_without_tightening():
    """writer=local's bounds: every task's longest reply fits its max_tokens as configured,
    counted with the embedded model's own tokenizer where it is installed."""
    node = OmegaConf.load(CONF_DIR / "writer" / "local.yaml")
    try:
        from memorybench.llm.local import LOCAL_MODELS, count_tokens

        spec = LOCAL_MODELS[str(node.model)]
        spec.path()

        def count(text: str) -> int:
            return count_tokens(text, spec)
    except Exception:  # noqa: BLE001  (no llama_cpp or no model here: the character bound, higher)
        count = len
    for name, model, context in SCHEMAS:
        items = 20 if name.startswith("openai_memory") else int(node.json_max_items)  # its max_facts
        schema = bounded_json_schema(grammar_schema(model, context), max_items=items, max_chars=int(node.json_max_chars))
        assert worst_case_tokens(schema, count) <= int(node.max_tokens), name

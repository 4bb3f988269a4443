"""Writer plumbing and exact operations, over real HTTP to the scripted server:
JSON repair turns, failures skipped visibly, HTTP retries, and mem0 / mem0g /
openai_memory / graph doing exactly what their replies say."""

from __future__ import annotations

import json

import pytest
from memtest import cfg_for, conversation, jrows, open_method

from memorybench.data.records import AskedQuestion
from memorybench.memory._writer import parse_json_object
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, Status


def J(payload) -> Reply:
    return Reply(text=json.dumps(payload))


@pytest.fixture()
def writer():
    with ScriptedOpenAIServer(responder=lambda body: Reply(text="unexpected call")) as server:
        yield server


def test_json_is_found_in_fences_and_prose():
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('Here:\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert parse_json_object('Sure! {"a": {"b": 2}} hope it helps') == {"a": {"b": 2}}
    assert parse_json_object('{"a": "two\nlines"}') == {"a": "two\nlines"}  # a raw newline in a string
    for bad in ("no json here", "[1, 2]", '{"a": 1'):
        with pytest.raises(ValueError):
            parse_json_object(bad)


def test_mem0_does_exactly_what_the_update_calls_say(tmp_path, writer):
    conv = conversation(
        [
            [
                ("Ana", "I like tea and I live in Porto."),
                ("Ben", "Cool."),
                ("Ana", "I moved to Oslo. I drink green tea, no more black tea."),
                ("Ben", "Nice."),
            ]
        ]
    )
    writer.script(
        # Ana, pair 1
        J({"facts": ["Ana likes tea", "Ana lives in Porto"]}),
        J({"event": "ADD", "id": None, "text": "Ana likes tea"}),
        J({"event": "add", "text": "Ana lives in Porto"}),  # the event's case does not matter
        # Ana, pair 2
        J({"facts": ["Ana moved to Oslo", "Ana likes green tea", "Ana stopped drinking black tea"]}),
        Reply(text="I think this is an update"),  # not JSON: one repair turn
        J({"event": "UPDATE", "id": "m2", "text": "Ana lives in Oslo"}),
        J({"event": "UPDATE", "id": "m9", "text": "Ana likes green tea"}),  # not a memory shown: repair
        J({"event": "NOOP", "id": None, "text": None}),
        J({"event": "DELETE", "id": "m1", "text": None}),
        # Ben, pair 1: malformed twice -> skipped, recorded
        Reply(text='{"facts": "none"}'),
        Reply(text='{"facts": "still none"}'),
        # Ben, pair 2
        J({"facts": []}),
    )
    method, ctx = open_method(cfg_for("mem0", writer.base_url), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert not writer.queue, "every scripted reply was used"
    assert built.state["memories"]["Ana"] == [
        {
            "id": "m2",
            "text": "Ana lives in Oslo",
            "created": "10:00 am on 1 May, 2023",
            "updated": "10:00 am on 1 May, 2023",
            "time": "10:00 am on 1 May, 2023",
            "sources": ["D1:1", "D1:2", "D1:3", "D1:4"],
        }
    ]
    assert built.state["memories"]["Ben"] == []
    assert [(i.item_id, i.text, i.sources) for i in built.items] == [
        ("Ana/m2", "Ana lives in Oslo", ("D1:1", "D1:2", "D1:3", "D1:4"))
    ]
    ops = jrows(tmp_path / "pack/memory/mem0/operations.jsonl")
    assert [(o["event"], o.get("memory_id")) for o in ops] == [
        ("EXTRACT", None),
        ("ADD", "m1"),
        ("ADD", "m2"),
        ("EXTRACT", None),
        ("UPDATE", "m2"),
        ("NOOP", None),
        ("DELETE", "m1"),
        ("FAILED", None),
        ("EXTRACT", None),
    ]
    assert ops[4]["before"] == "Ana lives in Porto" and ops[4]["after"] == "Ana lives in Oslo"
    assert ops[6]["before"] == "Ana likes tea" and ops[7]["step"] == "extract" and ops[7]["speaker"] == "Ben"
    assert all(o["sample_id"] == "t-1" for o in ops)
    calls = jrows(tmp_path / "pack/memory/writer/calls.jsonl")
    assert [(c["role"], c["attempt"], c["ok"]) for c in calls] == [
        ("extract", "first", True),
        ("update", "first", True),
        ("update", "first", True),
        ("extract", "first", True),
        ("update", "first", False),
        ("update", "repair", True),
        ("update", "first", False),
        ("update", "repair", True),
        ("update", "first", True),
        ("extract", "first", False),
        ("extract", "repair", False),
        ("extract", "first", True),
    ]
    assert calls[6]["error"].startswith("schema mismatch") and "'m9' is not one of the stored memories shown" in calls[6]["error"]
    repair = calls[5]["request"]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert repair[2]["content"] == "I think this is an update" and "the reply is not JSON" in repair[3]["content"]
    assert all(c["request"]["response_format"] == {"type": "json_object"} for c in calls)
    # the update call saw the memories most similar to the fact, with their ids
    assert "m1: Ana likes tea" in calls[2]["request"]["messages"][1]["content"]
    assert "Stored memories (id: text):\n(none)" in calls[1]["request"]["messages"][1]["content"]
    failures = jrows(tmp_path / "pack/memory/writer/failures.jsonl")
    assert [(f["role"], f["speaker"], f["sources"], f["action"]) for f in failures] == [
        ("extract", "Ben", ["D1:1", "D1:2"], "no facts from these messages")
    ]
    cost = jrows(tmp_path / "pack/memory/build_cost.jsonl")[0]
    assert cost["writer"]["calls"] == 12 and cost["writer"]["repairs"] == 3 and cost["writer"]["failures"] == 1
    assert cost["embedder"]["texts"] > 0
    text = method.for_question(built, AskedQuestion("t-1-q-0", "t-1", 4, "Where does Ana live?"), ctx)
    assert text == "Memories for Ana:\n- 10:00 am on 1 May, 2023: Ana lives in Oslo\n\nMemories for Ben:\n(none)"
    (retrieval,) = jrows(tmp_path / "pack/memory/mem0/retrievals.jsonl")
    assert retrieval["question_id"] == "t-1-q-0" and [h["item_id"] for h in retrieval["hits"]] == ["Ana/m2"]
    assert retrieval["query_embedding"]["texts"] == 1
    ctx.close()


def test_mem0g_marks_a_contradicted_relation_obsolete(tmp_path, writer):
    conv = conversation([[("Ana", "I live in Porto."), ("Ben", "Cool."), ("Ana", "I moved to Oslo."), ("Ben", "Nice.")]])
    no_facts = J({"facts": []})
    writer.script(
        no_facts,
        no_facts,
        no_facts,
        no_facts,  # mem0 extraction: Ana's two pairs, Ben's two pairs
        J(
            {
                "entities": [{"name": "Ana", "type": "person"}, {"name": "Porto", "type": "place"}],
                "relations": [{"source": "Ana", "relation": "lives in", "target": "Porto", "when": None}],
            }
        ),
        J(
            {
                "entities": [{"name": "Ana", "type": "person"}, {"name": "Oslo", "type": "place"}],
                "relations": [
                    {"source": "Ana", "relation": "lives in", "target": "Oslo", "when": "1 May 2023"},
                    {"source": "ana", "relation": "Lives in", "target": "porto"},
                ],
            }
        ),  # the same as r1: seen again
        J({"obsolete": ["r1"]}),
    )
    method, ctx = open_method(cfg_for("mem0g", writer.base_url), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert not writer.queue
    conflict = writer.requests[-1]["messages"][1]["content"]
    assert "r1: Ana -- lives in --> Porto" in conflict and "Ana -- lives in --> Oslo" in conflict
    relations = jrows(tmp_path / "pack/memory/mem0g/relations.jsonl")
    assert [(r["id"], r["target"], r["valid"], r["obsolete_since"], r["obsoleted_by"]) for r in relations] == [
        ("r1", "Porto", False, "10:00 am on 1 May, 2023", ["r2"]),
        ("r2", "Oslo", True, None, None),
    ]
    assert relations[0]["sources"] == ["D1:1", "D1:2", "D1:3", "D1:4"]
    events = [o["event"] for o in jrows(tmp_path / "pack/memory/mem0g/operations.jsonl")]
    assert events == ["EXTRACT"] * 4 + ["RELATION_ADD", "RELATION_SEEN", "RELATION_OBSOLETE", "RELATION_ADD"]
    text = method.for_question(built, AskedQuestion("t-1-q-0", "t-1", 4, "Where does Ana live now?"), ctx)
    assert "- Ana -- lives in --> Oslo (10:00 am on 1 May, 2023)" in text
    assert "- Ana -- lives in --> Porto (10:00 am on 1 May, 2023; obsolete since 10:00 am on 1 May, 2023)" in text
    (retrieval,) = jrows(tmp_path / "pack/memory/mem0g/retrievals.jsonl")
    assert retrieval["extra"]["entities"] == ["Ana"]
    # a question naming no stored entity gets no relation
    assert "Relations" not in method.for_question(built, AskedQuestion("t-1-q-1", "t-1", 4, "What did Ben say?"), ctx)
    ctx.close()


def test_a_malformed_graph_session_is_skipped_visibly(tmp_path, writer, capsys):
    conv = conversation([[("Ana", "I adopted a cat."), ("Ben", "Great.")], [("Ben", "I run."), ("Ana", "Me too.")]])
    writer.script(
        Reply(
            text='```json\n{"entities": [{"name": "Ana", "type": "person"}, {"name": "cat"}],\n'
            ' "relations": [{"source": "Ana", "relation": "adopted", "target": "cat"}]}\n```'
        ),
        Reply(text='{"entities": [], "relations": [{"source": "Ben", "relation": "runs"}]}'),  # no target
        Reply(text='{"entities": "Ben"}'),
    )
    method, ctx = open_method(cfg_for("graph", writer.base_url), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert built.text == (
        "Entities:\n- Ana (person; session 1)\n- cat (other; session 1)\n\n"
        "Relations:\n- Ana -- adopted --> cat (10:00 am on 1 May, 2023)\n\n"
        "Sessions without a graph (the writer failed): 2"
    )
    assert built.metadata["failed_sessions"] == [2]
    calls = jrows(tmp_path / "pack/memory/writer/calls.jsonl")
    assert [(c["session"], c["attempt"], c["ok"]) for c in calls] == [
        (1, "first", True),
        (2, "first", False),
        (2, "repair", False),
    ]
    assert "schema mismatch at relations.0.target" in calls[1]["error"]
    (failure,) = jrows(tmp_path / "pack/memory/writer/failures.jsonl")
    assert (
        failure["session"] == 2
        and failure["sources"] == ["D2:1", "D2:2"]
        and failure["action"] == "the session is left out of the graph"
    )
    assert "writer extract for t-1 session 2 failed twice" in capsys.readouterr().err
    nodes = jrows(tmp_path / "pack/memory/graph/nodes.jsonl")
    edges = jrows(tmp_path / "pack/memory/graph/edges.jsonl")
    assert [(n["name"], n["sessions"]) for n in nodes] == [("Ana", [1]), ("cat", [1])]
    assert [(e["source"], e["relation"], e["target"], e["sessions"]) for e in edges] == [("Ana", "adopted", "cat", [1])]
    assert all(r["schema"] in ("graph_node.v1", "graph_edge.v1") and r["sample_id"] == "t-1" for r in nodes + edges)
    ctx.close()


def test_openai_memory_keeps_a_bounded_list_per_speaker(tmp_path, writer):
    conv = conversation([[("Ana", "a"), ("Ben", "b")], [("Ana", "c"), ("Ben", "d")]])
    writer.script(
        J({"facts": ["Ana paints", "Ana has a cat", "Ana likes jazz"]}),  # over max_facts=2: the third is dropped
        Reply(text="nope"),
        Reply(text="still nope"),  # Ben, session 1: the list stays empty
        J({"facts": ["Ana has a cat", "Ana moved to Oslo"]}),
        J({"facts": ["Ben runs"]}),
    )
    method, ctx = open_method(cfg_for("openai_memory", writer.base_url, max_facts=2), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert built.text == (
        "Saved memories about Ana:\n- Ana has a cat\n- Ana moved to Oslo\n\nSaved memories about Ben:\n- Ben runs"
    )
    assert [(i.item_id, i.sources) for i in built.items] == [
        ("Ana/fact_1", ("session_1",)),
        ("Ana/fact_2", ("session_2",)),
        ("Ben/fact_1", ("session_2",)),
    ]
    updates = jrows(tmp_path / "pack/memory/openai_memory/updates.jsonl")
    assert [(u["session"], u["speaker"], u["added"], u["removed"], u["dropped_over_max_facts"]) for u in updates] == [
        (1, "Ana", ["Ana paints", "Ana has a cat"], [], 1),
        (2, "Ana", ["Ana moved to Oslo"], ["Ana paints"], 0),
        (2, "Ben", ["Ben runs"], [], 0),
    ]
    second = writer.requests[3]["messages"][1]["content"]
    assert "Saved memories about Ana:\n- Ana paints\n- Ana has a cat\n" in second and "Keep at most\n2 memories" in second
    assert built.metadata["failed_updates"] == 1
    ctx.close()


def test_a_throttled_writer_call_is_retried_inside_one_call(tmp_path, writer):
    conv = conversation([[("Ana", "I paint."), ("Ben", "Nice.")]])
    writer.script(Status(429, headers={"Retry-After": "0"}), Reply(text="Ana paints; Ben likes it."))
    method, ctx = open_method(cfg_for("session_summaries", writer.base_url, source="writer"), tmp_path / "pack")
    built = method.build(conv, ctx)
    assert built.text == "[Session 1]\nAna paints; Ben likes it."
    (call,) = jrows(tmp_path / "pack/memory/writer/calls.jsonl")
    assert [a["status"] for a in call["response"]["attempts"]] == [429, 200]
    assert call["request"]["response_format"] is None and call["session"] == 1
    assert (tmp_path / "pack/memory/writer/sessions/t-1/session_1.txt").read_text() == "Ana paints; Ben likes it.\n"
    ctx.close()


def test_the_bounded_schema_bounds_every_list_and_free_string_and_keeps_enums():
    from memorybench.memory._writer import bounded_json_schema
    from memorybench.memory.graph import GraphReply
    from memorybench.memory.mem0 import UpdateReply

    graph = bounded_json_schema(GraphReply, max_items=3, max_chars=40)
    assert graph["properties"]["entities"]["maxItems"] == 3 and graph["properties"]["relations"]["maxItems"] == 3
    relation = graph["$defs"]["GraphRelation"]["properties"]
    assert relation["source"]["maxLength"] == 40 and relation["source"]["minLength"] == 1
    update = bounded_json_schema(UpdateReply, max_items=3, max_chars=40)
    assert update["properties"]["event"]["enum"] == ["ADD", "UPDATE", "DELETE", "NOOP"]
    assert "maxLength" not in update["properties"]["event"]
    # the model's own schema is left as it was (validation is never bounded)
    assert "maxItems" not in GraphReply.model_json_schema()["properties"]["entities"]


@pytest.mark.parametrize("json_schema", [False, True])
def test_json_tasks_send_their_schema_only_when_asked(json_schema, tmp_path, writer):
    conv = conversation([[("Ana", "I moved to Oslo."), ("Ben", "Nice.")]])
    writer.script(
        J(
            {
                "entities": [{"name": "Ana"}, {"name": "Oslo"}],
                "relations": [{"source": "Ana", "relation": "moved to", "target": "Oslo"}],
            }
        )
    )
    cfg = cfg_for("graph", writer.base_url)
    cfg.writer.json_schema = json_schema
    cfg.writer.json_max_items = 5
    cfg.writer.max_tokens = 10_000  # room for the longest reply at these bounds: none lowered
    method, ctx = open_method(cfg, tmp_path / "pack")
    method.build(conv, ctx)
    (request,) = writer.requests
    (call,) = jrows(tmp_path / "pack/memory/writer/calls.jsonl")
    if json_schema:
        assert request["response_format"]["type"] == "json_object"
        assert request["response_format"]["schema"]["properties"]["entities"]["maxItems"] == 5
    else:
        assert request["response_format"] == {"type": "json_object"}
    assert call["request"]["response_format"] == request["response_format"]  # the journal shows what was sent


def test_a_json_reply_cut_by_length_is_a_counted_failure_with_its_reason(tmp_path, writer):
    """finish_reason length: the reply is unusable even where it parses; the repair turn is
    asked, and a second cut reply makes the task a failure that says why."""
    conv = conversation([[("Ana", "I moved to Oslo."), ("Ben", "Nice.")], [("Ana", "I paint."), ("Ben", "Cool.")]])
    whole = {"entities": [{"name": "Ana", "type": "person"}], "relations": []}
    writer.script(
        Reply(text='{"entities": [{"name": "Ana", "type": "per', finish_reason="length"),  # session 1: cut twice
        Reply(text=json.dumps(whole), finish_reason="length"),  # parses, but was cut: not used
        J(whole),  # session 2: whole
    )
    cfg = cfg_for("graph", writer.base_url)
    cfg.writer.json_schema = True
    cfg.writer.json_max_items = 2
    cfg.writer.json_max_chars = 16
    method, ctx = open_method(cfg, tmp_path / "pack")
    built = method.build(conv, ctx)
    assert not writer.queue
    assert built.metadata["failed_sessions"] == [1]
    calls = jrows(tmp_path / "pack/memory/writer/calls.jsonl")
    assert [(c["attempt"], c["ok"]) for c in calls] == [("first", False), ("repair", False), ("first", True)]
    # each request asks for the schema's longest reply, no more than writer.max_tokens
    sent = [r["max_tokens"] for r in writer.requests]
    assert len(set(sent)) == 1 and sent[0] < int(cfg.writer.max_tokens)
    assert calls[0]["error"].startswith(f"the reply was cut at max_tokens={sent[0]} (finish_reason length)")
    assert calls[1]["error"] == f"the reply was cut at max_tokens={sent[0]} (finish_reason length)"
    (failure,) = jrows(tmp_path / "pack/memory/writer/failures.jsonl")
    assert "finish_reason length" in failure["error"] and failure["session"] == 1
    (cost,) = jrows(tmp_path / "pack/memory/build_cost.jsonl")
    assert cost["writer"]["failures"] == 1 and cost["writer"]["cut_by_length"] == 2
    bounds = cost["writer"]["json_bounds"]["extract"]
    assert bounds == {"max_items": 2, "max_chars": 16, "worst_case_tokens": sent[0], "tightened": False}
    ctx.close()


def test_bounds_too_long_for_max_tokens_are_lowered_and_recorded(tmp_path, writer):
    conv = conversation([[("Ana", "I moved to Oslo."), ("Ben", "Nice.")]])
    writer.script(J({"entities": [], "relations": []}))
    cfg = cfg_for("graph", writer.base_url)
    cfg.writer.json_schema = True  # 8 items, 120 characters: ~5,700 characters at most
    cfg.writer.max_tokens = 600
    method, ctx = open_method(cfg, tmp_path / "pack")
    method.build(conv, ctx)
    (request,) = writer.requests
    schema = request["response_format"]["schema"]
    items = schema["properties"]["entities"]["maxItems"]
    (cost,) = jrows(tmp_path / "pack/memory/build_cost.jsonl")
    bounds = cost["writer"]["json_bounds"]["extract"]
    assert bounds["tightened"] and bounds["max_items"] == items < 8 and bounds["max_chars"] < 120
    assert request["max_tokens"] == bounds["worst_case_tokens"] <= 600
    ctx.close()


def test_a_max_tokens_no_bound_fits_is_one_line_naming_it(tmp_path, writer):
    from memorybench.errors import UserError

    cfg = cfg_for("graph", writer.base_url)
    cfg.writer.json_schema = True
    cfg.writer.max_tokens = 20
    method, ctx = open_method(cfg, tmp_path / "pack")
    with pytest.raises(UserError) as e:
        method.build(conversation([[("Ana", "I moved to Oslo."), ("Ben", "Nice.")]]), ctx)
    assert "\n" not in e.value.message and "writer.max_tokens=20; raise writer.max_tokens" in e.value.message
    assert "writer task 'extract'" in e.value.message and not writer.requests  # refused before any call
    ctx.close()

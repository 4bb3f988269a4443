"""A model reply is read field by field (`memorybench.llm.reply`): a wrong type is a
malformed reply, retried and then one line; a reply without text is asked twice and then
stored empty, counted and shown; a runaway answer is stored cut. All through the real
openai SDK against the scripted server, and through `memorybench qa` where it matters."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.errors import ModelCallError
from memorybench.llm.client import ChatClient
from memorybench.llm.records import ChatRequest
from memorybench.pack.verify import failures, verify_pack
from memorybench.testing.scripted_server import Raw, Reply

MINI = FIXTURES / "mini_locomo.json"


def _request() -> ChatRequest:
    return ChatRequest(model="m", messages=({"role": "user", "content": "q"},), temperature=0.0, max_tokens=8, seed=0)


def _client(server, retries: int = 1) -> ChatClient:
    return ChatClient(base_url=server.base_url, api_key=None, timeout_s=2.0, max_retries=retries, backoff_base_s=0.0)


def _body(**changes) -> bytes:
    reply = {
        "id": "c-1",
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    for dotted, value in changes.items():
        node = reply
        *path, last = dotted.split("__")
        for key in path:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    return json.dumps(reply).encode()


@pytest.mark.parametrize(
    "field, value, named",
    [
        ("usage", "lots", "field usage is 'lots'"),
        ("usage", [1, 2], "field usage is [1, 2]"),
        ("usage__prompt_tokens", "3", "field usage.prompt_tokens is '3'"),
        ("usage__completion_tokens", -1, "field usage.completion_tokens is -1"),
        ("model", 7, "field model is 7"),
        ("id", {"x": 1}, 'field id is {"x": 1}'),
        ("choices__0__finish_reason", 3, "field choices.0.finish_reason is 3"),
        ("choices__0__message", "hi", "field choices.0.message is 'hi'"),
    ],
)
def test_a_reply_field_of_the_wrong_type_is_retried_then_one_line(scripted_server, field, value, named):
    scripted_server.script(Raw(_body(**{field: value})), Raw(_body(**{field: value})))
    with pytest.raises(ModelCallError) as caught:
        _client(scripted_server).complete(_request())
    message = str(caught.value)
    assert "failed after 2 attempt(s): bad reply: " in message and named in message and "\n" not in message
    assert len(scripted_server.requests) == 2


def test_a_malformed_reply_then_a_good_one_is_the_good_one(scripted_server):
    scripted_server.script(Raw(_body(model=7)), Reply("fine"))
    result = _client(scripted_server).complete(_request())
    assert result.text == "fine" and result.problem is None
    assert "field model is 7" in result.attempts[0].error


@pytest.mark.parametrize(
    "message, shown",
    [
        ({"role": "assistant", "content": None}, "content null"),
        ({"role": "assistant", "content": ""}, "content empty"),
        ({"role": "assistant", "content": None, "tool_calls": [{"id": "t", "type": "function"}]}, "content null, 1 tool call(s)"),
    ],
)
def test_a_reply_without_text_is_asked_twice_then_stored_with_its_problem(scripted_server, message, shown):
    body = _body(choices__0__message=message)
    scripted_server.script(Raw(body), Raw(body))
    result = _client(scripted_server, retries=4).complete(_request())
    assert len(scripted_server.requests) == 2  # twice, not the five a server error would get
    assert result.text == "" and result.problem == f"empty reply: no text in the reply ({shown})"
    assert result.attempts[0].error.startswith("empty reply") and result.attempts[1].error is None


def test_a_reply_without_text_then_text_is_the_text(scripted_server):
    scripted_server.script(Raw(_body(choices__0__message={"content": None})), Reply("second"))
    result = _client(scripted_server).complete(_request())
    assert result.text == "second" and result.problem is None


def _qa(tmp_path, server, *extra: str) -> int:
    return main(
        [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "max_questions=3",
            "reader.max_retries=1",
            *extra,
        ]
    )


def _pack(tmp_path):
    (pack,) = (tmp_path / "packs").glob("*/runs/*")
    return pack


def test_qa_counts_and_shows_empty_replies_and_verify_warns(tmp_path, scripted_server, capsys):
    empty = Raw(_body(choices__0__message={"content": None}))
    scripted_server.script(Reply("one"), empty, empty, Reply("three"))
    assert _qa(tmp_path, scripted_server) == 0
    pack = _pack(tmp_path)
    predictions = [json.loads(line) for line in (pack / "predictions.jsonl").read_text("utf-8").splitlines()]
    assert [p["prediction"] for p in predictions] == ["one", "", "three"]
    traces = [json.loads(line) for line in (pack / "reader" / "traces.jsonl").read_text("utf-8").splitlines()]
    assert traces[1]["response"]["problem"].startswith("empty reply") and "problem" not in traces[0]["response"]
    metrics = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert metrics["usage"]["reader"]["empty_replies"] == 1
    assert "1 empty replies stored as empty answers" in capsys.readouterr().out
    found = verify_pack(pack)
    assert failures(found) == [] and [f.code for f in found] == ["reply.empty"]


def test_a_runaway_answer_is_stored_cut_and_the_cut_recorded(tmp_path, scripted_server):
    scripted_server.script(Reply("x" * 5_000_000), Reply("short"), Reply("y" * 40))
    assert _qa(tmp_path, scripted_server, "reader.max_answer_chars=30") == 0
    pack = _pack(tmp_path)
    predictions = [json.loads(line)["prediction"] for line in (pack / "predictions.jsonl").read_text("utf-8").splitlines()]
    assert predictions == ["x" * 30, "short", "y" * 30]
    traces = [json.loads(line) for line in (pack / "reader" / "traces.jsonl").read_text("utf-8").splitlines()]
    assert [t.get("answer_cut_from_chars") for t in traces] == [5_000_000, None, 40]
    assert traces[0]["response"]["text"] == "x" * 30
    assert sum(p.stat().st_size for p in pack.rglob("*") if p.is_file()) < 1_000_000  # not the 5 MB reply
    found = verify_pack(pack)
    assert failures(found) == [] and [f.code for f in found] == ["reply.cut"]


def test_max_answer_chars_below_one_is_one_line(tmp_path, scripted_server, capsys):
    assert _qa(tmp_path, scripted_server, "reader.max_answer_chars=0") == 2
    assert "reader.max_answer_chars=0 must be at least 1" in capsys.readouterr().err

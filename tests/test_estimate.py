"""Cost before you pay (issue 18, item 4): `plan --estimate` counts calls, tokens and cost
before any call, and a run's actual prompt tokens meet the estimate."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

from memorybench.cli import main
from memorybench.estimate import (
    CACHE_MIN_TOKENS,
    OPENAI_PER_MESSAGE,
    OPENAI_PER_REPLY,
    RunEstimate,
    estimate_run,
    estimate_vs_actual,
    tokenizer_for,
)
from memorybench.plan import plan_runs
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"


def test_plan_estimate_full_context_gpt_4o_mini_over_all_of_locomo(tmp_path):
    result = run_cli("plan", "--estimate", "reader=openai", "memory=full_context", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "reader gpt-4o-mini: 1,986 calls" in out, out
    input_tokens = int(re.search(r"input ([\d,]+) tokens \(([\d,]+) cached\)", out).group(1).replace(",", ""))
    assert 30_000_000 < input_tokens < 80_000_000  # ~10 transcripts of 16-26k tokens, once per question
    assert "output at most 127,104 tokens (max_tokens per call)" in out  # 1986 x 64
    assert re.search(r"cost \$\d+\.\d{4} \(\$\d+\.\d{4} with no cache hit\); tokens by tiktoken", out)
    assert "estimate for 1 run spec(s): 1,986 model calls" in out.splitlines()[-1]
    assert not (tmp_path / "outputs").exists()  # nothing written, nothing called


def test_the_price_follows_the_tokens_and_the_cache():
    (spec,) = plan_runs(["reader=openai", "max_questions=3"])  # the first three questions of conv-26
    estimate = estimate_run(spec.cfg, spec.run_id)
    (reader,) = estimate.roles
    price = spec.cfg.pricing["gpt-4o-mini"]
    uncached = (reader.input_tokens * price["input"] + reader.output_tokens_max * price["output"]) / 1e6
    assert reader.calls == 3 and reader.cost_usd_uncached == pytest.approx(uncached)
    # the shared prefix (system message, template, the whole transcript) is cached on calls 2 and 3, in steps of 128
    per_call = reader.input_tokens / 3
    assert reader.cached_input_tokens % 128 == 0 and 2 * (per_call - 200) < reader.cached_input_tokens <= 2 * per_call
    cached = reader.cached_input_tokens
    low = (
        (reader.input_tokens - cached) * price["input"]
        + cached * price["cached_input"]
        + reader.output_tokens_max * price["output"]
    ) / 1e6
    assert reader.cost_usd == pytest.approx(low) and reader.cost_usd < reader.cost_usd_uncached
    assert estimate.cost_usd == reader.cost_usd


def _openai_count(body, tokenizer) -> int:
    """What an OpenAI server counts for a chat request, under `tokenizer`."""
    messages = body["messages"]
    return sum(tokenizer.count(m["content"]) for m in messages) + OPENAI_PER_MESSAGE * len(messages) + OPENAI_PER_REPLY


def test_scripted_run_prompt_tokens_are_within_5_percent_of_the_estimate(tmp_path):
    """The scripted server counts each request's messages with the same tokenizer the
    estimate names, so this checks what is counted: every call, the prompts as sent, the
    memory as built."""
    tokenizer = tokenizer_for({"provider": "openai_compatible", "model": "scripted"})

    def counting(body):
        return Reply(text="Not mentioned in the conversation", prompt_tokens=_openai_count(body, tokenizer), completion_tokens=2)

    with ScriptedOpenAIServer(responder=counting) as server:
        args = [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "name=est",
        ]
        assert main(args) == 0
    (pack,) = (tmp_path / "packs" / "est" / "runs").iterdir()
    estimate = RunEstimate.model_validate_json((pack / "estimate.json").read_text())
    actual = json.loads((pack / "metrics.json").read_text())["usage"]["reader"]
    (reader,) = estimate.roles
    assert reader.calls == actual["calls"] == len(server.requests)
    assert abs(actual["prompt_tokens"] - reader.input_tokens) <= 0.05 * actual["prompt_tokens"]
    assert reader.output_tokens_max >= actual["completion_tokens"]
    side_by_side = estimate_vs_actual(estimate, json.loads((pack / "metrics.json").read_text()))["reader"]
    assert side_by_side["input_tokens"] == {"estimated": reader.input_tokens, "actual": actual["prompt_tokens"]}
    assert side_by_side["calls"] == {"estimated": reader.calls, "actual": reader.calls}


@pytest.mark.local_model
def test_embedded_model_prompt_tokens_are_within_5_percent_of_the_estimate(tmp_path):
    """The embedded llama.cpp server counts with its own tokenizer; the estimate with the
    GGUF's vocabulary, loaded alone, and the completion format's joins."""
    args = [
        "qa",
        "reader=local",
        f"dataset.path={MINI}",
        "max_questions=4",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=est",
    ]
    assert main(args) == 0
    (pack,) = (tmp_path / "packs" / "est" / "runs").iterdir()
    estimate = RunEstimate.model_validate_json((pack / "estimate.json").read_text())
    (reader,) = estimate.roles
    assert reader.tokenizer == "gemma3-270m GGUF vocabulary" and reader.exact
    actual = json.loads((pack / "metrics.json").read_text())["usage"]["reader"]
    assert reader.calls == actual["calls"] == 4
    assert abs(actual["prompt_tokens"] - reader.input_tokens) <= 0.05 * actual["prompt_tokens"], (actual, reader)


def test_what_cannot_be_counted_is_said_not_guessed():
    (spec,) = plan_runs(["answerer=codex", "answerer.model=gpt-x", f"dataset.path={MINI}"])
    estimate = estimate_run(spec.cfg, spec.run_id)
    assert estimate.cost_usd is None and estimate.roles[0].calls is None
    assert any("known only after the run" in note for note in estimate.notes)
    assert CACHE_MIN_TOKENS == 1024

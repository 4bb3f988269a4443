"""A writer method on the embedded llama.cpp model, end to end, for a few questions."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, scripted_reader
from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer
from memtest import jrows


@pytest.mark.local_model
def test_session_summaries_written_by_the_embedded_model(tmp_path):
    try:
        import llama_cpp  # noqa: F401

        from memorybench.llm.local import LocalModelError, choose_local_model

        spec, _, _ = choose_local_model(1500)
        spec.path()  # installed and verified
    except (ImportError, LocalModelError) as e:
        pytest.skip(f"the embedded model cannot start here: {getattr(e, 'message', e)}")
    with ScriptedOpenAIServer() as reader:
        _run(tmp_path, reader)


def _run(tmp_path, reader):
    args = ["qa", "memory=session_summaries", "memory.source=writer", "writer=local", "writer.max_tokens=64",
            *scripted_reader(reader.base_url), f"dataset.path={FIXTURES / 'mini_locomo.json'}", "max_questions=3",
            f"paths.packs={tmp_path / 'packs'}", f"paths.cache={tmp_path / 'cache'}", "name=local"]
    try:
        assert main(args) == 0
    except SystemExit as e:  # a job's error ends Hydra's task with SystemExit
        pytest.fail(f"qa exited with {e.code}")
    (pack,) = (tmp_path / "packs" / "local" / "runs").iterdir()
    calls = jrows(pack / "memory/writer/calls.jsonl")
    assert [(c["sample_id"], c["session"]) for c in calls if c["attempt"] == "first"] == [("mini-1", 1), ("mini-1", 2)]
    assert all(c["response"]["model_answered"] for c in calls)
    summaries = sorted((pack / "memory/writer/sessions/mini-1").glob("*.txt"))
    assert len(summaries) == 2 and all(p.read_text().strip() for p in summaries)
    meta = json.loads((pack / "run_meta.json").read_text())
    writer = next(m for m in meta["models"] if m["role"] == "writer")
    assert writer["local"] is True and writer["weights"]["sha256"] and writer["answered"]
    assert any("Memory written by the embedded local model" in n for n in meta["notes"])
    assert len(reader.requests) == 3 and "[Session 1]" in reader.requests[0]["messages"][1]["content"]
    (cost,) = jrows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] >= 2 and cost["writer"]["completion_tokens"] > 0 and cost["cost_usd"] == 0.0
    assert verify_pack(pack) == []

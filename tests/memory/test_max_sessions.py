"""`memory.max_sessions` (the first N sessions of each conversation fed to the writer), one
setting for every writer-built method, and `plan`'s refusal of a local writer whose context
cannot hold a method's declared writer prompt, naming the writer."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader
from memtest import conversation, writer_responder
from omegaconf import OmegaConf

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.llm.local.models import LocalModelError, choose_local_model
from memorybench.memory._prefix import max_sessions, session_prefix
from memorybench.memory._writer_fit import check_writer_fits
from memorybench.pack.verify import verify_pack
from memorybench.plan import plan_runs
from memorybench.run_id import identity_config
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
WRITER_METHODS = ("graph", "mem0", "mem0g", "openai_memory", "session_summaries")
SCRIPTED_WRITER = ["writer=openai_compatible", "writer.base_url=http://127.0.0.1:9/v1", "writer.model=w"]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


@pytest.mark.parametrize("method", WRITER_METHODS)
def test_every_writer_method_takes_max_sessions_and_holds_it_in_its_id_only_when_set(method):
    (unset,) = plan_runs([f"memory={method}", *SCRIPTED_WRITER])
    (null,) = plan_runs([f"memory={method}", *SCRIPTED_WRITER, "memory.max_sessions=null"])
    (one,) = plan_runs([f"memory={method}", *SCRIPTED_WRITER, "memory.max_sessions=1"])
    assert unset.cfg.memory.max_sessions is None
    assert "max_sessions" not in identity_config(unset.cfg)["memory"]
    assert null.run_id == unset.run_id  # null is the run as it was before the setting existed
    assert identity_config(one.cfg)["memory"]["max_sessions"] == 1 and one.run_id != unset.run_id


def test_a_method_without_a_writer_has_no_prefix_key():
    with pytest.raises(UserError, match=r"unknown key 'memory.max_sessions'.*fix the spelling"):
        plan_runs(["memory=rag", "memory.max_sessions=1"])


@pytest.mark.parametrize("value", [0, -1])
def test_a_prefix_below_one_session_is_refused_by_plan(value):
    with pytest.raises(UserError, match=r"memory.max_sessions=.* must be a whole number of at least 1"):
        plan_runs(["memory=graph", *SCRIPTED_WRITER, f"memory.max_sessions={value}"])


def test_the_prefix_keeps_the_first_sessions_and_their_summaries():
    conv = conversation([[("Ana", "one")], [("Ben", "two")], [("Ana", "three")]])
    conv = dataclasses.replace(conv, session_summaries={1: "s1", 2: "s2", 3: "s3"})
    cut = session_prefix(conv, 2)
    assert [s.index for s in cut.sessions] == [1, 2] and cut.session_summaries == {1: "s1", 2: "s2"}
    assert session_prefix(conv, None) is conv and session_prefix(conv, 3) is conv
    assert max_sessions(OmegaConf.create({"max_sessions": None})) is None
    assert max_sessions(OmegaConf.create({"max_sessions": 2})) == 2


@pytest.mark.parametrize("method", ["graph", "mem0"])
def test_a_prefix_build_feeds_the_writer_only_the_first_sessions(method, tmp_path):
    """The mini fixture's conversations have two sessions each: with max_sessions=1 every
    writer call is about session 1, the stored memory says so, and the pack verifies."""
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        code = main(
            [
                "qa",
                f"memory={method}",
                "memory.max_sessions=1",
                *scripted_reader(reader.base_url),
                "writer=openai_compatible",
                f"writer.base_url={writer.base_url}",
                "writer.model=scripted-writer",
                "embedder=hashing",
                f"dataset.path={MINI}",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
                "name=prefix",
            ]
        )
    assert code == 0
    (pack,) = (tmp_path / "packs" / "prefix" / "runs").iterdir()
    assert verify_pack(pack) == []
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert calls and {c["session"] for c in calls} == {1}
    session_2 = json.loads(MINI.read_text("utf-8"))[0]["conversation"]["session_2"][0]["text"]
    assert not any(session_2 in m["content"] for c in calls for m in c["request"]["messages"])
    for sample_id in ("mini-1", "mini-2"):
        stored = json.loads((pack / f"memory/{method}/{sample_id}.json").read_text("utf-8"))
        assert stored["metadata"]["prefix"] == {"max_sessions": 1, "sessions_built": 1, "sessions": 2}
    lineage = rows(pack / "memory/lineage.jsonl")
    assert lineage and all(src.startswith(("D1:", "session_1")) for r in lineage for src in r["sources"])
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    assert any(note.startswith("memory.max_sessions=1:") for note in meta["notes"])
    config = (pack / "config.resolved.yaml").read_text("utf-8")
    assert "max_sessions: 1" in config


class _BigPrompt:
    """A memory class that declares a writer prompt of known size (as mem0_lib does)."""

    WRITER_PROMPT_TOKENS = 9000
    WRITER_PROMPT_NOTE = "the library's own prompt"


def _local_writer(model: str, max_tokens: int = 1024):
    return OmegaConf.create(
        {"memory": {"name": "big"}, "writer": {"name": "local", "provider": "local", "model": model, "max_tokens": max_tokens}}
    )


def test_plan_refuses_a_local_writer_too_small_for_the_declared_prompt_naming_the_writer():
    with pytest.raises(UserError) as refused:
        check_writer_fits(_local_writer("smollm2-135m"), _BigPrompt)
    message = str(refused.value)
    assert "the writer (writer=local, local model smollm2-135m) holds 8,192 tokens" in message
    assert "9,000 for the library's own prompt" in message and "no model was called" in message
    assert "writer.model=gemma3-270m" in message and "writer=openai" in message
    assert "reader" not in message
    check_writer_fits(_local_writer("gemma3-270m"), _BigPrompt)  # 32k holds it
    check_writer_fits(_local_writer("auto"), _BigPrompt)  # auto: the largest local model holds it
    server = OmegaConf.create({"memory": {"name": "big"}, "writer": {"name": "openai", "provider": "openai", "model": "x"}})
    check_writer_fits(server, _BigPrompt)  # a server's context is not ours to know


def test_an_oversize_local_model_at_run_time_names_the_role_it_serves():
    with pytest.raises(LocalModelError) as refused:
        choose_local_model(9000, "smollm2-135m", role="writer")
    message = str(refused.value)
    assert "the writer's local model smollm2-135m" in message and "writer.model=gemma3-270m" in message
    assert "reader" not in message and "memory=session_summaries" not in message
    with pytest.raises(LocalModelError, match=r"memory=session_summaries.*a reader with a longer context"):
        choose_local_model(9000, "smollm2-135m")


_PLUGINS = importlib.util.find_spec("mb_mem0_lib") is not None and importlib.util.find_spec("mb_graphiti") is not None


@pytest.mark.skipif(importlib.util.find_spec("mb_mem0_lib") is None, reason="the mem0_lib plugin is not installed")
def test_plan_refuses_mem0s_library_on_smollm2_naming_the_writer():
    with pytest.raises(UserError) as refused:
        plan_runs(["memory=mem0_lib", "writer=local"])
    message = str(refused.value)
    assert message.startswith("memory=mem0_lib: the writer (writer=local, local model smollm2-135m)")
    assert "mem0's own extraction prompt" in message and "writer.model=gemma3-270m" in message
    (spec,) = plan_runs(["memory=mem0_lib", "writer=local", "writer.model=gemma3-270m"])
    assert spec.cfg.writer.model == "gemma3-270m"


@pytest.mark.skipif(not _PLUGINS, reason="experiment=clone_vs_real needs the mem0_lib and graphiti plugins")
def test_clone_vs_real_smoke_sets_one_prefix_on_clones_and_real_systems():
    """The documented offline smoke: one prefix setting on all five run specs, in each run id."""
    with pytest.raises(UserError, match=r"memory=mem0_lib: the writer \(writer=local"):
        plan_runs(["experiment=clone_vs_real"], multirun=True)
    specs = plan_runs(
        [
            "experiment=clone_vs_real",
            "writer.model=gemma3-270m",
            "memory.max_sessions=1",
            "max_questions=3",
            "memory.max_failed_share=1.0",
        ],
        multirun=True,
    )
    assert sorted(s.cfg.memory.name for s in specs) == ["graph", "graphiti", "mem0", "mem0_lib", "mem0g"]
    assert all(identity_config(s.cfg)["memory"]["max_sessions"] == 1 for s in specs)
    assert len({json.dumps([OmegaConf.to_container(s.cfg[g]) for g in ("reader", "writer", "embedder")]) for s in specs}) == 1

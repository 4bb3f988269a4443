"""A run id names the experiment, not where it is served (issue 18, item 5): the same model
on another port is the same run, so a restarted server resumes its pack; `auto` is the
model it resolves to; what an answerer does not read is no part of its id or condition."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.plan import plan_runs
from memorybench.run_id import identity_config
from memorybench.testing.scripted_server import ScriptedOpenAIServer, Status, echo_responder

MINI = FIXTURES / "mini_locomo.json"


def _args(tmp_path, base_url: str) -> list[str]:
    return [
        "qa",
        *scripted_reader(base_url),
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=ports",
    ]


def test_a_new_port_keeps_the_run_id_and_finishes_the_half_done_pack(tmp_path):
    def three_then_fail(body):
        return echo_responder(body) if len(first.requests) <= 3 else Status(400, message="server going away")

    with ScriptedOpenAIServer(responder=three_then_fail) as first:
        with pytest.raises(SystemExit) as stopped:  # stopped after 3 answers, as a user sees it: one line, exit 3
            main(_args(tmp_path, first.base_url))
        assert stopped.value.code != 0
    (pack,) = (tmp_path / "packs" / "ports" / "runs").iterdir()
    assert len((pack / "predictions.jsonl").read_text().splitlines()) == 3
    assert not (pack / "_SUCCESS").exists()

    with ScriptedOpenAIServer() as second:
        assert second.port != first.port
        assert main(_args(tmp_path, second.base_url)) == 0
    assert [p.name for p in (tmp_path / "packs" / "ports" / "runs").iterdir()] == [pack.name]
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    total = len(rows)
    assert len(second.requests) == total - 3  # nothing answered twice
    assert len({r["question_id"] for r in rows}) == total and (pack / "_SUCCESS").is_file()
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["resumed"] == 1
    # the address is operational: recorded where the run was served, never in its identity
    (reader,) = [m for m in meta["models"] if m["role"] == "reader"]
    assert reader["base_url"] == second.base_url


def test_endpoint_addresses_are_out_of_the_id():
    (a,) = plan_runs(scripted_reader("http://127.0.0.1:9/v1", "m"))
    (b,) = plan_runs(scripted_reader("http://10.0.0.7:8080/v1", "m"))
    (c,) = plan_runs(scripted_reader("http://127.0.0.1:9/v1", "other"))
    assert a.run_id == b.run_id and a.config_sha256 == b.config_sha256
    assert c.run_id != a.run_id
    assert "base_url" not in identity_config(a.cfg)["reader"]
    (w1,) = plan_runs(["writer=openai_compatible", "writer.base_url=http://127.0.0.1:1/v1", "writer.model=w"])
    (w2,) = plan_runs(["writer=openai_compatible", "writer.base_url=http://127.0.0.1:2/v1", "writer.model=w"])
    assert w1.run_id == w2.run_id


def test_auto_is_the_model_it_resolves_to():
    (auto,) = plan_runs(["reader=local"])
    (named,) = plan_runs(["reader=local", "reader.model=gemma3-270m"])
    (smol,) = plan_runs(["reader=local", "reader.model=smollm2-135m"])
    assert auto.cfg.reader.model == "auto"
    assert auto.run_id == named.run_id and "-gemma3-270m-" in auto.run_id
    assert identity_config(auto.cfg)["reader"]["model"] == "gemma3-270m"
    assert smol.run_id != auto.run_id


def test_codex_id_holds_no_memory_it_does_not_read():
    codex = ["answerer=codex", "answerer.model=gpt-x"]
    (full,) = plan_runs([*codex, "memory=full_context"])
    (workspace,) = plan_runs([*codex, "memory=workspace_files", "reader.temperature=0.5"])
    assert full.run_id == workspace.run_id and full.run_id.startswith("workspace_files-codex-gpt-x-")
    # a memory the agent would not read is refused, not silently folded into the same id
    with pytest.raises(UserError, match="not memory=session_summaries"):
        plan_runs([*codex, "memory=session_summaries"])
    identity = identity_config(full.cfg)
    assert not {"memory", "reader", "writer", "embedder"} & set(identity)
    assert "agents/codex_workspace_v1.txt" in identity["code"]["prompts"]
    # prompt_injected fills the reader's template with the memory: both are the experiment
    (injected_full,) = plan_runs([*codex, "arm=codex_matched", "memory=full_context"])
    (injected_summaries,) = plan_runs([*codex, "arm=codex_matched", "memory=session_summaries"])
    assert injected_full.run_id != injected_summaries.run_id
    assert injected_full.run_id.startswith("full_context-codex-gpt-x-")
    assert identity_config(injected_full.cfg)["reader"] == {"prompt": "readers/qa_v1.txt"}


def test_a_codex_pack_names_no_memory_condition_it_does_not_read(tmp_path):
    from omegaconf import OmegaConf

    from memorybench.compare.summary import run_keys
    from memorybench.pack.reader import PackReader
    from memorybench.pack.schemas import RunMeta

    choices = {"dataset": "locomo10", "memory": "full_context", "reader": "local", "writer": "none", "answerer": "codex"}
    for mode, memory in (("workspace_files", None), ("prompt_injected", "full_context")):
        (spec,) = plan_runs(["answerer=codex", "answerer.model=gpt-x", f"answerer.mode={mode}"])
        pack = tmp_path / mode
        pack.mkdir()
        (pack / "config.resolved.yaml").write_text(OmegaConf.to_yaml(spec.cfg))
        meta = RunMeta.model_construct(run_id=spec.run_id, name="t", config_sha256=spec.config_sha256, choices=choices, models=[])
        keys = run_keys(PackReader.open(pack), meta)
        assert keys["memory"] == memory and keys["reader"] is None and keys["answerer"] == "codex"
        assert ("memory" in json.loads(keys["choices"])) == (memory is not None)

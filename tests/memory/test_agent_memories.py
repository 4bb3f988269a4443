"""`memory=workspace_files` and `memory=notes_only`: the seed's names for the Codex agent's
own memories. With `answerer=codex` they choose its mode; with the reader, one line."""

from __future__ import annotations

import pytest

from memorybench.errors import UserError
from memorybench.plan import plan_runs


@pytest.mark.parametrize("memory", ["workspace_files", "notes_only"])
def test_an_agent_memory_chooses_the_codex_mode(memory):
    (spec,) = plan_runs([f"memory={memory}", "answerer=codex"])
    assert spec.cfg.memory.name == memory and spec.cfg.answerer.mode == memory


def test_codex_keeps_its_default_mode_and_arms_keep_theirs():
    (spec,) = plan_runs(["answerer=codex"])
    assert spec.cfg.memory.name == "full_context" and spec.cfg.answerer.mode == "workspace_files"
    (spec,) = plan_runs(["arm=codex_matched", "memory=session_summaries"])
    assert spec.cfg.answerer.mode == "prompt_injected"


@pytest.mark.parametrize("memory", ["workspace_files", "notes_only"])
def test_an_agent_memory_with_the_reader_is_one_line(memory):
    with pytest.raises(UserError) as caught:
        plan_runs([f"memory={memory}"])
    message = caught.value.message
    assert f"memory={memory} is the Codex agent's memory" in message and "answerer=codex" in message and "\n" not in message


def test_an_agent_memory_and_another_mode_disagree():
    with pytest.raises(UserError, match="memory=notes_only and answerer.mode=workspace_files disagree"):
        plan_runs(["memory=notes_only", "answerer=codex", "answerer.mode=workspace_files"])


def test_the_two_memories_are_two_run_ids():
    ids = {plan_runs([f"memory={m}", "answerer=codex"])[0].run_id for m in ("workspace_files", "notes_only")}
    assert len(ids) == 2

"""experiment=real_systems and its analysis design, composed and checked without running any
system: the sweep names every plugin of plugins/ that has a memory option, and nothing else; its
budget, reader, writer, embedder and judge are experiment=clone_vs_real's (a run spec common to
both has one run id); conf/analysis/real_systems.yaml compares every pair of the sweep, paired
by question, with the tables that carry the minimum detectable difference. No model call."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest
from conftest import REPO
from hydra import compose
from omegaconf import OmegaConf

from memorybench import CONF_DIR
from memorybench.compare.report import load_design
from memorybench.errors import UserError
from memorybench.plan import compose_spec, hydra_context, plan_runs, sweep_jobs
from memorybench.plugins import installed_plugins

EXPERIMENT = "experiment=real_systems"
DESIGN = CONF_DIR / "analysis" / "real_systems.yaml"


def plugin_memory_options() -> set[str]:
    """The memory options of the plugin packages in this checkout: plugins/NAME/PACKAGE/conf/memory/*.yaml."""
    return {p.stem for p in (REPO / "plugins").glob("*/*/conf/memory/*.yaml") if not p.stem.endswith("_schema")}


def swept_memories() -> list[str]:
    with hydra_context():
        jobs = sweep_jobs([EXPERIMENT])
    memories = [o.partition("=")[2] for job in jobs for o in job if o.startswith("memory=")]
    assert len(memories) == len(jobs), jobs
    return memories


def test_the_sweep_names_every_plugin_with_a_memory_option_and_no_clone():
    plugins = plugin_memory_options()
    assert {"mem0_lib", "graphiti", "amem", "langmem", "hindsight", "letta", "cognee", "memos"} <= plugins, plugins
    memories = swept_memories()
    assert len(memories) == len(set(memories)), memories
    missing = plugins - set(memories)
    assert not missing, f"plugins/ has memory options {sorted(missing)} that conf/experiment/real_systems.yaml does not sweep"
    extra = set(memories) - plugins
    assert not extra, f"conf/experiment/real_systems.yaml sweeps {sorted(extra)}, which no plugin under plugins/ provides"
    clones = {p.stem for p in (CONF_DIR / "memory").glob("*.yaml")}
    assert not clones & set(memories), "a clone belongs to experiment=clone_vs_real, not beside the real systems"


def _node(experiment: str, key: str):
    with hydra_context():
        cfg = compose(config_name="config", overrides=[f"experiment={experiment}"])
    return OmegaConf.to_container(cfg[key], resolve=True)


@pytest.mark.parametrize("key", ["budget", "reader", "writer", "embedder", "judge", "answerer", "dataset"])
def test_the_protocol_and_the_budget_are_clone_vs_reals(key):
    assert _node("real_systems", key) == _node("clone_vs_real", key)
    if key == "budget":
        assert _node("real_systems", key) == {"top_k": 10, "max_memory_tokens": 4096}


def test_a_run_spec_in_both_experiments_has_one_run_id():
    """Same memory, same everything else: the run id (which leaves out the experiment's name)
    is the same, so the budget and the protocol hold for every system both sweep."""
    with hydra_context():
        real = compose_spec([EXPERIMENT, "memory=raw_chunks"])
        clone = compose_spec(["experiment=clone_vs_real", "memory=raw_chunks"])
    assert real.cfg.name == "real_systems" and clone.cfg.name == "clone_vs_real"
    assert real.run_id == clone.run_id and real.config_sha256 == clone.config_sha256


def test_graphiti_is_the_same_run_in_both_experiments():
    pytest.importorskip("mb_graphiti", reason="the graphiti plugin is not installed: bash plugins/graphiti/install.sh")
    with hydra_context():
        real = compose_spec([EXPERIMENT, "memory=graphiti"])
        clone = compose_spec(["experiment=clone_vs_real", "memory=graphiti"])
    assert real.run_id == clone.run_id
    assert real.cfg.budget.top_k == 10 and real.cfg.budget.max_memory_tokens == 4096


def test_plan_names_a_system_whose_plugin_is_not_installed():
    names = {p.name for p in installed_plugins()}
    absent = sorted(set(swept_memories()) - names)
    if not absent:
        pytest.skip("every system of the sweep is installed here")
    with pytest.raises(UserError) as failed:
        plan_runs([EXPERIMENT, f"memory={absent[0]}"], multirun=True)
    assert f"memory={absent[0]} is the plugin plugins/" in failed.value.message and "install it with" in failed.value.message


def test_the_analysis_compares_every_pair_of_the_sweep():
    design = load_design(DESIGN)
    memories = swept_memories()
    assert design.experiment == "real_systems" and design.conditions == ["memory"]
    pairs = [tuple(p) for p in design.pairs or []]
    assert all(a != b for a, b in pairs), pairs
    assert len({frozenset(p) for p in pairs}) == len(pairs), "a pair named twice (in either order)"
    assert {frozenset(p) for p in pairs} == {frozenset(p) for p in combinations(memories, 2)}
    # paired_differences carries each pair's interval over conversations and its minimum
    # detectable difference; scores_by_category and latency_tokens put the systems side by side
    assert {"paired_differences", "scores_by_category", "latency_tokens"} <= set(design.tables)
    assert Path(design.packs[0]) == Path("outputs/packs")

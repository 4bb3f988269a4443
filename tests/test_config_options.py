"""Config smoke test: every option of every conf/ group composes on its own, passes
`validate_config` and names a component that is registered; every experiment expands into
distinct runs; a machine's `conf/local/default.yaml` changes settings, never a run id.
No model call, no server."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from conftest import PINS
from hydra import initialize_config_dir

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench import CONF_DIR
from memorybench.config import load_component_configs
from memorybench.errors import UserError
from memorybench.plan import RunSpec, compose_spec, sweep_jobs
from memorybench.run_id import identity_config

#: folders under conf/ that are not config groups of a run, and why
NOT_RUN_GROUPS = {
    "analysis": "analysis designs for `memorybench report`, never composed into a run",
    "local": "one machine's git-ignored overrides (`optional local` in config.yaml)",
}

DEAD = "http://127.0.0.1:9/v1"
#: what an option needs on the command line to compose and validate (nothing is called)
_LME_DIR = tempfile.mkdtemp(prefix="memorybench-lme-")
atexit.register(shutil.rmtree, _LME_DIR, True)
_LONGMEMEVAL = make_longmemeval(Path(_LME_DIR) / "lme.json", questions=6)
#: BEAM's tiers without a pin read a local copy only: the pinned 128K tier's first conversation,
#: in a folder of each tier's name
_BEAM = {
    tier: shutil.copytree(PINS / "beam" / "chats" / "100K" / "1", Path(_LME_DIR) / tier / "1").parent
    for tier in ("500K", "1M", "10M")
}

NEEDS: dict[str, list[str]] = {
    "reader=openai_compatible": [f"reader.base_url={DEAD}", "reader.model=m"],
    "writer=openai_compatible": [f"writer.base_url={DEAD}", "writer.model=m"],
    # the writer arms build memory with a writer model: the experiments choose which
    "arm=writer_summaries": ["writer=local"],
    "arm=writer_graph": ["writer=local"],
    # the Codex agent's own memories: the one-call reader has nothing to read in them
    "memory=workspace_files": ["answerer=codex"],
    "memory=notes_only": ["answerer=codex"],
    # memories a writer model writes: qa (and so plan) refuses them with writer=none
    **{f"memory={m}": ["writer=local"] for m in ("graph", "mem0", "mem0g", "openai_memory")},
    # LongMemEval's files are not fetched on our machines (PINS.md): a file in its format instead
    **{f"dataset=longmemeval_{n}": [f"dataset.path={_LONGMEMEVAL}"] for n in ("oracle", "s", "m")},
    "experiment=longmemeval": [f"dataset.path={_LONGMEMEVAL}"],
    # mem0's own prompt does not fit the embedded default writer (SmolLM2, 8k): plan refuses
    # memory=mem0_lib with it, naming the writer (tests/memory/test_max_sessions.py)
    "experiment=clone_vs_real": ["writer.model=gemma3-270m"],
    "experiment=real_systems": ["writer.model=gemma3-270m"],
    # a stitched LoCoMo-Plus conversation is longer than the embedded reader's context: plan refuses
    # full_context there before any call (tests/benchmarks/test_locomo_plus.py), so a retriever here
    **{f"dataset={d}": ["memory=raw_chunks"] for d in ("locomo_plus", "locomo_plus_cognitive")},
    # so is a BEAM conversation (128K tokens and more); the tiers without a pin read a local copy
    "dataset=beam_128k": ["memory=raw_chunks"],
    **{f"dataset=beam_{tier.lower()}": ["memory=raw_chunks", f"dataset.path={path}"] for tier, path in _BEAM.items()},
}

#: experiments that sweep a plugin's memory: the plugin packages they need (skipped without them)
NEEDS_PLUGINS: dict[str, tuple[str, ...]] = {
    "experiment=clone_vs_real": ("mb_mem0_lib", "mb_graphiti"),
    "experiment=real_systems": (
        "mb_mem0_lib",
        "mb_graphiti",
        "mb_amem",
        "mb_langmem",
        "mb_hindsight",
        "mb_letta",
        "mb_cognee",
        "mb_memos",
    ),
}

#: (group, option) whose node names no registered component, and why
NO_COMPONENT = {("writer", "none"): "no writer model: memory is built by software only"}


def _override_keys() -> dict[str, str]:
    """Group -> the command-line key that selects its option, from config.yaml's defaults list."""
    defaults = yaml.safe_load((CONF_DIR / "config.yaml").read_text("utf-8"))["defaults"]
    keys = {}
    for entry in defaults:
        if isinstance(entry, dict):
            (key,) = entry
            key = key.removeprefix("optional ").removeprefix("override ").strip()
            group, _, package = key.partition("@")
            # `pricing@pricing` names the group's own package: Hydra's override key is the group
            keys[group] = key if package and package != group else group
    return keys


KEYS = _override_keys()


def _options() -> list[tuple[str, str]]:
    out = []
    for folder in sorted(p for p in CONF_DIR.iterdir() if p.is_dir() and p.name not in NOT_RUN_GROUPS):
        out += [(folder.name, p.stem) for p in sorted(folder.glob("*.yaml")) if not p.stem.endswith("_schema")]
    return out


OPTIONS = _options()


@contextmanager
def _conf(conf_dir: Path = CONF_DIR) -> Iterator[None]:
    # the components' own schema nodes, as `plan`'s hydra_context stores them (without this
    # a test run alone would depend on another test file having imported the codex module)
    load_component_configs()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="test_config_options"):
        yield


def _compose(overrides: list[str]) -> RunSpec:
    try:
        return compose_spec(overrides)
    except UserError as e:
        raise AssertionError(
            f"`memorybench plan {' '.join(overrides)}` fails: {e.message}. If the option needs settings "
            "from the command line, add them to NEEDS in tests/test_config_options.py"
        ) from None


def test_every_group_folder_is_in_the_defaults_list():
    for folder in sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir()):
        assert folder in KEYS or folder in NOT_RUN_GROUPS, (
            f"conf/{folder}/ is not in conf/config.yaml's defaults list; add it there "
            f"(or to NOT_RUN_GROUPS in tests/test_config_options.py if it is not a config group)"
        )
    assert {g for g, _ in OPTIONS} >= {"memory", "reader", "experiment"}, "the parametrized tests below would be empty"


def test_the_defaults_list_ends_with_experiment_then_local():
    defaults = yaml.safe_load((CONF_DIR / "config.yaml").read_text("utf-8"))["defaults"]
    groups = [next(iter(e)) for e in defaults if isinstance(e, dict) and not next(iter(e)).startswith("override ")]
    assert groups[-2:] == ["experiment", "optional local"]
    assert {"experiment": None} in defaults and {"optional local": "default"} in defaults


def _check_component(group: str, option: str, cfg) -> None:
    from memorybench.registry import ANSWERERS, CHAT_PROVIDERS, EMBEDDERS, JUDGES, MEMORY
    from memorybench.score.judge import DEFAULT_PROTOCOL

    if (group, option) in NO_COMPONENT:
        return
    node = cfg[group]
    named = {
        "memory": [(MEMORY, node.get("name"))],
        "answerer": [(ANSWERERS, node.get("name"))],
        "reader": [(CHAT_PROVIDERS, node.get("provider"))],
        "writer": [(CHAT_PROVIDERS, node.get("provider"))],
        "judge": [(CHAT_PROVIDERS, node.get("provider")), (JUDGES, node.get("protocol") or DEFAULT_PROTOCOL)],
        "embedder": [(EMBEDDERS, node.get("provider"))],
    }.get(group, [])
    for registry, name in named:
        assert name is not None and str(name) in registry, (
            f"conf/{group}/{option}.yaml names {registry.option}={name}, which is not registered; "
            f"registered: {', '.join(registry.names())}"
        )


#: groups whose options are `# @package _global_` settings over other groups, not a node of their own
GLOBAL_GROUPS = ("experiment", "arm")
GROUP_OPTIONS = [o for o in OPTIONS if o[0] not in GLOBAL_GROUPS]


@pytest.mark.parametrize(("group", "option"), GROUP_OPTIONS, ids=[f"{g}={o}" for g, o in GROUP_OPTIONS])
def test_every_option_composes_validates_and_names_a_component(group, option):
    selector = f"{KEYS[group]}={option}"
    with _conf():
        spec = _compose([selector, *NEEDS.get(f"{group}={option}", [])])
    node = spec.cfg[group]
    if "name" in node:
        assert node.name == option, f"conf/{group}/{option}.yaml says name: {node.name}; the option name is the identity"
    _check_component(group, option, spec.cfg)


@pytest.mark.parametrize("option", [o for g, o in OPTIONS if g == "experiment"])
def test_every_experiment_expands_into_distinct_runs(option):
    for package in NEEDS_PLUGINS.get(f"experiment={option}", ()):
        pytest.importorskip(
            package,
            reason=f"experiment={option} needs its plugin: .venv/bin/pip install -e plugins/{package.removeprefix('mb_')}",
        )
    with _conf():
        jobs = sweep_jobs([f"experiment={option}", *NEEDS.get(f"experiment={option}", [])])
        specs = [_compose(job) for job in jobs]
    assert specs, f"experiment={option} expands to no run"
    assert len({s.run_id for s in specs}) == len(specs), [s.run_id for s in specs]


def test_a_local_override_changes_settings_not_run_ids(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf, ignore=shutil.ignore_patterns("local"))
    with _conf(conf):
        before = _compose([])
    (conf / "local").mkdir()
    (conf / "local" / "default.yaml").write_text(
        f"# @package _global_\npaths:\n  packs: {tmp_path / 'packs'}\nreader:\n  timeout_s: 5\n", "utf-8"
    )
    with _conf(conf):
        after = _compose([])
    assert after.cfg.paths.packs == str(tmp_path / "packs") and after.cfg.reader.timeout_s == 5
    assert after.run_id == before.run_id and after.config_sha256 == before.config_sha256
    assert "local" not in identity_config(after.cfg) and "experiment" not in after.cfg


@pytest.mark.parametrize("option", [o for g, o in OPTIONS if g == "arm"])
def test_every_arm_composes_and_changes_the_run(option):
    """An arm (conf/arm/) sets other groups' options together; each composes and validates,
    and is the run its settings make: the reader arm is the default answerer, the others differ."""
    with _conf():
        base = _compose([])
        spec = _compose([f"arm={option}", *NEEDS.get(f"arm={option}", [])])
    assert (spec.run_id == base.run_id) == (option == "reader"), option


def test_the_named_experiments_expand_as_the_seed_names_them():
    with _conf():
        reader = [_compose(job) for job in sweep_jobs(["experiment=reader_analysis"])]
        writer = [_compose(job) for job in sweep_jobs(["experiment=writer_analysis"])]
        methods = [_compose(job) for job in sweep_jobs(["experiment=memory_methods"])]
    # full_context and released summaries x (reader, Codex matched payload, Codex persist on), on qa_mem0_v1
    assert len(reader) == 6 and {s.cfg.memory.name for s in reader} == {"full_context", "session_summaries"}
    assert all(s.cfg.reader.prompt == "qa_mem0_v1" for s in reader)
    agents = [(s.cfg.answerer.mode, s.cfg.answerer.persist) for s in reader if s.cfg.answerer.name == "codex"]
    assert sorted(agents) == [("prompt_injected", False)] * 2 + [("prompt_injected", True)] * 2
    assert all(s.cfg.memory.source == "released" for s in reader if s.cfg.memory.name == "session_summaries")
    # writer-made summaries and the graph, each under two writers
    assert sorted((s.cfg.memory.name, s.cfg.writer.name) for s in writer) == [
        ("graph", "local"),
        ("graph", "openai"),
        ("session_summaries", "local"),
        ("session_summaries", "openai"),
    ]
    assert all(s.cfg.memory.source == "writer" for s in writer if s.cfg.memory.name == "session_summaries")
    assert len(methods) == 8 and len({s.cfg.memory.name for s in methods}) == 8

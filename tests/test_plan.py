"""Run specs: composition, sweep expansion, run ids, and one-line errors before any call."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli

from memorybench.errors import UserError
from memorybench.plan import plan_runs
from memorybench.run_id import config_sha256, identity_config

SCRIPTED = ["reader=openai_compatible", "reader.base_url=http://127.0.0.1:9/v1", "reader.model=m"]


def test_sweep_is_the_product_in_order():
    specs = plan_runs([*SCRIPTED, "memory=full_context,session_summaries", "reader.max_tokens=8,16"], multirun=True)
    assert [(s.cfg.memory.name, s.cfg.reader.max_tokens) for s in specs] == [
        ("full_context", 8),
        ("full_context", 16),
        ("session_summaries", 8),
        ("session_summaries", 16),
    ]
    assert len({s.run_id for s in specs}) == 4


def test_run_id_ignores_paths_names_and_operational_settings():
    (a,) = plan_runs([*SCRIPTED, "paths.packs=/x", "name=one", "reader.timeout_s=1", "reader.cache=true"])
    (b,) = plan_runs([*SCRIPTED, "paths.packs=/y", "name=two"])
    (c,) = plan_runs([*SCRIPTED, "reader.temperature=0.5"])
    assert a.run_id == b.run_id and a.config_sha256 == b.config_sha256
    assert c.run_id != a.run_id
    assert a.run_id.startswith("full_context-reader-m-") and len(a.run_id.rsplit("-", 1)[1]) == 12


def test_explicit_dataset_is_identified_by_content_not_path(tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_bytes((FIXTURES / "mini_locomo.json").read_bytes())
    (a,) = plan_runs([*SCRIPTED, f"dataset.path={FIXTURES / 'mini_locomo.json'}"])
    (b,) = plan_runs([*SCRIPTED, f"dataset.path={copy}"])
    assert a.run_id == b.run_id
    assert "path" not in identity_config(a.cfg)["dataset"]
    copy.write_bytes(copy.read_bytes().replace(b"pottery", b"knitting"))
    (c,) = plan_runs([*SCRIPTED, f"dataset.path={copy}"])
    assert c.config_sha256 != a.config_sha256 == config_sha256(a.cfg)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["memory=rag_typo"], "unknown memory option 'rag_typo'"),
        (["reader=gpt"], "unknown reader option 'gpt'"),
        (["experiment=nope"], "unknown experiment option 'nope'"),
        (["reader.temprature=1"], "unknown key 'reader.temprature' (reader.temprature=1). Did you mean 'temperature'?"),
        (["reader.provider=azure"], "reader.provider='azure' is unknown"),
        (["max_questions=0"], "max_questions=0 must be at least 1"),
        (["memory=session_summaries", "memory.source=magic"], "memory.source='magic' is not one of"),
    ],
)
def test_bad_overrides_fail_with_one_line(overrides, expected):
    with pytest.raises(UserError) as info:
        plan_runs(overrides)
    assert expected in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (
            ["memory=rag", "memory.topk=3"],
            "unknown key 'memory.topk' (memory.topk=3). Did you mean 'top_k'? memory keys (memory=rag): "
            "chunk_overlap, chunk_tokens, name, prompts, top_k; fix the spelling",
        ),
        (["memroy=rag"], "unknown config group or key 'memroy' (memroy=rag). Did you mean 'memory'? groups and top-level keys: "),
        (["memroy=rag", "memory.topk=3"], "Did you mean 'memory'?"),
        (["memory=rag", "memory.topk=3", "reader.temprature=1"], "Could not override"),  # two typos: Hydra's words, less its `+`
        (["+memroy=rag"], "unknown top-level key 'memroy'. Did you mean 'memory'?"),
    ],
)
def test_typos_get_the_did_you_mean_and_the_keys_at_once_never_a_plus(overrides, expected):
    """Issue 30, item 2: Hydra's "To append to your config use +key=..." is never the advice
    for a key the schema lacks; the did-you-mean and the valid keys come at once."""
    with pytest.raises(UserError) as info:
        plan_runs(overrides)
    message = str(info.value)
    assert expected in message and "\n" not in message
    assert "To append" not in message and "use +" not in message


def test_plan_command_lists_specs(tmp_path):
    result = run_cli("plan", "-m", *SCRIPTED, "memory=full_context,session_summaries", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0].split("\t")[2].startswith("full_context-reader-m-")
    assert "2 run spec(s)" in result.stderr


def test_plan_fails_on_a_missing_prompt_file_in_one_line():
    with pytest.raises(UserError) as info:
        plan_runs([*SCRIPTED, "reader.prompt=readers/no_such_v9.txt"])
    assert "prompt template 'readers/no_such_v9.txt' not found" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(UserError, match="writers/no_such_summary.txt"):
        plan_runs(
            [
                *SCRIPTED,
                "memory=session_summaries",
                "memory.source=writer",
                "writer=openai_compatible",
                "writer.base_url=http://127.0.0.1:9/v1",
                "writer.model=w",
                "memory.prompts.summary=writers/no_such_summary.txt",
            ]
        )


def test_plan_fails_on_a_missing_dataset_file(tmp_path):
    with pytest.raises(UserError, match="gone.json does not exist") as info:
        plan_runs([*SCRIPTED, f"dataset.path={tmp_path / 'gone.json'}"])
    assert "\n" not in str(info.value)


class _BuildsOnly:
    """A memory method that builds but cannot hand a question its memory."""

    question_dependent = False
    software_only = True

    def __init__(self, cfg):
        pass

    def build(self, conversation, ctx):
        raise AssertionError("plan must not build")


@pytest.fixture
def ghost_memories():
    from memorybench.registry import MEMORY

    MEMORY.add("ghost_half", _BuildsOnly, module=__name__)
    MEMORY.add("ghost_lazy", "memorybench_no_such_plugin_module:Ghost")
    yield
    MEMORY.remove("ghost_half")
    MEMORY.remove("ghost_lazy")


@pytest.mark.parametrize(
    "name, expected",
    [
        ("ghost_half", "memory method 'ghost_half' (memory=ghost_half) does not implement for_question"),
        ("ghost_lazy", "memory method 'ghost_lazy' (memory=ghost_lazy) cannot be loaded: ModuleNotFoundError"),
        ("ghost_none", "unknown memory method 'ghost_none'"),
    ],
)
def test_plan_fails_on_an_unimplemented_memory_in_one_line(ghost_memories, name, expected):
    with pytest.raises(UserError) as info:
        plan_runs([*SCRIPTED, f"memory.name={name}"])
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_plan_fails_on_an_unknown_embedder_of_a_memory_that_embeds():
    with pytest.raises(UserError, match="embedder.provider=nope") as info:
        plan_runs([*SCRIPTED, "memory=rag", "embedder.provider=nope"])
    assert "\n" not in str(info.value)


def test_plan_into_a_closed_pipe_ends_quietly_with_sigpipes_status(tmp_path):
    """`memorybench plan -m ... | head -1`: the reader leaves before the listing is written;
    no BrokenPipeError traceback, the shell's 141 (128 + SIGPIPE)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the child writes a byte
    done = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", "plan", "-m", *SCRIPTED, "memory=full_context,rag"],
        cwd=tmp_path,
        stdout=write,
        stderr=subprocess.PIPE,
        timeout=120,
    )
    os.close(write)
    assert done.returncode == 141 and done.stderr == b"", done.stderr.decode()


def test_an_option_of_a_plugin_that_is_not_installed_names_its_install_command(tmp_path, monkeypatch):
    """`memory=NAME` of a plugin package of the checkout that is not installed (plugins/<name>/, its
    conf in its package): one line naming the plugin and the command of its README."""
    import memorybench

    conf = tmp_path / "plugins" / "lastturns" / "mb_lastturns" / "conf" / "memory"
    conf.mkdir(parents=True)
    (conf / "last_turns.yaml").write_text("name: last_turns\n")
    monkeypatch.setattr(memorybench, "PROJECT_ROOT", tmp_path)
    with pytest.raises(UserError) as info:
        plan_runs(["memory=last_turns"])
    assert str(info.value) == (
        "memory=last_turns is the plugin plugins/lastturns, which is not installed: install it with "
        "`.venv/bin/pip install -e plugins/lastturns` (plugins/lastturns/README.md), or leave last_turns out of the sweep"
    )
    (tmp_path / "plugins" / "lastturns" / "install.sh").write_text("#!/bin/sh\n")
    with pytest.raises(UserError, match=r"install it with `bash plugins/lastturns/install.sh`"):
        plan_runs(["memory=last_turns"])
    with pytest.raises(UserError, match=r"^unknown memory option 'last_turn'\. .*full_context"):
        plan_runs(["memory=last_turn"])  # not a plugin's option either: the known options, as ever

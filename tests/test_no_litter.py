"""A qa run writes nothing into the current directory unless asked: a single run's Hydra
folder is a temp one, a sweep's goes beside the packs root."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli, scripted_reader


def test_qa_and_a_sweep_leave_the_current_directory_empty(tmp_path, scripted_server):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    common = [
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp_path / 'out' / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "max_questions=2",
    ]
    single = run_cli("qa", *common, cwd=cwd)
    assert single.returncode == 0, single.stderr
    sweep = run_cli("qa", "-m", *common, "memory=full_context,session_summaries", cwd=cwd)
    assert sweep.returncode == 0, sweep.stderr
    assert sorted(p.name for p in cwd.iterdir()) == []
    # the sweep's own files sit beside the packs root
    (multirun,) = (tmp_path / "out" / "sweeps").glob("*/multirun.yaml")
    assert len(list((tmp_path / "out" / "packs" / "default" / "runs").iterdir())) == 2 and multirun.is_file()
    # a sweep job's overrides are recorded as typed: no Hydra escape (`http\\://`)
    for meta in (tmp_path / "out" / "packs" / "default" / "runs").glob("*/run_meta.json"):
        overrides = json.loads(meta.read_text())["overrides"]
        assert f"reader.base_url={scripted_server.base_url}" in overrides and not any("\\" in o for o in overrides)
    planned = run_cli("plan", "-m", *common, "memory=full_context,session_summaries", cwd=cwd)
    assert (
        planned.returncode == 0
        and f"reader.base_url={scripted_server.base_url} " in planned.stdout
        and "\\" not in planned.stdout
    )

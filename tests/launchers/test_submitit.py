"""hydra/launcher=submitit_local (hydra-submitit-launcher, configs from its own plugin) runs
the same 2 x 2 sweep as the cloudrun tests: submitit pickles qa_app and runs each job in
its own process; the packs land where a basic-launcher run puts them."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.plan import plan_runs

pytest.importorskip("submitit", reason="pip install hydra-submitit-launcher (the test extra)")
pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install hydra-submitit-launcher (the test extra)")

SWEEP = ["memory=full_context,session_summaries", "reader.max_tokens=8,16"]


def test_submitit_local_runs_the_sweep_and_writes_every_pack(scripted_server, tmp_path):
    common = [
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
    ]
    expected = sorted(spec.run_id for spec in plan_runs([*common, *SWEEP], multirun=True))
    assert len(expected) == 4
    assert (
        main(
            [
                "qa",
                "-m",
                *common,
                *SWEEP,
                f"hydra.sweep.dir={tmp_path / 'multirun'}",
                "hydra/launcher=submitit_local",
                "hydra.launcher.timeout_min=10",
            ]
        )
        == 0
    )
    packs = sorted((tmp_path / "packs" / "default" / "runs").iterdir())
    assert [p.name for p in packs] == expected
    for pack in packs:
        assert (pack / "_SUCCESS").is_file()
        meta = json.loads((pack / "run_meta.json").read_text())
        assert meta["choices"]["memory"] in ("full_context", "session_summaries")
        assert json.loads((pack / "metrics.json").read_text())["counts"]["total"] == 10
    assert len(scripted_server.requests) == 40  # 4 runs x 10 questions, each job in its own submitit process
    # submitit kept each job's pickled result and logs under the sweep folder
    assert len(list((tmp_path / "multirun" / ".submitit").glob("*/*_result.pkl"))) == 4


@pytest.mark.parametrize("launcher", ["submitit_local", "basic"])
def test_a_failed_job_is_failed_in_hydras_results_in_one_line(launcher, tmp_path, capfd):
    """The first job's reader call fails: that job is FAILED in Hydra's results, the second one
    still runs, and the sweep exits 1 with Hydra's line naming the job and ours, no traceback."""
    import pickle

    from hydra.core.utils import JobStatus

    from memorybench.hydra_app import QAJobFailed
    from memorybench.testing.scripted_server import ScriptedOpenAIServer, Status, echo_responder

    def responder(body):
        return Status(500, message="scripted: no answer for 16 tokens") if body["max_tokens"] == 16 else echo_responder(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        common = [
            *scripted_reader(server.base_url),
            f"dataset.path={FIXTURES / 'mini_locomo.json'}",
            "reader.max_retries=0",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "memory=full_context",
        ]
        failing, passing = plan_runs([*common, "reader.max_tokens=16,8"], multirun=True)
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "qa",
                    "-m",
                    *common,
                    "reader.max_tokens=16,8",
                    f"hydra.sweep.dir={tmp_path / 'multirun'}",
                    f"hydra/launcher={launcher}",
                    *(["hydra.launcher.timeout_min=10"] if launcher != "basic" else []),
                ]
            )
    assert info.value.code == 1
    err = capfd.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and "HYDRA_FULL_ERROR" not in line]
    assert len(lines) == 2, lines
    assert lines[0].startswith("Error executing job with overrides: [") and "reader.max_tokens=16" in lines[0]
    assert lines[1].startswith("memorybench: error: model call to ") and "scripted: no answer for 16 tokens" in lines[1]
    runs = tmp_path / "packs" / "default" / "runs"
    assert (runs / passing.run_id / "_SUCCESS").is_file(), "the job after the failed one did not run"
    assert not (runs / failing.run_id / "_SUCCESS").exists()
    if launcher == "submitit_local":
        # the failed job's process returned a result (a FAILED JobReturn), not a bare exit code
        results = sorted((tmp_path / "multirun" / ".submitit").glob("*/*_result.pkl"))
        returns = [pickle.loads(p.read_bytes())[1] for p in results]
        assert sorted(r.status.name for r in returns) == ["COMPLETED", "FAILED"]
        (failed,) = [r for r in returns if r.status == JobStatus.FAILED]
        assert isinstance(failed._return_value, QAJobFailed) and failed._return_value.exit_code == 3

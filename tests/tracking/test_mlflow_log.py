"""MLflow logging of finished packs, checked through the client and through a real `mlflow server`."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import scripted_reader
from tracking.pack_factory import MINI, add_autorater, make_packs, unfinished_copy

from memorybench.cli import main
from memorybench.testing.scripted_server import ScriptedOpenAIServer
from memorybench.tracking import (
    default_tracking_uri,
    log_packs,
    log_run_specs,
    pack_params,
    track_main,
    tracking_uri_from_config,
)
from memorybench.tracking.mlflow_log import _param_value

SECRET = "sk-test-Zq9mB4xT7wP2kR8vN1cY6uH3"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """An initialised sqlite store beside the packs, and `mlflow server` on it, booting while the other tests run."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = default_tracking_uri(root / "packs")
    from mlflow.tracking import MlflowClient

    (root / "packs").mkdir()
    MlflowClient(tracking_uri=uri).search_experiments()  # creates the tables once, before the server reads them
    port = _free_port()
    env = {
        **os.environ,
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
    }
    log = (root / "server.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            uri,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        yield root, uri, server, f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def logged(store):
    """Two finished packs (one judged twice) and an unfinished one, logged once to the store."""
    root, uri, _, _ = store
    previous = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = SECRET  # present in the environment: must never reach MLflow
    try:
        full, summaries = make_packs(root)
        add_autorater(full, passes=2)
        unfinished_copy(summaries)
        result = log_packs([root / "packs"], tracking_uri=uri, experiment_name="mini", parent_run_name="mini sweep")
    finally:
        if previous is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = previous
    return root, full, summaries, uri, result


def _client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _runs(uri: str, experiment_id: str) -> list:
    return list(_client(uri).search_runs([experiment_id], max_results=1000))


def test_one_parent_and_one_nested_run_per_finished_pack(logged):
    root, full, summaries, uri, result = logged
    assert uri == f"sqlite:///{root / 'mlflow.db'}" and (root / "mlflow.db").is_file()
    assert [r.pack for r in result.runs] == [full, summaries] and all(r.created for r in result.runs)
    assert len(result.unfinished) == 1
    runs = {r.info.run_id: r for r in _runs(uri, result.experiment_id)}
    assert set(runs) == {result.parent_run_id, *(r.mlflow_run_id for r in result.runs)}
    parent = runs[result.parent_run_id]
    assert parent.info.run_name == "mini sweep" and parent.data.metrics["runs"] == 2
    for tracked in result.runs:
        run = runs[tracked.mlflow_run_id]
        meta = json.loads((tracked.pack / "run_meta.json").read_text())
        metrics = json.loads((tracked.pack / "metrics.json").read_text())
        assert run.info.status == "FINISHED" and run.info.run_name == meta["run_id"]
        assert run.data.tags["mlflow.parentRunId"] == result.parent_run_id
        assert run.data.tags["memorybench.pack_key"] == f"{meta['run_id']}@{meta['config_sha256']}"
        params = run.data.params
        assert params["choice.memory"] == meta["choices"]["memory"] and params["memory.name"] == meta["choices"]["memory"]
        assert (
            params["reader.model"] == "scripted" and params["reader.temperature"] == "0.0" and params["reader.max_tokens"] == "64"
        )
        assert params["config_sha256"] == meta["config_sha256"] and params["data_sha256"] == meta["data"]["sha256"]
        assert params["prompt_sha256.readers/qa_v1.txt"] == meta["prompts"]["readers/qa_v1.txt"]
        assert params["model.reader.requested"] == "scripted" and params["model.reader.answered"] == "scripted"
        assert not any(k.startswith(("paths.", "pricing.", "tracking.", "storage.")) for k in params)
        m = run.data.metrics
        assert m["locomo_f1"] == pytest.approx(metrics["scores"]["locomo_f1"]["overall"]["value"])
        for c in "12345":
            assert m[f"locomo_f1_cat{c}"] == pytest.approx(metrics["scores"]["locomo_f1"]["by_kind"][c]["value"])
        assert m["exact_match"] == pytest.approx(metrics["scores"]["exact_match"]["overall"]["value"]) and "token_f1" in m
        # both overalls, and the interval compare and report give them, over the pack's conversations
        assert m["locomo_f1_1_4"] == pytest.approx(metrics["scores"]["locomo_f1"]["subsets"]["1-4"]["value"])
        assert m["locomo_f1_1_5"] == pytest.approx(metrics["scores"]["locomo_f1"]["subsets"]["1-5"]["value"])
        from memorybench.compare.conditions import parse_categories, seed_summary

        interval = seed_summary([tracked.pack], categories=parse_categories("1-4"))["locomo_f1"]["interval"]
        assert m["conversations"] == interval["clusters"] == 2
        assert m["locomo_f1_1_4_ci_low"] == pytest.approx(interval["low"]) and m["locomo_f1_1_4_ci_high"] == pytest.approx(
            interval["high"]
        )
        assert m["answer_prompt_tokens"] == metrics["usage"]["reader"]["prompt_tokens"]
        assert m["total_calls"] == metrics["usage"]["total"]["calls"] and m["build_calls"] == 0
        assert m["latency_p95_s"] == pytest.approx(metrics["usage"]["reader"]["latency_s"]["p95"])
        # the scripted model has no price: unknown, not 0
        assert not {"answer_cost_usd", "total_cost_usd", "cost_per_question_usd"} & set(m)
        artifacts = {a.path for a in _client(uri).list_artifacts(tracked.mlflow_run_id)}
        assert artifacts == {"config.resolved.yaml", "pack"}
        pack_files = {a.path for a in _client(uri).list_artifacts(tracked.mlflow_run_id, "pack")}
        assert {"pack/predictions.jsonl", "pack/metrics.json", "pack/_SUCCESS", "pack/reader"} <= pack_files
    judged = runs[result.runs[0].mlflow_run_id].data
    (metrics_file,) = (full / "autorater").glob("*/autorater_metrics.json")  # the one judge's folder
    judge = metrics_file.parent.name
    # J only under its judge's id, and the params name that judge
    assert judged.metrics[f"j_mean/{judge}"] == pytest.approx(json.loads(metrics_file.read_text())["j"]["mean"])
    assert {f"{m}/{judge}" for m in ("j_sd", "j_pass1", "j_pass2", "j_cat1", "j_passes")} | {"mem0_f1"} <= set(judged.metrics)
    assert "j_mean" not in judged.metrics and judged.metrics[f"j_passes/{judge}"] == 2
    assert judged.params[f"judge/{judge}/model"] == "scripted-judge" and judged.params[f"judge/{judge}/protocol"] == "mem0"
    assert judged.params[f"judge/{judge}/prompt_sha256"] == "0" * 64
    assert not any(k.startswith("j_mean") for k in runs[result.runs[1].mlflow_run_id].data.metrics)


def test_logging_the_same_packs_again_makes_no_new_run(logged):
    root, full, summaries, uri, result = logged
    before = len(_runs(uri, result.experiment_id))
    again = log_packs([full, summaries], tracking_uri=uri, experiment_name="mini", parent_run_name="mini sweep")
    assert again.experiment_id == result.experiment_id and again.parent_run_id == result.parent_run_id
    assert not again.created and [r.mlflow_run_id for r in again.runs] == [r.mlflow_run_id for r in result.runs]
    other = log_packs([full], tracking_uri=uri, experiment_name="mini", parent_run_name="another sweep")
    assert not other.created
    assert len(_runs(uri, result.experiment_id)) == before + 1  # only the new parent


def test_no_secret_reaches_mlflow(logged):
    root, *_ = logged
    stored = [root / "mlflow.db", *(p for p in (root / "mlartifacts").rglob("*") if p.is_file())]
    assert len(stored) > 10
    for path in stored:
        assert SECRET.encode() not in path.read_bytes(), path
    assert _param_value("http://user:hunter2@127.0.0.1:8000/v1?api_key=abc") == "http://127.0.0.1:8000/v1"
    assert _param_value(f"token {SECRET}") == "token [redacted]"
    assert len(_param_value("x" * 10_000)) == 6000


def test_params_drop_credential_like_config_keys(logged, tmp_path):
    _, full, *_ = logged
    import shutil

    pack = tmp_path / "p"
    shutil.copytree(full, pack)
    config = (pack / "config.resolved.yaml").read_text()
    (pack / "config.resolved.yaml").write_text(
        config.replace("  api_key_env: null\n", "  api_key_env: null\n  api_key: hunter2\n", 1)
    )
    params = pack_params(pack)
    assert "reader.api_key_env" in params and not any(k.endswith(".api_key") for k in params)
    assert "hunter2" not in json.dumps(params)


def test_tracking_config(tmp_path, logged):
    from memorybench.plan import plan_runs

    _, _, _, uri, _ = logged
    base = [f"dataset.path={MINI}", f"paths.packs={tmp_path / 'packs'}"]
    (none,) = plan_runs(base)
    assert tracking_uri_from_config(none.cfg) is None
    assert log_run_specs([none]) == []
    (default,) = plan_runs([*base, "tracking=mlflow"])
    assert default.run_id == none.run_id  # tracking is not part of the experiment's identity
    assert tracking_uri_from_config(default.cfg) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    (explicit,) = plan_runs([*base, "tracking=mlflow", f"tracking.uri={uri}"])
    assert tracking_uri_from_config(explicit.cfg) == uri


def test_driver_logs_a_finished_run_spec(tmp_path, logged):
    """What `memorybench qa` calls after a run or sweep: log_run_specs on the composed specs."""
    from memorybench.plan import plan_runs

    _, _, _, uri, result = logged
    with ScriptedOpenAIServer() as server:
        args = [
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "name=mini",
            "max_questions=3",
            "tracking=mlflow",
            f"tracking.uri={uri}",
        ]
        assert main(["qa", *args]) == 0
        specs = plan_runs(args)
    # `memorybench qa` (the driver) logged the finished pack itself; logging again adds nothing
    (again,) = log_run_specs(specs)
    assert again.experiment_id == result.experiment_id and not again.created
    assert again.runs[0].run_id == specs[0].run_id and again.runs[0].mlflow_run_id


def test_track_main(logged, capsys):
    root, _, _, uri, _ = logged
    assert track_main([str(root / "packs"), "--parent", "mini sweep"]) == 0  # default URI: beside the packs
    out = capsys.readouterr().out
    assert "0 run(s) logged, 0 updated, 2 unchanged" in out
    experiment = re.search(r"\(id (\w+)\)", out).group(1)
    # MLflow 3 opens on its GenAI overview: the line names the experiment's runs view, and the one-worker command
    assert (
        f"tracking URI {uri}; runs: mlflow ui --backend-store-uri {uri} --workers 1, then open "
        f"http://127.0.0.1:5000/#/experiments/{experiment}/runs (each sweep's packs nested under its parent run)"
    ) in out
    assert out.count("mlflow: unchanged") == 2 and out.count("tracking URI") == 1
    from memorybench.errors import UserError

    with pytest.raises(UserError, match="'foo://bar' does not work"):
        track_main([str(root / "packs"), "--uri", "foo://bar"])
    with pytest.raises(UserError, match="is not a folder"):
        track_main([str(root / "missing")])


def _get(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_mlflow_server_shows_the_runs(logged, store):
    """`mlflow server` on the store memorybench wrote: runs, params and metrics over its REST API."""
    root, full, summaries, uri, result = logged
    _, _, server, base = store
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        assert server.poll() is None, (root / "server.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "mlflow server did not answer /health in 120 s"
        time.sleep(0.25)
    experiment = _get(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=mini")["experiment"]
    assert experiment["experiment_id"] == result.experiment_id
    found = _get(f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [result.experiment_id], "max_results": 100})["runs"]
    by_name = {r["info"]["run_name"]: r for r in found}
    for tracked in result.runs:
        run = by_name[tracked.run_id]
        params = {p["key"]: p["value"] for p in run["data"]["params"]}
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        assert params["reader.model"] == "scripted" and params["run_id"] == tracked.run_id
        assert {"locomo_f1", "locomo_f1_cat1", "locomo_f1_cat5", "exact_match", "latency_p50_s"} <= set(metrics)
        assert tags["mlflow.parentRunId"] == result.parent_run_id
    listed = _get(f"{base}/api/2.0/mlflow/artifacts/list?run_id={result.runs[0].mlflow_run_id}&path=pack")["files"]
    assert "pack/predictions.jsonl" in {f["path"] for f in listed}


def test_the_ui_address_is_the_experiments_runs_view():
    """MLflow 3's UI opens on its GenAI overview ("Traces 0"): `track` names the runs view itself."""
    from memorybench.tracking.mlflow_log import TrackedRun, TrackingResult

    server = TrackingResult(tracking_uri="https://user:pw@mlflow.example/prefix/?token=1", experiment_id="7", parent_run_id="p")
    assert server.ui_address() == "https://mlflow.example/prefix/#/experiments/7/runs"
    run = TrackedRun(pack=None, run_id="r", mlflow_run_id="abc", created=True)  # type: ignore[arg-type]
    assert server.ui_address(run) == "https://mlflow.example/prefix/#/experiments/7/runs/abc"
    local = TrackingResult(tracking_uri="sqlite:////data/my runs/mlflow.db", experiment_id="3", parent_run_id="p")
    assert local.ui_address() == (
        "mlflow ui --backend-store-uri 'sqlite:////data/my runs/mlflow.db' --workers 1, "
        "then open http://127.0.0.1:5000/#/experiments/3/runs"
    )


def test_a_pack_tracked_on_its_own_is_a_run_of_its_own_and_the_hint_is_said_once(logged, tmp_path, capsys):
    """A single pack is no sweep: no parent run is made for it; packs of several experiments
    tracked at once say where to open them once, not once per experiment."""
    _, full, summaries, _, _ = logged
    uri = f"sqlite:///{tmp_path / 'own.db'}"
    assert track_main([str(full), "--uri", uri]) == 0
    out = capsys.readouterr().out
    assert "a run of its own" in out and "parent run" not in out and out.count("tracking URI") == 1
    (run,) = _runs(uri, re.search(r"\(id (\w+)\)", out).group(1))
    assert "mlflow.parentRunId" not in run.data.tags
    assert track_main([str(full), str(summaries), "--uri", uri, "--experiment", "two"]) == 0
    out = capsys.readouterr().out
    assert out.count("tracking URI") == 1 and "parent run" in out

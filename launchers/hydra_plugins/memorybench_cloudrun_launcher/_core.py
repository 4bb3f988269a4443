"""The launchers' work (heavy imports live here, not at plugin discovery).

1. compose and validate every job here, with memorybench's own composition
   (`memorybench.plan.compose_spec`), before any cloud call;
2. write the manifest (`cloudrun_manifest.v1`) to storage, create-only;
3. start ONE execution with task_count=N (Cloud Run Admin API, or local processes for
   the twin) whose tasks read the manifest from MEMORYBENCH_MANIFEST;
4. wait, then report each job from storage: its pack's `_SUCCESS` is the truth, the
   tasks' status records and the Execution's counts explain a failure.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus, setup_globals
from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from memorybench.cloudrun.executors import (
    ExecutionReport,
    ExecutionSettings,
    SecretRef,
    check_cloudrun_installed,
    check_local_secrets,
    execute_manifest,
    refuse_plain_secrets,
)
from memorybench.cloudrun.manifest import build_manifest, latest_statuses, manifest_job, write_manifest
from memorybench.cloudrun.records import CloudRunManifest, ManifestJob
from memorybench.errors import ERROR_PREFIX, UserError
from memorybench.fs import write_atomic
from memorybench.storage import SUCCESS, join, open_storage, storage_uri

from hydra_plugins.memorybench_cloudrun_launcher.config import CloudRunLauncherConf


class CloudRunTaskFailed(UserError, CompactHydraException):
    """A job of the sweep whose task did not publish its pack (Hydra's JobReturn carries it).

    Compact: Hydra prints its one-line message without a traceback.
    """

    exit_code = 1


class LauncherError(UserError, CompactHydraException):
    """A user error found by the launcher (inside Hydra): printed as one line, no traceback."""

    PREFIX = ERROR_PREFIX

    def __init__(self, message: str) -> None:
        # Hydra prints str(exception) as is; the prefix matches the CLI's own one-line errors
        super().__init__(message if message.startswith(self.PREFIX) else self.PREFIX + message)


def _say(text: str) -> None:
    print(f"[cloudrun] {text}", file=sys.stderr, flush=True)


def _choices(sweep_config: DictConfig) -> dict[str, str]:
    """Config-group choices as qa_app records them (hydra/* groups left out)."""
    from memorybench.config import recorded_choices

    return recorded_choices(sweep_config.hydra.runtime.choices)


def compose_jobs(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[tuple[DictConfig, Any]]:
    """(sweep config for Hydra, memorybench RunSpec) of every job; any bad job fails here."""
    from memorybench.plan import compose_spec

    out = []
    for i, overrides in enumerate(job_overrides):
        spec = compose_spec(list(overrides))  # validates (memorybench.validate) and computes the run id
        sweep_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
        with open_dict(sweep_config.hydra.job):
            sweep_config.hydra.job.num = initial_job_idx + i
            sweep_config.hydra.job.id = f"cloudrun_{initial_job_idx + i}"
        out.append((sweep_config, spec))
    return out


def _storage_root(spec: Any, remote: bool, num: int) -> str:
    if spec.cfg.storage.name == "gcs" and not str(spec.cfg.storage.root or "").startswith("gs://"):
        raise UserError(
            f"storage=gcs needs storage.root=gs://BUCKET/PREFIX (job #{num} has storage.root={spec.cfg.storage.root!r})"
        )
    root = spec.cfg.storage.root or spec.cfg.paths.packs
    if remote and not str(root).startswith("gs://"):
        raise UserError(
            f"hydra/launcher=cloudrun: job #{num} would write its pack to {root!r}, which Cloud Run tasks cannot reach; "
            f"add storage=gcs storage.root=gs://BUCKET/PREFIX (or use hydra/launcher=cloudrun_local)"
        )
    return storage_uri(str(root))


def _project(conf: CloudRunLauncherConf) -> str:
    project = conf.project or os.environ.get("GOOGLE_CLOUD_PROJECT") or os.environ.get("CLOUDSDK_CORE_PROJECT")
    if not project and not conf.anonymous_credentials:
        try:
            import google.auth

            project = google.auth.default()[1]
        except Exception:  # noqa: BLE001 - any failure means "not found": the message below says how to set it
            project = None
    if not project:
        raise UserError(
            "hydra/launcher=cloudrun needs a GCP project: add hydra.launcher.project=PROJECT_ID (or set GOOGLE_CLOUD_PROJECT)"
        )
    return str(project)


def build(launcher: Any, composed: list[tuple[DictConfig, Any]]) -> CloudRunManifest:
    """The manifest of the composed jobs (nothing written yet)."""
    conf, remote = launcher.conf, launcher.remote
    jobs: list[ManifestJob] = []
    for index, (sweep_config, spec) in enumerate(composed):
        num = int(sweep_config.hydra.job.num)
        jobs.append(manifest_job(index, num, spec, _choices(sweep_config), _storage_root(spec, remote, num)))
    control_root = conf.manifest_root or jobs[0].storage_root
    if remote and not str(control_root).startswith("gs://"):
        raise UserError(
            f"hydra.launcher.manifest_root={control_root!r}: Cloud Run tasks read the manifest from storage; use gs://BUCKET/PREFIX"
        )
    if remote:
        project, region = _project(conf), conf.region
        job_name = f"projects/{project}/locations/{region}/jobs/{conf.job}"
    else:
        project, region, job_name = None, conf.region, conf.job
    return build_manifest(
        jobs,
        launcher="cloudrun" if remote else "cloudrun_local",
        job=job_name,
        control_root=str(control_root),
        project=project,
        region=region,
    )


def task_secrets(conf: Any, remote: bool) -> tuple[SecretRef, ...]:
    """`hydra.launcher.secrets` as Secret Manager references (the local twin: each variable set
    here); a credential in `hydra.launcher.env` is refused first, in one line that names the
    variable and never its value."""
    refuse_plain_secrets({str(k): str(v) for k, v in (conf.env or {}).items()}, "hydra.launcher.env")
    refs = tuple(SecretRef.parse(str(k), str(v)) for k, v in sorted((getattr(conf, "secrets", None) or {}).items()))
    if not remote:
        check_local_secrets(refs)
    return refs


def execute(launcher: Any, manifest: CloudRunManifest, run_dir: Path, secrets: tuple[SecretRef, ...] = ()) -> ExecutionReport:
    """Start the one execution of the manifest's tasks and wait for it to end."""
    conf = launcher.conf
    shared = {
        "task_timeout_s": conf.task_timeout_s,
        "log_dir": run_dir / "logs",
        "work_root": run_dir / "work",
        "secrets": secrets,
    }
    if launcher.remote:
        settings = ExecutionSettings(
            remote=True,
            api_endpoint=conf.api_endpoint,
            transport=conf.transport,
            anonymous=conf.anonymous_credentials,
            poll_interval_s=conf.poll_interval_s,
            timeout_s=conf.timeout_s,
            **shared,
        )
    else:
        settings = ExecutionSettings(remote=False, parallelism=conf.parallelism, max_retries=conf.max_retries, **shared)
    return execute_manifest(manifest, settings, _say, dict(conf.env))


def _failure_hint(manifest: CloudRunManifest, report: ExecutionReport, index: int) -> str:
    if manifest.launcher == "cloudrun":
        execution = report.execution.rsplit("/", 1)[-1]
        return (
            f'logs: gcloud logging read \'resource.type="cloud_run_job" AND labels."run.googleapis.com/execution_name"="{execution}" '
            f'AND labels."run.googleapis.com/task_index"="{index}"\' --project {manifest.project}'
        )
    task = report.tasks[index] if index < len(report.tasks) else None
    return f"log: {task.log}" if task and task.log else f"logs in {report.log_uri}"


def job_returns(
    launcher: Any, composed: list[tuple[DictConfig, Any]], manifest: CloudRunManifest, report: ExecutionReport
) -> list[JobReturn]:
    """One JobReturn per job: COMPLETED with its metrics if its pack's `_SUCCESS` is in storage, else FAILED."""
    statuses = latest_statuses(manifest)
    storages: dict[str, Any] = {}
    results = []
    for (sweep_config, _spec), job in zip(composed, manifest.jobs, strict=True):
        storage = storages.setdefault(job.storage_root, open_storage(job.storage_root))
        ret = JobReturn()
        ret.overrides = list(job.overrides)
        task_cfg = copy.deepcopy(sweep_config)
        with read_write(task_cfg), open_dict(task_cfg):
            del task_cfg["hydra"]
        ret.cfg = task_cfg
        ret.hydra_cfg = OmegaConf.masked_copy(sweep_config, ["hydra"])
        ret.working_dir = os.getcwd()
        ret.task_name = str(sweep_config.hydra.job.name)
        if storage.exists(join(job.pack_relpath, SUCCESS)):
            try:
                ret.return_value = json.loads(storage.read_bytes(join(job.pack_relpath, "metrics.json")))
            except (UserError, ValueError):
                ret.return_value = None
            ret.status = JobStatus.COMPLETED
        else:
            status = statuses.get(job.index)
            reason = status.message if status else (report.error or "the task left no status record")
            hint = _failure_hint(manifest, report, job.index)
            ret.return_value = CloudRunTaskFailed(
                f"task {job.index} (run {job.run_id}) did not publish {job.pack_uri}: {reason}; {hint}"
            )
            ret.status = JobStatus.FAILED
        results.append(ret)
    return results


def _write_summary(manifest: CloudRunManifest, report: ExecutionReport, results: list[JobReturn], run_dir: Path) -> None:
    summary = {
        "schema": "cloudrun_execution.v1",
        "sweep_id": manifest.sweep_id,
        "manifest_uri": manifest.manifest_uri,
        "launcher": manifest.launcher,
        "job": manifest.job,
        "execution": report.to_dict(),
        "jobs": [
            {"index": j.index, "run_id": j.run_id, "pack_uri": j.pack_uri, "status": r.status.name}
            for j, r in zip(manifest.jobs, results, strict=True)
        ],
    }
    text = json.dumps(summary, indent=2) + "\n"
    write_atomic(run_dir / "execution.json", text)
    try:
        open_storage(manifest.control_root).write_text(f"{manifest.control_prefix}/execution.json", text)
    except Exception as e:  # noqa: BLE001 - the local copy is enough to report
        _say(f"could not store execution.json next to the manifest ({type(e).__name__}: {e})")


def launch(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    try:
        return _launch(launcher, job_overrides, initial_job_idx)
    except CloudRunTaskFailed:
        raise
    except UserError as e:
        raise LauncherError(e.message) from None


def _launch(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[JobReturn]:
    setup_globals()
    assert launcher.config is not None and launcher.hydra_context is not None
    if launcher.remote:
        check_cloudrun_installed()  # the cloud extra, before anything is composed or written
    jobs = [list(o) for o in job_overrides]
    max_jobs = launcher.conf.max_jobs
    if max_jobs is not None:
        if max_jobs < 1:
            raise UserError(f"hydra.launcher.max_jobs={max_jobs} must be at least 1 (or null for every job)")
        if len(jobs) > max_jobs:
            _say(f"max_jobs={max_jobs}: running the first {max_jobs} of {len(jobs)} run specs")
            jobs = jobs[:max_jobs]

    secrets = task_secrets(launcher.conf, launcher.remote)  # no credential as a plain value, before anything is written
    composed = compose_jobs(launcher, jobs, initial_job_idx)  # every job valid before any cloud call
    manifest = build(launcher, composed)
    sweep_dir = Path(str(launcher.config.hydra.sweep.dir)).resolve()
    run_dir = sweep_dir / "cloudrun" / manifest.sweep_id
    write_atomic(run_dir / "manifest.json", manifest.dump())
    write_manifest(manifest)
    _say(f"manifest {manifest.manifest_uri}: {manifest.task_count} task(s)")
    for job in manifest.jobs:
        _say(f"  task {job.index}: #{job.hydra_job_num} {job.run_id} <- {' '.join(job.overrides)}")

    report = execute(launcher, manifest, run_dir, secrets)
    results = job_returns(launcher, composed, manifest, report)
    _write_summary(manifest, report, results, run_dir)
    # the jobs ran elsewhere: their on_job_end (the sweep's table among others) is called here
    callbacks = launcher.hydra_context.callbacks
    for (sweep_config, _spec), ret in zip(composed, results, strict=True):
        callbacks.on_job_end(config=sweep_config, job_return=ret)
    failed = [r for r in results if r.status == JobStatus.FAILED]
    _say(f"{len(results) - len(failed)} of {len(results)} pack(s) published; summary in {run_dir / 'execution.json'}")
    return results

"""The worker: `python -m memorybench.cloudrun.worker` runs one task of an execution.

    driver (hydra/launcher=cloudrun, or a wave)     worker (this module)
      compose and validate every job                   CLOUD_RUN_TASK_INDEX picks its job
      manifest -> storage, create-only                 `_SUCCESS` already there: nothing to do
      ONE execution, task_count=N,                     re-compose from the manifest's overrides;
        env MEMORYBENCH_MANIFEST=<uri>                   refuse if the config hash differs
      wait; each job's status from storage             qa in a local work folder, provenance,
                                                         then publish: files, `_SUCCESS` last

Every memorybench Cloud Run job runs this one command (infra/cloudrun/*.yaml); the
manifest's schema says what the task is: a qa sweep's job (here) or a wave's item
(`memorybench.cloudrun.waves`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memorybench.cloudrun.manifest import MANIFEST_ENV, parse_manifest, read_manifest, resolved_sha256
from memorybench.cloudrun.records import CloudRunManifest, CloudRunProvenance, ManifestJob
from memorybench.cloudrun.task import TaskContext, failure_recorded, task_done, task_item
from memorybench.cloudrun.waves import WaveManifest, run_wave_task
from memorybench.errors import OneLineParser, UserError, report
from memorybench.pack.atomic import write_atomic
from memorybench.provenance import utc_now
from memorybench.secrets import clean_config

#: set by the deploy scripts in the job definition: recorded in each pack's provenance
IMAGE_ENV = "MEMORYBENCH_IMAGE"
IMAGE_DIGEST_ENV = "MEMORYBENCH_IMAGE_DIGEST"
REGION_ENV = "MEMORYBENCH_REGION"
#: the record a task adds to each pack it publishes (CloudRunProvenance)
PROVENANCE_FILE = "provenance/cloudrun.json"


def _differing_keys(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    keys = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, Mapping) and isinstance(vb, Mapping):
            keys += _differing_keys(va, vb, f"{prefix}{key}.")
        elif va != vb:
            keys.append(f"{prefix}{key}")
    return keys


def recompose(job: ManifestJob, manifest: CloudRunManifest) -> Any:
    """Compose the job here, from its overrides, and refuse if it is not the manifest's config."""
    from memorybench.plan import plan_runs

    (spec,) = plan_runs(list(job.overrides))
    if spec.config_sha256 != job.config_sha256:
        diff = _differing_keys(job.config, _plain(spec.cfg))
        raise UserError(
            f"task {job.index}: config hash {spec.config_sha256[:12]} differs from the manifest's {job.config_sha256[:12]} "
            f"for run {job.run_id}"
            + (f" (differs in: {', '.join(diff[:5])})" if diff else "")
            + f"; this worker's code or config is not the launcher's: rebuild the image from commit {manifest.git_commit or '?'}"
        )
    here_resolved = resolved_sha256(_plain(spec.cfg))
    if here_resolved != job.resolved_sha256:
        diff = _differing_keys(job.config, _plain(spec.cfg))
        raise UserError(
            f"task {job.index}: resolved config hash {here_resolved[:12]} differs from the manifest's {job.resolved_sha256[:12]} "
            f"for run {job.run_id} (differs in: {', '.join(diff[:5]) or '?'}); rebuild the image from commit {manifest.git_commit or '?'}"
        )
    return spec


def _plain(cfg: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    return data


def task_provenance(
    manifest: CloudRunManifest, job: ManifestJob, ctx: TaskContext, started_at: str, env: Mapping[str, str] = os.environ
) -> CloudRunProvenance:
    """Where and how this task ran its job: Cloud Run's variables, the job definition's, the manifest's."""
    return CloudRunProvenance(
        launcher=manifest.launcher,
        job=ctx.job,
        execution=ctx.execution,
        task_index=ctx.index,
        task_count=ctx.task_count,
        attempt=ctx.attempt,
        image=env.get(IMAGE_ENV) or None,
        image_digest=env.get(IMAGE_DIGEST_ENV) or None,
        region=env.get(REGION_ENV) or manifest.region,
        project=manifest.project,
        manifest_uri=manifest.manifest_uri,
        sweep_id=manifest.sweep_id,
        run_id=job.run_id,
        config_sha256=job.config_sha256,
        resolved_sha256=job.resolved_sha256,
        pack_uri=job.pack_uri,
        started_at=started_at,
        ended_at=utc_now(),
    )


def run_qa_task(manifest: CloudRunManifest, ctx: TaskContext) -> int:
    job = task_item(manifest.jobs, ctx, "manifest")
    with failure_recorded(manifest, ctx, job.run_id, job.pack_uri):
        return _run_qa_job(manifest, job, ctx)


def _run_qa_job(manifest: CloudRunManifest, job: ManifestJob, ctx: TaskContext) -> int:
    from omegaconf import OmegaConf

    from memorybench.pack.success import reclose
    from memorybench.storage import SUCCESS, join, open_storage, publish_pack

    if job.index != ctx.index:
        raise UserError(
            f"manifest {manifest.manifest_uri}: job at position {ctx.index} says index {job.index}; the manifest was edited"
        )
    storage = open_storage(job.storage_root)
    if storage.exists(join(job.pack_relpath, SUCCESS)):
        message = f"task {ctx.index} attempt {ctx.attempt}: {job.pack_uri} is already published; nothing to do"
        return task_done(manifest, ctx, "skipped", message, job.run_id, job.pack_uri)

    started_at = utc_now()
    spec = recompose(job, manifest)
    work = ctx.work_dir or Path(tempfile.mkdtemp(prefix=f"memorybench-task-{ctx.index}-"))
    cleanup = ctx.work_dir is None
    try:
        from memorybench.stages.qa import run_qa

        cfg = OmegaConf.create(_plain(spec.cfg))
        # the pack is built in the local work folder (journals append); it is published whole below
        cfg.storage.root = str((work / "packs").resolve())
        print(f"task {ctx.index} attempt {ctx.attempt}: run {job.run_id} -> {job.pack_uri}", flush=True)
        result = run_qa(cfg, overrides=list(job.overrides), choices=dict(job.choices))  # progress: plain lines in the task log
        # qa wrote the config it was given, whose storage.root is the work folder; the pack keeps
        # the job's own config (the manifest's: storage.root is where the pack is published)
        # (as qa writes it: URLs clean, credentials scrubbed, a masked value quoted)
        write_atomic(Path(result.pack_root) / "config.resolved.yaml", OmegaConf.to_yaml(clean_config(spec.cfg)).encode("utf-8"))
        write_atomic(
            Path(result.pack_root) / PROVENANCE_FILE, task_provenance(manifest, job, ctx, started_at).dump().encode("utf-8")
        )
        # both were written after qa closed the pack: its _SUCCESS records their bytes too
        reclose(result.pack_root, ("config.resolved.yaml", PROVENANCE_FILE))
        published = publish_pack(result.pack_root, storage, job.pack_relpath)
        # published: the local copy is no longer needed (a kept work folder only serves a retry's resume)
        cleanup = True
    finally:
        if cleanup:
            shutil.rmtree(work, ignore_errors=True)
    state = "already published by another attempt" if published.already else f"published {len(published.files)} files"
    message = f"task {ctx.index} attempt {ctx.attempt}: run {job.run_id}: {state} to {job.pack_uri}"
    return task_done(manifest, ctx, "succeeded", message, job.run_id, job.pack_uri)


def run_task(ctx: TaskContext) -> int:
    """Run the task `ctx` names, from whichever manifest its URI holds (qa sweep or wave)."""
    data = read_manifest(ctx.manifest_uri)
    schema = data.get("schema")
    if schema == CloudRunManifest.SCHEMA:
        return run_qa_task(parse_manifest(CloudRunManifest, data, ctx.manifest_uri), ctx)
    if schema == WaveManifest.SCHEMA:
        return run_wave_task(data, ctx)
    known = f"{CloudRunManifest.SCHEMA} and {WaveManifest.SCHEMA}"
    raise UserError(f"manifest {ctx.manifest_uri} has schema {schema!r}; this worker runs {known}")


def task_main(argv: Sequence[str] | None = None) -> int:
    """`memorybench task [--manifest URI] [--index N] [--attempt K]`: one Cloud Run task.

    Defaults come from the environment Cloud Run sets (CLOUD_RUN_TASK_INDEX, ...) and
    MEMORYBENCH_MANIFEST, which the execution's container override carries.
    """
    parser = OneLineParser(prog="memorybench task", description="Run one task of a Cloud Run execution (qa sweep or wave).")
    parser.add_argument("--manifest", help=f"manifest URI (default: ${MANIFEST_ENV})")
    parser.add_argument("--index", type=int, help="task index (default: $CLOUD_RUN_TASK_INDEX)")
    parser.add_argument("--attempt", type=int, help="attempt number (default: $CLOUD_RUN_TASK_ATTEMPT)")
    ns = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    ctx = TaskContext.from_env(manifest_uri=ns.manifest)
    if ns.index is not None:
        ctx.index = ns.index
    if ns.attempt is not None:
        ctx.attempt = ns.attempt
    return run_task(ctx)


def _module_main() -> int:
    try:
        return task_main()
    except UserError as e:
        return report(e)


if __name__ == "__main__":
    sys.exit(_module_main())

"""Cloud Run tasks (DESIGN.md 8): the manifest, the worker, and the two executors.

    driver (hydra/launcher=cloudrun, or a wave)     worker: `python -m memorybench.cloudrun_task`
      compose and validate every job                   CLOUD_RUN_TASK_INDEX picks its job
      manifest -> storage, create-only                 `_SUCCESS` already there: nothing to do
      ONE execution, task_count=N,                     re-compose from the manifest's overrides;
        env MEMORYBENCH_MANIFEST=<uri>                   refuse if the config hash differs
      wait; each job's status from storage             qa in a local work folder, provenance,
                                                         then publish: files, `_SUCCESS` last

The executors start N tasks with Cloud Run's environment (CLOUD_RUN_TASK_INDEX,
CLOUD_RUN_TASK_COUNT, CLOUD_RUN_TASK_ATTEMPT, CLOUD_RUN_EXECUTION, CLOUD_RUN_JOB):
`run_cloud_execution` through the Cloud Run Admin API v2 (google-cloud-run, imported only
there), `run_local_tasks` as local processes (the `cloudrun_local` twin, and the tests'
Cloud Run stand-in); `execute_manifest` picks one for a driver. The worker also runs wave
manifests (`memorybench.waves`). The records it reads and writes (manifest, task status,
provenance) are in `memorybench.cloudrun_records`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from hydra.errors import CompactHydraException

from memorybench._process import start_group, stop_group
# the records are re-exported from here too (memorybench.pack.verify imports CloudRunProvenance from this module)
from memorybench.cloudrun_records import (  # noqa: F401
    MANIFEST_SCHEMA,
    PROVENANCE_SCHEMA,
    TASK_STATUS_SCHEMA,
    CloudRunManifest,
    CloudRunProvenance,
    ManifestJob,
    Record,
    ExecutionManifest,
    TaskStatus,
)
from memorybench.errors import OneLineParser, UserError
from memorybench.provenance import utc_now

#: the one variable an execution adds to the job's container: where the manifest is
MANIFEST_ENV = "MEMORYBENCH_MANIFEST"
#: a local folder for the task's work (default: a fresh temporary folder)
WORK_DIR_ENV = "MEMORYBENCH_WORK_DIR"
#: set by the deploy scripts in the job definition: recorded in each pack's provenance
IMAGE_ENV = "MEMORYBENCH_IMAGE"
IMAGE_DIGEST_ENV = "MEMORYBENCH_IMAGE_DIGEST"
REGION_ENV = "MEMORYBENCH_REGION"
#: the worker: every memorybench Cloud Run job runs `python -m` it (infra/cloudrun/*.yaml)
WORKER_MODULE = "memorybench.cloudrun_task"
WORKER_COMMAND = ("python", "-m", WORKER_MODULE)
#: where a sweep's manifest and task status records live, under its control root
CONTROL_DIR = "_cloudrun"
#: the record a task adds to each pack it publishes (CloudRunProvenance)
PROVENANCE_FILE = "provenance/cloudrun.json"

RecordT = TypeVar("RecordT", bound=Record)
TaskState = Literal["succeeded", "skipped", "failed"]
ItemT = TypeVar("ItemT")


class CloudRunTaskFailed(UserError, CompactHydraException):
    """A job of the sweep whose task did not publish its pack (Hydra's JobReturn carries it).

    Compact: Hydra prints its one-line message without a traceback.
    """

    exit_code = 1


class LauncherError(UserError, CompactHydraException):
    """A user error found by a launcher (inside Hydra): printed as one line, no traceback."""

    PREFIX = "memorybench: error: "

    def __init__(self, message: str) -> None:
        # Hydra prints str(exception) as is; the prefix matches the CLI's own one-line errors
        super().__init__(message if message.startswith(self.PREFIX) else self.PREFIX + message)


# -- hashing and manifests ---------------------------------------------------------------------
def resolved_sha256(config: Mapping[str, Any]) -> str:
    from memorybench.run_id import canonical_json

    return hashlib.sha256(canonical_json(dict(config)).encode("utf-8")).hexdigest()


def new_sweep_id(jobs: Sequence[ManifestJob]) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    digest = hashlib.sha256("\n".join(j.resolved_sha256 for j in jobs).encode()).hexdigest()[:8]
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
    jobs: Sequence[ManifestJob], *, launcher: str, job: str, control_root: str, project: str | None = None, region: str | None = None
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

    target, relpath = open_uri(manifest.manifest_uri) if storage is None else (storage, f"{manifest.control_prefix}/manifest.json")
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
        schema = model.model_fields["schema_"].default
        raise UserError(f"manifest {uri} does not match {schema}: {' '.join(str(e).split())[:300]}") from None


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


# -- the worker ----------------------------------------------------------------------------------
@dataclass
class TaskContext:
    """What Cloud Run (or a local executor) told this task about itself."""

    manifest_uri: str
    index: int
    attempt: int = 0
    task_count: int | None = None
    execution: str | None = None
    job: str | None = None
    work_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, manifest_uri: str | None = None) -> TaskContext:
        uri = manifest_uri or env.get(MANIFEST_ENV)
        if not uri:
            raise UserError(f"no manifest: set {MANIFEST_ENV}=gs://BUCKET/PREFIX/{CONTROL_DIR}/<sweep>/manifest.json (the launcher does)")

        def number(name: str, default: int | None) -> int | None:
            raw = env.get(name)
            if raw in (None, ""):
                return default
            try:
                return int(raw)
            except ValueError:
                raise UserError(f"{name}={raw!r} is not an integer") from None

        work = env.get(WORK_DIR_ENV)
        return cls(
            manifest_uri=uri,
            index=number("CLOUD_RUN_TASK_INDEX", 0) or 0,
            attempt=number("CLOUD_RUN_TASK_ATTEMPT", 0) or 0,
            task_count=number("CLOUD_RUN_TASK_COUNT", None),
            execution=env.get("CLOUD_RUN_EXECUTION"),
            job=env.get("CLOUD_RUN_JOB"),
            work_dir=Path(work) if work else None,
        )


def task_item(items: Sequence[ItemT], ctx: TaskContext, what: str) -> ItemT:
    """The entry of the manifest's `items` this task runs: the one at CLOUD_RUN_TASK_INDEX."""
    if not 0 <= ctx.index < len(items):
        n = len(items)
        raise UserError(f"CLOUD_RUN_TASK_INDEX={ctx.index} is outside the {what}'s {n} task(s); start the execution with task_count={n}")
    return items[ctx.index]


def record_status(manifest: ExecutionManifest, ctx: TaskContext, status: TaskState, exit_code: int, message: str,
                  run_id: str | None = None, pack_uri: str | None = None) -> None:
    """Best effort: a status record the driver reads to explain each task (never fails the task)."""
    from memorybench.storage import open_storage

    try:
        record = TaskStatus(
            sweep_id=manifest.id,
            task_index=ctx.index,
            attempt=ctx.attempt,
            execution=ctx.execution,
            status=status,
            exit_code=exit_code,
            message=" ".join(message.split()),
            run_id=run_id,
            pack_uri=pack_uri,
            at=utc_now(),
        )
        open_storage(manifest.control_root).write_bytes(status_relpath(manifest, ctx.index, ctx.attempt), record.dump().encode())
    except Exception as e:  # noqa: BLE001 - the status record is a courtesy; the exit code is the truth
        print(f"memorybench: could not record task status ({type(e).__name__}: {e})", file=sys.stderr)


@contextmanager
def failure_recorded(
    manifest: ExecutionManifest, ctx: TaskContext, run_id: str | None = None, pack_uri: str | None = None
) -> Iterator[None]:
    """Record a `failed` status for an exception leaving the block, then let it go on.

    A UserError is one line for the task's log; anything else is a bug and keeps its traceback there.
    """
    try:
        yield
    except Exception as e:
        code, message = (e.exit_code, e.message) if isinstance(e, UserError) else (1, f"{type(e).__name__}: {e}")
        record_status(manifest, ctx, "failed", code, message, run_id, pack_uri)
        raise


def task_done(manifest: ExecutionManifest, ctx: TaskContext, status: Literal["succeeded", "skipped"], message: str,
              run_id: str | None = None, pack_uri: str | None = None) -> int:
    """Print the task's one-line outcome, record it, and return the task's exit code (0)."""
    print(message, flush=True)
    record_status(manifest, ctx, status, 0, message, run_id, pack_uri)
    return 0


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
            f"for run {job.run_id}" + (f" (differs in: {', '.join(diff[:5])})" if diff else "")
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


def task_provenance(manifest: CloudRunManifest, job: ManifestJob, ctx: TaskContext, started_at: str,
                    env: Mapping[str, str] = os.environ) -> CloudRunProvenance:
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

    from memorybench.storage import SUCCESS, join, open_storage, publish_pack

    if job.index != ctx.index:
        raise UserError(f"manifest {manifest.manifest_uri}: job at position {ctx.index} says index {job.index}; the manifest was edited")
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
        result = run_qa(cfg, overrides=list(job.overrides), choices=dict(job.choices), progress=False)
        # qa wrote the config it was given, whose storage.root is the work folder; the pack keeps
        # the job's own config (the manifest's: storage.root is where the pack is published)
        (Path(result.pack_root) / "config.resolved.yaml").write_text(OmegaConf.to_yaml(spec.cfg), "utf-8")
        prov_path = Path(result.pack_root) / PROVENANCE_FILE
        prov_path.parent.mkdir(parents=True, exist_ok=True)
        prov_path.write_text(task_provenance(manifest, job, ctx, started_at).dump(), "utf-8")
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
    if schema == MANIFEST_SCHEMA:
        return run_qa_task(parse_manifest(CloudRunManifest, data, ctx.manifest_uri), ctx)
    from memorybench.waves import WAVE_MANIFEST_SCHEMA, run_wave_task

    if schema == WAVE_MANIFEST_SCHEMA:
        return run_wave_task(data, ctx)
    raise UserError(f"manifest {ctx.manifest_uri} has schema {schema!r}; this worker runs {MANIFEST_SCHEMA} and {WAVE_MANIFEST_SCHEMA}")


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
        print(f"memorybench: error: {e.message}", file=sys.stderr)
        return e.exit_code


# -- executors -----------------------------------------------------------------------------------
@dataclass
class TaskOutcome:
    index: int
    attempts: int = 0
    exit_code: int | None = None
    #: pending | running | succeeded | failed | cancelled
    state: str = "pending"
    log: str | None = None


@dataclass
class ExecutionReport:
    """The counts of Cloud Run's Execution resource (or of the local twin's processes)."""

    execution: str
    task_count: int
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    retried: int = 0
    running: int = 0
    done: bool = False
    log_uri: str | None = None
    #: the operation's error (Cloud Run), or why waiting stopped
    error: str | None = None
    tasks: list[TaskOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.done and self.error is None and self.succeeded == self.task_count

    def summary(self) -> str:
        state = "done" if self.done else "not finished"
        text = (
            f"execution {self.execution} {state}: {self.task_count} task(s), {self.succeeded} succeeded, "
            f"{self.failed} failed, {self.cancelled} cancelled, {self.retried} retried"
        )
        return text + (f"; {self.error}" if self.error else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_env(index: int, attempt: int, task_count: int, job: str, execution: str) -> dict[str, str]:
    """The variables Cloud Run sets in every task's container."""
    return {
        "CLOUD_RUN_JOB": job,
        "CLOUD_RUN_EXECUTION": execution,
        "CLOUD_RUN_TASK_INDEX": str(index),
        "CLOUD_RUN_TASK_ATTEMPT": str(attempt),
        "CLOUD_RUN_TASK_COUNT": str(task_count),
    }


def run_local_tasks(
    command: Sequence[str],
    *,
    task_count: int,
    env: Mapping[str, str] | None = None,
    parallelism: int = 0,
    max_retries: int = 0,
    job: str = "memorybench-qa",
    execution: str | None = None,
    log_dir: str | Path | None = None,
    work_root: str | Path | None = None,
    cwd: str | Path | None = None,
    task_timeout_s: float | None = None,
    on_update: Callable[[ExecutionReport], None] | None = None,
    poll_s: float = 0.05,
) -> ExecutionReport:
    """Run `task_count` tasks as local processes, as Cloud Run runs a job's tasks.

    Each task gets the job's env, `env`, and Cloud Run's task variables; at most
    `parallelism` run at once (0: all); a task that exits non-zero (or outlives
    `task_timeout_s`) is started again with the next CLOUD_RUN_TASK_ATTEMPT, up to
    `max_retries` times. With `work_root`, task i works in `<work_root>/<i>`, kept across
    its attempts (so a retried qa task resumes).
    """
    execution = execution or f"{job}-{uuid.uuid4().hex[:5]}"
    logs = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix=f"{execution}-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    report = ExecutionReport(execution=execution, task_count=task_count, log_uri=str(logs))
    report.tasks = [TaskOutcome(index=i) for i in range(task_count)]
    pending: list[tuple[int, int]] = [(i, 0) for i in range(task_count)]
    running: dict[int, tuple[subprocess.Popen[bytes], int, float, Any]] = {}
    limit = parallelism if parallelism > 0 else max(task_count, 1)

    def notify() -> None:
        report.running = len(running)
        if on_update is not None:
            on_update(report)

    while pending or running:
        while pending and len(running) < limit:
            index, attempt = pending.pop(0)
            variables = {**os.environ, **(env or {}), **task_env(index, attempt, task_count, job, execution)}
            if work_root is not None:
                variables[WORK_DIR_ENV] = str(Path(work_root) / str(index))
            log_path = logs / f"task-{index:05d}.attempt-{attempt}.log"
            log = log_path.open("wb")
            proc = start_group(command, env=variables, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            running[index] = (proc, attempt, time.monotonic(), log)
            outcome = report.tasks[index]
            outcome.attempts, outcome.state, outcome.log = attempt + 1, "running", str(log_path)
            notify()
        for index, (proc, attempt, started, log) in list(running.items()):
            code = proc.poll()
            if code is None and task_timeout_s is not None and time.monotonic() - started > task_timeout_s:
                code = stop_group(proc)  # no grace: a retry resumes from the journals in its work folder
            if code is None:
                continue
            log.close()
            del running[index]
            outcome = report.tasks[index]
            outcome.exit_code = code
            if code == 0:
                outcome.state = "succeeded"
                report.succeeded += 1
            elif attempt < max_retries:
                outcome.state = "pending"
                report.retried += 1
                pending.append((index, attempt + 1))
            else:
                outcome.state = "failed"
                report.failed += 1
            notify()
        time.sleep(poll_s)
    report.done = True
    if report.failed:
        failed = [t.index for t in report.tasks if t.state == "failed"]
        report.error = f"task(s) {', '.join(map(str, failed))} failed after {max_retries + 1} attempt(s); logs in {logs}"
    notify()
    return report


def cloudrun_clients(api_endpoint: str | None = None, transport: str = "rest", anonymous: bool = False) -> tuple[Any, Any]:
    """(JobsClient, ExecutionsClient) of google-cloud-run with the same options."""
    from google.cloud import run_v2

    kwargs: dict[str, Any] = {"transport": transport}
    if api_endpoint:
        kwargs["client_options"] = {"api_endpoint": api_endpoint}
    if anonymous:
        from google.auth.credentials import AnonymousCredentials

        kwargs["credentials"] = AnonymousCredentials()
    from google.auth.exceptions import DefaultCredentialsError

    try:
        return run_v2.JobsClient(**kwargs), run_v2.ExecutionsClient(**kwargs)
    except DefaultCredentialsError as e:
        raise UserError(f"no Google credentials for the Cloud Run Admin API ({_first_sentence(e)}); {CREDENTIALS_FIX}") from None


#: how to get credentials, for the one-line errors of the Cloud Run and GCS clients
CREDENTIALS_FIX = "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service account key"


def _first_sentence(error: Exception) -> str:
    return str(error).split(". ")[0].strip().rstrip(".")


def _report_from_execution(execution: Any, report: ExecutionReport) -> ExecutionReport:
    if execution is None:
        return report
    report.execution = execution.name or report.execution
    report.task_count = int(execution.task_count or report.task_count)
    report.succeeded = int(execution.succeeded_count)
    report.failed = int(execution.failed_count)
    report.cancelled = int(execution.cancelled_count)
    report.retried = int(execution.retried_count)
    report.running = int(execution.running_count)
    report.log_uri = execution.log_uri or report.log_uri
    report.done = report.done or bool(execution.completion_time)
    return report


def run_cloud_execution(
    job_name: str,
    *,
    task_count: int,
    env: Mapping[str, str],
    api_endpoint: str | None = None,
    transport: str = "rest",
    anonymous: bool = False,
    task_timeout_s: int | None = None,
    poll_interval_s: float = 10.0,
    timeout_s: float | None = None,
    on_update: Callable[[ExecutionReport], None] | None = None,
    clients: tuple[Any, Any] | None = None,
) -> ExecutionReport:
    """Start ONE execution of the Cloud Run job `job_name` with `task_count` tasks and wait for it.

    The execution's container override adds `env` (the manifest URI). Waiting polls the
    run_job long-running operation at `poll_interval_s` (transient API errors are
    retried) for as long as it takes, or `timeout_s` if set; the client's own 900 s
    default is not used. The final counts come from `executions.get`.
    """
    from google.api_core import exceptions
    from google.api_core import retry as retries
    from google.cloud import run_v2
    from google.protobuf import duration_pb2

    jobs, executions = clients or cloudrun_clients(api_endpoint, transport, anonymous)
    overrides = run_v2.RunJobRequest.Overrides(
        task_count=task_count,
        container_overrides=[
            run_v2.RunJobRequest.Overrides.ContainerOverride(env=[run_v2.EnvVar(name=k, value=v) for k, v in sorted(env.items())])
        ],
    )
    if task_timeout_s:
        overrides.timeout = duration_pb2.Duration(seconds=int(task_timeout_s))
    try:
        operation = jobs.run_job(request=run_v2.RunJobRequest(name=job_name, overrides=overrides))
    except exceptions.NotFound:
        raise UserError(
            f"Cloud Run job {job_name} does not exist; deploy it with infra/deploy.sh (or set hydra.launcher.job/region/project)"
        ) from None
    except exceptions.PermissionDenied as e:
        raise UserError(f"not allowed to run {job_name}: {e.message}; grant roles/run.developer (run.jobs.runWithOverrides)") from None
    report = _report_from_execution(operation.metadata, ExecutionReport(execution=job_name, task_count=task_count))
    transient = retries.Retry(predicate=retries.if_transient_error, initial=1.0, maximum=30.0, multiplier=2.0, timeout=600.0)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not operation.done(retry=transient):
        _report_from_execution(operation.metadata, report)
        if on_update is not None:
            on_update(report)
        if deadline is not None and time.monotonic() > deadline:
            short = report.execution.rsplit("/", 1)[-1]
            report.error = f"still running after {timeout_s:.0f} s; it goes on in Cloud Run: gcloud run jobs executions describe {short}"
            return report
        time.sleep(poll_interval_s)
    report.done = True
    error = operation.exception()
    execution = operation.metadata if error is not None else operation.result()
    _report_from_execution(execution, report)
    if execution is not None and execution.name:
        try:
            _report_from_execution(executions.get_execution(name=execution.name, retry=transient), report)
        except exceptions.GoogleAPICallError as e:
            print(f"memorybench: could not read execution {execution.name} ({e}); using the operation's counts", file=sys.stderr)
    if error is not None:
        report.error = " ".join(str(getattr(error, "message", error)).split())
    elif report.failed:
        report.error = f"{report.failed} task(s) failed"
    report.done = True
    if on_update is not None:
        on_update(report)
    return report


# -- one execution of a manifest's tasks ---------------------------------------------------------
@dataclass(frozen=True)
class ExecutionSettings:
    """How a driver (the launcher, a wave) runs a manifest's tasks: on Cloud Run, or as local processes."""

    #: True: one execution of the manifest's Cloud Run job; False: local processes (the twin)
    remote: bool
    #: cloud: the Admin API endpoint (a stand-in), transport and credentials
    api_endpoint: str | None = None
    transport: str = "rest"
    anonymous: bool = False
    #: cloud: seconds between polls, and when to stop waiting (None: until the execution ends)
    poll_interval_s: float = 15.0
    timeout_s: float | None = None
    #: per-task timeout (cloud: an override of the job's; local: the process is killed)
    task_timeout_s: int | None = None
    #: local: tasks at once (0: all), retries of a failed task, where logs and work folders go
    parallelism: int = 0
    max_retries: int = 0
    log_dir: Path | None = None
    work_root: Path | None = None


def progress_printer(say: Callable[[str], None]) -> Callable[[ExecutionReport], None]:
    """An `on_update` callback that says the execution's summary line each time it changes."""
    last = [""]

    def progress(report: ExecutionReport) -> None:
        line = report.summary()
        if line != last[0]:
            last[0] = line
            say(line)

    return progress


def execute_manifest(
    manifest: ExecutionManifest, settings: ExecutionSettings, say: Callable[[str], None], env: Mapping[str, str] | None = None
) -> ExecutionReport:
    """Start the one execution of the manifest's `task_count` tasks and wait for it to end.

    Every task gets MEMORYBENCH_MANIFEST (and `env`): the worker reads its job from there.
    """
    task_env_vars = {**(env or {}), MANIFEST_ENV: manifest.manifest_uri}
    on_update = progress_printer(say)
    if settings.remote:
        return run_cloud_execution(
            manifest.job,
            task_count=manifest.task_count,
            env=task_env_vars,
            api_endpoint=settings.api_endpoint,
            transport=settings.transport,
            anonymous=settings.anonymous,
            task_timeout_s=settings.task_timeout_s,
            poll_interval_s=settings.poll_interval_s,
            timeout_s=settings.timeout_s,
            on_update=on_update,
        )
    return run_local_tasks(
        [sys.executable, "-m", WORKER_MODULE],
        task_count=manifest.task_count,
        env=task_env_vars,
        parallelism=settings.parallelism,
        max_retries=settings.max_retries,
        job=manifest.job,
        execution=f"{manifest.job}-local-{manifest.id}",
        log_dir=settings.log_dir,
        work_root=settings.work_root,
        task_timeout_s=settings.task_timeout_s,
        on_update=on_update,
    )


if __name__ == "__main__":
    sys.exit(_module_main())

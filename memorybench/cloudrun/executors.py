"""The two executors of a manifest's tasks: Cloud Run itself, and its local twin.

Both start N tasks with Cloud Run's environment (CLOUD_RUN_TASK_INDEX, CLOUD_RUN_TASK_COUNT,
CLOUD_RUN_TASK_ATTEMPT, CLOUD_RUN_EXECUTION, CLOUD_RUN_JOB) and report the execution's
counts (ExecutionReport): `run_cloud_execution` through the Cloud Run Admin API v2
(google-cloud-run, imported only there), `run_local_tasks` as local processes (the
`cloudrun_local` twin, and the tests' Cloud Run stand-in). `execute_manifest` picks one
for a driver (the launcher, a wave); every task runs the worker, WORKER_MODULE.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memorybench._process import start_group, stop_group
from memorybench.cloudrun.manifest import MANIFEST_ENV, WORK_DIR_ENV
from memorybench.cloudrun.records import ExecutionManifest
from memorybench.errors import UserError, needs_extra, require_extra
from memorybench.progress import Progress
from memorybench.secrets import CREDENTIAL_ENV, contains_secret, looks_like_key

#: the worker: every memorybench Cloud Run job runs `python -m` it (infra/cloudrun/*.yaml)
WORKER_MODULE = "memorybench.cloudrun.worker"

#: a Secret Manager secret as Cloud Run names it: `NAME` (the job's project) or `projects/P/secrets/NAME`
_SECRET_NAME = re.compile(r"^(?:projects/[A-Za-z0-9._:-]+/secrets/)?[A-Za-z0-9_-]{1,255}$")


@dataclass(frozen=True)
class SecretRef:
    """An environment variable of every task whose value Cloud Run reads from Secret Manager
    (`valueSource.secretKeyRef`, as infra/cloudrun/*.yaml mount OPENAI_API_KEY): the value
    never passes through the launcher, the request or any file of ours."""

    #: the variable the task sees
    env: str
    #: the secret (`openai-api-key`, or `projects/P/secrets/openai-api-key`)
    secret: str
    #: `latest` or a version number
    version: str = "latest"

    @classmethod
    def parse(cls, env: str, ref: str, where: str = "hydra.launcher.secrets") -> SecretRef:
        """`SECRET[:VERSION]` (gcloud's `--set-secrets ENV=SECRET:VERSION`) for variable `env`."""
        ref = str(ref).strip()
        if contains_secret(ref) or looks_like_key(ref):
            raise UserError(
                f"{where}.{env} holds a credential itself (not shown), not the name of a Secret Manager secret; "
                f"store it (gcloud secrets create SECRET --data-file=-) and pass +{where}={{{env}: SECRET:latest}}"
            )
        secret, _, version = ref.rpartition(":") if ref.rpartition(":")[2].isdigit() or ref.endswith(":latest") else (ref, "", "")
        if not _SECRET_NAME.match(secret) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(env)):
            raise UserError(
                f"{where}.{env}={ref!r} is not VARIABLE=SECRET[:VERSION]; e.g. +{where}={{OPENAI_API_KEY: openai-api-key:latest}}"
            )
        return cls(str(env), secret, version or "latest")


def check_local_secrets(secrets: Sequence[SecretRef]) -> None:
    """Local tasks inherit this process's environment: each referenced variable must be set here."""
    for ref in secrets:
        if not os.environ.get(ref.env, "").strip():
            raise UserError(
                f"hydra.launcher.secrets.{ref.env}: local tasks read {ref.env} from this environment, not from "
                f"Secret Manager ({ref.secret}); export {ref.env}=... and run again"
            )


def refuse_plain_secrets(env: Mapping[str, str], where: str) -> None:
    """A task's plain environment never carries a credential: it would sit in the request,
    the execution's description and our logs. One line naming the variable, never the value."""
    for name, value in sorted(env.items()):
        if CREDENTIAL_ENV.search(str(name).upper()) or looks_like_key(str(value)) or contains_secret(str(value)):
            raise UserError(
                f"{where}.{name} is a credential (not shown) passed as a plain value; pass it as a Secret Manager "
                f"reference instead: +hydra.launcher.secrets={{{name}: SECRET:latest}} (Cloud Run mounts it as infra/ mounts "
                f"OPENAI_API_KEY; cloudrun_local reads {name} from your environment)"
            )


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


#: the `cloud` extra's line for the machine that launches a sweep on Cloud Run
CLOUDRUN_NEEDS = (
    "hydra/launcher=cloudrun needs the Google Cloud clients (google-cloud-run, google-cloud-storage)",
    "use hydra/launcher=cloudrun_local to run the tasks here",
)
CLOUDRUN_MODULES = ("google.cloud.run_v2", "google.cloud.storage")


def check_cloudrun_installed() -> None:
    """google-cloud-run and google-cloud-storage are installed (found, not imported), else one
    line naming the `cloud` extra: the launcher calls it before composing or writing anything."""
    require_extra("cloud", *CLOUDRUN_NEEDS, modules=CLOUDRUN_MODULES)


def cloudrun_clients(api_endpoint: str | None = None, transport: str = "rest", anonymous: bool = False) -> tuple[Any, Any]:
    """(JobsClient, ExecutionsClient) of google-cloud-run with the same options."""
    with needs_extra("cloud", *CLOUDRUN_NEEDS, modules=CLOUDRUN_MODULES):
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
    secrets: Sequence[SecretRef] = (),
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

    The execution's container override adds `env` (the manifest URI) and `secrets`, each a
    variable Cloud Run reads from Secret Manager (`valueSource.secretKeyRef`). Waiting polls the
    run_job long-running operation at `poll_interval_s` (transient API errors are
    retried) for as long as it takes, or `timeout_s` if set; the client's own 900 s
    default is not used. The final counts come from `executions.get`.
    """
    with needs_extra("cloud", *CLOUDRUN_NEEDS, modules=CLOUDRUN_MODULES):
        from google.api_core import exceptions
        from google.api_core import retry as retries
        from google.cloud import run_v2
        from google.protobuf import duration_pb2

    jobs, executions = clients or cloudrun_clients(api_endpoint, transport, anonymous)
    overrides = run_v2.RunJobRequest.Overrides(
        task_count=task_count,
        container_overrides=[
            run_v2.RunJobRequest.Overrides.ContainerOverride(
                env=[run_v2.EnvVar(name=k, value=v) for k, v in sorted(env.items())]
                + [
                    run_v2.EnvVar(
                        name=ref.env,
                        value_source=run_v2.EnvVarSource(
                            secret_key_ref=run_v2.SecretKeySelector(secret=ref.secret, version=ref.version)
                        ),
                    )
                    for ref in sorted(secrets, key=lambda r: r.env)
                ]
            )
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
        raise UserError(
            f"not allowed to run {job_name}: {e.message}; grant roles/run.developer (run.jobs.runWithOverrides)"
        ) from None
    report = _report_from_execution(operation.metadata, ExecutionReport(execution=job_name, task_count=task_count))
    transient = retries.Retry(predicate=retries.if_transient_error, initial=1.0, maximum=30.0, multiplier=2.0, timeout=600.0)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not operation.done(retry=transient):
        _report_from_execution(operation.metadata, report)
        if on_update is not None:
            on_update(report)
        if deadline is not None and time.monotonic() > deadline:
            short = report.execution.rsplit("/", 1)[-1]
            report.error = (
                f"still running after {timeout_s:.0f} s; it goes on in Cloud Run: gcloud run jobs executions describe {short}"
            )
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
    #: variables read from Secret Manager (cloud: `valueSource.secretKeyRef`; local: each must be
    #: set in this process's environment, which the local tasks inherit)
    secrets: tuple[SecretRef, ...] = ()


class ProgressPrinter:
    """An `on_update` callback: each task's state change (the local twin knows every task's;
    Cloud Run's execution only its counts), the execution's summary line each time it changes,
    and a `memorybench.progress` line of tasks ended (rate, eta) every few seconds until `close()`."""

    def __init__(self, say: Callable[[str], None], *, label: str | None = None) -> None:
        self.say, self.label = say, label
        self._last = ""
        self._seen: dict[int, tuple[str, int]] = {}
        self._bar: Progress | None = None

    def __call__(self, report: ExecutionReport) -> None:
        for task in report.tasks:
            state = (task.state, task.attempts)
            if self._seen.get(task.index) == state:
                continue
            if task.index in self._seen or task.state != "pending":
                attempt = f" (attempt {task.attempts})" if task.attempts > 1 else ""
                code = f", exit {task.exit_code}" if task.state in ("failed", "pending") and task.exit_code else ""
                self.say(
                    f"task {task.index}: {task.state}{attempt}{code}" + ("; to be retried" if task.state == "pending" else "")
                )
            self._seen[task.index] = state
        if self._bar is None:  # plain lines through `say`, never a bar: they share stderr with the lines above
            self._bar = Progress(
                self.label or report.execution.rsplit("/", 1)[-1],
                report.task_count,
                unit="tasks",
                rate_unit="task",
                spend=None,
                say=self.say,
            )
        ended = report.succeeded + report.failed + report.cancelled
        if ended > self._bar.done:
            self._bar.update(ended - self._bar.done)
        if report.done:
            self.close()  # the last progress line, then the final summary
        line = report.summary()
        if line != self._last:
            self._last = line
            self.say(line)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def progress_printer(say: Callable[[str], None], *, label: str | None = None) -> ProgressPrinter:
    return ProgressPrinter(say, label=label)


def execute_manifest(
    manifest: ExecutionManifest, settings: ExecutionSettings, say: Callable[[str], None], env: Mapping[str, str] | None = None
) -> ExecutionReport:
    """Start the one execution of the manifest's `task_count` tasks and wait for it to end.

    Every task gets MEMORYBENCH_MANIFEST (and `env`): the worker reads its job from there.
    A credential in `env` is refused (`refuse_plain_secrets`): it goes in `settings.secrets`.
    """
    refuse_plain_secrets(env or {}, "hydra.launcher.env")
    if not settings.remote:
        check_local_secrets(settings.secrets)
    task_env_vars = {**(env or {}), MANIFEST_ENV: manifest.manifest_uri}
    with contextlib.closing(progress_printer(say)) as on_update:
        return _execute(manifest, settings, task_env_vars, on_update)


def _execute(
    manifest: ExecutionManifest,
    settings: ExecutionSettings,
    task_env_vars: dict[str, str],
    on_update: Callable[[ExecutionReport], None],
) -> ExecutionReport:
    if settings.remote:
        return run_cloud_execution(
            manifest.job,
            task_count=manifest.task_count,
            env=task_env_vars,
            secrets=settings.secrets,
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

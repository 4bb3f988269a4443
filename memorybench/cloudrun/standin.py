"""A Cloud Run stand-in on 127.0.0.1: just the Admin API v2 REST calls memorybench makes.

The real `google-cloud-run` client, in REST transport, talks to it unchanged:

    run_v2.JobsClient(transport="rest", credentials=AnonymousCredentials(),
                      client_options={"api_endpoint": standin.api_endpoint})

Endpoints (the URIs of google/cloud/run_v2/services/{jobs,executions}/transports/rest_base.py
and of the jobs transport's operations client):

    POST /v2/projects/*/locations/*/jobs/*:run          RunJob -> google.longrunning.Operation
    GET  /v2/projects/*/locations/*/operations/*        GetOperation (the LRO poll)
    GET  /v2/projects/*/locations/*/jobs/*/executions/* GetExecution -> Execution

Anything else answers 501 with a Google-style error body. A run starts the job's tasks
as local processes with Cloud Run's variables (CLOUD_RUN_TASK_INDEX, _COUNT, _ATTEMPT,
CLOUD_RUN_EXECUTION, CLOUD_RUN_JOB) plus the job's env and the request's container
override env (a `valueSource.secretKeyRef` read from the stand-in's `secrets`, as Cloud
Run reads Secret Manager; an unknown secret fails the run), at most `parallelism` at once, retrying a failed task up to `max_retries`
times (memorybench.cloudrun.executors.run_local_tasks). The operation's metadata is the
Execution with its live counts; when every task has ended the operation is done, with
the Execution as its response, or with an error naming the first failed task, as Cloud
Run reports it. Plumbing only (the tests, `memorybench dev cloud-emulators`): no auth, no
IAM, no job CRUD.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memorybench.cloudrun.executors import ExecutionReport, run_local_tasks

EXECUTION_TYPE = "type.googleapis.com/google.cloud.run.v2.Execution"
_RUN = re.compile(r"^/v2/projects/([^/]+)/locations/([^/]+)/jobs/([^/:]+):run$")
_OPERATION = re.compile(r"^/v2/projects/([^/]+)/locations/([^/]+)/operations/([^/:]+)$")
_EXECUTION = re.compile(r"^/v2/projects/([^/]+)/locations/([^/]+)/jobs/([^/]+)/executions/([^/:]+)$")
_GRPC_CODES = {400: ("INVALID_ARGUMENT", 3), 404: ("NOT_FOUND", 5), 501: ("UNIMPLEMENTED", 12), 409: ("ALREADY_EXISTS", 6)}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _duration_s(text: str | None) -> float | None:
    """A protobuf JSON Duration ("600s", "1.5s") in seconds."""
    if not text:
        return None
    return float(str(text).rstrip("s"))


@dataclass
class StandinJob:
    """A deployed job: its container command and env, and its task template settings."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    task_count: int = 1
    parallelism: int = 0
    max_retries: int = 3
    task_timeout_s: float | None = None
    cwd: str | None = None


@dataclass
class StandinExecution:
    name: str
    uid: str
    job: StandinJob
    task_count: int
    parallelism: int
    operation: str
    create_time: str
    start_time: str | None = None
    completion_time: str | None = None
    report: ExecutionReport | None = None
    env: dict[str, str] = field(default_factory=dict)
    thread: threading.Thread | None = None

    @property
    def short_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]


class CloudRunStandin:
    """Context manager: `with CloudRunStandin() as cr: cr.add_job(...); cr.api_endpoint`."""

    def __init__(self, project: str = "test-project", region: str = "us-central1", log_dir: str | Path | None = None) -> None:
        self.project = project
        self.region = region
        self.jobs: dict[str, StandinJob] = {}
        self.executions: dict[str, StandinExecution] = {}
        self.operations: dict[str, StandinExecution] = {}
        #: every request: (method, path with query, parsed JSON body or None)
        self.requests: list[tuple[str, str, Any]] = []
        self._owned_logs = log_dir is None
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="cloudrun-standin-"))
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        #: Secret Manager's secrets: name -> value (every version alike)
        self.secrets: dict[str, str] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> CloudRunStandin:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return {"_raw": raw.decode("utf-8", "replace")}

            def do_GET(self) -> None:
                standin._dispatch(self, "GET", None)

            def do_POST(self) -> None:
                standin._dispatch(self, "POST", self._body())

            def do_DELETE(self) -> None:
                standin._dispatch(self, "DELETE", self._body())

            def do_PATCH(self) -> None:
                standin._dispatch(self, "PATCH", self._body())

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="cloudrun-standin", daemon=True).start()

    def stop(self, wait_s: float = 60.0) -> None:
        for execution in list(self.executions.values()):
            if execution.thread is not None:
                execution.thread.join(timeout=wait_s)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def api_endpoint(self) -> str:
        assert self._httpd is not None, "the stand-in is not running"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # -- jobs ----------------------------------------------------------------------------------
    def job_name(self, job: str) -> str:
        return f"projects/{self.project}/locations/{self.region}/jobs/{job}"

    def add_job(self, job: str, command: Sequence[str], *, env: Mapping[str, str] | None = None, **settings: Any) -> str:
        """Deploy a job (what `gcloud run jobs replace` does); return its resource name."""
        name = self.job_name(job)
        self.jobs[name] = StandinJob(name=name, command=list(command), env=dict(env or {}), **settings)
        return name

    def wait(self, timeout_s: float = 120.0) -> None:
        """Wait until every started execution has finished."""
        for execution in list(self.executions.values()):
            if execution.thread is not None:
                execution.thread.join(timeout=timeout_s)

    def task_logs(self, execution: str) -> dict[str, str]:
        """`task-<index>.attempt-<k>.log` -> text, for one execution (short or full name)."""
        short = execution.rsplit("/", 1)[-1]
        folder = self.log_dir / short
        return {p.name: p.read_text("utf-8", "replace") for p in sorted(folder.glob("*.log"))}

    # -- HTTP ----------------------------------------------------------------------------------
    def _dispatch(self, handler: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = urlsplit(handler.path).path
        with self._lock:
            self.requests.append((method, handler.path, body))
        try:
            if method == "POST" and (m := _RUN.match(path)):
                status, payload = self._run_job(f"projects/{m[1]}/locations/{m[2]}/jobs/{m[3]}", body or {})
            elif method == "GET" and (m := _OPERATION.match(path)):
                status, payload = self._get_operation(path[len("/v2/") :])
            elif method == "GET" and (m := _EXECUTION.match(path)):
                status, payload = self._get_execution(path[len("/v2/") :])
            else:
                status, payload = _error(501, f"{method} {path} is not implemented by the Cloud Run stand-in")
        except Exception as e:  # noqa: BLE001 - a stand-in bug must reach the client as an HTTP error
            status, payload = _error(500, f"stand-in error: {type(e).__name__}: {e}")
        data = json.dumps(payload).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=UTF-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _run_job(self, name: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        job = self.jobs.get(name)
        if job is None:
            parts = name.split("/")
            return _error(
                404, f"Resource '{parts[5]}' of kind 'JOB' in region '{parts[3]}' in project '{parts[1]}' does not exist."
            )
        overrides = body.get("overrides") or {}
        task_count = int(overrides.get("taskCount") or job.task_count)
        env = dict(job.env)
        for container in overrides.get("containerOverrides") or []:
            for var in container.get("env") or []:
                ref = (var.get("valueSource") or {}).get("secretKeyRef")
                if ref is None:
                    env[str(var["name"])] = str(var.get("value", ""))
                    continue
                secret = str(ref.get("secret", "")).rsplit("/", 1)[-1]
                if secret not in self.secrets:
                    version = ref.get("version") or "latest"
                    return _error(404, f"Secret projects/{name.split('/')[1]}/secrets/{secret}/versions/{version} was not found")
                env[str(var["name"])] = self.secrets[secret]
        timeout_s = _duration_s(overrides.get("timeout")) or job.task_timeout_s
        short = f"{name.rsplit('/', 1)[-1]}-{''.join(secrets.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(5))}"
        operation = f"projects/{name.split('/')[1]}/locations/{name.split('/')[3]}/operations/{uuid.uuid4()}"
        execution = StandinExecution(
            name=f"{name}/executions/{short}",
            uid=str(uuid.uuid4()),
            job=job,
            task_count=task_count,
            parallelism=job.parallelism,
            operation=operation,
            create_time=_now(),
            env=env,
        )
        with self._lock:
            self.executions[execution.name] = execution
            self.operations[operation] = execution
        if not body.get("validateOnly"):
            execution.thread = threading.Thread(target=self._execute, args=(execution, timeout_s), name=short, daemon=True)
            execution.thread.start()
        return 200, self._operation_json(execution)

    def _execute(self, execution: StandinExecution, timeout_s: float | None) -> None:
        job = execution.job
        execution.start_time = _now()

        def update(report: ExecutionReport) -> None:
            with self._lock:
                execution.report = report

        report = run_local_tasks(
            job.command,
            task_count=execution.task_count,
            env=execution.env,
            parallelism=job.parallelism,
            max_retries=job.max_retries,
            job=job.name.rsplit("/", 1)[-1],
            execution=execution.short_name,
            log_dir=self.log_dir / execution.short_name,
            cwd=job.cwd,
            task_timeout_s=timeout_s,
            on_update=update,
        )
        with self._lock:
            execution.report = report
            execution.completion_time = _now()

    def _get_operation(self, name: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            execution = self.operations.get(name)
        if execution is None:
            return _error(404, f"operation {name} not found")
        return 200, self._operation_json(execution)

    def _get_execution(self, name: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            execution = self.executions.get(name)
        if execution is None:
            return _error(404, f"Resource '{name.rsplit('/', 1)[-1]}' of kind 'EXECUTION' does not exist.")
        return 200, self._execution_json(execution)

    # -- resources -------------------------------------------------------------------------------
    def _execution_json(self, execution: StandinExecution) -> dict[str, Any]:
        with self._lock:
            report = execution.report
            done = execution.completion_time is not None
            counts = {
                "runningCount": report.running if report and not done else 0,
                "succeededCount": report.succeeded if report else 0,
                "failedCount": report.failed if report else 0,
                "cancelledCount": report.cancelled if report else 0,
                "retriedCount": report.retried if report else 0,
            }
        data: dict[str, Any] = {
            "name": execution.name,
            "uid": execution.uid,
            "generation": "1",
            "createTime": execution.create_time,
            "job": execution.job.name.rsplit("/", 1)[-1],
            "parallelism": execution.parallelism,
            "taskCount": execution.task_count,
            "logUri": f"{self.api_endpoint}/logs/{execution.short_name}",
            "reconciling": not done,
            "observedGeneration": "1",
            **counts,
        }
        if execution.start_time:
            data["startTime"] = execution.start_time
        started = {"type": "Started", "state": "CONDITION_SUCCEEDED" if execution.start_time else "CONDITION_PENDING"}
        if done:
            data["completionTime"] = execution.completion_time
            failed = counts["failedCount"] > 0
            completed = {
                "type": "Completed",
                "state": "CONDITION_FAILED" if failed else "CONDITION_SUCCEEDED",
                "message": f"Task {self._failed_task(execution)} failed with message: The container exited with an error."
                if failed
                else "Execution completed successfully.",
                "lastTransitionTime": execution.completion_time,
            }
            if failed:
                completed["executionReason"] = "NON_ZERO_EXIT_CODE"
        else:
            completed = {"type": "Completed", "state": "CONDITION_RECONCILING"}
        data["conditions"] = [completed, started]
        return data

    def _failed_task(self, execution: StandinExecution) -> str:
        report = execution.report
        index = next((t.index for t in report.tasks if t.state == "failed"), 0) if report else 0
        return f"{execution.short_name}-task{index}"

    def _operation_json(self, execution: StandinExecution) -> dict[str, Any]:
        resource = {"@type": EXECUTION_TYPE, **self._execution_json(execution)}
        data: dict[str, Any] = {"name": execution.operation, "metadata": resource, "done": False}
        if execution.completion_time is not None:
            data["done"] = True
            if resource["failedCount"]:
                data["error"] = {"code": 2, "message": resource["conditions"][0]["message"]}
            else:
                data["response"] = resource
        return data


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    text, _code = _GRPC_CODES.get(status, ("INTERNAL", 13))
    return status, {"error": {"code": status, "message": message, "status": text}}


__all__ = ["CloudRunStandin", "StandinExecution", "StandinJob"]

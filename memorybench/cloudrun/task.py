"""What every task of an execution shares, a qa task's or a wave's: who it is, and its status.

Cloud Run (or a local executor) tells a task about itself through its environment
(CLOUD_RUN_TASK_INDEX, CLOUD_RUN_TASK_ATTEMPT, ...; `TaskContext.from_env`). The task
runs the manifest's entry at its index (`task_item`) and leaves one status record per
attempt beside the manifest (`record_status`), which the driver reads to explain it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from memorybench.cloudrun.manifest import CONTROL_DIR, MANIFEST_ENV, WORK_DIR_ENV, status_relpath
from memorybench.cloudrun.records import ExecutionManifest, TaskStatus
from memorybench.errors import UserError
from memorybench.provenance import utc_now

TaskState = Literal["succeeded", "skipped", "failed"]
ItemT = TypeVar("ItemT")


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
            raise UserError(
                f"no manifest: set {MANIFEST_ENV}=gs://BUCKET/PREFIX/{CONTROL_DIR}/<sweep>/manifest.json (the launcher does)"
            )

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
        raise UserError(
            f"CLOUD_RUN_TASK_INDEX={ctx.index} is outside the {what}'s {n} task(s); start the execution with task_count={n}"
        )
    return items[ctx.index]


def record_status(
    manifest: ExecutionManifest,
    ctx: TaskContext,
    status: TaskState,
    exit_code: int,
    message: str,
    run_id: str | None = None,
    pack_uri: str | None = None,
) -> None:
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


def task_done(
    manifest: ExecutionManifest,
    ctx: TaskContext,
    status: Literal["succeeded", "skipped"],
    message: str,
    run_id: str | None = None,
    pack_uri: str | None = None,
) -> int:
    """Print the task's one-line outcome, record it, and return the task's exit code (0)."""
    print(message, flush=True)
    record_status(manifest, ctx, status, 0, message, run_id, pack_uri)
    return 0

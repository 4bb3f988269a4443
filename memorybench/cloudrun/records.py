"""The records of a Cloud Run execution, each a small pydantic model with a `schema` version.

    <control_root>/_cloudrun/<sweep_id>/manifest.json                CloudRunManifest  (the launcher, create-only)
    <control_root>/_cloudrun/<sweep_id>/tasks/<i>.attempt-<k>.json   TaskStatus  (each task attempt)
    <pack>/provenance/cloudrun.json                                  CloudRunProvenance  (the task that published it)

A wave's manifest (`memorybench.cloudrun.waves.WaveManifest`) is an ExecutionManifest
too, and its tasks leave the same TaskStatus records. CloudRunProvenance is a file of a
pack: it is declared with the pack's records (`memorybench.pack.provenance_record`), so
that a reader of packs never imports this wing. This module imports only pydantic and
the records it builds on.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from memorybench.pack.provenance_record import CloudRunProvenance
from memorybench.records import Record

__all__ = ["CloudRunManifest", "CloudRunProvenance", "ExecutionManifest", "ManifestJob", "TaskStatus"]


class ExecutionManifest(Record):
    """What every manifest holds, a qa sweep's or a wave's: how its one execution was started,
    and where its tasks record their status. The launcher or wave writes it create-only
    before the execution starts; each task reads its own entry from it."""

    schema_: str = Field(alias="schema")
    created_at: str
    #: cloudrun | cloudrun_local (a qa sweep); cloudrun | local (a wave)
    launcher: str
    #: the Cloud Run job (projects/P/locations/R/jobs/J), or the local twin's job name
    job: str
    project: Optional[str] = None
    region: Optional[str] = None
    manifest_uri: str
    #: storage root holding `<control_prefix>/manifest.json` and `<control_prefix>/tasks/`
    control_root: str
    control_prefix: str
    #: the execution's task_count: one task per entry
    task_count: int

    @property
    def id(self) -> str:
        """The sweep id or the wave id (TaskStatus.sweep_id)."""
        raise NotImplementedError


class ManifestJob(Record):
    """One run spec of the sweep: what its task re-composes and checks."""

    #: the task index that runs it (CLOUD_RUN_TASK_INDEX)
    index: int
    #: Hydra's job number in the sweep (hydra.job.num)
    hydra_job_num: int
    #: the job's overrides, exactly as Hydra's sweeper made them
    overrides: list[str]
    #: config-group choices as Hydra saw them (recorded in run_meta.json)
    choices: dict[str, str]
    #: the resolved config without the `hydra` node
    config: dict[str, Any]
    #: the run id's hash (memorybench.run_id.config_sha256): the experiment's identity
    config_sha256: str
    #: sha256 of the canonical JSON of `config` (every key, paths and storage included)
    resolved_sha256: str
    run_id: str
    name: str
    #: the storage root the pack is published to (gs://... or an absolute folder)
    storage_root: str
    #: `<name>/runs/<run_id>` inside storage_root
    pack_relpath: str
    pack_uri: str


class CloudRunManifest(ExecutionManifest, schema="cloudrun_manifest.v1"):
    """A qa sweep's manifest: every job composed and hashed by the launcher before any task starts."""

    sweep_id: str
    git_commit: Optional[str] = None
    git_dirty: Optional[bool] = None
    memorybench_version: str
    jobs: list[ManifestJob]

    @property
    def id(self) -> str:
        return self.sweep_id


class TaskStatus(Record, schema="cloudrun_task_status.v1"):
    """`<control_prefix>/tasks/<index>.attempt-<k>.json`: one record per task attempt."""

    #: the manifest's id: a qa sweep's sweep_id or a wave's wave_id
    sweep_id: str
    task_index: int
    attempt: int
    execution: Optional[str] = None
    #: succeeded | skipped (its output was already there) | failed
    status: Literal["succeeded", "skipped", "failed"]
    exit_code: int
    #: one line: what happened, or the error
    message: str
    run_id: Optional[str] = None
    pack_uri: Optional[str] = None
    at: str

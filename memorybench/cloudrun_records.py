"""The records of a Cloud Run execution, each a small pydantic model with a `schema` version.

    <control_root>/_cloudrun/<sweep_id>/manifest.json       CloudRunManifest  (the launcher, create-only)
    <control_root>/_cloudrun/<sweep_id>/tasks/<i>.attempt-<k>.json   TaskStatus  (each task attempt)
    <pack>/provenance/cloudrun.json                         CloudRunProvenance  (the task that published it)

A wave's manifest (`memorybench.waves.WaveManifest`) is an ExecutionManifest too, and
its tasks leave the same TaskStatus records. This module imports only pydantic, so a
reader of packs (memorybench.pack.verify) can check a provenance record without Hydra.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MANIFEST_SCHEMA",
    "PROVENANCE_SCHEMA",
    "TASK_STATUS_SCHEMA",
    "CloudRunManifest",
    "CloudRunProvenance",
    "ExecutionManifest",
    "ManifestJob",
    "Record",
    "TaskStatus",
]

MANIFEST_SCHEMA = "cloudrun_manifest.v1"
PROVENANCE_SCHEMA = "cloudrun_provenance.v1"
TASK_STATUS_SCHEMA = "cloudrun_task_status.v1"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> str:
        """Indented JSON with `schema` under its own name, one trailing newline."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"


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


class CloudRunManifest(ExecutionManifest):
    """A qa sweep's manifest: every job composed and hashed by the launcher before any task starts."""

    schema_: Literal["cloudrun_manifest.v1"] = Field(MANIFEST_SCHEMA, alias="schema")
    sweep_id: str
    git_commit: Optional[str] = None
    git_dirty: Optional[bool] = None
    memorybench_version: str
    jobs: list[ManifestJob]

    @property
    def id(self) -> str:
        return self.sweep_id


class CloudRunProvenance(Record):
    """`provenance/cloudrun.json` in a pack a task published: where and how it ran.

    Written by the task itself, from the variables Cloud Run (or the local twin) set in
    its container and the manifest it ran; it names the run so that `verify_pack` can
    check it belongs to the pack it is in.
    """

    schema_: Literal["cloudrun_provenance.v1"] = Field(PROVENANCE_SCHEMA, alias="schema")
    #: the launcher that started the execution
    launcher: Literal["cloudrun", "cloudrun_local"]
    #: CLOUD_RUN_JOB: the job's short name (memorybench-qa); null if the task ran without it
    job: Optional[str] = None
    #: CLOUD_RUN_EXECUTION: the execution's short name (memorybench-qa-abc12)
    execution: Optional[str] = None
    #: CLOUD_RUN_TASK_INDEX: the task's position in the execution, = its job's manifest index
    task_index: int = Field(ge=0)
    #: CLOUD_RUN_TASK_COUNT: tasks in the execution
    task_count: Optional[int] = Field(default=None, ge=1)
    #: CLOUD_RUN_TASK_ATTEMPT: 0 for the first try, 1.. for Cloud Run's retries
    attempt: int = Field(ge=0)
    #: MEMORYBENCH_IMAGE, set by infra/deploy.sh in the job definition (null when not given)
    image: Optional[str] = None
    #: MEMORYBENCH_IMAGE_DIGEST: the image's sha256 digest as deployed (null when not given)
    image_digest: Optional[str] = None
    #: MEMORYBENCH_REGION if the job sets it, else the launcher's region ("local" for the twin)
    region: Optional[str] = None
    #: the GCP project the execution ran in (null for the local twin)
    project: Optional[str] = None
    #: the manifest the task read its job from
    manifest_uri: str
    sweep_id: str
    #: the run this pack holds: equal to run_meta.json's run_id and config_sha256
    run_id: str
    config_sha256: str
    #: sha256 of the resolved config the task ran (config.resolved.yaml's canonical JSON)
    resolved_sha256: str
    #: where the pack was published
    pack_uri: str
    #: UTC ISO-8601 times around the task's qa run
    started_at: str
    ended_at: str


class TaskStatus(Record):
    """`<control_prefix>/tasks/<index>.attempt-<k>.json`: one record per task attempt."""

    schema_: Literal["cloudrun_task_status.v1"] = Field(TASK_STATUS_SCHEMA, alias="schema")
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

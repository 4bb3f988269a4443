"""`provenance/cloudrun.json`: the record a Cloud Run task adds to each pack it publishes.

It is a file inside a pack, so it lives with the pack's records: a reader of packs
(`memorybench verify`) checks it without importing the Cloud Run wing. The task that
writes it is `memorybench.cloudrun.worker`. This module imports only pydantic and
`memorybench.records`.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from memorybench.records import Record

__all__ = ["CloudRunProvenance"]


class CloudRunProvenance(Record, schema="cloudrun_provenance.v1"):
    """`provenance/cloudrun.json` in a pack a task published: where and how it ran.

    Written by the task itself, from the variables Cloud Run (or the local twin) set in
    its container and the manifest it ran; it names the run so that `verify_pack` can
    check it belongs to the pack it is in.
    """

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

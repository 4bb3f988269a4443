"""`hydra/launcher=cloudrun` and its local twin `hydra/launcher=cloudrun_local`.

Hydra imports this module at plugin discovery: it stays light (dataclasses only).
"""

from dataclasses import dataclass, field
from typing import Dict, Optional

from hydra.core.config_store import ConfigStore


@dataclass
class CloudRunLauncherConf:
    _target_: str = "hydra_plugins.memorybench_cloudrun_launcher.cloudrun_launcher.CloudRunLauncher"
    # GCP project of the job; null: $GOOGLE_CLOUD_PROJECT, $CLOUDSDK_CORE_PROJECT, then the credentials' project
    project: Optional[str] = None
    # region the job is deployed in
    region: str = "us-central1"
    # the Cloud Run job (infra/cloudrun/qa.yaml deploys memorybench-qa)
    job: str = "memorybench-qa"
    # where the manifest and task status records go; null: the first job's storage.root (must be gs://)
    manifest_root: Optional[str] = None
    # run only the first N run specs of the sweep (null: all)
    max_jobs: Optional[int] = None
    # per-task timeout override in seconds (null: the job definition's, 12 h in infra/)
    task_timeout_s: Optional[int] = None
    # seconds between two polls of the execution
    poll_interval_s: float = 15.0
    # stop waiting after this many seconds (the execution goes on); null: wait until it ends
    timeout_s: Optional[float] = None
    # extra env vars for every task of the execution; a credential here is refused (use `secrets`)
    env: Dict[str, str] = field(default_factory=dict)
    # env vars Cloud Run reads from Secret Manager, VARIABLE: SECRET[:VERSION] (valueSource.secretKeyRef,
    # as gcloud's --set-secrets), e.g. {OPENAI_API_KEY: openai-api-key:latest}
    secrets: Dict[str, str] = field(default_factory=dict)
    # Cloud Run Admin API endpoint; null: run.googleapis.com (set for a stand-in or a private endpoint)
    api_endpoint: Optional[str] = None
    # rest | grpc
    transport: str = "rest"
    # no credentials (a local stand-in only)
    anonymous_credentials: bool = False


@dataclass
class LocalCloudRunLauncherConf:
    _target_: str = "hydra_plugins.memorybench_cloudrun_launcher.cloudrun_launcher.LocalCloudRunLauncher"
    # the job name the tasks see as CLOUD_RUN_JOB
    job: str = "memorybench-qa"
    # recorded in provenance as the region
    region: str = "local"
    # where the manifest and task status records go; null: the first job's storage root
    manifest_root: Optional[str] = None
    # run only the first N run specs of the sweep (null: all)
    max_jobs: Optional[int] = None
    # tasks running at once (0: all)
    parallelism: int = 1
    # a failed task is started again up to this many times (CLOUD_RUN_TASK_ATTEMPT 1, 2, ...)
    max_retries: int = 0
    # kill a task after this many seconds (null: never)
    task_timeout_s: Optional[int] = None
    # extra env vars for every task (they also inherit this environment); a credential here is refused
    env: Dict[str, str] = field(default_factory=dict)
    # as cloudrun's `secrets`, so one sweep runs on both: each VARIABLE must be set in this environment
    secrets: Dict[str, str] = field(default_factory=dict)


ConfigStore.instance().store(
    group="hydra/launcher", name="cloudrun", node=CloudRunLauncherConf, provider="memorybench_cloudrun_launcher"
)
ConfigStore.instance().store(
    group="hydra/launcher", name="cloudrun_local", node=LocalCloudRunLauncherConf, provider="memorybench_cloudrun_launcher"
)

"""The launcher classes Hydra instantiates; the work is in `_core` (imported in launch())."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.memorybench_cloudrun_launcher.config import CloudRunLauncherConf, LocalCloudRunLauncherConf

log = logging.getLogger(__name__)


class CloudRunLauncher(Launcher):
    """Every job of the sweep as one task of ONE Cloud Run job execution."""

    remote = True
    #: the structured config (config.py) whose fields Hydra passes as keyword arguments
    conf_type: type[Any] = CloudRunLauncherConf

    def __init__(self, **params: Any) -> None:
        plain = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v for k, v in params.items()}
        # typed: every default is the config dataclass's own
        self.conf = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(self.conf_type), plain))
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from hydra_plugins.memorybench_cloudrun_launcher._core import launch

        return launch(self, job_overrides, initial_job_idx)


class LocalCloudRunLauncher(CloudRunLauncher):
    """The local twin: the same manifest, tasks and storage, with local processes instead of Cloud Run."""

    remote = False
    conf_type = LocalCloudRunLauncherConf

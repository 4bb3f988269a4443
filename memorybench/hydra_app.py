"""The Hydra application behind `memorybench qa`: one call per composed job.

Hydra owns composition, `-m` sweeps and launchers (basic, submitit, ours); this task
function only runs the stage. A user error ends the job with one line, no traceback:

- a single run prints the line and exits with the error's code;
- a job of a sweep (`-m`, under any launcher) raises `QAJobFailed`, so the job is FAILED
  in Hydra's results while the other jobs still run; Hydra then names the failed job's
  overrides, prints the line and exits 1. A SystemExit would not do: the basic launcher
  would stop the sweep at that job, and under submitit the job's process would die
  without a result (submitit's UncompletedJobError and a traceback in the driver).
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from memorybench import CONF_DIR
from memorybench.config import load_component_configs, recorded_choices
from memorybench.errors import UserError, error_line, report


class QAJobFailed(UserError, CompactHydraException):
    """A job of a sweep that ended with a user error (picklable: submitit sends it back to the driver).

    Compact: Hydra prints `str()` of it, one line, without a traceback.
    """

    def __init__(self, message: str, exit_code: int = UserError.exit_code) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __reduce__(self) -> tuple[type[QAJobFailed], tuple[str, int]]:
        return type(self), (self.message, self.exit_code)

    def __str__(self) -> str:
        return error_line(self.message)


load_component_configs()  # the components' own schema nodes, before Hydra composes


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def qa_app(cfg: DictConfig) -> dict | None:
    from memorybench.stages.qa import print_summary, run_qa

    hc = HydraConfig.get()
    plain = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    choices = recorded_choices(hc.runtime.choices)
    try:
        result = run_qa(plain, overrides=list(hc.overrides.task), choices=choices)
    except UserError as e:
        if hc.mode == RunMode.MULTIRUN:
            raise QAJobFailed(e.message, e.exit_code) from None
        sys.exit(report(e))
    print_summary(result)
    return result.metrics

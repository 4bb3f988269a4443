"""The Hydra application behind `memorybench qa`: one call per composed job.

Hydra owns composition, `-m` sweeps and launchers (basic, submitit, ours); this task
function only runs the stage. A user error ends the job with one line, no traceback.
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

import memorybench.config  # noqa: F401  (registers the structured configs)
from memorybench import CONF_DIR
from memorybench.errors import UserError


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def qa_app(cfg: DictConfig) -> dict | None:
    from memorybench.stages.qa import print_summary, run_qa

    hc = HydraConfig.get()
    plain = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    choices = {k: str(v) for k, v in hc.runtime.choices.items() if not k.startswith("hydra/") and v is not None}
    try:
        result = run_qa(plain, overrides=list(hc.overrides.task), choices=choices)
    except UserError as e:
        print(f"memorybench: error: {e.message}", file=sys.stderr)
        sys.exit(e.exit_code)
    print_summary(result)
    return result.metrics

"""The Hydra application behind `memorybench qa`: one call per composed job.

Hydra owns composition, `-m` sweeps and launchers (basic, submitit, ours); this task
function only runs the stage. A user error ends the job with one line, no traceback:

- a single run prints the line and exits with the error's code;
- a job of a sweep (`-m`, under any launcher) raises `QAJobFailed`, so the job is FAILED
  in Hydra's results while the other jobs still run; Hydra then names the failed job's
  overrides, prints the line and exits 1. A SystemExit would not do: the basic launcher
  would stop the sweep at that job, and under submitit the job's process would die
  without a result (submitit's UncompletedJobError and a traceback in the driver).

Hydra writes and prints some things itself, the overrides as typed among them (a key in a
URL's userinfo would be there): `multirun.yaml` in the sweep folder, each job's
`.hydra/*.yaml` when `hydra.output_subdir` is set, a failed job's overrides on stderr.
`ScrubHydraFiles` (a Hydra callback, named in conf/config.yaml) scrubs those files as soon as
they exist and once more when `qa` ends, and `qa_app` runs Hydra with stdout and stderr
passing `memorybench.secrets.scrub`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from memorybench import CONF_DIR
from memorybench.config import load_component_configs, recorded_choices
from memorybench.errors import UserError, error_line, report
from memorybench.fs import write_atomic
from memorybench.secrets import (
    CREDENTIAL_ENV,
    contains_secret,
    known_secrets,
    looks_like_key,
    register,
    scrub_yaml,
    scrubbed_stdio,
)


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


#: the files Hydra wrote in this process's sweeps and jobs (scrubbed again when `qa` ends)
_HYDRA_FILES: set[Path] = set()


def _scrub_hydra_files() -> None:
    """Rewrite each of Hydra's files that holds a credential, atomically (jobs of a sweep may race)."""
    for path in sorted(_HYDRA_FILES):
        if not path.is_file():
            continue
        text = path.read_text("utf-8")
        cleaned = scrub_yaml(text)  # a masked value stays YAML (quoted)
        if cleaned != text:
            write_atomic(path, cleaned)


def _launcher_env_secrets(config: DictConfig) -> list[str]:
    """The credentials a sweep hands its launcher's tasks as plain values
    (`hydra.launcher.env={OPENAI_API_KEY: ...}`): a credential variable's value, or any value
    shaped like a key. The Cloud Run launchers refuse them; this makes sure the sweep's
    `multirun.yaml`, which holds them resolved and as typed, is scrubbed of them first."""
    try:
        env = OmegaConf.select(config, "hydra.launcher.env", default=None)
        values = OmegaConf.to_container(env, resolve=True) if isinstance(env, DictConfig) else {}
    except Exception:  # noqa: BLE001 - a node that does not resolve here holds no value to register
        return []
    assert isinstance(values, dict)
    return [
        str(v)
        for k, v in values.items()
        if isinstance(v, str) and (CREDENTIAL_ENV.search(str(k).upper()) or looks_like_key(v) or contains_secret(v))
    ]


def _register(config: DictConfig) -> None:
    """The credentials of a job's config (its `hydra` node left out: it resolves only inside a
    job) and of its launcher's task environment (`_launcher_env_secrets`)."""
    register(
        known_secrets(
            {
                k: OmegaConf.to_container(v, resolve=True) if isinstance(v, DictConfig) else v
                for k, v in config.items()
                if k != "hydra"
            }
        )
    )
    register(_launcher_env_secrets(config))


class ScrubHydraFiles(Callback):
    """Scrubs the files Hydra writes with the overrides and the config in them."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # the sweeper writes multirun.yaml next; the driver scrubs it at the latest when qa ends
        _register(config)
        _HYDRA_FILES.add(Path(str(config.hydra.sweep.dir)) / "multirun.yaml")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        # before the job's first model call: its .hydra files and the sweep's multirun.yaml are written by now
        _register(config)
        hc = HydraConfig.get()
        if hc.mode == RunMode.MULTIRUN:
            _HYDRA_FILES.add(Path(str(hc.sweep.dir)) / "multirun.yaml")
        if hc.output_subdir is not None:
            folder = Path(str(hc.runtime.output_dir)) / str(hc.output_subdir)
            _HYDRA_FILES.update(folder / name for name in ("config.yaml", "hydra.yaml", "overrides.yaml"))
        _scrub_hydra_files()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        _scrub_hydra_files()


def qa_app() -> None:
    """`memorybench qa`: the Hydra app, with what Hydra prints and writes itself scrubbed."""
    with scrubbed_stdio():
        try:
            qa_job()
        finally:
            _scrub_hydra_files()  # a failed sweep never reaches on_multirun_end


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def qa_job(cfg: DictConfig) -> dict | None:
    from memorybench.stages.qa import print_summary, run_qa

    hc = HydraConfig.get()
    plain = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    choices = recorded_choices(hc.runtime.choices)
    try:
        try:
            result = run_qa(plain, overrides=list(hc.overrides.task), choices=choices)
        except Exception as e:  # noqa: BLE001 - a plugin reading an undeclared key: one line, else re-raised
            from memorybench.plugins import plugin_config_error

            named = plugin_config_error(e)
            if named is None:
                raise
            raise named from None
    except UserError as e:
        if hc.mode == RunMode.MULTIRUN:
            raise QAJobFailed(e.message, e.exit_code) from None
        sys.exit(report(e))
    print_summary(result)
    return result.metrics

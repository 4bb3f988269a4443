"""memory=hindsight: Hindsight (PyPI `hindsight-api-slim`, Vectorize's agent memory) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no Hindsight, which is not even installed in memorybench's venv, and no Hydra). The method
itself is `mb_hindsight._core.HindsightMemory`, registered lazily; its config keys are
`mb_hindsight._config.HindsightConfig`, imported when Hydra first reads them
(`SCHEMA_MODULES`). Hindsight runs in a venv of its own behind a process boundary
(`mb_hindsight._worker`, driven by `mb_hindsight._client`): see plugins/hindsight/README.md.

- `CONFIG_DIR`: `conf/memory/hindsight.yaml`, searched by Hydra after memorybench's conf/.
- `wrapped_versions()`, not `WRAPS`: the wrapped distributions are installed in the plugin's
  venv, where importlib.metadata in memorybench's cannot see them; their versions, as that venv
  has them (checked against `mb_hindsight/worker-requirements.txt`, a source file of this
  plugin), are run_meta.json's `plugins[].wraps` and enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
#: the module that stores the config schema node `memory/hindsight_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"hindsight": "mb_hindsight._config"}}
MEMORY.add("hindsight", "mb_hindsight._core:HindsightMemory")


def wrapped_versions() -> dict[str, str | None]:
    """The versions of the wrapped distributions in Hindsight's own venv (`plugins[].wraps`);
    one line naming the install command when that venv is missing or off its pins."""
    from mb_hindsight._core import PINNED, check_installed

    have = check_installed()["versions"]
    return {name: have.get(name) for name in PINNED}

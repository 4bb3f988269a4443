"""memory=cognee: Cognee (PyPI `cognee`, topoteretes' knowledge-graph memory) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only;
cognee itself lives in an environment of its own and never enters this process:
`mb_cognee._env`). The method is `mb_cognee._core.CogneeMemory`, registered lazily; its
config keys are `mb_cognee._config.CogneeConfig`, imported when Hydra first reads them.

- `CONFIG_DIR`: `conf/memory/cognee.yaml`, searched by Hydra after memorybench's conf/.
- `wrapped_versions()`, not `WRAPS`: the wrapped distributions live in the cognee
  environment, where importlib.metadata in memorybench's cannot see them; their versions as
  that environment's metadata says (`mb_cognee._env.versions`, read without starting it)
  are run_meta.json's `plugins[].wraps` and enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
SCHEMA_MODULES = {"memory": {"cognee": "mb_cognee._config"}}
MEMORY.add("cognee", "mb_cognee._core:CogneeMemory")


def wrapped_versions() -> dict[str, str | None]:
    """cognee's, its stores' and its clients' versions in the cognee environment (None: not
    there; `memory=cognee` itself stops on a missing or other cognee with one line first)."""
    from mb_cognee._env import WRAPPED, versions

    return versions(WRAPPED)

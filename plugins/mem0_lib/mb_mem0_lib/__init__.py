"""memory=mem0_lib: mem0's own library (PyPI `mem0ai`, its `Memory` class) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no mem0 import, and no Hydra). The method itself is `mb_mem0_lib._core.Mem0Lib`,
registered lazily and imported on first use; its config keys are
`mb_mem0_lib._config.Mem0LibConfig`, imported when Hydra first reads them
(`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/mem0_lib.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
#: mem0's own prompts, verbatim (prompts/library/mem0_lib/), searched after memorybench's prompts/
PROMPTS_DIR = Path(__file__).parent / "prompts"
WRAPS = ("mem0ai", "qdrant-client")
#: the module that stores the config schema node `memory/mem0_lib_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin (`show` and `verify` list the
#: scorers) imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"mem0_lib": "mb_mem0_lib._config"}}
MEMORY.add("mem0_lib", "mb_mem0_lib._core:Mem0Lib")

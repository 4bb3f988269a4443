"""memory=amem: A-MEM (Xu et al., "A-MEM: Agentic Memory for LLM Agents") inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no agentic_memory, chromadb or litellm import, and no Hydra). The method itself is
`mb_amem._core.AMem`, registered lazily; its config keys are `mb_amem._config.AMemConfig`,
imported when Hydra first reads them (`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/amem.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id. Two
  distributions provide A-MEM's module `agentic_memory` and exactly one is installed:
  `a-mem` (PyPI; a third party's fork of the authors' library, the default) or
  `agentic-memory` (the authors' own library, agiresearch/A-mem, from GitHub at a pinned
  commit); the other one is recorded as null, so the record says which code ran.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
#: the fork (PyPI), the authors' library (GitHub), and the two libraries the plugin itself drives
WRAPS = ("a-mem", "agentic-memory", "chromadb", "litellm")
#: the module that stores the config schema node `memory/amem_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin (`show` and `verify` list the
#: scorers) imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"amem": "mb_amem._config"}}
MEMORY.add("amem", "mb_amem._core:AMem")

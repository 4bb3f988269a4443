"""memory=langmem: LangMem (PyPI `langmem`, LangChain's long-term memory library) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only:
no langmem, langchain or langgraph import, and no Hydra). The method itself is
`mb_langmem._core.LangMemMemory`, registered lazily; its config keys are
`mb_langmem._config.LangMemConfig`, imported when Hydra first reads them (`SCHEMA_MODULES`).

- `CONFIG_DIR`: `conf/memory/langmem.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
#: langmem, the extractor it drives (trustcall), the graph runtime and store, and the LangChain clients
WRAPS = ("langmem", "trustcall", "langgraph", "langgraph-checkpoint", "langchain-core", "langchain-openai")
#: the module that stores the config schema node `memory/langmem_schema`, imported when Hydra
#: first reads it (a plan, a run): discovering the plugin (`show` and `verify` list the
#: scorers) imports nothing of memorybench's config
SCHEMA_MODULES = {"memory": {"langmem": "mb_langmem._config"}}
MEMORY.add("langmem", "mb_langmem._core:LangMemMemory")

"""memory=mem0_lib: mem0's own library (PyPI `mem0ai`, its `Memory` class) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (no mem0 import). The method
itself is `mb_mem0_lib._core.Mem0Lib`, registered lazily and imported on first use.

- `CONFIG_DIR`: `conf/memory/mem0_lib.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from memorybench.config import store_schema
from memorybench.memory import library_endpoint as _library_endpoint  # noqa: F401 - its record schema
from memorybench.memory._failures import WriterMemoryConfig
from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
#: mem0's own prompts, verbatim (prompts/library/mem0_lib/), searched after memorybench's prompts/
PROMPTS_DIR = Path(__file__).parent / "prompts"
WRAPS = ("mem0ai", "qdrant-client")


@dataclass
class Mem0LibConfig(WriterMemoryConfig):
    #: memories per speaker per question
    top_k: int = 10
    #: turns per Memory.add call
    batch_size: int = 2
    #: build only the first N sessions of a conversation (None: all)
    max_sessions: Optional[int] = None
    #: with writer.json_schema: the bounds of mem0's extraction reply, lowered to fit writer.max_tokens
    json_max_items: int = 8
    json_max_chars: int = 120


store_schema("memory", "mem0_lib", Mem0LibConfig)
MEMORY.add("mem0_lib", "mb_mem0_lib._core:Mem0Lib")

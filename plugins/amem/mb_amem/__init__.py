"""memory=amem: A-MEM (Xu et al., "A-MEM: Agentic Memory for LLM Agents") inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (no agentic_memory, chromadb
or litellm import). The method itself is `mb_amem._core.AMem`, registered lazily.

- `CONFIG_DIR`: `conf/memory/amem.yaml`, searched by Hydra after memorybench's conf/.
- `WRAPS`: the distributions this plugin wraps; run_meta.json records their installed
  versions beside the plugin's own (`plugins[].wraps`), and they enter the run id. Two
  distributions provide A-MEM's module `agentic_memory` and exactly one is installed:
  `a-mem` (PyPI; a third party's fork of the authors' library, the default) or
  `agentic-memory` (the authors' own library, agiresearch/A-mem, from GitHub at a pinned
  commit); the other one is recorded as null, so the record says which code ran.
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
#: the fork (PyPI), the authors' library (GitHub), and the two libraries the plugin itself drives
WRAPS = ("a-mem", "agentic-memory", "chromadb", "litellm")


@dataclass
class AMemConfig(WriterMemoryConfig):
    #: notes per question (the authors' LoCoMo evaluation: retrieve_k=10), each followed by the notes it links to
    top_k: int = 10
    #: build only the first N sessions of a conversation (None: all)
    max_sessions: Optional[int] = None
    #: build only the first N turns (notes) of a conversation (None: all); a smoke test
    max_notes: Optional[int] = None
    #: with writer.json_schema: the bounds of A-MEM's JSON replies, lowered to fit writer.max_tokens
    json_max_items: int = 6
    json_max_chars: int = 100


store_schema("memory", "amem", AMemConfig)
MEMORY.add("amem", "mb_amem._core:AMem")

"""memory=memos: its config keys, the schema node `memory/memos_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class MemosConfig(WriterMemoryConfig):
    #: MemOS's `top_k` for `GeneralTextMemory.search` (a run's `budget.top_k` replaces it)
    top_k: int = 10
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: with writer.json_schema: the bounds of the extraction reply (items per list,
    #: characters per string), lowered to fit writer.max_tokens
    json_max_items: int = 4
    json_max_chars: int = 200


store_schema("memory", "memos", MemosConfig)

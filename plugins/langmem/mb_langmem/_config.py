"""memory=langmem: its config keys, the schema node `memory/langmem_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class LangMemConfig(WriterMemoryConfig):
    #: memories per speaker per question (LangMem's `MemoryStoreManager.search` limit)
    top_k: int = 10
    #: turns per manager call (None: a whole session, LangMem's background use: one thread at a time)
    batch_size: Optional[int] = None
    #: LangMem's `query_limit`: the stored memories it finds and shows the model on each call
    query_limit: int = 5
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: with writer.json_schema: the bounds of the tool-call reply (calls per reply, characters
    #: per string), lowered to fit writer.max_tokens
    json_max_items: int = 4
    json_max_chars: int = 200


store_schema("memory", "langmem", LangMemConfig)

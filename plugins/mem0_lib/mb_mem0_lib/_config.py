"""memory=mem0_lib: its config keys, the schema node `memory/mem0_lib_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class Mem0LibConfig(WriterMemoryConfig):
    #: memories per speaker per question
    top_k: int = 10
    #: turns per Memory.add call
    batch_size: int = 2
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: with writer.json_schema: the bounds of mem0's extraction reply, lowered to fit writer.max_tokens
    json_max_items: int = 8
    json_max_chars: int = 120


store_schema("memory", "mem0_lib", Mem0LibConfig)

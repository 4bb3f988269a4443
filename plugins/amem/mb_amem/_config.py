"""memory=amem: its config keys, the schema node `memory/amem_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class AMemConfig(WriterMemoryConfig):
    #: notes per question (the authors' LoCoMo evaluation: retrieve_k=10), each followed by the notes it links to
    top_k: int = 10
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: build only the first N turns (notes) of a conversation (None: all); a smoke test
    max_notes: Optional[int] = None
    #: with writer.json_schema: the bounds of A-MEM's JSON replies, lowered to fit writer.max_tokens
    json_max_items: int = 6
    json_max_chars: int = 100


store_schema("memory", "amem", AMemConfig)

"""memory=cognee: its config keys, the schema node `memory/cognee_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class CogneeConfig(WriterMemoryConfig):
    #: cognee's search type whose retrieval context the reader sees (`cognee.search(...,
    #: only_context=True)`: no answer call); GRAPH_COMPLETION is cognee's graph retrieval
    search_type: str = "GRAPH_COMPLETION"
    #: cognee's `top_k` for that search
    top_k: int = 10
    #: tokens per chunk (cognify's `chunk_size`); None: cognee's own choice from the limits below
    chunk_size: Optional[int] = None
    #: the most tokens cognee sends in one text to embed (EMBEDDING_MAX_COMPLETION_TOKENS; cognee
    #: counts with tiktoken's cl100k_base); it also caps the chunk size. MiniLM reads 256 wordpieces
    embedding_max_tokens: int = 256
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: with writer.json_schema: the bounds of the structured replies (items per list,
    #: characters per string), lowered to fit writer.max_tokens
    json_max_items: int = 6
    json_max_chars: int = 120


store_schema("memory", "cognee", CogneeConfig)

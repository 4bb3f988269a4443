"""memory=letta: its config keys, the schema node `memory/letta_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from memorybench.config import MemoryConfig, store_schema


@dataclass
class LettaConfig(MemoryConfig):
    #: passages per question (Letta's archival search `top_k`; 5 is Letta's own page size for it,
    #: `RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE`)
    top_k: int = 5
    #: Letta's `embedding_chunk_size`: the tokens per passage its insert path cuts a session into
    chunk_size: int = 300
    #: build from only the first N sessions of each conversation (None: all): a smoke test
    max_sessions: Optional[int] = None
    #: the Letta server's Python (None: plugins/letta/.venv/bin/python, made by install.sh)
    server_python: Optional[str] = None
    #: seconds to wait for the server to answer /v1/health/ after it starts
    start_timeout_s: float = 600.0


store_schema("memory", "letta", LettaConfig)

"""memory=graphiti: its config keys, the schema node `memory/graphiti_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class GraphitiConfig(WriterMemoryConfig):
    #: the graph store: "falkordb" (FalkorDB-lite's server, plugins/graphiti/install.sh fetches it)
    #: or "kuzu" (embedded Kuzu, kept while it installs)
    backend: str = "falkordb"
    #: facts (entity edges) per question, best first (Graphiti's hybrid search, RRF)
    edge_limit: int = 20
    #: entities (nodes, with their summaries) per question
    node_limit: int = 10
    #: turns per Graphiti episode (1: each message is an episode, as Zep ingests a chat)
    turns_per_episode: int = 1
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: build only the first N episodes of a conversation (None: all); a smoke test
    max_episodes: Optional[int] = None
    #: with writer.json_schema: the bounds of Graphiti's structured replies, lowered to fit writer.max_tokens
    json_max_items: int = 6
    json_max_chars: int = 100


store_schema("memory", "graphiti", GraphitiConfig)

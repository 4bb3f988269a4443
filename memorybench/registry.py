"""One registry for every extension point: memory methods, answerers, chat providers,
embedders, judges, scorers and wave stages.

A component registers itself under the option name a user types (`memory=rag` finds
the `rag` entry of `MEMORY`), from its own module:

    from memorybench.registry import MEMORY

    @MEMORY.register("last_session")
    class LastSession: ...

An entry may also be a lazy `"module:attr"` string, imported on first use. Built-in
components live in the registry's own package (`memorybench.memory`, ...): the memory
methods and answerers are listed by name here (`builtins`, lazy entries, so a command
imports only the component it uses); for the other registries every public module of the
package is imported before the first lookup. Components of other installed packages come through the
`memorybench.plugins` entry-point group (`memorybench.plugins`): each entry names a
module that registers its components when imported (see docs/extending.md).
An unknown name is a one-line `UserError`: "unknown memory method 'ragg'. Did you
mean 'rag'? Choices: ...".
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memorybench.errors import UserError, did_you_mean

T = TypeVar("T")

__all__ = [
    "ANSWERERS",
    "CHAT_PROVIDERS",
    "EMBEDDERS",
    "JUDGES",
    "MEMORY",
    "SCORERS",
    "STAGES",
    "Registry",
    "all_registries",
    "load_plugins",
]


@dataclass(frozen=True)
class _Entry:
    target: Any
    #: the module that registered it (for run metadata and error messages)
    module: str


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
    """Named components of one kind; `package` holds the built-in ones."""

    def __init__(self, kind: str, option: str, package: str | None = None, builtins: dict[str, str] | None = None,
                 more_builtins: str | None = None) -> None:
        #: what a component is, in words ("memory method")
        self.kind = kind
        #: how a user selects one ("memory", "reader.provider")
        self.option = option
        self.package = package
        #: the built-in components of a package by name, as lazy "module:attr": their names are
        #: known without importing their modules (tests/test_registry_builtins.py keeps it whole)
        self.builtins = dict(builtins or {})
        #: "module:function" returning more built-in {name: "module:attr"} (the benchmarks' own judge
        #: protocols), asked by name through importlib when the registry is first read
        self.more_builtins = more_builtins
        self._entries: dict[str, _Entry] = {}
        self._discovered = False

    # -- adding ------------------------------------------------------------------------
    def add(self, name: str, target: T | str, *, module: str | None = None) -> None:
        """Register `target` (an object, or a lazy "module:attr") under `name`."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} needs a non-empty name, not {name!r}")
        owner = module or _owner(target)
        known = self._entries.get(name)
        if known is not None and known.module != owner:
            raise UserError(
                f"{self.kind} {name!r} is registered twice: by {known.module} and by {owner}; "
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
    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        if self.builtins:
            more: dict[str, str] = {}
            if self.more_builtins:
                module, _, function = self.more_builtins.partition(":")
                more = getattr(importlib.import_module(module), function)()
            # names known up front: each module is imported when its component is first got
            for name, target in {**self.builtins, **more}.items():
                if name not in self._entries:  # a module imported already registered its own
                    self._entries[name] = _Entry(target, target.split(":", 1)[0])
        elif self.package:
            # a package: every public module of it; a plain module: itself
            package = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
        load_plugins()

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def module_of(self, name: str) -> str:
        """The module that registers `name` (a lazy entry is not imported for it)."""
        self._discover()
        if name not in self._entries:
            self.get(name)  # the one-line error for an unknown name
        return self._entries[name].module

    def get(self, name: str) -> T:
        self._discover()
        entry = self._entries.get(str(name))
        if entry is None:
            raise UserError(f"unknown {self.kind} {str(name)!r} ({self.option}={name}). {did_you_mean(str(name), self._entries)}")
        if isinstance(entry.target, str):
            module, _, attr = entry.target.partition(":")
            obj: Any = importlib.import_module(module)
            for part in attr.split(".") if attr else ():
                obj = getattr(obj, part)
            self._entries[str(name)] = entry = _Entry(obj, entry.module)
        return entry.target

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"


#: `package` is where the built-in components register themselves
#: the built-in memory methods, answerers and embedders, named without importing their modules (a
#: plan or a `show` imports only the one it uses); a new one is added here and by its module
_MEMORY_BUILTINS = {
    "full_context": "memorybench.memory.full_context:FullContext",
    "graph": "memorybench.memory.graph:GraphMemory",
    "mem0": "memorybench.memory.mem0:Mem0",
    "mem0g": "memorybench.memory.mem0g:Mem0G",
    "notes_only": "memorybench.memory.agent_workspace:NotesOnly",
    "openai_memory": "memorybench.memory.openai_memory:OpenAIMemory",
    "rag": "memorybench.memory.rag:Rag",
    "raw_chunks": "memorybench.memory.raw_chunks:RawChunks",
    "session_summaries": "memorybench.memory.session_summaries:SessionSummaries",
    "workspace_files": "memorybench.memory.agent_workspace:WorkspaceFiles",
}
_ANSWERER_BUILTINS = {
    "codex": "memorybench.answer.agent.codex:CodexAnswerer",
    "imported": "memorybench.answer.imported:ImportedAnswerer",
    "reader": "memorybench.answer.reader:ReaderAnswerer",
}
_EMBEDDER_BUILTINS = {
    "hashing": "memorybench.embed._factory:_hashing",
    "openai": "memorybench.embed._factory:_openai",
    "openai_compatible": "memorybench.embed._factory:_openai",
    "sentence_transformers": "memorybench.embed._factory:_sentence_transformers",
}
MEMORY: Registry[Any] = Registry("memory method", "memory", package="memorybench.memory", builtins=_MEMORY_BUILTINS)
ANSWERERS: Registry[Any] = Registry("answerer", "answerer", package="memorybench.answer", builtins=_ANSWERER_BUILTINS)
EMBEDDERS: Registry[Any] = Registry("embedder provider", "embedder.provider", package="memorybench.embed._factory", builtins=_EMBEDDER_BUILTINS)
CHAT_PROVIDERS: Registry[Any] = Registry("chat provider", "reader.provider", package="memorybench.llm.endpoints")
#: the judge protocols by name: each module is imported when its protocol is first got
_JUDGE_BUILTINS = {
    "mem0": "memorybench.score.judge:Mem0Judge",
    "strict": "memorybench.score.judge:StrictJudge",
}
JUDGES: Registry[Any] = Registry("judge protocol", "judge.protocol", package="memorybench.score.judge", builtins=_JUDGE_BUILTINS,
                                 more_builtins="memorybench.benchmark:judge_protocols")
SCORERS: Registry[Any] = Registry("scorer", "scorer", package="memorybench.score.scorers")
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


def load_plugins() -> None:
    """Import every module the `memorybench.plugins` entry-point group names (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from memorybench.plugins import installed_plugins

    for plugin in installed_plugins():
        plugin.load()

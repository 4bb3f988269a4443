"""The memory-method extension point: a Protocol, a registry keyed by the option name.

A method builds what it stores for one conversation (`build`, once, before its
questions) and hands the reader a `{memory}` text per question (`for_question`). A
question-independent method returns the same text for every question of a
conversation; the pack stores that text once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.errors import UserError, did_you_mean


@dataclass(frozen=True)
class MemoryItem:
    """One stored unit (a turn line, a summary, a chunk, a fact) and where it came from."""

    item_id: str
    text: str
    #: source turn ids (`D1:3`) or sessions (`session_1`)
    sources: tuple[str, ...]


@dataclass
class BuiltMemory:
    sample_id: str
    items: list[MemoryItem]
    #: the reader's `{memory}` for every question, when the method is question-independent
    text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildContext:
    """What a method may use while building: the run config, the pack (to write its store
    under `memory/<method>/`), the writer endpoint when `writer` is configured, a cache."""

    cfg: DictConfig
    pack: Any
    cache_dir: Path
    writer: Any = None


class MemoryMethod(Protocol):
    name: ClassVar[str]
    #: True: retrieval per question; False: one text for every question of a conversation
    question_dependent: ClassVar[bool]
    #: True: built by software alone (cheap), so a run may build every conversation up front
    software_only: ClassVar[bool]

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory: ...

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str: ...


MemoryFactory = Callable[[DictConfig], MemoryMethod]
_REGISTRY: dict[str, MemoryFactory] = {}


def register_memory(name: str) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls

    return decorate


def memory_names() -> list[str]:
    return sorted(_REGISTRY)


def build_memory_method(cfg: DictConfig) -> MemoryMethod:
    """The method for `cfg.memory.name`, built from the whole run config."""
    name = str(cfg.memory.name)
    if name not in _REGISTRY:
        raise UserError(f"memory={name} has no implementation. {did_you_mean(name, _REGISTRY)}")
    return _REGISTRY[name](cfg)

"""The memory-method extension point: what a method is (`MemoryMethod`) and what it builds.

A method builds what it stores for one conversation (`build`, once, before its
questions) and hands the reader a `{memory}` text per question (`for_question`). A
question-independent method returns the same text for every question of a
conversation; the pack stores that text once.

A method registers itself under its option name with `@MEMORY.register("name")`
(`memorybench.registry`); `memorybench.memory.build_memory_method` finds it there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from memorybench.data.records import AskedQuestion, Conversation

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


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
    #: what `for_question` needs beyond the items (JSON-serializable; saved in the pack's
    #: `memory/<method>/<sample_id>.json`, so a resumed run never rebuilds it)
    state: dict[str, Any] = field(default_factory=dict)
    #: in-process objects derived from items and state (indexes, vectors); never written
    runtime: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass
class BuildContext:
    """What a method may use while building: the run config, the pack (to write its store
    under `memory/<method>/`), the writer (`memorybench.memory._writer.Writer`) when the
    method writes with a model, the embedder (`memorybench.embed.Embedder`) when it
    retrieves by vectors, and a cache folder. `open_build_context` makes one for a run;
    `close()` stops what it started (a local writer server)."""

    cfg: DictConfig
    pack: Any
    cache_dir: Path
    writer: Any = None
    embedder: Any = None
    #: what a method opened for the run and must close before the pack is finished (a
    #: wrapped library's database, whose bytes _SUCCESS records), newest first at close
    closers: list[Any] = field(default_factory=list)

    @property
    def models(self) -> list[Any]:
        """ModelIdentity of the writer and the embedder, for run_meta.json's `models`."""
        out = []
        for part in (self.writer, self.embedder):
            identity = getattr(part, "model_identity", None)
            if identity is not None:
                out.append(identity)
        return out

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()
        for part in (self.writer, self.embedder):
            if part is not None:
                part.close()


class MemoryMethod(Protocol):
    name: ClassVar[str]
    #: True: retrieval per question; False: one text for every question of a conversation
    question_dependent: ClassVar[bool]
    #: True: built by software alone (cheap), so a run may build every conversation up front
    software_only: ClassVar[bool]

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory: ...

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str: ...

    # Optional, read by `ManagedMethod`: `uses_writer` / `uses_embedder` (bool), `writer_templates`
    # (role -> template slots), `clone_of` (str), and `memory_tokens_bound(conversations) -> int | None`,
    # a high estimate of what the method hands the reader, for sizing a local reader.
    # Optional class methods, called with the run config before any model call:
    # `check(cfg)` raises a UserError for a setting the method cannot run with;
    # `writes_memory(cfg) -> bool` says whether a writer model writes its memory (default:
    # `uses_writer`); `run_notes(cfg) -> list[str]` adds lines to run_meta.json's notes;
    # `writer_calls(conversation, cfg) -> WriterCallEstimate` the writer calls its build of one
    # conversation makes, exact or expected with its basis (`memory._writer_calls`, `plan --estimate`).

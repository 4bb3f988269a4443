"""Memory methods, one module per `conf/memory` option, each registered by its option name
in `memorybench.registry.MEMORY` (every public module of this package is imported on the
first lookup, so a new method is one module plus its `conf/memory/NAME.yaml`).

| option | what the reader gets | model calls at build |
|---|---|---|
| full_context | every turn, one line each | none |
| session_summaries | `[Session N]` summaries: released, or written (`memory.source=writer`) | writer: one per session |
| raw_chunks | the top_k full-context chunks by BM25, in conversation order | none |
| rag | the top_k chunks by embedding cosine, best first, `<->` between | embedder |
| graph | our single-writer entity/relation graph, as text | writer: one per session |
| mem0 | local clone of Mem0: top_k memories per speaker, with times | writer: extract per pair, update per fact; embedder |
| mem0g | local clone of Mem0^g: mem0 plus relations around named entities | mem0's, plus graph and conflict calls |
| openai_memory | local clone of ChatGPT saved memories: a bounded fact list per speaker | writer: one per session and speaker |

`build_memory_method(cfg)` returns the configured method wrapped with the budget, build
cost records, the stored build and resume (`_managed.py`); `open_build_context` gives
it the writer and embedder it needs.
The names below are imported from their modules on first use (PEP 562): `verify` reads the
records of `_records` (a module of this package) without the build machinery (`_context`:
the config schemas, Hydra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.lazy import lazy_members

if TYPE_CHECKING:
    from memorybench.memory._context import open_build_context
    from memorybench.memory._managed import ManagedMethod, Retrieved, build_memory_method, memory_names
    from memorybench.memory._notes import memory_notes
    from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem, MemoryMethod

_WHERE = {
    "BuildContext": "memorybench.memory.base",
    "BuiltMemory": "memorybench.memory.base",
    "ManagedMethod": "memorybench.memory._managed",
    "MemoryItem": "memorybench.memory.base",
    "MemoryMethod": "memorybench.memory.base",
    "Retrieved": "memorybench.memory._managed",
    "build_memory_method": "memorybench.memory._managed",
    "memory_names": "memorybench.memory._managed",
    "memory_notes": "memorybench.memory._notes",
    "open_build_context": "memorybench.memory._context",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_members(__name__, _WHERE)

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
"""

from memorybench.memory._context import open_build_context
from memorybench.memory._managed import ManagedMethod, Retrieved, build_memory_method, memory_names
from memorybench.memory._notes import memory_notes
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem, MemoryMethod

__all__ = [
    "BuildContext",
    "BuiltMemory",
    "ManagedMethod",
    "MemoryItem",
    "MemoryMethod",
    "Retrieved",
    "build_memory_method",
    "memory_names",
    "memory_notes",
    "open_build_context",
]

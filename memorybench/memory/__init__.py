"""Memory methods, one module per `conf/memory` option, registered by name."""

from memorybench.memory import full_context, session_summaries  # noqa: F401  (register)
from memorybench.memory.base import BuiltMemory, MemoryItem, MemoryMethod, build_memory_method, memory_names

__all__ = ["BuiltMemory", "MemoryItem", "MemoryMethod", "build_memory_method", "memory_names"]

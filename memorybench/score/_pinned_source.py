"""Moved to `memorybench.data.pinned_source` (below `templates`, which renders LongMemEval's
reader prompt from it); this name stays for code written against it."""

from memorybench.data.pinned_source import function_node, pinned_function, string_constants

__all__ = ["function_node", "pinned_function", "string_constants"]

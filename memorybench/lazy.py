"""Package members imported on first use (PEP 562).

A package lists each public name with the module that defines it; importing the package
imports none of those modules, so a command pays only for the modules it uses (`verify`
reads the agent's records without the Codex harness, `show` the dataset records without the
resolver). `memorybench.data`, `memorybench.memory`, `memorybench.answer.agent` and
`memorybench.llm.local` do this.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_members"]


def lazy_members(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of `package`: `where` maps each member to its module;
    a member, once imported, is kept on the package (the next lookup is an attribute)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

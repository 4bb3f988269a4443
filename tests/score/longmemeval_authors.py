"""The authors' own LongMemEval code, imported from the pinned files for tests to compare with.

The pinned files import openai, backoff, tqdm, torch, transformers, tiktoken at the top; the
functions compared here use none of them, so those imports are stubbed for the import (the
real modules, where installed, are left alone in sys.modules afterwards). eval_utils.py calls
`np.asfarray`, which numpy 2 removed: its module gets numpy with `asfarray` put back as numpy
1.26 defined it (`asarray(a, dtype)`, a non-float dtype becoming float64).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memorybench.data.pins import pin_path

STUBBED = ("openai", "backoff", "tqdm", "transformers", "tiktoken")


def _stub(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    if name == "openai":
        module.RateLimitError = type("RateLimitError", (Exception,), {})  # type: ignore[attr-defined]
        module.APIError = type("APIError", (Exception,), {})  # type: ignore[attr-defined]
        module.OpenAI = object  # type: ignore[attr-defined]
    elif name == "backoff":
        module.on_exception = lambda *a, **k: lambda fn: fn  # type: ignore[attr-defined]
        module.expo = module.constant = None  # type: ignore[attr-defined]
    elif name == "tqdm":
        module.tqdm = lambda it, *a, **k: it  # type: ignore[attr-defined]
    elif name == "transformers":
        module.AutoTokenizer = object  # type: ignore[attr-defined]
    return module


@contextmanager
def _stubbed_imports() -> Iterator[None]:
    saved = {name: sys.modules.get(name) for name in STUBBED}
    try:
        for name in STUBBED:
            sys.modules[name] = _stub(name)
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load(pin) -> Any:
    """The pinned file `pin` as a module (imported under a private name, never kept in sys.modules)."""
    path: Path = pin_path(pin)
    spec = importlib.util.spec_from_file_location(f"_longmemeval_authors_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    with _stubbed_imports():
        spec.loader.exec_module(module)
    return module


class _Numpy126:
    """numpy with numpy 1.26's `asfarray` (removed in numpy 2.0)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def asfarray(a: Any, dtype: Any = np.float64) -> np.ndarray:
        if not np.issubdtype(dtype, np.inexact):
            dtype = np.float64
        return np.asarray(a, dtype=dtype)


def load_eval_utils(pin) -> Any:
    module = load(pin)
    module.np = _Numpy126()
    return module


class ScriptedTokenizer:
    """run_generation's `tokenizer` for the openai backend: only `len(encode(...))` is read."""

    def encode(self, text: str, allowed_special: Any = None) -> list[int]:
        return [0] * len(text)

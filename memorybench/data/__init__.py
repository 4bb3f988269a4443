"""Benchmark records, loaders and pinned files (LoCoMo; LongMemEval).

The names below are imported from their modules on first use (PEP 562): a command that
only reads `memorybench.data.benchmarks` (`show`, `verify`) does not import the dataset
resolver (`source`: OmegaConf, the pins' downloaders)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.lazy import lazy_members

if TYPE_CHECKING:
    from memorybench.data.locomo import file_sha256, iter_questions, load_locomo
    from memorybench.data.records import AskedQuestion, Conversation, Question, Session, Turn
    from memorybench.data.source import load_dataset, resolve_dataset

_WHERE = {
    "AskedQuestion": "memorybench.data.records",
    "Conversation": "memorybench.data.records",
    "Question": "memorybench.data.records",
    "Session": "memorybench.data.records",
    "Turn": "memorybench.data.records",
    "file_sha256": "memorybench.data.locomo",
    "iter_questions": "memorybench.data.locomo",
    "load_dataset": "memorybench.data.source",
    "load_locomo": "memorybench.data.locomo",
    "resolve_dataset": "memorybench.data.source",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_members(__name__, _WHERE)

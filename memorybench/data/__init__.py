"""Benchmark records, loaders and pinned files (LoCoMo; LongMemEval)."""

from memorybench.data.locomo import file_sha256, iter_questions, load_locomo
from memorybench.data.records import AskedQuestion, Conversation, Question, Session, Turn
from memorybench.data.source import load_dataset, resolve_dataset

__all__ = [
    "AskedQuestion",
    "Conversation",
    "Question",
    "Session",
    "Turn",
    "file_sha256",
    "iter_questions",
    "load_dataset",
    "load_locomo",
    "resolve_dataset",
]

"""Records, dataset files and pinned files: what every benchmark's data is made of.

Which benchmark a dataset belongs to, and which file a run reads, is `memorybench.benchmark`
(`data.source`). The names below are imported from their modules on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.lazy import lazy_members

if TYPE_CHECKING:
    from memorybench.data.files import file_sha256, iter_questions
    from memorybench.data.records import AskedQuestion, Conversation, Question, Session, Turn

_WHERE = {
    "AskedQuestion": "memorybench.data.records",
    "Conversation": "memorybench.data.records",
    "Question": "memorybench.data.records",
    "Session": "memorybench.data.records",
    "Turn": "memorybench.data.records",
    "file_sha256": "memorybench.data.files",
    "iter_questions": "memorybench.data.files",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_members(__name__, _WHERE)

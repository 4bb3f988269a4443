"""`memory.max_sessions`: build a memory from the first N sessions of each conversation.

One setting, one meaning for every method a writer builds, our clones (graph, mem0,
mem0g, openai_memory, session_summaries) and the wrapped libraries (mem0_lib, graphiti,
amem) alike: the sessions of the conversation fed to the writer. `ManagedMethod.build`
hands the method the conversation cut to its first N sessions, so no method applies it
itself and a clone and a real system given the same N read the same turns
(`experiment=clone_vs_real`'s offline smoke). Null (the default) builds every session.

It is a smoke setting: questions about later sessions are asked over a memory that never
saw them. The run id holds it only when set (`run_id.identity_config`: a config from
before the setting keeps its id), run_meta.json's notes say it, and each built
conversation's metadata records `prefix` (the N, the sessions built, the sessions there
are).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from memorybench.data.records import Conversation
from memorybench.errors import UserError

#: the memory key, in the run id only when set (`memorybench.run_id`)
KEY = "max_sessions"


def max_sessions(memory: Any) -> int | None:
    """`memory.max_sessions` of a memory config node: None (every session) or a whole
    number of at least 1, else one UserError line."""
    value = memory.get(KEY) if hasattr(memory, "get") else None
    if value is None:
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if isinstance(value, bool) or n < 1 or n != value:
        raise UserError(
            f"memory.max_sessions={value!r} must be a whole number of at least 1 (the first N sessions of each "
            "conversation fed to the writer), or null for every session; e.g. memory.max_sessions=1 for a smoke test"
        )
    return n


def session_prefix(conversation: Conversation, n: int | None) -> Conversation:
    """`conversation` with only its first `n` sessions (and their released summaries);
    itself when `n` is None or holds every session."""
    if n is None or n >= len(conversation.sessions):
        return conversation
    sessions = conversation.sessions[:n]
    kept = {s.index for s in sessions}
    summaries = {i: text for i, text in conversation.session_summaries.items() if i in kept}
    return dataclasses.replace(conversation, sessions=sessions, session_summaries=summaries)


def prefix_record(n: int, built_from: Conversation, whole: Conversation) -> dict[str, int]:
    """The built memory's `prefix` metadata: the setting, the sessions built, the sessions there are."""
    return {"max_sessions": n, "sessions_built": len(built_from.sessions), "sessions": len(whole.sessions)}


def prefix_note(memory: Any) -> list[str]:
    """run_meta.json's note for a run built from a prefix (none without one)."""
    n = max_sessions(memory)
    if n is None:
        return []
    return [
        f"memory.max_sessions={n}: each memory was built from only the first {n} session(s) of its conversation "
        "(a smoke test; questions about later sessions are asked over a memory that never saw them)"
    ]

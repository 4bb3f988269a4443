"""How many writer tasks a memory may lose: `memory.max_failed_share`, the tally, the stop.

A writer task whose reply and repair both fail is skipped and journaled in
`memory/writer/failures.jsonl` (`Writer.record_failure`). A few holes are the price of a
small writer; a writer that fails most tasks (a wrong endpoint, a model that never returns
JSON) builds an empty memory, and a run over it would score the reader on nothing while
every file looks finished. So qa stops before any question is answered over a memory once
more than `max_failed_share` of the run's writer tasks so far failed.

The tally sums the pack's `memory/build_cost.jsonl` rows (one per committed conversation;
a task is a first call, so tasks = calls - repairs), so the stop, metrics.json's `memory`
entry and `memorybench verify` count the same thing, and a resumed run counts the
conversations it loaded from the pack as well as those it built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from memorybench.config import MemoryConfig
from memorybench.errors import UserError
from memorybench.pack.writer_tally import WriterTally, writer_tally

__all__ = ["WriterMemoryConfig", "WriterTally", "check_failed_share", "failed_share_limit", "writer_tally"]

#: the bound when a writer method's config does not set one
DEFAULT_MAX_FAILED_SHARE = 0.1


@dataclass
class WriterMemoryConfig(MemoryConfig):
    """What every memory a writer model writes has (graph, mem0, mem0g, openai_memory,
    session_summaries); a method with keys of its own subclasses this one."""

    #: the largest share (0..1) of failed writer tasks a run goes on with; above it qa stops
    #: before the reader sees that memory (1.0: never stop)
    max_failed_share: float = DEFAULT_MAX_FAILED_SHARE
    #: build from only the first N sessions of each conversation (None: all of them): the
    #: sessions fed to the writer, the same setting and meaning for our clones and the
    #: wrapped libraries (`memorybench.memory._prefix`); in the run id only when set
    max_sessions: Optional[int] = None


def failed_share_limit(memory: Any) -> float | None:
    """`memory.max_failed_share` of a memory config node (None: the method has no such key);
    a UserError for a value outside 0..1."""
    value = memory.get("max_failed_share") if hasattr(memory, "get") else None
    if value is None:
        return None
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise UserError(
            f"memory.max_failed_share={value!r} is not a share between 0 and 1; "
            f"set e.g. memory.max_failed_share={DEFAULT_MAX_FAILED_SHARE} (1.0: never stop on writer failures)"
        )
    return share


def check_failed_share(tally: WriterTally | None, limit: float | None, *, method: str, failures_file: str) -> None:
    """A UserError, before any question is answered over the memory, when more than `limit`
    of the writer tasks failed."""
    if tally is None or limit is None or tally.tasks == 0 or tally.share <= limit:
        return
    raise UserError(
        f"memory={method}: {tally.failed} of {tally.tasks} writer tasks failed ({tally.share:.0%}, more than "
        f"memory.max_failed_share={limit:g}), so the run stopped before answering over that memory; the failed tasks "
        f"are in {failures_file}. Check the writer endpoint and model (writer.base_url, writer.model; "
        "writer.json_schema=true for a server that constrains JSON by grammar), or raise memory.max_failed_share "
        "(1.0 never stops); what was built so far stays in the pack"
    )

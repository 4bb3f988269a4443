"""How many writer tasks of a pack's memory failed: the one count behind qa's stop, metrics.json's
`memory` entry and `memorybench verify` (`memorybench.memory._failures` holds the bound).

The tally sums the pack's `memory/build_cost.jsonl` rows (one per committed conversation;
a task is a first call, so tasks = calls - repairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memorybench.pack import layout

__all__ = ["WriterTally", "library_reported", "writer_tally"]


@dataclass(frozen=True)
class WriterTally:
    """Writer tasks of the committed conversations, and how many of them failed."""

    tasks: int
    failed: int

    @property
    def share(self) -> float:
        return self.failed / self.tasks if self.tasks else 0.0

    def metrics(self) -> dict[str, Any]:
        """metrics.json's `memory` entry."""
        return {"tasks": self.tasks, "failed": self.failed, "failures_file": layout.WRITER_FAILURES}


def writer_tally(build_costs: Iterable[Mapping[str, Any]]) -> WriterTally | None:
    """The tally over `memory/build_cost.jsonl` rows; None when no row had a writer (a
    method that writes no memory with a model)."""
    tasks = failed = 0
    seen = False
    for row in build_costs:
        writer = row.get("writer")
        if not writer:
            continue
        seen = True
        tasks += int(writer.get("calls", 0)) - int(writer.get("repairs", 0))
        failed += int(writer.get("failures", 0))
    return WriterTally(tasks, failed) if seen else None


def library_reported(reports: Iterable[Mapping[str, Any]], file: str) -> dict[str, Any]:
    """metrics.json's `memory.library_reported`, from a wrapped library's report rows
    (`layout.library_reports`): how many it made, and how many counted a writer task as failed
    (those are inside `failed` already)."""
    rows = list(reports)
    return {"reports": len(rows), "failed_tasks": sum(1 for r in rows if r.get("counted")), "file": file}

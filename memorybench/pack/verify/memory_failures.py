"""A pack whose writer gave up on some tasks: whole, but its memory has holes.

A writer task that failed twice is skipped (`memory/writer/failures.jsonl`), and qa goes
on while their share is within `memory.max_failed_share`. The pack is then consistent, so
no other check objects; this one says how many tasks failed (a warning: the scores were
earned over a memory that lacks those inputs).
"""

from __future__ import annotations


from memorybench.pack.writer_tally import writer_tally
from memorybench.pack import layout
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings
from memorybench.records import load_json

__all__ = ["check_writer_failures"]

CODE = "memory.writer_failures"
OVER_LIMIT = "memory.writer_failures_over_limit"


def check_writer_failures(ctx: Context, out: Findings) -> None:
    """`memory.writer_failures` naming the failures file and the count, from the build costs
    (the same tally as metrics.json's `memory` and the stop in qa)."""
    path = ctx.root / layout.BUILD_COST
    if layout.BUILD_COST in ctx.bad_files or not path.is_file():
        return
    try:
        rows = [load_json(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        tally = writer_tally(r for r in rows if isinstance(r, dict))
    except (ValueError, TypeError, AttributeError):
        return  # a row that does not parse or match is the json/schema checks' finding
    if tally is None or not tally.failed:
        return
    reported = _library_reported(ctx)
    said = f" ({reported} of them reported by the wrapped library itself)" if reported else ""
    limit = _limit(ctx)
    if limit is not None and tally.share > limit:
        out.add(
            OVER_LIMIT,
            layout.WRITER_FAILURES,
            f"{tally.failed} of {tally.tasks} writer tasks failed{said}, {tally.share:.0%}, more than the run's "
            f"memory.max_failed_share={limit:g}; rerun with a writer that parses, or set memory.max_failed_share "
            "to say how many holes the memory may have",
        )
        return
    out.add(
        CODE,
        layout.WRITER_FAILURES,
        f"{tally.failed} of {tally.tasks} writer tasks failed{said} and were skipped, so the memory lacks what they "
        "would have written (each row names its inputs); the scores are over that memory",
    )


def _limit(ctx: Context) -> float | None:
    """The run's `memory.max_failed_share` (None: the method has none, or it does not read as a share)."""
    try:
        value = ctx.cfg_get("memory", "max_failed_share")
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _library_reported(ctx: Context) -> int:
    """Writer tasks counted failed on the wrapped library's own report (`library_report.v1` rows)."""
    method = ctx.memory_name
    path = ctx.root / layout.library_reports(str(method))
    if method is None or not path.is_file():
        return 0
    try:
        return sum(1 for line in path.read_text("utf-8").splitlines() if line.strip() and load_json(line).get("counted"))
    except (ValueError, AttributeError):
        return 0  # a row that does not parse is the json check's finding

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
    out.add(
        CODE,
        layout.WRITER_FAILURES,
        f"{tally.failed} of {tally.tasks} writer tasks failed and were skipped, so the memory lacks what they would "
        "have written (each row names its inputs); the scores are over that memory",
    )

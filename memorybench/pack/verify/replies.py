"""A pack whose reader stored answers it did not get whole: empty replies and cut answers.

A reply with no text (`content` null or empty, tool calls only) is asked twice and then
stored as an empty answer with its `problem` named in the trace; an answer longer than
`reader.max_answer_chars` is stored cut, its full length in `answer_cut_from_chars`. The
pack is consistent either way, so this is a warning: the scores count those answers as
given, and a reader of the scores must know how many there were.
"""

from __future__ import annotations

from memorybench.pack import layout
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings

__all__ = ["check_replies"]

EMPTY = "reply.empty"
CUT = "reply.cut"


def check_replies(ctx: Context, out: Findings) -> None:
    rows = ctx.rows.get(layout.READER_TRACES, [])
    empty = [line for line, row in rows if (row.get("response") or {}).get("problem")]
    cut = [line for line, row in rows if row.get("answer_cut_from_chars")]
    if empty:
        out.add(
            EMPTY,
            f"{layout.READER_TRACES}:{empty[0]}",
            f"{len(empty)} of {len(rows)} reader replies had no text twice and are stored as empty answers "
            "(each trace's response.problem says why); they score as given",
        )
    if cut:
        out.add(
            CUT,
            f"{layout.READER_TRACES}:{cut[0]}",
            f"{len(cut)} of {len(rows)} answers were longer than reader.max_answer_chars and are stored cut "
            "(answer_cut_from_chars holds each one's length)",
        )

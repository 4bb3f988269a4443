"""The key of each journal of a pack, and whether a pack's journals are those of one writer.

One writer, and a resume that drops cut-off work (`RunPack.resume`), never write a
journal row's key twice; two writers at once did (issue 19: lineage rows of every item
twice, a verdict per (question, pass) twice). So a key twice is how a pack tells it was
written by two processes, whatever its `_SUCCESS` says: `RunPack.resume` refuses to build
on such rows, `qa` does not call such a pack complete (`inconsistency`), the autorater does
not call such a judge folder complete, and verify reports each as `duplicate.row`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorybench.pack import layout

if TYPE_CHECKING:  # a type only: verify reads the keys without the storage layer
    from memorybench.pack.reader import PackReader

__all__ = ["JOURNAL_KEYS", "JUDGE_JOURNAL_KEYS", "Repeat", "inconsistency", "repeated_rows"]

#: the fields that name one row of each journal of a pack
JOURNAL_KEYS: dict[str, tuple[str, ...]] = {
    layout.PREDICTIONS: ("question_id",),
    layout.READER_TRACES: ("question_id",),
    layout.MEMORY_MANIFEST: ("sample_id",),
    layout.LINEAGE: ("sample_id", "item_id"),
    # the agent's: one codex process per question, or per conversation's ingest pass
    # (whose rows have no question_id)
    layout.AGENT_TRACES: ("phase", "sample_id", "question_id"),
    # one row per model request the gateway forwarded, numbered within its process
    layout.AGENT_REQUESTS: ("phase", "sample_id", "question_id", "index"),
    layout.AGENT_EVENTS: ("phase", "sample_id", "question_id", "seq"),
    layout.AGENT_TRAJECTORY: ("phase", "sample_id", "question_id", "step"),
    layout.AGENT_NOTES: ("phase", "sample_id", "question_id"),
    layout.AGENT_RECALL: ("question_id",),
}
#: the same for the journals of a judge's folder (`autorater/<judge id>/`): one verdict,
#: and at most one trace, per (question, pass)
JUDGE_JOURNAL_KEYS: dict[str, tuple[str, ...]] = {
    layout.JUDGE_VERDICTS: ("question_id", "pass"),
    # a question judged by several calls (BEAM) has a trace per call, each naming its `part`
    layout.JUDGE_TRACES: ("question_id", "pass", "part"),
}
#: what qa reads before it calls a finished pack complete: the journals it commits by and
#: the traces of its answers (the agent's event and step journals, the largest, are left
#: to verify)
_TRUSTED_JOURNALS = (layout.PREDICTIONS, layout.MEMORY_MANIFEST, layout.LINEAGE, layout.READER_TRACES, layout.AGENT_TRACES)


@dataclass(frozen=True)
class Repeat:
    """A journal row whose key an earlier row of the same journal has."""

    line: int
    first_line: int
    key: tuple[Any, ...]
    fields: tuple[str, ...]

    def describe(self) -> str:
        named = ", ".join(f"{f}={v}" for f, v in zip(self.fields, self.key) if v is not None)
        return f"line {self.line} repeats the row of line {self.first_line} ({named})"


def repeated_rows(rows: Iterable[tuple[int, Any]], fields: tuple[str, ...]) -> Iterator[Repeat]:
    """Each (line, row) whose key (`fields`) an earlier row has; a row that is not an object is skipped."""
    first: dict[tuple[Any, ...], int] = {}
    for line, row in rows:
        if not isinstance(row, dict):
            continue
        key = tuple(_hashable(row.get(f)) for f in fields)
        if key in first:
            yield Repeat(line, first[key], key, fields)
        else:
            first[key] = line


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def inconsistency(pack: PackReader) -> str | None:
    """Why a finished pack's own journals are not those of one writer, or None: a key twice
    in a journal qa commits by (`_TRUSTED_JOURNALS`), predictions other than run_meta's
    question count, or lineage rows other than the item count of their manifest row.
    `qa` trusts `_SUCCESS` only when this is None."""
    for relpath in _TRUSTED_JOURNALS:
        if pack.exists(relpath):
            for repeat in repeated_rows(enumerate(pack.rows(relpath), start=1), JOURNAL_KEYS[relpath]):
                return f"{relpath} {repeat.describe()}"
    if pack.exists(layout.RUN_META):
        count = pack.meta().question_count
        rows = sum(1 for _ in pack.rows(layout.PREDICTIONS))
        if rows != count:
            return f"{layout.PREDICTIONS} has {rows} rows, run_meta.json question_count={count}"
    lineage: dict[Any, int] = {}
    for row in pack.rows(layout.LINEAGE):
        lineage[row.get("sample_id")] = lineage.get(row.get("sample_id"), 0) + 1
    for row in pack.rows(layout.MEMORY_MANIFEST):
        got = lineage.get(row.get("sample_id"), 0)
        if row.get("item_count") != got:
            return (
                f"{layout.MEMORY_MANIFEST} gives {row.get('sample_id')} {row.get('item_count')} items, "
                f"{layout.LINEAGE} has {got} rows for it"
            )
    return None

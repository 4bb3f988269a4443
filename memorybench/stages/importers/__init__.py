"""Readers of other projects' released LoCoMo results, one module per format, and what they share.

`memorybench import FILE --format NAME` (`memorybench.stages.import_results`) reads the
files with the format's reader (`FORMATS`), maps the rows onto the dataset's question ids
(`map_rows`), writes a pack, and prints the reproduction table (`build_reproduction`).

    mem0_evals        mem0's evals.py output (scores, judge labels; category 5 dropped)
    mem0_search       mem0's search output, evals.py's input (answers only)
    locomo_task_eval  LoCoMo's task_eval output (`<model>_prediction`, `<model>_f1`) and its _stats.json
    zep               Zep's grades (answers and judge labels) and its responses (durations)
    core              CORE's per-conversation evaluation files (answers, judge labels, stated J)
    memos_eval        MemOS/EverMemOS evaluation output (answers judged several times: each run, their
                      mean (the file's accuracy), the majority vote as the row label)
"""

from __future__ import annotations

from memorybench.errors import UserError, did_you_mean
from memorybench.stages.importers._base import JudgeLabels, Released, ReleasedFormat, ReleasedRow, Stated
from memorybench.stages.importers._mapping import Mapped, map_rows, same_gold
from memorybench.stages.importers._reproduction import build_reproduction, format_reproduction, locomo_equal
from memorybench.stages.importers.core import Core
from memorybench.stages.importers.locomo import LocomoTaskEval
from memorybench.stages.importers.mem0 import Mem0Evals, Mem0Search
from memorybench.stages.importers.memos import MemosEval
from memorybench.stages.importers.zep import Zep

__all__ = [
    "FORMATS",
    "JudgeLabels",
    "Mapped",
    "Released",
    "ReleasedFormat",
    "ReleasedRow",
    "Stated",
    "build_reproduction",
    "format_reproduction",
    "locomo_equal",
    "map_rows",
    "released_format",
    "same_gold",
]

#: every format `--format` takes, by name
FORMATS: dict[str, type[ReleasedFormat]] = {f.name: f for f in (Mem0Evals, Mem0Search, LocomoTaskEval, Zep, Core, MemosEval)}  # type: ignore[misc]


def released_format(name: str) -> ReleasedFormat:
    """The reader of format `name`, or a one-line UserError listing the formats."""
    if name not in FORMATS:
        raise UserError(f"unknown --format {name!r}. {did_you_mean(name, FORMATS)}")
    return FORMATS[name]()

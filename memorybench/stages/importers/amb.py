"""AMB's per-question output (vectorize-io/agent-memory-benchmark), the part every benchmark's AMB format shares.

AMB's runner.py writes one JSON object per run, `outputs/<dataset>/<system>/<mode>/<split>.json`
(released gzipped, `.json.gz`): its `EvalSummary` (models.py) with the run's settings and figures,
`dataset`, `split`, `category`, `memory_provider`, `run_name`, `mode`, `oracle`, `total_queries`,
`correct`, `accuracy`, `ingestion_time_ms`, `ingested_docs`, `description`, `answer_llm`,
`judge_llm`, `avg_retrieve_time_ms`, `avg_context_tokens`, and `results`, one `QueryResult` per
question: `query_id`, `query`, `answer`, `reasoning`, `context`, `context_tokens`,
`retrieve_time_ms`, `gold_answers`, `correct` (its judge's label; false without a judge call where
the memory returned no context), `judge_reason`, `meta` (the dataset's own fields), `category_axes`,
and in files written after its BEAM scoring, `score`. runner.py's `_save` makes the run's figures
from the rows it writes: `correct` their trues, `total_queries` their count, `accuracy` the one
over the other, and the two averages `round(mean, 1)` over the rows that have the field.

Here: the checks that hold whatever the dataset (`read_summary`: a JSON object with a `results`
list, of the dataset asked for; `results`: each an object with a text `query_id` and `query`, an
`answer` text or null, a boolean `correct`; `check_ids`: some row, no query id twice), each a
one-line `UserError` naming the file, the row and the key; `stated`, the settings and figures as
written; `runner_figures`, runner.py's arithmetic over the rows. A benchmark's AMB importer reads
its own fields (the query id's parts, `meta`, `gold_answers`, `score`) row by row as `results`
yields them, so a file's first fault is the one reported, whichever check finds it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.stages.importers._base import need, released_json

__all__ = ["STATED", "AmbResult", "check_ids", "read_summary", "results", "runner_figures", "stated"]

#: the EvalSummary fields beside `results` that an import keeps: the run's settings and figures
STATED = (
    "dataset",
    "split",
    "category",
    "memory_provider",
    "run_name",
    "mode",
    "oracle",
    "total_queries",
    "correct",
    "accuracy",
    "answer_llm",
    "judge_llm",
    "description",
    "ingestion_time_ms",
    "ingested_docs",
    "avg_retrieve_time_ms",
    "avg_context_tokens",
)


@dataclass(frozen=True)
class AmbResult:
    """One `results[]` object whose shared fields are checked; `item` is the object as written."""

    #: its position in `results` (0-based)
    index: int
    #: how errors name it: `<file>: results[<n>]`
    at: str
    query_id: str
    query: str
    #: the answer as written (null stays None)
    answer: str | None
    correct: bool
    item: Mapping[str, Any]


def read_summary(path: Path, fmt: str, *, dataset: str, title: str, layout: str) -> Mapping[str, Any]:
    """The EvalSummary object of an AMB output file of `dataset` (AMB's name: "beam", "locomo"),
    or one line: not an object with a `results` list, or another dataset's (`title` and `layout`
    say which file to pass instead). A file without `dataset` is taken as `dataset`'s."""
    data = released_json(path, f"released {title}")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        found = type(data).__name__ if not isinstance(data, dict) else "an object without a 'results' list"
        raise UserError(
            f"{path} is not an {fmt} file: expected AMB's output object with 'results' (runner.py's EvalSummary), "
            f"found {found}; check --format (memorybench import --help lists the formats and their shapes)"
        )
    if data.get("dataset", dataset) != dataset:
        raise UserError(f"{path} is AMB's output for dataset {data.get('dataset')!r}, not {title}; import {title}'s ({layout})")
    return data


def results(path: Path, data: Mapping[str, Any], fmt: str) -> Iterator[AmbResult]:
    """Each result of `data`, its shared fields checked as it is reached (a lazy walk: the caller's
    own checks of row n run before row n+1 is looked at)."""
    for n, item in enumerate(data["results"]):
        at = f"{path}: results[{n}]"
        if not isinstance(item, dict):
            raise UserError(f"{at}: a result must be a JSON object, got {type(item).__name__}")
        query_id = need(item, "query_id", str, at, fmt)
        query = need(item, "query", str, at, fmt)
        answer = item.get("answer")
        if answer is not None and not isinstance(answer, str):
            raise UserError(f"{at}: key 'answer' must be text or null, got {type(answer).__name__}")
        correct = need(item, "correct", bool, at, fmt)
        yield AmbResult(n, at, query_id, query, answer, correct, item)


def check_ids(path: Path, ids: Sequence[str]) -> None:
    """One line for a file without a result, or with a query id twice (runner.py writes each once)."""
    if not ids:
        raise UserError(f"{path} holds no result; nothing to import")
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise UserError(f"{path}: query_id {twice} occurs twice; runner.py writes each query once: pass the file as released")


def stated(data: Mapping[str, Any]) -> dict[str, Any]:
    """The run's settings and figures as the file writes them (`STATED`, those it has)."""
    return {k: data.get(k) for k in STATED if k in data}


def runner_figures(items: Sequence[Mapping[str, Any]]) -> dict[str, float | int | None]:
    """runner.py `_save`'s figures over the result objects as written: `total_queries`, `correct`,
    `accuracy` (correct / total_queries), `avg_retrieve_time_ms` and `avg_context_tokens`
    (`round(sum / n, 1)` over the rows whose field is not null; None where none is)."""
    total = len(items)
    correct = sum(1 for r in items if r.get("correct"))

    def average(key: str) -> float | None:
        # a number as runner.py writes one; anything else is left out, so the figure says it differs
        values = [v for r in items if isinstance(v := r.get(key), (int, float)) and not isinstance(v, bool)]
        return round(sum(values) / len(values), 1) if values else None

    return {
        "total_queries": total,
        "correct": correct,
        "accuracy": correct / total if total else 0.0,
        "avg_retrieve_time_ms": average("retrieve_time_ms"),
        "avg_context_tokens": average("context_tokens"),
    }

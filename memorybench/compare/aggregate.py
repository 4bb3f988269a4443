"""The `aggregate` stage: finished packs -> `collected/examples.parquet` and run tables.

No model call; nothing is written into a pack. Only finished packs (those with
`_SUCCESS`) are read; an unfinished one is listed and left out.

    collected/examples.parquet   one row per (run, question): choices, prediction, gold,
                                 every per-row score, J per judge, tokens, latency, cost,
                                 pack location
    collected/runs.parquet       one row per run: overall and per-category scores, J per
                                 judge, build / answer / judge / total cost, tokens,
                                 latency percentiles, an agent run's gateway counts
                                 (agent/comparison.json), its retrieval budget (context
                                 tokens, retrieval latency, whether it held: memory/
                                 budget.json), hashes, and its identity config
    collected/runs.csv           the same table as CSV

Both tables have explicit pyarrow schemas (`EXAMPLES_SCHEMA`, `RUNS_SCHEMA`) whose
metadata carries `memorybench.schema` (`examples.v3`, `runs.v5`): a reader checks it
before anything else, as with every pack record. Beside their fixed columns they have:

* per finished judge, columns named `<name>/<judge id>` (`j_score/mem0-gpt-4o-mini-1a2b3c4d`,
  `j_mean/...`): J is always keyed by the judge that gave it, never two judges in one
  column (`JUDGE_EXAMPLE_COLUMNS`, `JUDGE_RUN_COLUMNS`); `judges` lists a run's judges;
* in the runs table, for another benchmark's packs (LongMemEval), its lexical diagnostic by its
  own name, overall, task-averaged and per question type (`diagnostic_stemmed_token_f1`,
  `diagnostic_stemmed_token_f1_temporal-reasoning`, ...: `benchmark_run_columns`), where its
  row leaves the LoCoMo-named `locomo_f1*` columns null (its types are not LoCoMo's categories);
  a LoCoMo row has these columns null and its own as ever;
* and per judge of such packs, its figure by the benchmark's name from the judge's `longmemeval`
  block (`longmemeval_accuracy/<judge id>`, `_sd`, `_task_avg`, `_abstention`, `_<type>`:
  `benchmark_judge_columns`), with that judge's J-named `j_mean`, `j_sd`, `j_cat1..4` null on
  its row (not Mem0's J, not LoCoMo's categories); `j_passes`, `judge_model`, ... stay;
* in the runs table, one string column per leaf of the run's identity config
  (`cfg.memory.top_k`, `cfg.reader.seed`, `cfg.dataset.sha256`, ...: what its run id
  hashes, `memorybench.compare.summary.identity_columns`), so that `report` can tell
  conditions and replicates apart and never pools two configs.

Where a row comes from:

* `predictions.csv` (written by `rescore`): question, prediction, gold, the three local
  scores (`locomo_f1`, `exact_match`, `token_f1`), in `predictions.jsonl` order. Gold is
  `str(answer)`; a row without an answer (category 5) has a null gold.
* `predictions.jsonl`: `index`, `memory_sha256`, `reader_payload_sha256`.
* `reader/traces.jsonl`: prompt/completion/cached tokens, latency, cost, retries, cache
  hit, model answered, requests (its HTTP attempts; joined on `question_id`). A pack
  answered by an agent has `agent/traces.jsonl` instead: its answer-phase rows give
  input/output/cached tokens and requests (as the gateway counted them, `agent_trace.v3`;
  Codex's own usage before the gateway), wall time as latency, the model, the outcome
  (`agent_status`) and the token budget (no cost, retries or cache flag).
* `autorater/<judge id>/autorater_verdicts.jsonl` of every finished judge (its
  `_SUCCESS` exists): `j_verdict/<id>` (pass 1's status), `j_score/<id>` (mean score over
  the passes with a parsed label), `j_passes/<id>` (how many), `j_agree/<id>` (all parsed
  passes gave the same score; null with fewer than two), `j_failed/<id>` (passes whose
  reply had no readable label or whose call failed); `mem0_f1`, `mem0_bleu1` (lexical: the
  same under every judge). Never required: null without an autorater.
* `memorybench.compare.blame` (the pack's files plus the dataset's evidence ids, joined
  after answering): `blame` (`not_stored`, `not_retrieved`, `ignored`, `wrong_judged`,
  `correct`), `blame_basis` (`judge <judge id>` or `locomo_f1>=0.5`: what decided
  correctness), `evidence_stored`, `evidence_given`, `answer_used_evidence` (null where
  unknown).

Every file is read through `PackReader`, so a source may be a local folder or a `gs://`
prefix; the per-run numbers are `memorybench.compare.summary.run_summary`, shared with
MLflow and `compare`.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import sys
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from memorybench.errors import OneLineParser, UserError
from memorybench.fs import atomic_path
from memorybench.pack import layout
from memorybench.pack.lock import folder_lock
from memorybench.pack.success import compare, parse_success, write_success
from memorybench.pack.reader import PackReader
from memorybench.compare.collected_schemas import (
    EXAMPLES_SCHEMA,
    JUDGE_EXAMPLE_COLUMNS,
    JUDGE_RUN_COLUMNS,
    RUNS_SCHEMA,
    benchmark_judge_values,
    benchmark_run_values,
    with_benchmarks,
    with_judges,
)
from memorybench.benchmark import benchmark_of_pack
from memorybench.compare.blame import blame_columns
from memorybench.compare.summary import (
    CATEGORIES,
    CHOICE_GROUPS,
    CONFIG_PREFIX,
    JUDGE_SEPARATOR,
    judge_key,
    run_keys,
    run_summary,
)
from memorybench.score.scorers import LEXICAL

__all__ = [
    "CATEGORIES",
    "CHOICE_GROUPS",
    "EXAMPLES_SCHEMA",
    "JUDGE_EXAMPLE_COLUMNS",
    "JUDGE_RUN_COLUMNS",
    "RUNS_SCHEMA",
    "AggregateResult",
    "PackScan",
    "aggregate",
    "aggregate_main",
    "all_judges",
    "examples_table",
    "pack_examples",
    "run_summary",
    "runs_schema",
    "runs_table",
    "scan_packs",
    "with_judges",
]

COLLECTED_DIR = "collected"
EXAMPLES_FILE = "examples.parquet"
RUNS_FILE = "runs.parquet"
RUNS_CSV = "runs.csv"
ROW_GROUP_ROWS = 64 * 1024
#: a pack's location: a local folder, or a `gs://` URI for a pack in a bucket
Location = Path | str


# -- finding packs --------------------------------------------------------------------
@dataclass
class PackScan:
    """Finished packs (sorted) and the unfinished ones that were left out."""

    finished: list[Location] = field(default_factory=list)
    unfinished: list[Location] = field(default_factory=list)


PACK_MARKERS = (layout.RUN_META, layout.PREDICTIONS)
#: where packs lie under a source that is not itself a pack: an experiment's runs folder,
#: an experiment folder, a packs root
_PACK_DEPTHS = ("*", "runs/*", "*/runs/*")


def _is_pack_folder(path: Path) -> bool:
    return any((path / marker).is_file() for marker in PACK_MARKERS)


def _at_pack_depth(relpath: str) -> bool:
    """`relpath` has one of the shapes of `_PACK_DEPTHS` (`x`, `runs/x`, `name/runs/x`)."""
    parts = relpath.split("/")
    return len(parts) == 1 or (len(parts) == 2 and parts[0] == "runs") or (len(parts) == 3 and parts[1] == "runs")


def _scan_bucket(source: str) -> tuple[set[str], set[str]]:
    """(finished, unfinished) pack URIs under a gs:// source, from one listing."""
    from memorybench.storage import open_storage

    storage = open_storage(source)
    files = set(storage.list(""))
    folders = {posixpath.dirname(f) for f in files if posixpath.basename(f) in PACK_MARKERS}
    folders = {""} if "" in folders else {d for d in folders if _at_pack_depth(d)}
    if not folders:
        raise UserError(f"no pack under {source}: expected <root>/<name>/runs/<run_id>/_SUCCESS; pass a packs root or pack URIs")
    finished = {storage.uri(d) for d in folders if posixpath.join(d, layout.SUCCESS).lstrip("/") in files}
    return finished, {storage.uri(d) for d in folders} - finished


def scan_packs(sources: Iterable[str | os.PathLike[str]]) -> PackScan:
    """Pack folders, or roots scanned for `*/runs/*/_SUCCESS` (also `runs/*` and `*`).

    A source may be a pack (`<packs>/<name>/runs/<run_id>`), an experiment folder
    (`<packs>/<name>`), its `runs` folder, or the packs root; a local folder or a
    `gs://` prefix. Unfinished packs (no `_SUCCESS`) are reported in `unfinished`, never read.
    """
    finished: set[Location] = set()
    unfinished: set[Location] = set()
    for source in sources:
        if os.fspath(source).startswith("gs://"):
            done, not_done = _scan_bucket(os.fspath(source))
            finished |= done
            unfinished |= not_done
            continue
        root = Path(source).expanduser().resolve()
        if not root.is_dir():
            raise UserError(f"{source} is not a folder; pass pack folders or a packs root (paths.packs)")
        if _is_pack_folder(root):
            (finished if (root / layout.SUCCESS).is_file() else unfinished).add(root)
            continue
        found = False
        for pattern in _PACK_DEPTHS:
            for candidate in root.glob(pattern):
                if candidate.is_dir() and _is_pack_folder(candidate):
                    found = True
                    (finished if (candidate / layout.SUCCESS).is_file() else unfinished).add(candidate)
        if not found:
            raise UserError(
                f"no pack under {root}: expected <root>/<name>/runs/<run_id>/_SUCCESS; pass paths.packs or pack folders"
            )
    return PackScan(sorted(finished, key=str), sorted(unfinished - finished, key=str))


def experiment_packs(packs: Sequence[Location], experiment: str | None) -> list[Location]:
    """The packs of one experiment name (all of them for None)."""
    if experiment is None:
        return list(packs)
    return [p for p in packs if PackReader.open(p).meta().name == experiment]


# what is read from the pack's JSONL files (everything else in a line is ignored)
_PREDICTION_FIELDS = pa.schema(
    [
        ("question_id", pa.string()),
        ("index", pa.int64()),
        ("memory_sha256", pa.string()),
        ("reader_payload_sha256", pa.string()),
    ]
)
_TRACE_FIELDS = pa.schema(
    [
        ("question_id", pa.string()),
        (
            "response",
            pa.struct(
                [
                    ("model_answered", pa.string()),
                    (
                        "usage",
                        pa.struct(
                            [("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("cached_tokens", pa.int64())]
                        ),
                    ),
                    ("latency_s", pa.float64()),
                    ("cost_usd", pa.float64()),
                    ("cache_hit", pa.bool_()),
                    ("attempts", pa.list_(pa.struct([("n", pa.int64())]))),
                ]
            ),
        ),
    ]
)
#: an agent answerer (Codex) writes agent/traces.jsonl instead: one row per process, answer phase per question
_AGENT_USAGE = pa.struct([("input_tokens", pa.int64()), ("cached_input_tokens", pa.int64()), ("output_tokens", pa.int64())])
_AGENT_TRACE_FIELDS = pa.schema(
    [
        ("question_id", pa.string()),
        ("phase", pa.string()),
        ("status", pa.string()),
        ("model", pa.string()),
        ("wall_s", pa.float64()),
        ("usage", _AGENT_USAGE),
        #: agent_trace.v3: the gateway's count (absent before it)
        (
            "gateway",
            pa.struct(
                [("requests", pa.int64()), ("usage", _AGENT_USAGE), ("budget", pa.struct([("max_total_tokens", pa.int64())]))]
            ),
        ),
    ]
)
_VERDICT_FIELDS = pa.schema(
    [
        ("question_id", pa.string()),
        ("pass", pa.int64()),
        ("status", pa.string()),
        ("score", pa.float64()),
        ("mem0_f1", pa.float64()),
        ("mem0_bleu1", pa.float64()),
    ]
)
_CSV_TYPES = {
    "question_id": pa.string(),
    "sample_id": pa.string(),
    "category": pa.int8(),
    "category_name": pa.string(),
    "question": pa.string(),
    "prediction": pa.string(),
    "gold": pa.string(),
    "adversarial_answer": pa.string(),
    LEXICAL: pa.float64(),
    "exact_match": pa.float64(),
    "token_f1": pa.float64(),
}


def _read_predictions_csv(data: bytes) -> pa.Table:
    """predictions.csv's columns, its text cells as the exact text (`score.rows.csv_text`: the
    spreadsheet guard taken off), so examples.parquet holds what the rows hold."""
    table = pa_csv.read_csv(
        io.BytesIO(data),
        read_options=pa_csv.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
        parse_options=pa_csv.ParseOptions(newlines_in_values=True),
        convert_options=pa_csv.ConvertOptions(
            column_types=_CSV_TYPES, strings_can_be_null=False, include_columns=list(_CSV_TYPES)
        ),
    )
    for i, f in enumerate(table.schema):
        if pa.types.is_string(f.type):
            table = table.set_column(
                i, f, pc.replace_substring_regex(table.column(i), pattern="^'('*[=+\\-@\t\r])", replacement="\\1")
            )
    return table


def _spreadsheet_safe(table: pa.Table) -> pa.Table:
    """`table` with each text cell guarded as `score.rows.csv_cell` guards one, for runs.csv only
    (runs.parquet keeps the exact text): a cell a spreadsheet would run as a formula gets a leading `'`."""
    for i, f in enumerate(table.schema):
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            table = table.set_column(
                i, f, pc.replace_substring_regex(table.column(i), pattern="^('*[=+\\-@\t\r])", replacement="'\\1")
            )
    return table


# -- one pack -------------------------------------------------------------------------
def _empty_to_null(array: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(array, ""), pa.scalar(None, pa.string()), array)


def _aligned(keys: pa.Array, table: pa.Table, key: str = "question_id") -> pa.Table:
    """`table`'s rows in the order of `keys` (null rows where a key is missing)."""
    if table.num_rows == len(keys) and table.column(key).equals(pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys):
        return table
    positions = pc.index_in(keys, value_set=table.column(key).combine_chunks())
    return table.take(positions)


def _verdict_columns(pack: PackReader, judge_id: str, qids: pa.Array) -> dict[str, pa.Array]:
    """One judge's per-question columns (`JUDGE_EXAMPLE_COLUMNS`), and Mem0's lexical scores
    (the same under every judge: no judge decides them)."""
    verdicts = pack.table(pack.judge_path(judge_id, layout.JUDGE_VERDICTS), _VERDICT_FIELDS)
    parsed = verdicts.filter(pc.is_in(verdicts.column("status"), value_set=pa.array(["CORRECT", "WRONG"])))
    grouped = parsed.group_by("question_id").aggregate(
        [
            ("score", "mean"),
            ("score", "count"),
            ("score", "min"),
            ("score", "max"),
        ]
    )
    first = verdicts.filter(pc.equal(verdicts.column("pass"), 1))
    failed = (
        verdicts.filter(pc.equal(verdicts.column("status"), "FAILED")).group_by("question_id").aggregate([("status", "count")])
    )
    lexical = (
        verdicts.filter(pc.is_valid(verdicts.column("mem0_f1")))
        .group_by("question_id")
        .aggregate([("mem0_f1", "max"), ("mem0_bleu1", "max")])
    )
    g = _aligned(qids, grouped)
    f = _aligned(qids, first)
    lx = _aligned(qids, lexical)
    fl = _aligned(qids, failed)
    count = g.column("score_count")
    agree = pc.if_else(
        pc.greater_equal(count, 2), pc.equal(g.column("score_min"), g.column("score_max")), pa.scalar(None, pa.bool_())
    )
    return {
        judge_key("j_verdict", judge_id): f.column("status"),
        judge_key("j_score", judge_id): g.column("score_mean"),
        judge_key("j_passes", judge_id): pc.cast(pc.fill_null(count, 0), pa.int16()),
        judge_key("j_agree", judge_id): agree,
        judge_key("j_failed", judge_id): pc.cast(pc.fill_null(fl.column("status_count"), 0), pa.int16()),
        "mem0_f1": lx.column("mem0_f1_max"),
        "mem0_bleu1": lx.column("mem0_bleu1_max"),
    }


def _usage_columns(pack: PackReader, qids: pa.Array) -> dict[str, Any]:
    """Tokens, latency, cost per question: reader traces, else an agent's answer traces, else nulls."""
    traces = pack.table(layout.READER_TRACES, _TRACE_FIELDS)
    if traces.num_rows:
        traces = _aligned(qids, traces)
        response = traces.column("response").combine_chunks()
        usage = pc.struct_field(response, "usage")
        attempts = pc.list_value_length(pc.struct_field(response, "attempts"))
        return {
            "prompt_tokens": pc.struct_field(usage, "prompt_tokens"),
            "completion_tokens": pc.struct_field(usage, "completion_tokens"),
            "cached_tokens": pc.struct_field(usage, "cached_tokens"),
            "latency_s": pc.struct_field(response, "latency_s"),
            "cost_usd": pc.struct_field(response, "cost_usd"),
            "retries": pc.max_element_wise(pc.subtract(attempts, 1), 0),
            "cache_hit": pc.struct_field(response, "cache_hit"),
            "requests": pc.fill_null(attempts, 0),
            "model_answered": pc.struct_field(response, "model_answered"),
        }
    agent = pack.table(layout.AGENT_TRACES, _AGENT_TRACE_FIELDS)
    if agent.num_rows:
        agent = _aligned(qids, agent.filter(pc.equal(agent.column("phase"), "answer")))
        cli = agent.column("usage").combine_chunks()
        gateway = agent.column("gateway").combine_chunks()
        counted = pc.struct_field(gateway, "usage")
        gated = pc.is_valid(pc.struct_field(gateway, "requests"))

        def tokens(key: str) -> pa.Array:
            # the gateway's count where it ran: it sees every request, also those of a turn the
            # CLI reports no usage for (a budget stop); Codex's own turn.completed before it
            return pc.if_else(gated, pc.struct_field(counted, key), pc.struct_field(cli, key))

        return {
            "prompt_tokens": tokens("input_tokens"),
            "completion_tokens": tokens("output_tokens"),
            "cached_tokens": tokens("cached_input_tokens"),
            "latency_s": agent.column("wall_s"),
            "requests": pc.struct_field(gateway, "requests"),
            "agent_status": agent.column("status"),
            "token_budget": pc.struct_field(pc.struct_field(gateway, "budget"), "max_total_tokens"),
            "model_answered": agent.column("model"),
        }
    return {}


def pack_examples(location: str | os.PathLike[str] | PackReader, judges: Iterable[str] | None = None) -> pa.Table:
    """The examples rows of one finished pack: `EXAMPLES_SCHEMA` plus the columns of each of
    `judges` (default: the pack's own), null for a judge this pack does not have."""
    pack = PackReader.open(location)
    own = pack.judges()
    schema = with_judges(EXAMPLES_SCHEMA, JUDGE_EXAMPLE_COLUMNS, own if judges is None else judges)
    meta = pack.meta()
    pack.predictions()  # every row through its strict schema first: the columnar read below would coerce "2" to 2
    csv = _read_predictions_csv(pack.read_bytes(layout.PREDICTIONS_CSV))
    n = csv.num_rows
    qids = csv.column("question_id").combine_chunks()
    rows = _aligned(qids, pack.table(layout.PREDICTIONS, _PREDICTION_FIELDS))
    usage_columns = _usage_columns(pack, qids)
    columns: dict[str, Any] = {
        name: pa.array([value] * n, type=schema.field(name).type) for name, value in run_keys(pack, meta).items()
    }
    columns.update(
        {
            "question_id": qids,
            "sample_id": csv.column("sample_id"),
            "index": rows.column("index"),
            "category": csv.column("category"),
            "category_name": csv.column("category_name"),
            "question": csv.column("question"),
            "prediction": csv.column("prediction"),
            "gold": _empty_to_null(csv.column("gold")),
            "adversarial_answer": _empty_to_null(csv.column("adversarial_answer")),
            LEXICAL: csv.column(LEXICAL),
            "exact_match": csv.column("exact_match"),
            "token_f1": csv.column("token_f1"),
            **usage_columns,
            "memory_sha256": rows.column("memory_sha256"),
            "reader_payload_sha256": rows.column("reader_payload_sha256"),
            **blame_columns(pack, qids.to_pylist()),
            "pack": pa.array([pack.uri()] * n, type=pa.string()),
        }
    )
    for judge_id in reversed(own):  # the first judge's lexical scores stand (they are equal)
        columns.update(_verdict_columns(pack, judge_id, qids))
    for f in schema:
        if f.name not in columns:
            columns[f.name] = pa.nulls(n, f.type)
    arrays = [pc.cast(columns[f.name], f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _imap(function: Any, packs: Sequence[Location]) -> Iterator[Any]:
    """`function` over packs in threads (pyarrow's readers release the GIL), results in order,
    at most a few results ahead of the consumer so memory stays bounded by a few packs."""
    workers = min(len(packs), os.cpu_count() or 1, 8)
    if workers < 2:
        yield from (function(p) for p in packs)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque[Future[Any]] = deque()
        for pack in packs:
            pending.append(pool.submit(function, pack))
            if len(pending) > 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def all_judges(packs: Sequence[Location]) -> list[str]:
    """Every finished judge id of `packs`, sorted: the judge columns of the tables."""
    return sorted({judge for found in _imap(lambda p: PackReader.open(p).judges(), list(packs)) for judge in found})


def examples_table(packs: Sequence[str | os.PathLike[str]]) -> pa.Table:
    """Every pack's examples in one in-memory table (`aggregate` streams to Parquet instead)."""
    judges = all_judges(list(packs))
    tables = list(_imap(lambda p: pack_examples(p, judges), list(packs)))
    return pa.concat_tables(tables) if tables else with_judges(EXAMPLES_SCHEMA, JUDGE_EXAMPLE_COLUMNS, judges).empty_table()


def _judge_column(key: str) -> bool:
    name, _, judge = key.partition(JUDGE_SEPARATOR)
    return bool(judge) and name in JUDGE_RUN_COLUMNS


def _row_judges(row: dict[str, Any]) -> list[str]:
    return [judge for judge in (row["judges"] or "").split(",") if judge]


def _runs_row(location: str | os.PathLike[str] | PackReader) -> tuple[dict[str, Any], str]:
    pack = PackReader.open(location)
    summary = run_summary(pack)
    bench = benchmark_of_pack(pack.meta())
    # another benchmark's row: its own columns, LoCoMo's and J's null (`benchmark_run_values`,
    # `benchmark_judge_values`); a LoCoMo row gets none of them
    own = benchmark_run_values(bench, pack.metrics().blocks().get(LEXICAL) or {})
    for judge_id in _row_judges(summary):
        own.update(benchmark_judge_values(bench, judge_id, pack.autorater_metrics(judge_id)))
    judged = [k for k in summary if _judge_column(k)]
    names = [
        *RUNS_SCHEMA.names,
        *judged,
        *(k for k in own if k not in RUNS_SCHEMA.names and k not in judged),
        *(k for k in summary if k.startswith(CONFIG_PREFIX)),
    ]
    return {name: own[name] if name in own else summary[name] for name in names}, bench.name


def runs_row(location: str | os.PathLike[str] | PackReader) -> dict[str, Any]:
    """One row of the runs table: the run summary's `RUNS_SCHEMA` columns, its judges'
    columns (`j_mean/<judge id>`, ...), another benchmark's own columns (its judges' figures
    among them), then its identity (`cfg.*`) columns."""
    return _runs_row(location)[0]


def runs_schema(
    config_columns: Iterable[str],
    judges: Iterable[str] = (),
    benchmarks: Iterable[str] = (),
    benchmark_judges: Iterable[tuple[str, str]] = (),
) -> pa.Schema:
    """`RUNS_SCHEMA`, the columns of every judge, those of every other benchmark and of its judges
    (`benchmark_judges`: (benchmark name, judge id) pairs; `with_benchmarks`), then one string column
    per identity leaf (`cfg.memory.top_k`, ...), sorted: the union over the packs, null where a pack has none."""
    schema = with_benchmarks(with_judges(RUNS_SCHEMA, JUDGE_RUN_COLUMNS, judges), benchmarks, benchmark_judges)
    columns = [pa.field(name, pa.string()) for name in sorted(set(config_columns))]
    return pa.schema([*schema, *columns], metadata=schema.metadata)


def runs_table(packs: Sequence[str | os.PathLike[str]]) -> pa.Table:
    made = [_runs_row(p) for p in packs]
    rows = [row for row, _ in made]
    judges = {judge for row in rows for judge in _row_judges(row)}
    schema = runs_schema(
        {key for row in rows for key in row if key.startswith(CONFIG_PREFIX)},
        judges,
        {b for _, b in made},
        {(b, judge) for row, b in made for judge in _row_judges(row)},
    )
    return pa.Table.from_pylist(rows, schema=schema)


@dataclass
class AggregateResult:
    out_dir: Path
    examples: Path
    runs: Path
    runs_csv: Path
    packs: list[Location]
    rows: int
    unfinished: list[Location]


def _write_parquet(table: pa.Table, part: Path) -> None:
    pq.write_table(table, part, compression="zstd")


def _write_examples(packs: Sequence[Location], tmp: Path) -> int:
    """Stream every pack's rows into one Parquet file (`tmp`, renamed by the caller); return the row count.

    Packs are read a few at a time and written in row groups of about `ROW_GROUP_ROWS`,
    so memory grows with a row group, not with the design.
    """
    rows = 0
    buffered: list[pa.Table] = []
    judges = all_judges(packs)
    schema = with_judges(EXAMPLES_SCHEMA, JUDGE_EXAMPLE_COLUMNS, judges)
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for table in _imap(lambda p: pack_examples(p, judges), packs):
            buffered.append(table)
            rows += table.num_rows
            if sum(t.num_rows for t in buffered) >= ROW_GROUP_ROWS:
                writer.write_table(pa.concat_tables(buffered))
                buffered = []
        if buffered or rows == 0:
            writer.write_table(pa.concat_tables(buffered) if buffered else schema.empty_table())
    return rows


def aggregate(
    sources: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str], *, experiment: str | None = None
) -> AggregateResult:
    """Read every finished pack of `sources`; write `<out_dir>/collected/{examples,runs}.parquet` and `runs.csv`."""
    scan = scan_packs(sources)
    packs = experiment_packs(scan.finished, experiment)
    if not packs:
        what = f" of experiment {experiment!r}" if experiment else ""
        raise UserError(f"no finished pack{what} in {', '.join(map(str, sources))}: a pack is finished when it has _SUCCESS")
    out = Path(out_dir).expanduser().resolve() / COLLECTED_DIR
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out, "aggregate output"):  # one writer: two would interleave their generations
        # One generation: the three files are written aside, then renamed together, and
        # `_SUCCESS` (their hashes) is written last; it is removed first, so a folder that
        # a kill left between two generations has none (`collected_generation`).
        (out / layout.SUCCESS).unlink(missing_ok=True)
        with contextlib.ExitStack() as parts_written:  # renamed (fsynced) together when all are written, else removed
            parts = {name: parts_written.enter_context(atomic_path(out / name)) for name in (EXAMPLES_FILE, RUNS_FILE, RUNS_CSV)}
            rows = _write_examples(packs, parts[EXAMPLES_FILE])
            runs = runs_table(packs)
            _write_parquet(runs, parts[RUNS_FILE])
            pa_csv.write_csv(_spreadsheet_safe(runs), parts[RUNS_CSV])
        write_success(out)
    return AggregateResult(out, out / EXAMPLES_FILE, out / RUNS_FILE, out / RUNS_CSV, packs, rows, scan.unfinished)


def collected_generation(out: Path) -> str | None:
    """Why `out` (a `collected/` folder) is not one whole generation of `aggregate`, or None
    when its files are the ones its `_SUCCESS` records."""
    if not (out / layout.SUCCESS).is_file():
        return f"{out} has no _SUCCESS: an aggregate was interrupted there; run `memorybench aggregate` again"
    try:
        record = parse_success((out / layout.SUCCESS).read_bytes())
    except ValueError:
        record = None
    if record is None:
        return f"{out}/_SUCCESS is not a success record; run `memorybench aggregate` again"
    diff = compare(out, record)
    if diff:
        files = ", ".join((*diff.changed, *diff.missing, *diff.unclosed))
        return f"{out} holds files of two aggregate runs ({files} differ from its _SUCCESS); run `memorybench aggregate` again"
    return None


def default_out_dir(sources: Sequence[str | os.PathLike[str]]) -> Path:
    """Beside the packs: the packs root's parent (where `mlflow.db` goes too)."""
    if os.fspath(sources[0]).startswith("gs://"):
        raise UserError(f"{os.fspath(sources[0])} is in a bucket; pass --out DIR, the local folder that receives the output")
    first = Path(sources[0]).expanduser().resolve()
    if _is_pack_folder(first):  # <packs>/<name>/runs/<run_id>
        return first.parents[3]
    if (first / "runs").is_dir():  # <packs>/<name>
        return first.parents[1]
    if first.name == "runs":
        return first.parents[2]
    return first.parent


def aggregate_main(argv: Sequence[str]) -> int:
    """`memorybench aggregate PACKS... [--out DIR] [--experiment NAME]`."""
    parser = OneLineParser(
        prog="memorybench aggregate",
        description="Collect finished packs into collected/examples.parquet and collected/runs.parquet (+ runs.csv).",
    )
    parser.add_argument(
        "packs", nargs="+", help="pack folders, or roots scanned for <name>/runs/<run_id>/_SUCCESS (e.g. outputs/packs)"
    )
    parser.add_argument("--out", help="folder that receives collected/ (default: the packs root's parent)")
    parser.add_argument("--experiment", help="keep only packs of this experiment name")
    ns = parser.parse_args(list(argv))
    result = aggregate(ns.packs, ns.out or default_out_dir(ns.packs), experiment=ns.experiment)
    if result.unfinished:
        print(f"left out {len(result.unfinished)} unfinished pack(s) (no _SUCCESS)", file=sys.stderr)
    print(f"{len(result.packs)} pack(s), {result.rows} rows")
    print(f"examples: {result.examples}")
    print(f"runs:     {result.runs}  ({result.runs_csv.name})")
    return 0

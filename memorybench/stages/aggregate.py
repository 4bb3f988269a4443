"""The `aggregate` stage: finished packs -> `collected/examples.parquet` and run tables.

No model call; nothing is written into a pack. Only finished packs (those with
`_SUCCESS`) are read; an unfinished one is listed and left out.

    collected/examples.parquet   one row per (run, question): choices, prediction, gold,
                                 every per-row score, tokens, latency, cost, pack location
    collected/runs.parquet       one row per run: overall and per-category scores, J,
                                 tokens, cost, latency percentiles, hashes
    collected/runs.csv           the same table as CSV

Both tables have explicit pyarrow schemas (`EXAMPLES_SCHEMA`, `RUNS_SCHEMA`) whose
metadata carries `memorybench.schema` (`examples.v1`, `runs.v1`): a reader checks it
before anything else, as with every pack record.

Where a row comes from:

* `predictions.csv` (written by `rescore`): question, prediction, gold, the three local
  scores (`locomo_f1`, `exact_match`, `token_f1`), in `predictions.jsonl` order. Gold is
  `str(answer)`; a row without an answer (category 5) has a null gold.
* `predictions.jsonl`: `index`, `memory_sha256`, `reader_payload_sha256`.
* `reader/traces.jsonl`: prompt/completion/cached tokens, latency, cost, retries, cache
  hit, model answered (joined on `question_id`). A pack answered by an agent has
  `agent/traces.jsonl` instead: its answer-phase rows give input/output/cached tokens,
  wall time as latency and the model (no cost, retries or cache flag).
* `autorater/autorater_verdicts.jsonl`, when `autorater/autorater_metrics.json` exists:
  `j_verdict` (pass 1's status), `j_score` (mean score over the passes with a parsed
  label), `j_passes` (how many), `j_agree` (all parsed passes gave the same score; null
  with fewer than two), `j_failed` (passes whose reply had no readable label or whose
  call failed), `mem0_f1`, `mem0_bleu1`. Never required: null without an autorater.

Every file is read through `read_pack_file` (a local folder today; a `gs://` storage
backend replaces that one function).
"""

from __future__ import annotations

import io
import json
import os
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
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from memorybench.errors import OneLineParser, UserError
from memorybench.pack.run_pack import SUCCESS

__all__ = [
    "CHOICE_GROUPS",
    "EXAMPLES_SCHEMA",
    "RUNS_SCHEMA",
    "AggregateResult",
    "PackScan",
    "aggregate",
    "aggregate_main",
    "examples_table",
    "pack_examples",
    "read_pack_file",
    "read_pack_json",
    "run_summary",
    "runs_table",
    "scan_packs",
]

COLLECTED_DIR = "collected"
EXAMPLES_FILE = "examples.parquet"
RUNS_FILE = "runs.parquet"
RUNS_CSV = "runs.csv"
AUTORATER_METRICS = "autorater/autorater_metrics.json"
AUTORATER_VERDICTS = "autorater/autorater_verdicts.jsonl"
ROW_GROUP_ROWS = 64 * 1024

#: config groups that get a column of their own; every choice is also in `choices` (JSON)
CHOICE_GROUPS = ("dataset", "memory", "reader", "writer", "embedder", "answerer", "judge")
#: LoCoMo's categories (the keys of memorybench.score.CATEGORY_NAMES, which is not imported
#: here: it loads nltk, which loads scipy when installed, seconds for a Parquet writer)
CATEGORIES = (1, 2, 3, 4, 5)
JUDGED_CATEGORIES = (1, 2, 3, 4)


# -- storage: the one place that reads a pack's bytes -----------------------------------
def read_pack_file(pack: str | os.PathLike[str], relpath: str) -> bytes:
    """The bytes of `relpath` inside `pack`; FileNotFoundError when absent.

    Local folders only for now. A `gs://` backend (the storage interface) replaces this
    function; every reader in aggregate, collect-full, report and tracking goes through it.
    """
    location = os.fspath(pack)
    if location.startswith("gs://"):
        raise UserError(f"{location}: gs:// packs are not readable yet; copy the packs to a local folder first")
    return (Path(location) / relpath).read_bytes()


def read_pack_optional(pack: str | os.PathLike[str], relpath: str) -> bytes | None:
    try:
        return read_pack_file(pack, relpath)
    except FileNotFoundError:
        return None


def read_pack_json(pack: str | os.PathLike[str], relpath: str, *, required: bool = True) -> Any:
    data = read_pack_file(pack, relpath) if required else read_pack_optional(pack, relpath)
    return None if data is None else json.loads(data)


# -- finding packs --------------------------------------------------------------------
@dataclass
class PackScan:
    """Finished packs (sorted) and the unfinished ones that were left out."""

    finished: list[Path] = field(default_factory=list)
    unfinished: list[Path] = field(default_factory=list)


def _is_pack_folder(path: Path) -> bool:
    return (path / "run_meta.json").is_file() or (path / "predictions.jsonl").is_file()


def scan_packs(sources: Iterable[str | os.PathLike[str]]) -> PackScan:
    """Pack folders, or roots scanned for `*/runs/*/_SUCCESS` (also `runs/*` and `*`).

    A source may be a pack (`<packs>/<name>/runs/<run_id>`), an experiment folder
    (`<packs>/<name>`), its `runs` folder, or the packs root. Unfinished packs (no
    `_SUCCESS`) are reported in `unfinished`, never read.
    """
    finished: set[Path] = set()
    unfinished: set[Path] = set()
    for source in sources:
        if os.fspath(source).startswith("gs://"):
            raise UserError(f"{source}: gs:// packs are not readable yet; copy the packs to a local folder first")
        root = Path(source).expanduser().resolve()
        if not root.is_dir():
            raise UserError(f"{source} is not a folder; pass pack folders or a packs root (paths.packs)")
        if _is_pack_folder(root):
            (finished if (root / SUCCESS).is_file() else unfinished).add(root)
            continue
        found = False
        for pattern in ("*", "runs/*", "*/runs/*"):
            for candidate in root.glob(pattern):
                if candidate.is_dir() and _is_pack_folder(candidate):
                    found = True
                    (finished if (candidate / SUCCESS).is_file() else unfinished).add(candidate)
        if not found:
            raise UserError(f"no pack under {root}: expected <root>/<name>/runs/<run_id>/_SUCCESS; pass paths.packs or pack folders")
    return PackScan(sorted(finished), sorted(unfinished - finished))


# -- schemas --------------------------------------------------------------------------
def _schema(name: str, fields: list[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema(fields, metadata={"memorybench.schema": name})


_RUN_KEYS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("experiment", pa.string()),
    ("config_sha256", pa.string()),
    *[(g, pa.string()) for g in CHOICE_GROUPS],
    ("reader_model", pa.string()),
    #: every chosen option as a JSON object (groups beyond the columns above included)
    ("choices", pa.string()),
]

EXAMPLES_SCHEMA = _schema("examples.v1", [
    *_RUN_KEYS,
    ("question_id", pa.string()),
    ("sample_id", pa.string()),
    ("index", pa.int32()),
    ("category", pa.int8()),
    ("category_name", pa.string()),
    ("question", pa.string()),
    ("prediction", pa.string()),
    ("gold", pa.string()),
    ("adversarial_answer", pa.string()),
    ("locomo_f1", pa.float64()),
    ("exact_match", pa.float64()),
    ("token_f1", pa.float64()),
    ("j_verdict", pa.string()),
    ("j_score", pa.float64()),
    ("j_passes", pa.int16()),
    ("j_agree", pa.bool_()),
    ("j_failed", pa.int16()),
    ("mem0_f1", pa.float64()),
    ("mem0_bleu1", pa.float64()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cached_tokens", pa.int64()),
    ("latency_s", pa.float64()),
    ("cost_usd", pa.float64()),
    ("retries", pa.int16()),
    ("cache_hit", pa.bool_()),
    ("model_answered", pa.string()),
    ("memory_sha256", pa.string()),
    ("reader_payload_sha256", pa.string()),
    ("pack", pa.string()),
])

RUNS_SCHEMA = _schema("runs.v1", [
    *_RUN_KEYS,
    ("models_answered", pa.string()),
    ("questions", pa.int32()),
    ("questions_total", pa.int32()),
    ("is_prefix", pa.bool_()),
    ("local_model", pa.bool_()),
    ("locomo_f1", pa.float64()),
    *[(f"locomo_f1_cat{c}", pa.float64()) for c in CATEGORIES],
    ("exact_match", pa.float64()),
    ("token_f1", pa.float64()),
    ("j_mean", pa.float64()),
    ("j_sd", pa.float64()),
    ("j_passes", pa.int16()),
    *[(f"j_cat{c}", pa.float64()) for c in JUDGED_CATEGORIES],
    ("j_agreement", pa.float64()),
    ("judge_model", pa.string()),
    ("mem0_f1", pa.float64()),
    ("mem0_bleu1", pa.float64()),
    ("calls", pa.int64()),
    ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()),
    ("cached_tokens", pa.int64()),
    ("cost_usd", pa.float64()),
    ("cost_known", pa.bool_()),
    ("latency_p50_s", pa.float64()),
    ("latency_p95_s", pa.float64()),
    ("latency_mean_s", pa.float64()),
    ("retries", pa.int64()),
    ("data_sha256", pa.string()),
    ("git_commit", pa.string()),
    ("started_at", pa.string()),
    ("ended_at", pa.string()),
    ("pack", pa.string()),
])

# what is read from the pack's JSONL files (everything else in a line is ignored)
_PREDICTION_FIELDS = pa.schema([
    ("question_id", pa.string()), ("index", pa.int64()), ("memory_sha256", pa.string()), ("reader_payload_sha256", pa.string()),
])
_TRACE_FIELDS = pa.schema([
    ("question_id", pa.string()),
    ("response", pa.struct([
        ("model_answered", pa.string()),
        ("usage", pa.struct([("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("cached_tokens", pa.int64())])),
        ("latency_s", pa.float64()),
        ("cost_usd", pa.float64()),
        ("cache_hit", pa.bool_()),
        ("attempts", pa.list_(pa.struct([("n", pa.int64())]))),
    ])),
])
#: an agent answerer (Codex) writes agent/traces.jsonl instead: one row per process, answer phase per question
_AGENT_TRACE_FIELDS = pa.schema([
    ("question_id", pa.string()), ("phase", pa.string()), ("model", pa.string()), ("wall_s", pa.float64()),
    ("usage", pa.struct([("input_tokens", pa.int64()), ("cached_input_tokens", pa.int64()), ("output_tokens", pa.int64())])),
])
_VERDICT_FIELDS = pa.schema([
    ("question_id", pa.string()), ("pass", pa.int64()), ("status", pa.string()), ("score", pa.float64()),
    ("mem0_f1", pa.float64()), ("mem0_bleu1", pa.float64()),
])
_CSV_TYPES = {
    "question_id": pa.string(), "sample_id": pa.string(), "category": pa.int8(), "category_name": pa.string(),
    "question": pa.string(), "prediction": pa.string(), "gold": pa.string(), "adversarial_answer": pa.string(),
    "locomo_f1": pa.float64(), "exact_match": pa.float64(), "token_f1": pa.float64(),
}


def _read_jsonl(data: bytes, schema: pa.Schema) -> pa.Table:
    if not data.strip():
        return schema.empty_table()
    return pa_json.read_json(
        io.BytesIO(data),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _read_predictions_csv(data: bytes) -> pa.Table:
    return pa_csv.read_csv(
        io.BytesIO(data),
        read_options=pa_csv.ReadOptions(use_threads=False, block_size=max(1 << 20, len(data) + 1)),
        parse_options=pa_csv.ParseOptions(newlines_in_values=True),
        convert_options=pa_csv.ConvertOptions(column_types=_CSV_TYPES, strings_can_be_null=False, include_columns=list(_CSV_TYPES)),
    )


# -- one pack -------------------------------------------------------------------------
def _reader_model(meta: dict[str, Any]) -> str | None:
    for model in meta.get("models", []):
        if model.get("role") == "reader":
            return model.get("requested")
    return None


def _run_keys(pack: Path, meta: dict[str, Any]) -> dict[str, Any]:
    choices = meta.get("choices") or {}
    return {
        "run_id": meta.get("run_id") or pack.name,
        "experiment": meta.get("name"),
        "config_sha256": meta.get("config_sha256"),
        **{g: choices.get(g) for g in CHOICE_GROUPS},
        "reader_model": _reader_model(meta),
        "choices": json.dumps(dict(sorted(choices.items())), sort_keys=True),
    }


def _empty_to_null(array: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pc.if_else(pc.equal(array, ""), pa.scalar(None, pa.string()), array)


def _aligned(keys: pa.Array, table: pa.Table, key: str = "question_id") -> pa.Table:
    """`table`'s rows in the order of `keys` (null rows where a key is missing)."""
    if table.num_rows == len(keys) and table.column(key).equals(pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys):
        return table
    positions = pc.index_in(keys, value_set=table.column(key).combine_chunks())
    return table.take(positions)


def _verdict_columns(pack: Path, qids: pa.Array) -> dict[str, pa.Array] | None:
    if read_pack_optional(pack, AUTORATER_METRICS) is None:
        return None
    data = read_pack_optional(pack, AUTORATER_VERDICTS) or b""
    verdicts = _read_jsonl(data, _VERDICT_FIELDS)
    parsed = verdicts.filter(pc.is_in(verdicts.column("status"), value_set=pa.array(["CORRECT", "WRONG"])))
    grouped = parsed.group_by("question_id").aggregate([
        ("score", "mean"), ("score", "count"), ("score", "min"), ("score", "max"),
    ])
    first = verdicts.filter(pc.equal(verdicts.column("pass"), 1))
    failed = verdicts.filter(pc.equal(verdicts.column("status"), "FAILED")).group_by("question_id").aggregate([("status", "count")])
    lexical = verdicts.filter(pc.is_valid(verdicts.column("mem0_f1"))).group_by("question_id").aggregate(
        [("mem0_f1", "max"), ("mem0_bleu1", "max")]
    )
    g = _aligned(qids, grouped)
    f = _aligned(qids, first)
    lx = _aligned(qids, lexical)
    fl = _aligned(qids, failed)
    count = g.column("score_count")
    agree = pc.if_else(pc.greater_equal(count, 2), pc.equal(g.column("score_min"), g.column("score_max")), pa.scalar(None, pa.bool_()))
    return {
        "j_verdict": f.column("status"),
        "j_score": g.column("score_mean"),
        "j_passes": pc.cast(pc.fill_null(count, 0), pa.int16()),
        "j_agree": agree,
        "j_failed": pc.cast(pc.fill_null(fl.column("status_count"), 0), pa.int16()),
        "mem0_f1": lx.column("mem0_f1_max"),
        "mem0_bleu1": lx.column("mem0_bleu1_max"),
    }


def _usage_columns(pack: Path, qids: pa.Array) -> dict[str, Any]:
    """Tokens, latency, cost per question: reader traces, else an agent's answer traces, else nulls."""
    data = read_pack_optional(pack, "reader/traces.jsonl")
    if data and data.strip():
        traces = _aligned(qids, _read_jsonl(data, _TRACE_FIELDS))
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
            "model_answered": pc.struct_field(response, "model_answered"),
        }
    data = read_pack_optional(pack, "agent/traces.jsonl")
    if data and data.strip():
        agent = _read_jsonl(data, _AGENT_TRACE_FIELDS)
        agent = _aligned(qids, agent.filter(pc.equal(agent.column("phase"), "answer")))
        usage = agent.column("usage").combine_chunks()
        return {
            "prompt_tokens": pc.struct_field(usage, "input_tokens"),
            "completion_tokens": pc.struct_field(usage, "output_tokens"),
            "cached_tokens": pc.struct_field(usage, "cached_input_tokens"),
            "latency_s": agent.column("wall_s"),
            "model_answered": agent.column("model"),
        }
    return {}


def pack_examples(pack: str | os.PathLike[str]) -> pa.Table:
    """The examples rows of one finished pack, in `EXAMPLES_SCHEMA`."""
    pack = Path(pack)
    meta = read_pack_json(pack, "run_meta.json")
    csv = _read_predictions_csv(read_pack_file(pack, "predictions.csv"))
    n = csv.num_rows
    qids = csv.column("question_id").combine_chunks()
    rows = _aligned(qids, _read_jsonl(read_pack_file(pack, "predictions.jsonl"), _PREDICTION_FIELDS))
    usage_columns = _usage_columns(pack, qids)
    columns: dict[str, Any] = {name: pa.array([value] * n, type=EXAMPLES_SCHEMA.field(name).type) for name, value in _run_keys(pack, meta).items()}
    columns.update({
        "question_id": qids,
        "sample_id": csv.column("sample_id"),
        "index": rows.column("index"),
        "category": csv.column("category"),
        "category_name": csv.column("category_name"),
        "question": csv.column("question"),
        "prediction": csv.column("prediction"),
        "gold": _empty_to_null(csv.column("gold")),
        "adversarial_answer": _empty_to_null(csv.column("adversarial_answer")),
        "locomo_f1": csv.column("locomo_f1"),
        "exact_match": csv.column("exact_match"),
        "token_f1": csv.column("token_f1"),
        **usage_columns,
        "memory_sha256": rows.column("memory_sha256"),
        "reader_payload_sha256": rows.column("reader_payload_sha256"),
        "pack": pa.array([str(pack)] * n, type=pa.string()),
    })
    verdicts = _verdict_columns(pack, qids)
    for name in ("j_verdict", "j_score", "j_passes", "j_agree", "j_failed", "mem0_f1", "mem0_bleu1"):
        columns[name] = verdicts[name] if verdicts else pa.nulls(n, EXAMPLES_SCHEMA.field(name).type)
    for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "latency_s", "cost_usd", "retries", "cache_hit", "model_answered"):
        columns.setdefault(name, pa.nulls(n, EXAMPLES_SCHEMA.field(name).type))
    arrays = [pc.cast(columns[f.name], f.type) for f in EXAMPLES_SCHEMA]
    return pa.Table.from_arrays(arrays, schema=EXAMPLES_SCHEMA)


def _get(data: dict[str, Any] | None, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def run_summary(pack: str | os.PathLike[str]) -> dict[str, Any]:
    """One row of `RUNS_SCHEMA` for a finished pack (metrics.json, run_meta.json, autorater)."""
    pack = Path(pack)
    meta = read_pack_json(pack, "run_meta.json")
    metrics = read_pack_json(pack, "metrics.json")
    judge = read_pack_json(pack, AUTORATER_METRICS, required=False)
    reader = _get(metrics, "usage", "reader") or {}
    answered = sorted({a for m in meta.get("models", []) if m.get("role") == "reader" for a in m.get("answered") or []}
                      | set(reader.get("models_answered") or []))
    row: dict[str, Any] = {
        **_run_keys(pack, meta),
        "models_answered": ",".join(answered) or None,
        "questions": metrics.get("questions"),
        "questions_total": meta.get("questions_total"),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "locomo_f1": _get(metrics, "locomo_f1", "overall"),
        **{f"locomo_f1_cat{c}": _get(metrics, "locomo_f1", "by_category", str(c)) for c in CATEGORIES},
        "exact_match": _get(metrics, "exact_match", "overall"),
        "token_f1": _get(metrics, "token_f1", "overall"),
        "j_mean": _get(judge, "j", "mean"),
        "j_sd": _get(judge, "j", "sd"),
        "j_passes": _get(judge, "passes"),
        **{f"j_cat{c}": _get(judge, "j", "by_category", str(c)) for c in JUDGED_CATEGORIES},
        "j_agreement": _get(judge, "j", "agreement", "share"),
        "judge_model": _get(judge, "judge", "model_requested"),
        "mem0_f1": _get(judge, "mem0_f1", "overall"),
        "mem0_bleu1": _get(judge, "mem0_bleu1", "overall"),
        "calls": reader.get("calls"),
        "prompt_tokens": reader.get("prompt_tokens"),
        "completion_tokens": reader.get("completion_tokens"),
        "cached_tokens": reader.get("cached_tokens"),
        "cost_usd": reader.get("cost_usd") if reader.get("cost_known") else None,
        "cost_known": reader.get("cost_known"),
        "latency_p50_s": _get(reader, "latency_s", "p50"),
        "latency_p95_s": _get(reader, "latency_s", "p95"),
        "latency_mean_s": _get(reader, "latency_s", "mean"),
        "retries": reader.get("retries"),
        "data_sha256": _get(meta, "data", "sha256"),
        "git_commit": meta.get("git_commit"),
        "started_at": meta.get("started_at"),
        "ended_at": meta.get("ended_at"),
        "pack": str(pack),
    }
    return row


def _imap(function: Any, packs: Sequence[Path]) -> Iterator[Any]:
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


def examples_table(packs: Sequence[str | os.PathLike[str]]) -> pa.Table:
    """Every pack's examples in one in-memory table (`aggregate` streams to Parquet instead)."""
    tables = list(_imap(pack_examples, [Path(p) for p in packs]))
    return pa.concat_tables(tables) if tables else EXAMPLES_SCHEMA.empty_table()


def runs_table(packs: Sequence[str | os.PathLike[str]]) -> pa.Table:
    rows = [run_summary(Path(p)) for p in packs]
    return pa.Table.from_pylist(rows, schema=RUNS_SCHEMA)


@dataclass
class AggregateResult:
    out_dir: Path
    examples: Path
    runs: Path
    runs_csv: Path
    packs: list[Path]
    rows: int
    unfinished: list[Path]


def _write_parquet(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".part")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def _write_examples(packs: Sequence[Path], path: Path) -> int:
    """Stream every pack's rows into one Parquet file; return the row count.

    Packs are read a few at a time and written in row groups of about `ROW_GROUP_ROWS`,
    so memory grows with a row group, not with the design.
    """
    tmp = path.with_name(path.name + ".part")
    rows = 0
    buffered: list[pa.Table] = []
    with pq.ParquetWriter(tmp, EXAMPLES_SCHEMA, compression="zstd") as writer:
        for table in _imap(pack_examples, packs):
            buffered.append(table)
            rows += table.num_rows
            if sum(t.num_rows for t in buffered) >= ROW_GROUP_ROWS:
                writer.write_table(pa.concat_tables(buffered))
                buffered = []
        if buffered or rows == 0:
            writer.write_table(pa.concat_tables(buffered) if buffered else EXAMPLES_SCHEMA.empty_table())
    os.replace(tmp, path)
    return rows


def aggregate(sources: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str], *, experiment: str | None = None) -> AggregateResult:
    """Read every finished pack of `sources`; write `<out_dir>/collected/{examples,runs}.parquet` and `runs.csv`."""
    scan = scan_packs(sources)
    packs = scan.finished
    if experiment is not None:
        packs = [p for p in packs if read_pack_json(p, "run_meta.json").get("name") == experiment]
    if not packs:
        what = f" of experiment {experiment!r}" if experiment else ""
        raise UserError(f"no finished pack{what} in {', '.join(map(str, sources))}: a pack is finished when it has _SUCCESS")
    out = Path(out_dir).expanduser().resolve() / COLLECTED_DIR
    out.mkdir(parents=True, exist_ok=True)
    rows = _write_examples(packs, out / EXAMPLES_FILE)
    runs = runs_table(packs)
    _write_parquet(runs, out / RUNS_FILE)
    tmp = out / (RUNS_CSV + ".part")
    pa_csv.write_csv(runs, tmp)
    os.replace(tmp, out / RUNS_CSV)
    return AggregateResult(out, out / EXAMPLES_FILE, out / RUNS_FILE, out / RUNS_CSV, packs, rows, scan.unfinished)


def default_out_dir(sources: Sequence[str | os.PathLike[str]]) -> Path:
    """Beside the packs: the packs root's parent (where `mlflow.db` goes too)."""
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
    parser.add_argument("packs", nargs="+", help="pack folders, or roots scanned for <name>/runs/<run_id>/_SUCCESS (e.g. outputs/packs)")
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

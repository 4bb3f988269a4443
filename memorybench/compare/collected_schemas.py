"""The schemas of `collected/`: `examples.parquet` (`EXAMPLES_SCHEMA`, one row per run and
question) and `runs.parquet` (`RUNS_SCHEMA`, one row per run), each carrying
`memorybench.schema` in its metadata, plus the columns every judge adds
(`JUDGE_EXAMPLE_COLUMNS`, `JUDGE_RUN_COLUMNS`: `<name>/<judge id>`, `with_judges`), and in the
runs table the columns of another benchmark's packs (`benchmark_run_columns`: LongMemEval's lexical
diagnostic by its own name, per question type; such a row leaves the lexical scorer's
`LEXICAL_RUN_COLUMNS` null; `benchmark_judge_columns`: each judge's figure by the benchmark's own
name, overall, task-averaged, per subset and question type; such a row leaves the J-named
`J_COLUMNS` of its judges null).
What fills them is `memorybench.compare.aggregate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from memorybench.compare.summary import CATEGORIES, CHOICE_GROUPS, JUDGED_CATEGORIES, SUBSETS, judge_key
from memorybench.benchmark import Benchmark, benchmark_named
from memorybench.score.scorers import LEXICAL, kind_column, subset_column

__all__ = [
    "EXAMPLES_SCHEMA",
    "JUDGE_EXAMPLE_COLUMNS",
    "JUDGE_RUN_COLUMNS",
    "J_COLUMNS",
    "LEXICAL_RUN_COLUMNS",
    "RUNS_SCHEMA",
    "benchmark_judge_columns",
    "benchmark_judge_values",
    "benchmark_run_columns",
    "benchmark_run_values",
    "with_benchmarks",
    "with_judges",
]


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

EXAMPLES_SCHEMA = _schema(
    "examples.v3",
    [
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
        (LEXICAL, pa.float64()),
        ("exact_match", pa.float64()),
        ("token_f1", pa.float64()),
        ("mem0_f1", pa.float64()),
        ("mem0_bleu1", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("cost_usd", pa.float64()),
        ("retries", pa.int16()),
        ("cache_hit", pa.bool_()),
        #: model requests made to answer the question: the reader's HTTP attempts (0 on a cache
        #: hit); an agent's requests as its gateway forwarded them (null without a gateway)
        ("requests", pa.int32()),
        #: an agent's outcome (completed, budget_exceeded, timeout, failed, no_answer); null for the reader
        ("agent_status", pa.string()),
        #: the question's total token budget the gateway enforced (match_reader: the reader's), null for none
        ("token_budget", pa.int64()),
        ("model_answered", pa.string()),
        ("memory_sha256", pa.string()),
        ("reader_payload_sha256", pa.string()),
        #: where the answer was lost (memorybench.compare.blame)
        ("blame", pa.string()),
        ("blame_basis", pa.string()),
        ("evidence_stored", pa.bool_()),
        ("evidence_given", pa.bool_()),
        ("answer_used_evidence", pa.bool_()),
        ("pack", pa.string()),
    ],
)

RUNS_SCHEMA = _schema(
    "runs.v5",
    [
        *_RUN_KEYS,
        ("models_answered", pa.string()),
        ("questions", pa.int32()),
        ("questions_total", pa.int32()),
        ("is_prefix", pa.bool_()),
        ("local_model", pa.bool_()),
        #: the mean over the categories the run holds (`overall_covers` says which), and the
        #: two overalls the field reports, each over the categories it names only (1-5: null
        #: where category 5 was not asked; an old pack without them: null)
        (LEXICAL, pa.float64()),
        ("overall_covers", pa.string()),
        *[(subset_column(name), pa.float64()) for name in SUBSETS],
        *[(kind_column(c), pa.float64()) for c in CATEGORIES],
        ("exact_match", pa.float64()),
        ("token_f1", pa.float64()),
        #: the ids of the pack's finished judges, comma-separated (their J: the `j_*/<judge id>` columns)
        ("judges", pa.string()),
        ("mem0_f1", pa.float64()),
        ("mem0_bleu1", pa.float64()),
        ("build_calls", pa.int64()),
        ("build_prompt_tokens", pa.int64()),
        ("build_completion_tokens", pa.int64()),
        ("build_cost_usd", pa.float64()),
        ("answer_calls", pa.int64()),
        ("answer_prompt_tokens", pa.int64()),
        ("answer_completion_tokens", pa.int64()),
        ("answer_cached_tokens", pa.int64()),
        ("answer_cost_usd", pa.float64()),
        ("judge_calls", pa.int64()),
        ("judge_cost_usd", pa.float64()),
        ("total_calls", pa.int64()),
        ("total_prompt_tokens", pa.int64()),
        ("total_completion_tokens", pa.int64()),
        ("total_cost_usd", pa.float64()),
        ("cost_per_question_usd", pa.float64()),
        ("cost_known", pa.bool_()),
        ("memory_failed_tasks", pa.int64()),
        ("latency_p50_s", pa.float64()),
        ("latency_p95_s", pa.float64()),
        ("latency_mean_s", pa.float64()),
        ("retries", pa.int64()),
        #: an agent run's model requests and tokens per question (p50/p95/max) and budget hits as the
        #: gateway counted them, and its comparison status (agent/comparison.json); null for a reader run
        ("agent_requests_p50", pa.float64()),
        ("agent_requests_p95", pa.float64()),
        ("agent_requests_max", pa.float64()),
        ("agent_tokens_p50", pa.float64()),
        ("agent_tokens_p95", pa.float64()),
        ("agent_tokens_max", pa.float64()),
        ("agent_budget_exceeded", pa.int64()),
        ("agent_comparable", pa.bool_()),
        ("agent_reasons", pa.string()),
        #: runs.v5: the retrieval budget (memorybench.pack.budget, memory/budget.json or computed from the
        #: pack's rows): context tokens per question (mean, p50, p95; a question-independent memory: its
        #: conversation's text), retrieval latency (p50, p95; null without a search), budget.top_k, the
        #: most items the system returned for one question, whether the budget held (null: none set, or
        #: no retrieval) and, where it did not, how (`budget_flag`)
        ("context_tokens_mean", pa.float64()),
        ("context_tokens_p50", pa.float64()),
        ("context_tokens_p95", pa.float64()),
        ("retrieval_latency_p50_s", pa.float64()),
        ("retrieval_latency_p95_s", pa.float64()),
        ("budget_top_k", pa.int64()),
        ("budget_returned_max", pa.int64()),
        ("budget_held", pa.bool_()),
        ("budget_flag", pa.string()),
        ("data_sha256", pa.string()),
        ("git_commit", pa.string()),
        ("started_at", pa.string()),
        ("ended_at", pa.string()),
        ("pack", pa.string()),
    ],
)

#: one column per finished judge in the runs table: `<name>/<judge id>`
JUDGE_RUN_COLUMNS: dict[str, pa.DataType] = {
    "j_mean": pa.float64(),
    "j_sd": pa.float64(),
    "j_passes": pa.int16(),
    **{f"j_cat{c}": pa.float64() for c in JUDGED_CATEGORIES},
    "j_agreement": pa.float64(),
    "judge_model": pa.string(),
    "judge_failed": pa.int64(),
    "judge_calls": pa.int64(),
    "judge_cost_usd": pa.float64(),
}
#: ... and in the examples table: pass 1's label, the mean score over parsed passes, how many
#: parsed passes, whether they all agree (null under two), how many failed
JUDGE_EXAMPLE_COLUMNS: dict[str, pa.DataType] = {
    "j_verdict": pa.string(),
    "j_score": pa.float64(),
    "j_passes": pa.int16(),
    "j_agree": pa.bool_(),
    "j_failed": pa.int16(),
}


def with_judges(schema: pa.Schema, columns: dict[str, pa.DataType], judges: Iterable[str]) -> pa.Schema:
    """`schema` plus `<name>/<judge id>` columns for every judge (sorted by id)."""
    fields = [pa.field(judge_key(name, judge), kind) for judge in sorted(set(judges)) for name, kind in columns.items()]
    return pa.schema([*schema, *fields], metadata=schema.metadata)


#: the runs-table columns of the lexical scorer's figures: its overall, the default benchmark's subsets
#: and kinds (LoCoMo F1, its overalls and categories): null on the row of a benchmark whose lexical
#: score is a diagnostic (its kinds are not LoCoMo's categories, its lexical score not LoCoMo F1:
#: `benchmark_run_values`)
LEXICAL_RUN_COLUMNS = (LEXICAL, *(subset_column(name) for name in SUBSETS), *(kind_column(c) for c in CATEGORIES))


def benchmark_run_values(bench: Benchmark, f1: Mapping[str, Any]) -> dict[str, Any]:
    """Another benchmark's runs-table values from its metrics.json lexical (`locomo_f1`) block (`f1`, as
    `score.score_record.scores_of` reads it: {overall, by_kind, task_average} of {value, ...}), named as
    MLflow names them (`memorybench.tracking.pack_figures`): the lexical diagnostic
    `diagnostic_stemmed_token_f1` (overall), `_task_avg` (where the benchmark reports one) and
    `_<kind name>` for each of its kinds (LongMemEval's six types: `..._temporal-reasoning`), with
    `LEXICAL_RUN_COLUMNS` null. Nothing for a LoCoMo pack: its row is as ever."""
    if bench.own_lexical_rules:
        return {}
    from memorybench.score.rows import diagnostic_name

    name, by_kind = f"diagnostic_{diagnostic_name(LEXICAL)}", f1.get("by_kind") or {}
    return {
        **dict.fromkeys(LEXICAL_RUN_COLUMNS),
        name: (f1.get("overall") or {}).get("value"),
        **({f"{name}_task_avg": (f1.get("task_average") or {}).get("value")} if bench.task_averaged else {}),
        **{f"{name}_{kind}": (by_kind.get(str(number)) or {}).get("value") for number, kind in bench.category_names.items()},
    }


def benchmark_run_columns(bench: Benchmark) -> dict[str, pa.DataType]:
    """The runs-table columns another benchmark's packs add (`benchmark_run_values`); none for LoCoMo."""
    return {k: pa.float64() for k in benchmark_run_values(bench, {}) if k not in LEXICAL_RUN_COLUMNS}


#: a judge's runs-table columns named by Mem0's J (its mean and sd over the passes, LoCoMo's categories
#: 1-4): null on another benchmark's row, whose judge's figure is not J and whose kinds are not LoCoMo's
#: categories (`benchmark_judge_values`); j_passes, j_agreement and the judge's model, failures, calls
#: and cost mean the same on every benchmark and stay
J_COLUMNS = ("j_mean", "j_sd", *(f"j_cat{c}" for c in JUDGED_CATEGORIES))


def benchmark_judge_values(bench: Benchmark, judge_id: str, judge: Any = None) -> dict[str, Any]:
    """Another benchmark's runs-table values of one judge, from its autorater_metrics.json (`judge`,
    `memorybench.pack.autorater_schemas.AutoraterMetrics`; None: every value null), named as MLflow
    names them (`memorybench.tracking.pack_figures.benchmark_metrics`), each `<name>/<judge id>`:
    the benchmark's figure under its own name (`Benchmark.judge_values`: `longmemeval_accuracy`,
    `beam_score`, with its subsets and kinds), with the judge's `J_COLUMNS` null.
    Nothing for a benchmark whose figure is J (LoCoMo's): its row is as ever."""
    figures = bench.judge_values(judge)
    if not figures:
        return {}
    return {
        **{judge_key(name, judge_id): None for name in J_COLUMNS},
        **{judge_key(name, judge_id): value for name, value in figures.items()},
    }


def benchmark_judge_columns(bench: Benchmark, judge_id: str) -> dict[str, pa.DataType]:
    """The runs-table columns a judge of another benchmark's packs adds (`benchmark_judge_values`); none for LoCoMo."""
    named_j = {judge_key(name, judge_id) for name in J_COLUMNS}
    return {k: pa.float64() for k in benchmark_judge_values(bench, judge_id) if k not in named_j}


def with_benchmarks(schema: pa.Schema, benchmarks: Iterable[str], judges: Iterable[tuple[str, str]] = ()) -> pa.Schema:
    """`schema` plus the columns of every benchmark named (sorted by name): its own
    (`benchmark_run_columns`), then those of each of its judges (`judges`: (benchmark name, judge id)
    pairs, sorted by id; `benchmark_judge_columns`)."""
    by_bench: dict[str, set[str]] = {}
    for name, judge_id in judges:
        by_bench.setdefault(name, set()).add(judge_id)
    fields = [
        pa.field(k, kind)
        for name in sorted(set(benchmarks) | set(by_bench))
        for k, kind in [
            *benchmark_run_columns(benchmark_named(name)).items(),
            *(
                item
                for judge_id in sorted(by_bench.get(name, ()))
                for item in benchmark_judge_columns(benchmark_named(name), judge_id).items()
            ),
        ]
    ]
    return pa.schema([*schema, *fields], metadata=schema.metadata)

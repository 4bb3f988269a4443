"""LongMemEval (Wu et al., ICLR 2025): 500 questions, each over a haystack of its own.

Each question has its own haystack, so its sample id is its question id and the unit of
resampling is the question (the same cluster-robust code then gives the ordinary interval
over independent questions). Its own figure is its authors' judge's accuracy per question
type, task-averaged and overall, with the abstention questions (`_abs` ids) beside them.
"""

from __future__ import annotations

from memorybench.benchmark import Benchmark, Dataset, OwnTable

#: read whole (json.loads): 3.7 times the file at its peak on a file in their format (bench/longmemeval_memory.py,
#: 124 MB), rounded up; longmemeval_m's 2.7 GB so take about 11 GB
_LARGE = {"large": True, "max_bytes": 3 << 30, "expected": "a LongMemEval file", "read_ratio": 4.0}

BENCHMARK = Benchmark(
    name="longmemeval",
    title="LongMemEval",
    # the authors' code (xiaowu0162/LongMemEval) and the cleaned data files (longmemeval-cleaned) at their pins
    version="xiaowu0162/LongMemEval@9e0b455f4ef0; longmemeval-cleaned@98d7416c24c7",
    datasets=tuple(
        Dataset(name, pin=f"memorybench.benchmarks.longmemeval.pins:DATA.{name}", **_LARGE)  # type: ignore[arg-type]
        for name in ("longmemeval_oracle", "longmemeval_s", "longmemeval_m")
    ),
    # each question has a haystack of its own: its sample id is its question id
    unit="question",
    sample="haystack",
    # the question types, numbered in the order of the authors' README (memorybench.benchmarks.longmemeval.data.TYPES)
    category_names={
        1: "single-session-user",
        2: "single-session-assistant",
        3: "single-session-preference",
        4: "multi-session",
        5: "temporal-reasoning",
        6: "knowledge-update",
    },
    loader="memorybench.benchmarks.longmemeval.data:load_longmemeval",
    scored_by="the authors' per-type judge prompts (gpt-4o-2024-08-06); accuracy per type, task-averaged, overall, abstention",
    judge_figure="accuracy (LongMemEval's judge)",
    judge="longmemeval",
    kind_word="type",
    figure_key="longmemeval_accuracy",
    task_averaged=True,
    id_marks={"abstention": "_abs"},
    pins="memorybench.benchmarks.longmemeval.pins:CODE_PINS",
    reader_prompts=("longmemeval_con", "longmemeval_direct"),
    history="memorybench.benchmarks.longmemeval.reader:authors_history",
    reader_templates="memorybench.benchmarks.longmemeval.reader:READERS",
    blocks=("longmemeval",),
    judge_figures="memorybench.benchmarks.longmemeval.autorater",
    report_tables={
        "retrieval": OwnTable(
            "memorybench.benchmarks.longmemeval.pack_retrieval:retrieval_table",
            "LongMemEval's retrieval metrics (the authors' eval_utils.py, averaged as print_retrieval_metrics.py "
            "averages: abstention questions skipped): what a retrieving method handed the reader, its items' turns in "
            "hit order, scored against the has_answer turns at turn level and, by the authors' conversion, at session "
            "level; recall_all and ndcg_any at 5 and 10. LoCoMo packs and methods that retrieve nothing are left out.",
        )
    },
    judge_protocols={"longmemeval": "memorybench.benchmarks.longmemeval.judge:LongMemEvalJudge"},
    released_formats=("longmemeval_hypotheses", "longmemeval_judged"),
    importer="memorybench.benchmarks.longmemeval.importer",
    judge_hint=(
        "accuracy (LongMemEval's judge, the authors' per-type prompts): memorybench autorater {pack} "
        "judge=longmemeval  (gpt-4o-2024-08-06, needs OPENAI_API_KEY; offline: judge=local judge.protocol=longmemeval, "
        "the embedded model, not comparable; docs/longmemeval.md)"
    ),
)

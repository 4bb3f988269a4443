"""What makes a benchmark a benchmark: its datasets, loader, question kinds and resampling unit.

A run names a dataset (`dataset=locomo10`, `dataset=longmemeval_oracle`, ...: a config of
conf/dataset/); the dataset belongs to one benchmark, and the benchmark says

- how its file is read (`load`: the file -> `Conversation` records, each a sample of memory
  with the questions asked over it: a LoCoMo conversation, or one LongMemEval question's
  haystack);
- what its question kinds are called (`category_names`: LoCoMo's five categories, or
  LongMemEval's six question types);
- which unit intervals resample (`unit`): the cluster a question sits in, a row's
  `sample_id`. LoCoMo's questions share 10 conversations, so the unit is the conversation;
  each LongMemEval question has a haystack of its own, so the unit is the question (its
  sample id is its question id), and the same cluster-robust code gives the ordinary
  interval over independent questions.

A new benchmark is one module (its loader), its configs and its pins, registered here.
Modules import nothing heavy: `load` imports the loader on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import UserError


@dataclass(frozen=True)
class Benchmark:
    name: str
    #: the dataset config names (conf/dataset/<name>.yaml) of this benchmark
    datasets: tuple[str, ...]
    #: the unit of resampling, singular ("conversation", "question"): what a row's sample_id is
    unit: str
    #: question kind number -> name, as the benchmark's own scorer names them
    category_names: Mapping[int, str]
    #: "module:function" that reads a dataset file into Conversation records
    loader: str
    #: what a published figure on this benchmark is scored by (for labels)
    scored_by: str = ""
    #: the question kinds its judge scores (LoCoMo: Mem0's J skips category 5; None: every kind)
    judged: tuple[int, ...] | None = None
    #: what its judge's figure is called in tables
    judge_figure: str = "J"
    #: what a question kind is called in labels ("categories 1-4", "types 1-6")
    kind_word: str = "category"
    #: its judge's figure in metric names and table columns: LoCoMo's is Mem0's J; another
    #: benchmark's figure keeps its own name, so no table or MLflow run calls it J
    figure_key: str = "j"
    #: whether it reports the mean of its per-kind figures beside the overall (LongMemEval's
    #: "task-averaged accuracy": a small kind weighs as much as a large one)
    task_averaged: bool = False
    #: question subsets reported beside the kinds, each marked in the question id: name -> the
    #: substring an id holds (LongMemEval's abstention questions: evaluate_qa.py's `'_abs' in question_id`)
    id_marks: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = field(default=())

    def load(self, path: str | Path) -> list[Any]:
        module, function = self.loader.split(":")
        return getattr(importlib.import_module(module), function)(path)

    def judges(self, category: int) -> bool:
        """Whether the benchmark's judge scores a question of this kind."""
        return self.judged is None or category in self.judged

    def marks(self, question_id: str) -> tuple[str, ...]:
        """The subsets (`id_marks`) a question belongs to: ("abstention",) for a LongMemEval `_abs` id."""
        return tuple(name for name, mark in self.id_marks.items() if mark in question_id)

    def units(self, count: int) -> str:
        """`10 conversations`, `1 question`."""
        return f"{count} {self.unit}" + ("" if count == 1 else "s")


LOCOMO = Benchmark(
    name="locomo",
    datasets=("locomo10",),
    unit="conversation",
    # LoCoMo's category numbers as its own scorer names them. Mem0's paper uses other names
    # for the same numbers, so tables print the number beside the name.
    category_names={1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"},
    loader="memorybench.data.locomo:load_locomo",
    scored_by="LoCoMo's category F1; Mem0's LLM judge (J) over categories 1-4",
    judged=(1, 2, 3, 4),
)

LONGMEMEVAL = Benchmark(
    name="longmemeval",
    datasets=("longmemeval_oracle", "longmemeval_s", "longmemeval_m"),
    # each question has a haystack of its own: its sample id is its question id
    unit="question",
    # the question types, numbered in the order of the authors' README (memorybench.data.longmemeval.TYPES)
    category_names={1: "single-session-user", 2: "single-session-assistant", 3: "single-session-preference",
                    4: "multi-session", 5: "temporal-reasoning", 6: "knowledge-update"},
    loader="memorybench.data.longmemeval:load_longmemeval",
    scored_by="the authors' per-type judge prompts (gpt-4o-2024-08-06); accuracy per type, task-averaged, overall, abstention",
    judge_figure="accuracy (LongMemEval's judge)",
    kind_word="type",
    figure_key="longmemeval_accuracy",
    task_averaged=True,
    id_marks={"abstention": "_abs"},
)

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (LOCOMO, LONGMEMEVAL)}


def benchmark_of(dataset: str | None) -> Benchmark:
    """The benchmark a dataset config name belongs to (None: LoCoMo, the default dataset)."""
    if dataset is None:
        return LOCOMO
    for benchmark in BENCHMARKS.values():
        if dataset in benchmark.datasets:
            return benchmark
    known = ", ".join(d for b in BENCHMARKS.values() for d in b.datasets)
    raise UserError(f"dataset {dataset!r} belongs to no benchmark memorybench knows ({known}); "
                    "choose one with dataset=NAME (conf/dataset/)")


def benchmark_of_meta(data: Mapping[str, Any] | None) -> Benchmark:
    """The benchmark of a pack, from run_meta.json's `data` (an imported or older pack
    without a dataset name is LoCoMo's)."""
    name = (data or {}).get("name")
    try:
        return benchmark_of(str(name) if name else None)
    except UserError:
        return LOCOMO


def benchmark_named(name: str | None) -> Benchmark:
    """A benchmark by its own name (metrics.json's `benchmark`; absent: LoCoMo)."""
    return BENCHMARKS.get(name or LOCOMO.name, LOCOMO)

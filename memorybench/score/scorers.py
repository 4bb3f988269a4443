"""Scorers as specs: one registered entry per per-question score a pack reports.

A `Scorer` says how to score one stored answer, how rows aggregate, how the number is
labelled and whose rule it is (LoCoMo's, Mem0's, or ours). The columns of
predictions.csv, the metrics of metrics.json, the score columns of
collected/examples.parquet and the MLflow metric names are derived from the scorers
with `stage="qa"`, in `position` order; a plugin adds one with `SCORERS.add(...)`.

Mem0's lexical metrics are defined here; a benchmark contributes the scorers of its own
rules through its record (`Benchmark.scorers`: LoCoMo's category F1, the lexical score of
every benchmark's rows, with the exact match and token F1 on its normalisation), and the
registry takes them in with these (`memorybench.benchmark.benchmark_scorers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memorybench.registry import SCORERS
from memorybench.score.lexical import mem0_bleu1, mem0_f1


@dataclass(frozen=True)
class Scorer:
    name: str
    #: one prediction row (question, prediction, gold, category...) -> a score
    function: Callable[[Mapping[str, Any]], float]
    label: str
    #: "locomo", "mem0" (a published protocol, reproduced) or "ours"
    owner: str
    #: the stage that computes it: "qa" (at the end of a run and by rescore) or "autorater"
    stage: str = "qa"
    #: how rows aggregate into a run's number
    aggregation: str = "mean"
    #: order of columns and metrics (built-ins first; a plugin's default comes after)
    position: int = 100
    #: the distinct tokens its rule compares in a text (after its normalisation and stemming):
    #: the report's gold-token drop and blame count them; None: it compares no tokens
    tokens: Callable[[str], set[str]] | None = None
    #: the phrases whose presence makes an answer a refusal by its rule (LoCoMo's category 5):
    #: the report's refusals table counts them
    refusals: tuple[str, ...] = ()
    #: the module that works its arithmetic out for one answer, step by step (TRACE.md's scorer
    #: side): it defines `own_rule(prediction, gold, kind, kind_name) -> (lines, score | None)` and
    #: `diagnostic_rule(prediction, gold, rule, *, whose, kind_word, name) -> (rule in words,
    #: lines, score | None)` (None: no gold or no answer to work it out on); None: none
    worked: str | None = None

    def __call__(self, row: Mapping[str, Any]) -> float:
        return self.function(row)


def _gold_text(row: Mapping[str, Any]) -> str:
    return "" if row["gold"] is None else str(row["gold"])


#: the registered name of the lexical score of every benchmark's rows (LoCoMo's category F1, a
#: diagnostic on a benchmark whose score is its judge's): a column of predictions.csv
LEXICAL = "locomo_f1"


def subset_column(subset: str, scorer: str = LEXICAL) -> str:
    """The name of a scorer's figure over a named subset of a benchmark's kinds (`Benchmark.subsets`)
    in the runs table, MLflow's metrics and the report's tables: "1-4" -> `locomo_f1_1_4`."""
    return f"{scorer}_{subset.replace('-', '_')}"


def kind_column(kind: int, scorer: str = LEXICAL) -> str:
    """The name of a scorer's figure over one question kind in the runs table, MLflow's metrics
    and the report's tables: 1 -> `locomo_f1_cat1`, (1, "exact_match") -> `exact_match_cat1`."""
    return f"{scorer}_cat{kind}"


def lexical_scorer() -> Scorer:
    """The lexical scorer (`LEXICAL`): its tokens and its worked arithmetic."""
    return SCORERS.get(LEXICAL)


def scorers(stage: str = "qa") -> list[Scorer]:
    """The registered scorers of a stage, in column order."""
    found = [SCORERS.get(name) for name in SCORERS.names()]
    return sorted((s for s in found if s.stage == stage), key=lambda s: (s.position, s.name))


for _scorer in (
    Scorer(
        "mem0_f1",
        lambda row: mem0_f1(row["prediction"], _gold_text(row)),
        "Mem0's lexical F1 (token sets after lowercasing and . , ! ? removal); categories 1-4",
        owner="mem0",
        stage="autorater",
        position=40,
    ),
    Scorer(
        "mem0_bleu1",
        lambda row: mem0_bleu1(row["prediction"], _gold_text(row)),
        "Mem0's BLEU-1 (NLTK sentence_bleu, weights (1,0,0,0), smoothing method1); categories 1-4",
        owner="mem0",
        stage="autorater",
        position=50,
    ),
):
    SCORERS.add(_scorer.name, _scorer)

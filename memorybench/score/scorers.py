"""Scorers as specs: one registered entry per per-question score a pack reports.

A `Scorer` says how to score one stored answer, how rows aggregate, how the number is
labelled and whose rule it is (LoCoMo's, Mem0's, or ours). The columns of
predictions.csv, the metrics of metrics.json, the score columns of
collected/examples.parquet and the MLflow metric names are derived from the scorers
with `stage="qa"`, in `position` order; a plugin adds one with `SCORERS.add(...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memorybench.registry import SCORERS
from memorybench.score.lexical import mem0_bleu1, mem0_f1
from memorybench.score.locomo import exact_match, locomo_score, token_f1


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

    def __call__(self, row: Mapping[str, Any]) -> float:
        return self.function(row)


def _gold_text(row: Mapping[str, Any]) -> str:
    return "" if row["gold"] is None else str(row["gold"])


def scorers(stage: str = "qa") -> list[Scorer]:
    """The registered scorers of a stage, in column order."""
    found = [SCORERS.get(name) for name in SCORERS.names()]
    return sorted((s for s in found if s.stage == stage), key=lambda s: (s.position, s.name))


for _scorer in (
    Scorer(
        "locomo_f1",
        lambda row: locomo_score(row["prediction"], row["gold"], row["category"]),
        "LoCoMo F1: the released task_eval/evaluation.py rules (category 5 by its refusal phrases)",
        owner="locomo",
        position=10,
    ),
    Scorer(
        "exact_match",
        lambda row: exact_match(row["prediction"], _gold_text(row)),
        "exact match after LoCoMo normalisation (ours, not LoCoMo's)",
        owner="ours",
        position=20,
    ),
    Scorer(
        "token_f1",
        lambda row: token_f1(row["prediction"], _gold_text(row)),
        "plain token F1 after LoCoMo normalisation, no category rules (ours, not LoCoMo's)",
        owner="ours",
        position=30,
    ),
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

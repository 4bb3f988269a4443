"""LoCoMo's scorers as specs (`memorybench.score.scorers.Scorer`), which its record names
(`Benchmark.scorers`) and the scorer registry takes in with Mem0's: its category F1
(`locomo_f1`, the lexical score of every benchmark's rows: a diagnostic by LoCoMo's
single-hop rule on a benchmark whose score is its judge's), and our exact match and token F1
on its normalisation. The rules themselves are `score.py`; TRACE.md's arithmetic of them,
`score_trace.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorybench.benchmarks.locomo.score import ABSTENTION_PHRASES, exact_match, locomo_score, stems, token_f1
from memorybench.score.scorers import LEXICAL, Scorer

__all__ = ["SCORERS"]


def _gold_text(row: Mapping[str, Any]) -> str:
    return "" if row["gold"] is None else str(row["gold"])


SCORERS: tuple[Scorer, ...] = (
    Scorer(
        LEXICAL,
        lambda row: locomo_score(row["prediction"], row["gold"], row["category"]),
        "LoCoMo F1: the released task_eval/evaluation.py rules (category 5 by its refusal phrases)",
        owner="locomo",
        position=10,
        tokens=stems,
        refusals=ABSTENTION_PHRASES,
        worked="memorybench.benchmarks.locomo.score_trace",
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
)

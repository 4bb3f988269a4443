"""Local scorers over stored answers: LoCoMo's F1 (official port) and Mem0's lexical metrics.

None of these calls a model. The LLM judge lives beside them in its own module.
"""

from __future__ import annotations

from memorybench.score.lexical import mem0_bleu1, mem0_f1
from memorybench.score.locomo import exact_match, locomo_score, token_f1

from memorybench.benchmark import LOCOMO

#: LoCoMo's category numbers as its own scorer names them (one table: memorybench.benchmark)
CATEGORY_NAMES: dict[int, str] = dict(LOCOMO.category_names)

__all__ = [
    "CATEGORY_NAMES",
    "exact_match",
    "locomo_score",
    "mem0_bleu1",
    "mem0_f1",
    "token_f1",
]

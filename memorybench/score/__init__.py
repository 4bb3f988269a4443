"""Local scorers over stored answers: LoCoMo's F1 (official port) and Mem0's lexical metrics.

None of these calls a model. The LLM judge lives beside them in its own module.
"""

from __future__ import annotations

from memorybench.score.lexical import mem0_bleu1, mem0_f1
from memorybench.score.locomo import exact_match, locomo_score, token_f1

#: LoCoMo's category numbers as its own scorer names them. Mem0's paper uses other names
#: for the same numbers, so tables print the number beside the name.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

__all__ = [
    "CATEGORY_NAMES",
    "exact_match",
    "locomo_score",
    "mem0_bleu1",
    "mem0_f1",
    "token_f1",
]

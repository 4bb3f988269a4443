"""LoCoMo F1, Mem0 F1 and Mem0 BLEU-1 over all 1,986 real questions: rows per second.

Predictions are the gold itself and a fixed wrong answer, so every rule path runs.
Run: .venv/bin/python bench/scorer_throughput.py
"""

from __future__ import annotations

import time

from _common import report

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.data import iter_questions
from memorybench.data.pins import LOCOMO10, pin_path
from memorybench.score import locomo_score, mem0_bleu1, mem0_f1


def main() -> None:
    questions = list(iter_questions(load_locomo(pin_path(LOCOMO10))))
    rows = []
    for q in questions:
        gold = q.answer if q.answer is not None else q.adversarial_answer
        for prediction in (str(gold), "Not mentioned in the conversation"):
            rows.append((prediction, q.answer, q.category, str(gold)))
    mem0_f1("warm", "up"), mem0_bleu1("warm", "up")  # load punkt_tab once, outside the timing
    figures = {"rows": len(rows)}
    for name, fn in (
        ("locomo_f1", lambda p, g, c, s: locomo_score(p, g, c)),
        ("mem0_f1", lambda p, g, c, s: mem0_f1(p, s)),
        ("mem0_bleu1", lambda p, g, c, s: mem0_bleu1(p, s)),
    ):
        t0 = time.perf_counter()
        for row in rows:
            fn(*row)
        elapsed = time.perf_counter() - t0
        figures[f"{name}_rows_per_s"] = round(len(rows) / elapsed)
        figures[f"{name}_seconds"] = round(elapsed, 3)
    report("scorer_throughput", figures)


if __name__ == "__main__":
    main()

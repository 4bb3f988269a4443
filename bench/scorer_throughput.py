"""LoCoMo F1, Mem0 F1 and Mem0 BLEU-1 over all 1,986 real questions, as a ratio to a plain loop.

Predictions are the gold itself and a fixed wrong answer, so every rule path runs.
The yardstick, measured in the same run (issue 45): a plain Python loop over the same rows
that computes the textbook token F1 (lowercase, split on whitespace, `Counter` overlap), with
no punctuation rules, stemming or tokenizer. `scorer / plain loop` is what a scorer's rules
cost beyond the least a token-overlap score does, on any machine. Each scorer first makes one
untimed pass (NLTK's data loaded, the stem cache filled, as in a process that scores a pack),
then rounds alternate the plain loop and the scorer; the ratio of their CPU seconds is taken
round by round (median, min and max printed). Rows per CPU second stay beside it.

Run: .venv/bin/python bench/scorer_throughput.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Sequence

from _common import report, spread

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.data import iter_questions
from memorybench.benchmarks.locomo.pins import LOCOMO10
from memorybench.data.pins import pin_path
from memorybench.benchmarks.locomo.score import locomo_score
from memorybench.score.lexical import mem0_bleu1, mem0_f1

Row = tuple[str, object, int, str]


def plain_f1(prediction: str, gold: str) -> float:
    """The yardstick: token F1 on lowercased whitespace tokens, nothing else."""
    p, g = prediction.lower().split(), gold.lower().split()
    same = sum((Counter(p) & Counter(g)).values())
    if not same:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def seconds(fn: Callable[[str, object, int, str], float], rows: Sequence[Row]) -> float:
    """CPU seconds of this process over the rows (time the machine gave to other work is not counted)."""
    t0 = time.process_time()
    for row in rows:
        fn(*row)
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="plain loop + scorer pairs per scorer")
    ns = parser.parse_args()
    questions = list(iter_questions(load_locomo(pin_path(LOCOMO10))))
    rows: list[Row] = []
    for q in questions:
        gold = q.answer if q.answer is not None else q.adversarial_answer
        for prediction in (str(gold), "Not mentioned in the conversation"):
            rows.append((prediction, q.answer, q.category, str(gold)))
    figures: dict[str, object] = {
        "rows": len(rows),
        "rounds": ns.rounds,
        "yardstick": "a plain loop over the same rows: token F1 of lowercased whitespace tokens (Counter overlap)",
    }

    def plain(p: str, g: object, c: int, s: str) -> float:
        return plain_f1(p, s)

    plain_s: list[float] = []
    for name, fn in (
        ("locomo_f1", lambda p, g, c, s: locomo_score(p, g, c)),
        ("mem0_f1", lambda p, g, c, s: mem0_f1(p, s)),
        ("mem0_bleu1", lambda p, g, c, s: mem0_bleu1(p, s)),
    ):
        first = seconds(fn, rows)  # NLTK's data, the stem cache: once per process
        ratios, elapsed = [], []
        for _ in range(ns.rounds):
            base = seconds(plain, rows)
            took = seconds(fn, rows)
            plain_s.append(base)
            elapsed.append(took)
            ratios.append(took / base)
        figures[f"{name}: ratio_to_plain_loop"] = spread(ratios, 2)
        figures[f"{name}: rows_per_s"] = spread([len(rows) / s for s in elapsed], 0)
        figures[f"{name}: first_pass_cpu_s (loads, caches)"] = round(first, 3)
        print(f"{name}: {statistics_line(ratios)}", flush=True)
    figures["plain_loop: rows_per_s"] = spread([len(rows) / s for s in plain_s], 0)
    report("scorer_throughput", figures)


def statistics_line(ratios: Sequence[float]) -> str:
    return "x the plain loop, per round: " + ", ".join(f"{r:.1f}" for r in ratios)


if __name__ == "__main__":
    main()

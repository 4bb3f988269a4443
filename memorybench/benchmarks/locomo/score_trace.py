"""LoCoMo's F1 of one answer worked out step by step, for TRACE.md's scorer side
(`memorybench.pack.trace_md`): the category's rule in words, the tokens after normalisation
and Porter stemming, their overlap, precision, recall and F1, as `score.py` computes them.
The lexical scorer's spec names this module (`Scorer.worked`).
"""

from __future__ import annotations

from collections import Counter

from memorybench.benchmarks.locomo.score import ABSTENTION_PHRASES, locomo_score, normalize_answer, stemmed_tokens
from memorybench.errors import printable
from memorybench.pack.trace_md import quoted

__all__ = ["diagnostic_rule", "own_rule"]

#: the single-hop rule (no category rule: one token F1 of the whole answer)
PLAIN_RULE = 4
#: how the token F1 counts, in words
_COUNTED = (
    "normalise (commas and ASCII punctuation dropped, lowercase, a/an/the/and removed), split on spaces, "
    "Porter-stem, count the shared tokens."
)


def _tokens(tokens: list[str]) -> str:
    return f"{len(tokens)} token(s): " + ", ".join(f"`{printable(t)}`" for t in tokens) if tokens else "0 tokens"


def f1_arithmetic(prediction: str, gold: str, indent: str = "") -> tuple[list[str], float]:
    """LoCoMo's `f1_score` of one pair, step by step: tokens after normalisation and Porter
    stemming, their multiset overlap, precision, recall and F1 (as `score._f1_of_tokens`)."""
    pred_tokens, gold_tokens = stemmed_tokens(prediction), stemmed_tokens(gold)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    lines = [
        f"{indent}- prediction {quoted(prediction)} -> normalised {quoted(normalize_answer(prediction))} -> {_tokens(pred_tokens)}",
        f"{indent}- gold {quoted(gold)} -> normalised {quoted(normalize_answer(gold))} -> {_tokens(gold_tokens)}",
    ]
    if same == 0:
        return lines + [
            f"{indent}- overlap: no shared token, so F1 = 0.0000 (LoCoMo's rule, also when both sides are empty)"
        ], 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    f1 = 2 * precision * recall / (precision + recall)
    shared = ", ".join(f"`{printable(t)}`" + (f" x{n}" if n > 1 else "") for t, n in common.items())
    return lines + [
        f"{indent}- overlap (shared tokens, with repeats): {same} ({shared})",
        f"{indent}- precision = overlap / prediction tokens = {same}/{len(pred_tokens)} = {precision:.4f}; "
        f"recall = overlap / gold tokens = {same}/{len(gold_tokens)} = {recall:.4f}",
        f"{indent}- F1 = 2 x precision x recall / (precision + recall) = {f1:.4f}",
    ], f1


def own_rule(prediction: str | None, gold: str | int | None, category: int, name: str) -> tuple[list[str], float | None]:
    """A LoCoMo question's F1 by its category's rule (`name`: the category's name), worked out;
    None as the score where there is no gold or no answer to work it out on."""
    lines: list[str] = []
    if category == 5:
        phrases = " or ".join(repr(p) for p in ABSTENTION_PHRASES)
        found = [p for p in ABSTENTION_PHRASES if p in (prediction or "").lower()]
        computed = 1.0 if found else 0.0
        return [
            f"- Rule (LoCoMo, category 5, {name}): the gold is ignored; the score is 1 if the lowercased prediction "
            f"contains {phrases}, else 0.",
            f"- The prediction contains {', '.join(repr(p) for p in found) if found else 'neither phrase'}: "
            f"LoCoMo F1 = {computed:.4f}.",
        ], computed
    if gold is None or prediction is None:
        return ["- No gold or no prediction: LoCoMo's rule cannot be worked out here."], None
    if category == 1:
        parts_p = [x.strip() for x in prediction.split(",")]
        parts_g = [x.strip() for x in str(gold).split(",")]
        lines += [
            f"- Rule (LoCoMo, category 1, {name}): prediction and gold are split on `,`; each gold part takes its best "
            "F1 over the prediction parts; the score is the mean over the gold parts. Each F1 is LoCoMo's token F1: " + _COUNTED
        ]
        best: list[float] = []
        for number, g in enumerate(parts_g, 1):
            scored = [f1_arithmetic(p, g, "  ") for p in parts_p]
            at = max(range(len(scored)), key=lambda i: scored[i][1])
            best.append(scored[at][1])
            lines += [
                f"- gold part {number} of {len(parts_g)}: best over {len(parts_p)} prediction part(s) is part {at + 1}, "
                f"F1 {scored[at][1]:.4f}",
                *scored[at][0],
            ]
        import numpy as np  # LoCoMo's mean (pairwise summation), as score.py takes it

        computed = float(np.mean(best))
        lines.append(
            f"- LoCoMo F1 = mean of {len(best)} part(s) ({' + '.join(f'{b:.4f}' for b in best)}) / {len(best)} = {computed:.4f}."
        )
        return lines, computed
    used = str(gold).split(";")[0].strip() if category == 3 else str(gold)
    cut = f" before its first `;` ({quoted(used)})" if category == 3 else ""
    lines.append(
        f"- Rule (LoCoMo, category {category}, {name}): one token F1 of the whole prediction against the gold{cut}: " + _COUNTED
    )
    arithmetic, computed = f1_arithmetic(prediction, used)
    return lines + arithmetic + [f"- LoCoMo F1 = {computed:.4f}."], computed


def diagnostic_rule(
    prediction: str | None, gold: str | int | None, rule: int, *, whose: str, kind_word: str, name: str
) -> tuple[str, list[str], float | None]:
    """Another benchmark's question scored by LoCoMo's category `rule` (its record's
    `lexical_rules`; the single-hop rule where it names none), as a diagnostic called `name`:
    the rule in words (`whose`: which of its questions it applies to), the arithmetic, the score
    (None where there is no gold or no answer)."""
    if rule == PLAIN_RULE:
        applied = (
            f"{whose} is scored by LoCoMo's single-hop rule (`memorybench.score.rows.PLAIN_RULE`, category "
            f"{PLAIN_RULE}; no LoCoMo category rule applies, its {kind_word} numbers are not LoCoMo's "
            "categories): one token F1 of the whole prediction against the whole gold: " + _COUNTED
        )
    else:
        applied = f"{whose} is scored by LoCoMo's category {rule} rule (`Benchmark.lexical_rules`), as LoCoMo's own question is."
    if rule not in (2, PLAIN_RULE):  # a rule beyond one token F1 (commas, semicolons, refusal phrases)
        computed = locomo_score(prediction or "", gold, rule) if rule == 5 or gold is not None else None
        if computed is None:
            return applied, ["- No gold: the rule cannot be worked out here."], None
        return applied, [f"- {name} = {computed:.4f}."], computed
    if gold is None or prediction is None:
        return applied, ["- No gold or no prediction: the rule cannot be worked out here."], None
    arithmetic, computed = f1_arithmetic(prediction, str(gold))
    return applied, [*arithmetic, f"- {name} = {computed:.4f}."], computed

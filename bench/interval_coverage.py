"""Coverage of a nominal 95% interval and the paired test's false-positive rate on LoCoMo's design.

Synthetic packs with LoCoMo's ten conversations (sizes 199, 105, 193, 260, 242, 158, 190,
239, 196, 204: 1,986 questions) at intraclass correlations (ICC) 0.01 and 0.025; each
simulation draws fresh conversations and questions. Three methods, all from
`memorybench.compare.intervals`:

- question: the old question-level percentile bootstrap (questions as independent),
- cluster: the conversation-level percentile bootstrap (whole conversations resampled),
- main: the cluster-robust standard error (CR1) with t on 9 degrees of freedom.

Generating model (scores are J-like, 0 or 1 per question):

- One condition (coverage of its mean): conversation g has a success rate
  p_g ~ Beta(mu k, (1 - mu) k) with mu = 0.6 and k = 1/ICC - 1, and each of its questions
  scores Bernoulli(p_g). The ICC of the scores is then exactly ICC and the true mean is mu.
  Coverage is the share of intervals holding mu.
- Two conditions with equal true means (false positives of the paired test): conversation
  g has a difficulty p_g ~ Beta as above with ICC 0.05 (shared by both conditions) and a
  condition-by-conversation effect D_g ~ Normal(0, tau^2): A scores at p_g - D_g/2 and B at
  p_g + D_g/2. Each question draws U ~ Uniform(0, 1): A = [U < rate_A]; B uses the same U
  with probability 1/2 (a question hard for one reader tends to be hard for the other) and a
  fresh uniform otherwise. tau is solved so that the ICC of the per-question differences
  B - A equals ICC (printed, with a Monte Carlo check). A rejection is p < 0.05.

The question-level bootstrap gives an interval only (no p-value: compare and report print
none); its false-positive rate here is the share of its intervals that exclude 0.

**More designs** (issue 40), each scored by the interval the tables use for that kind of
metric (`mean_interval(kind=...)`: `main`, the CR1 t interval, for a score; `rate`,
Korn-Graubard's, for a rate; the other beside it for comparison), coverage of the true mean
over `--sims` draws, plus the paired test's false positives where a pair is drawn:

- f1_shaped: F1-like scores (a conversation's share of exact 0s and exact 1s shifts with
  its effect, the rest Beta(2, 3)), LoCoMo's sizes, sd of the effect 0.12 and 0.2;
- sizes_1_4: J-like right/wrong scores on the categories 1-4 sizes (1,540 questions);
- per_category: category 3's sizes (9 conversations of 7-14 questions, 96 questions), a
  J-like rate and F1-shaped scores;
- rare: rates near 0 or 1 (0.03, 0.10, 0.97: a judge's acceptance of wrong answers per
  category, a gold acceptance) on the 1-4 sizes and category 1's (282 questions);
- lopsided: conversation effects with a one-sided tail (p_g = mu - (Exp(1) - 1) sd, skewness
  -2: a few conversations much worse) at ICC 0.01 and 0.025, for the mean and for the paired
  difference (the condition-by-conversation effect lopsided alike).

The pass mark is 93% coverage (and at most 7% false positives) for the method the tables
use; every scenario prints whether it meets it.

The bootstraps run with fewer resamples than the tables' 10,000 (--resamples, default
1,000) to keep the default run near 2 minutes on one core; the output says so.

Run: .venv/bin/python bench/interval_coverage.py [--sims 1000] [--resamples 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
from _common import report

from memorybench.compare.intervals import (
    Resampling,
    cluster_bootstrap_interval,
    cluster_paired_bootstrap,
    mean_interval,
    paired_difference,
    question_bootstrap_interval,
    question_paired_bootstrap,
)

SIZES = [199, 105, 193, 260, 242, 158, 190, 239, 196, 204]  # conv-26 ... conv-50, in file order
ICCS = (0.01, 0.025)
MU = 0.6
DIFFICULTY_ICC = 0.05  # spread of the conversations' shared difficulty in the paired model
SHARED_U = 0.5  # chance that B reuses A's uniform for a question
METHODS = ("question", "cluster", "main")


def beta_rates(rng: np.random.Generator, icc: float, groups: int) -> np.ndarray:
    k = 1 / icc - 1
    return rng.beta(MU * k, (1 - MU) * k, size=groups)


def tau_for(icc: float) -> float:
    """tau with ICC(B - A) = tau^2 / Var(B - A), where Var(B - A) = P(A != B)
    = SHARED_U E|D| + (1 - SHARED_U) E[2p - 2p^2 + D^2/2], E|D| = tau sqrt(2/pi)."""
    second = MU**2 + DIFFICULTY_ICC * MU * (1 - MU)  # E[p^2] under the Beta
    k_term = (1 - SHARED_U) * (2 * MU - 2 * second)
    a = 1 - icc * (1 - SHARED_U) / 2
    b = icc * SHARED_U * math.sqrt(2 / math.pi)
    return (b + math.sqrt(b * b + 4 * a * icc * k_term)) / (2 * a)


def one_condition(rng: np.random.Generator, icc: float, codes: np.ndarray) -> np.ndarray:
    rates = beta_rates(rng, icc, len(SIZES))[codes]
    return (rng.random(codes.size) < rates).astype(np.float64)


def two_conditions(rng: np.random.Generator, tau: float, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = beta_rates(rng, DIFFICULTY_ICC, len(SIZES))
    effect = rng.normal(0, tau, len(SIZES))
    rate_a = np.clip(p - effect / 2, 0, 1)[codes]
    rate_b = np.clip(p + effect / 2, 0, 1)[codes]
    u = rng.random(codes.size)
    v = np.where(rng.random(codes.size) < SHARED_U, u, rng.random(codes.size))
    return (u < rate_a).astype(np.float64), (v < rate_b).astype(np.float64)


def check_icc(rng: np.random.Generator, icc: float, tau: float, conversations: int = 400_000) -> dict[str, float]:
    """Monte Carlo ICCs: the correlation of two questions' scores (and differences) in one conversation."""
    codes = np.repeat(np.arange(conversations), 2)
    # one condition, vectorised over many two-question conversations
    rates = beta_rates(rng, icc, conversations)[codes]
    y = (rng.random(codes.size) < rates).reshape(-1, 2)
    p = beta_rates(rng, DIFFICULTY_ICC, conversations)
    effect = rng.normal(0, tau, conversations)
    ra, rb = np.clip(p - effect / 2, 0, 1)[codes], np.clip(p + effect / 2, 0, 1)[codes]
    u = rng.random(codes.size)
    v = np.where(rng.random(codes.size) < SHARED_U, u, rng.random(codes.size))
    d = ((v < rb).astype(float) - (u < ra).astype(float)).reshape(-1, 2)
    return {"scores": float(np.corrcoef(y[:, 0], y[:, 1])[0, 1]), "differences": float(np.corrcoef(d[:, 0], d[:, 1])[0, 1])}


def simulate(icc: float, sims: int, resampling: Resampling, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, round(icc * 1e6)])
    codes = np.repeat(np.arange(len(SIZES)), SIZES)
    clusters = [f"conv-{g}" for g in codes]
    tau = tau_for(icc)
    covered = dict.fromkeys(METHODS, 0)
    rejected = dict.fromkeys(METHODS, 0)
    widths: dict[str, list[float]] = {m: [] for m in METHODS}
    for sim in range(sims):
        values = one_condition(rng, icc, codes)
        intervals = {
            "question": question_bootstrap_interval(values, clusters, resampling, "coverage", icc, sim),
            "cluster": cluster_bootstrap_interval(values, clusters, resampling, "coverage", icc, sim),
            "main": mean_interval(values, clusters, confidence=resampling.confidence),
        }
        for name, got in intervals.items():
            assert got.low is not None and got.high is not None
            covered[name] += got.low <= MU <= got.high
            widths[name].append(got.high - got.low)
        a, b = two_conditions(rng, tau, codes)
        tests = {
            "question": question_paired_bootstrap(a, b, clusters, resampling, "paired", icc, sim),
            "cluster": cluster_paired_bootstrap(a, b, clusters, resampling, "paired", icc, sim),
            "main": paired_difference(a, b, clusters, confidence=resampling.confidence),
        }
        for name, diff in tests.items():
            if name == "question":  # an interval only: rejected where it excludes 0
                assert diff.low is not None and diff.high is not None
                rejected[name] += not diff.low <= 0 <= diff.high
                continue
            assert diff.p_two_sided is not None
            rejected[name] += diff.p_two_sided < 0.05
    return {
        "tau": round(tau, 5),
        "coverage": {m: covered[m] / sims for m in METHODS},
        "false_positive_rate": {m: rejected[m] / sims for m in METHODS},
        "median_width": {m: round(float(np.median(widths[m])), 5) for m in METHODS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="simulations per ICC (at least 500 for the issue's check)")
    parser.add_argument("--resamples", type=int, default=1000, help="resamples of each bootstrap (tables use 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    resampling = Resampling(resamples=args.resamples, seed=args.seed)
    started = time.perf_counter()
    print(
        f"{len(SIZES)} conversations, {sum(SIZES)} questions; {args.sims} simulations per ICC; "
        f"bootstraps with {args.resamples:,} resamples (the tables use 10,000); nominal 95%, alpha 0.05"
    )
    print(
        "methods: question = question-level percentile bootstrap (old), cluster = conversation-level "
        "percentile bootstrap, main = cluster-robust CR1 with t(9)"
    )
    mc_se = math.sqrt(0.95 * 0.05 / args.sims)
    figures: dict[str, Any] = {
        "sims": args.sims,
        "resamples": args.resamples,
        "seed": args.seed,
        "monte_carlo_se_at_95": round(mc_se, 4),
    }
    for icc in ICCS:
        result = simulate(icc, args.sims, resampling, args.seed)
        result["icc_check"] = {
            k: round(v, 4) for k, v in check_icc(np.random.default_rng(args.seed + 1), icc, float(result["tau"])).items()
        }
        figures[f"icc_{icc}"] = result
        cover, reject, width = result["coverage"], result["false_positive_rate"], result["median_width"]
        print(
            f"\nICC {icc} (tau {result['tau']}; Monte Carlo ICC of scores {result['icc_check']['scores']}, "
            f"of paired differences {result['icc_check']['differences']})"
        )
        print(f"  {'method':<9} {'coverage':>9} {'false pos.':>10} {'median width':>13}")
        for m in METHODS:
            print(f"  {m:<9} {cover[m]:>9.1%} {reject[m]:>10.1%} {width[m]:>13.4f}")
        figures[f"icc_{icc}_main_meets_target"] = cover["main"] >= PASS_COVERAGE and reject["main"] <= PASS_FALSE_POSITIVES
    figures["more_designs"] = more_designs(args.sims, args.seed)
    figures["more_designs_all_meet_target"] = all(r["meets_target"] for r in figures["more_designs"].values())
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(
        f"\ntarget for the tables' method: coverage >= {PASS_COVERAGE:.0%}, false positives <= "
        f"{PASS_FALSE_POSITIVES:.0%} (Monte Carlo SE at 95%: {mc_se:.1%})"
    )
    report("interval_coverage", figures)


# -- more designs (issue 40): F1-shaped scores, 1-4 and per-category sizes, rare rates, lopsided effects --
PASS_COVERAGE = 0.93
PASS_FALSE_POSITIVES = 0.07
SIZES_1_4 = [152, 81, 152, 199, 178, 123, 150, 191, 156, 158]  # categories 1-4 per conversation, locomo10.json
SIZES_CAT1 = [32, 11, 31, 37, 31, 30, 20, 21, 37, 32]  # category 1 (multi-hop), 282 questions
SIZES_CAT3 = [13, 8, 11, 14, 7, 13, 10, 13, 7]  # category 3 (open-domain): 9 conversations of 7-14, 96 questions


def _binary_draw(mu: float, icc: float):
    def draw(rng: np.random.Generator, codes: np.ndarray, groups: int) -> np.ndarray:
        k = 1 / icc - 1
        return (rng.random(codes.size) < rng.beta(mu * k, (1 - mu) * k, groups)[codes]).astype(np.float64)

    return draw, mu


def _f1_draw(sd: float):
    """A conversation's shares of exact 1s and 0s move with its effect e ~ Normal(0, sd);
    the remaining answers score Beta(2, 3) (mean 0.4), as partial F1s do."""

    def shares(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.clip(0.35 + e, 0.01, 0.98), np.clip(0.30 - e, 0.01, 0.98)

    def draw(rng: np.random.Generator, codes: np.ndarray, groups: int) -> np.ndarray:
        one, zero = shares(rng.normal(0, sd, groups))
        u, mid = rng.random(codes.size), rng.beta(2, 3, codes.size)
        return np.where(u < one[codes], 1.0, np.where(u < one[codes] + zero[codes], 0.0, mid))

    one, zero = shares(np.random.default_rng(7).normal(0, sd, 2_000_000))
    return draw, float(np.mean(one + 0.4 * np.clip(1 - one - zero, 0, None)))


def _lopsided_draw(mu: float, icc: float):
    """p_g = mu - (Exp(1) - 1) * sd with sd^2 = icc mu (1 - mu): the ICC of the scores is icc
    (before clipping at [0, 1]) and the conversations' rates have a long tail downwards."""
    sd = math.sqrt(icc * mu * (1 - mu))

    def rates(rng: np.random.Generator, groups: int) -> np.ndarray:
        return np.clip(mu - (rng.exponential(1.0, groups) - 1) * sd, 0, 1)

    def draw(rng: np.random.Generator, codes: np.ndarray, groups: int) -> np.ndarray:
        return (rng.random(codes.size) < rates(rng, groups)[codes]).astype(np.float64)

    return draw, float(np.mean(rates(np.random.default_rng(7), 2_000_000)))


def _lopsided_pair(icc: float):
    """Two conditions with equal true means whose condition-by-conversation effect is lopsided:
    B - A's rate per conversation is (Exp(1) - 1) * tau, the questions drawn as in `two_conditions`."""
    tau = tau_for(icc)

    def draw(rng: np.random.Generator, codes: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
        p = beta_rates(rng, DIFFICULTY_ICC, groups)
        effect = (rng.exponential(1.0, groups) - 1) * tau
        rate_a, rate_b = np.clip(p - effect / 2, 0, 1)[codes], np.clip(p + effect / 2, 0, 1)[codes]
        u = rng.random(codes.size)
        v = np.where(rng.random(codes.size) < SHARED_U, u, rng.random(codes.size))
        return (u < rate_a).astype(np.float64), (v < rate_b).astype(np.float64)

    return draw


def _f1_pair(sd: float):
    """Two conditions with equal true means: each question's F1 under A and under B, each side
    with its own conversation effects (so B - A varies between conversations)."""
    f1, _ = _f1_draw(sd)

    def draw(rng: np.random.Generator, codes: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
        a = f1(rng, codes, groups)
        b = f1(rng, codes, groups)
        return a, b

    return draw


#: (name, sizes, draw and truth, the tables' kind for it)
def _scenarios() -> list[tuple[str, list[int], Any, str]]:
    out: list[tuple[str, list[int], Any, str]] = []
    for sd in (0.12, 0.2):
        out.append((f"f1_shaped sd {sd} (1,986 q)", SIZES, _f1_draw(sd), "score"))
    for icc in ICCS:
        out.append((f"sizes_1_4 J-like mu 0.6 ICC {icc}", SIZES_1_4, _binary_draw(MU, icc), "rate"))
    out.append(("per_category cat 3 J-like mu 0.6 ICC 0.025", SIZES_CAT3, _binary_draw(MU, 0.025), "rate"))
    out.append(("per_category cat 3 f1_shaped sd 0.12", SIZES_CAT3, _f1_draw(0.12), "score"))
    for sizes, label in ((SIZES_1_4, "1-4"), (SIZES_CAT1, "cat 1")):
        for mu in (0.03, 0.10, 0.97):
            for icc in ICCS:
                out.append((f"rare {label} rate {mu} ICC {icc}", sizes, _binary_draw(mu, icc), "rate"))
    for icc in ICCS:
        out.append((f"lopsided mu 0.6 ICC {icc} (1,986 q)", SIZES, _lopsided_draw(MU, icc), "rate"))
    return out


def _pairs() -> list[tuple[str, list[int], Any]]:
    return [
        *((f"lopsided pair ICC(B-A) {icc} (1,986 q)", SIZES, _lopsided_pair(icc)) for icc in ICCS),
        ("f1_shaped pair sd 0.12 (1,986 q)", SIZES, _f1_pair(0.12)),
        ("per_category cat 3 f1_shaped pair sd 0.12", SIZES_CAT3, _f1_pair(0.12)),
    ]


def more_designs(sims: int, seed: int) -> dict[str, Any]:
    """Coverage of the t (`main`) and rate (`rate`) intervals per scenario, and the paired test's
    false positives per pair design; `meets_target` for the interval the tables use."""
    print(f"\nmore designs ({sims} simulations each; * = the interval the tables use for this kind of metric)")
    print(f"  {'scenario':<46} {'truth':>7} {'main':>7} {'rate':>7} {'median width':>13}  meets {PASS_COVERAGE:.0%}")
    out: dict[str, Any] = {}
    for index, (name, sizes, (draw, truth), kind) in enumerate(_scenarios()):
        rng = np.random.default_rng([seed, 40, index])
        codes = np.repeat(np.arange(len(sizes)), sizes)
        covered = {"score": 0, "rate": 0}
        widths: list[float] = []
        for _ in range(sims):
            values = draw(rng, codes, len(sizes))
            for method in covered:
                got = mean_interval(values, codes, kind=method)
                assert got.low is not None and got.high is not None
                covered[method] += got.low <= truth <= got.high
                if method == kind:
                    widths.append(got.high - got.low)
        cover = {m: covered[m] / sims for m in covered}
        meets = cover[kind] >= PASS_COVERAGE
        marks = {m: "*" if m == kind else " " for m in covered}
        print(
            f"  {name:<46} {truth:>7.4f} {cover['score']:>6.1%}{marks['score']} {cover['rate']:>6.1%}{marks['rate']} "
            f"{float(np.median(widths)):>13.4f}  {'yes' if meets else 'NO'}"
        )
        out[name] = {
            "truth": round(truth, 5),
            "sizes": sizes,
            "kind": kind,
            "coverage_main": cover["score"],
            "coverage_rate": cover["rate"],
            "median_width": round(float(np.median(widths)), 5),
            "meets_target": meets,
        }
    print(f"  {'pair design (true difference 0)':<46} {'false positives of the paired t test (main)':>44}")
    for index, (name, sizes, draw) in enumerate(_pairs()):
        rng = np.random.default_rng([seed, 41, index])
        codes = np.repeat(np.arange(len(sizes)), sizes)
        rejected = 0
        for _ in range(sims):
            a, b = draw(rng, codes, len(sizes))
            diff = paired_difference(a, b, codes)
            assert diff.p_two_sided is not None
            rejected += diff.p_two_sided < 0.05
        rate = rejected / sims
        meets = rate <= PASS_FALSE_POSITIVES
        print(f"  {name:<46} {rate:>44.1%}  {'yes' if meets else 'NO'}")
        out[name] = {"sizes": sizes, "false_positive_rate": rate, "meets_target": meets}
    return out


if __name__ == "__main__":
    main()

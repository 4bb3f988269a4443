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
    return {"scores": float(np.corrcoef(y[:, 0], y[:, 1])[0, 1]),
            "differences": float(np.corrcoef(d[:, 0], d[:, 1])[0, 1])}


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
    parser.add_argument("--sims", type=int, default=1000,
                        help="simulations per ICC (at least 500 for the issue's check)")
    parser.add_argument("--resamples", type=int, default=1000, help="resamples of each bootstrap (tables use 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    resampling = Resampling(resamples=args.resamples, seed=args.seed)
    started = time.perf_counter()
    print(f"{len(SIZES)} conversations, {sum(SIZES)} questions; {args.sims} simulations per ICC; "
          f"bootstraps with {args.resamples:,} resamples (the tables use 10,000); nominal 95%, alpha 0.05")
    print("methods: question = question-level percentile bootstrap (old), cluster = conversation-level "
          "percentile bootstrap, main = cluster-robust CR1 with t(9)")
    mc_se = math.sqrt(0.95 * 0.05 / args.sims)
    figures: dict[str, Any] = {"sims": args.sims, "resamples": args.resamples, "seed": args.seed,
                                  "monte_carlo_se_at_95": round(mc_se, 4)}
    for icc in ICCS:
        result = simulate(icc, args.sims, resampling, args.seed)
        result["icc_check"] = {k: round(v, 4) for k, v in check_icc(np.random.default_rng(args.seed + 1), icc,
                                                                     float(result["tau"])).items()}
        figures[f"icc_{icc}"] = result
        cover, reject, width = result["coverage"], result["false_positive_rate"], result["median_width"]
        print(f"\nICC {icc} (tau {result['tau']}; Monte Carlo ICC of scores {result['icc_check']['scores']}, "
              f"of paired differences {result['icc_check']['differences']})")
        print(f"  {'method':<9} {'coverage':>9} {'false pos.':>10} {'median width':>13}")
        for m in METHODS:
            print(f"  {m:<9} {cover[m]:>9.1%} {reject[m]:>10.1%} {width[m]:>13.4f}")
        figures[f"icc_{icc}_main_meets_target"] = cover["main"] >= 0.92 and reject["main"] <= 0.07
    figures["seconds"] = round(time.perf_counter() - started, 1)
    print(f"\ntarget for main: coverage >= 92%, false positives <= 7% (Monte Carlo SE at 95%: {mc_se:.1%})")
    report("interval_coverage", figures)


if __name__ == "__main__":
    main()

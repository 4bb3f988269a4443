"""Intervals and paired tests that respect LoCoMo's design: questions sit in conversations.

LoCoMo's questions are not independent draws: each of its 10 conversations has its own
memory, and scores correlate inside a conversation. The unit of resampling is therefore
the conversation (the cluster, a row's ``sample_id``), not the question.

**Main method** (`mean_interval`, `paired_difference`): the cluster-robust standard error
of a mean. The mean of N scores in G conversations of unequal size is a ratio estimator,
sum of scores over number of questions; its residuals ``e = y - mean`` are summed per
conversation and

    SE^2 = G / (G - 1) * sum_g (sum_{i in g} e_i)^2 / N^2        (CR1)

The interval is ``mean +/- t(1 - alpha/2, G - 1) * SE``, cut at the scores' range [0, 1]
(the record's note says so when it is; a mean of shares cannot leave it, the symmetric t
interval can with few clusters), and a paired comparison's p-value
is two-sided from t with G - 1 degrees of freedom. A paired comparison keeps each
question's A and B together: the per-question differences B - A are formed first and
their mean gets the same interval. With fewer than two conversations nothing about the
spread between conversations can be estimated, and the record says so instead of
printing an interval. **A rate** (`kind="rate"`: a judge's verdicts, an acceptance or
refusal share; chosen by the metric, never by the values seen) gets an interval that stays
inside [0, 1] and keeps a width at 0 or 1: Wilson's for independent questions
(LongMemEval), Korn-Graubard's (Clopper-Pearson with a design effect) for questions in
conversations (`memorybench.compare.rates`).

**Minimum detectable difference** (`minimum_detectable_difference`, `Difference.mdd`):
the true difference that this design (these conversations, these questions) detects with
the given power (80%) at the given two-sided alpha, from the observed
between-conversation variance of the differences:
``MDD = (t(1 - alpha/2, G - 1) + t(power, G - 1)) * SE_diff``. It is a statement about
power, not a threshold of significance: an observed difference below it can be
significant (it is then detected, by a design that would often miss it), and one above it
can fail to be (`mdd_sentence` says which, in words).

**Several tests in one table** (`holm`): where a table tests several categories, their
p-values are adjusted by Holm's step-down method over that family (the tests of one
metric in one comparison), and the table says which family it covers.

**Alternatives, labelled as such.** A question-level percentile bootstrap
(`question_bootstrap_interval`, `question_paired_bootstrap`) treats the questions as
independent; it describes these N conversations only and its label says "conditional on
these N conversations". It gives an interval only, never a p-value (a test that ignores
the conversations rejects a true null far too often). A conversation-level percentile bootstrap
(`cluster_bootstrap_interval`, `cluster_paired_bootstrap`) resamples whole conversations;
with 10 conversations it is too narrow (a percentile interval over 10 clusters), so it
serves the coverage bench (``bench/interval_coverage.py``), not the tables.

**One seeding rule** for every resampled number: the generator is
``numpy.random.default_rng(numpy.random.SeedSequence([seed, key_digest(*key)]))``, where
the key names what is resampled (e.g. condition, category, metric). The same data, seed
and key give the same interval in ``compare`` and ``report``; adding a condition does not
move another condition's interval.

Pure numpy; scipy (the t distribution, ``scipy.stats.bootstrap``) is imported inside the
functions that need it so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from memorybench.compare.interval_math import Interval, _codes, _cr1, _plural, _t_quantile, _values
from memorybench.errors import UserError

__all__ = [
    "Difference",
    "Interval",
    "Resampling",
    "cluster_bootstrap_interval",
    "cluster_paired_bootstrap",
    "cluster_robust_se",
    "format_p",
    "holm",
    "key_digest",
    "mean_interval",
    "mdd_sentence",
    "minimum_detectable_difference",
    "p_as_json",
    "paired_difference",
    "question_bootstrap_interval",
    "question_paired_bootstrap",
    "resampling_rng",
]

DEFAULT_CONFIDENCE = 0.95
DEFAULT_POWER = 0.8
#: resampled indices are drawn this many resamples at a time (bounds memory; the
#: stream of numbers, hence every interval, does not depend on it)
_BATCH = 1000
#: an analytic p-value below this prints as "< 0.0001"
_P_FLOOR = 1e-4

NO_VALUES = "no values: nothing to estimate"
#: the range of a score (F1, BLEU-1, a judge's verdict, a mean of them), where an interval of their mean is cut
SCORE_RANGE = (0.0, 1.0)
ONE_CONVERSATION = "one conversation: no between-conversation uncertainty can be estimated"


# -- records --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resampling:
    """How every resampled interval and p-value is drawn."""

    #: resamples per interval; a resampled p-value cannot resolve below 1 / resamples
    resamples: int = 10_000
    #: the base seed; the key of each interval is mixed in (`resampling_rng`)
    seed: int = 0
    #: the central share of the resampled statistics the interval covers
    confidence: float = DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise UserError(f"resamples={self.resamples} must be at least 1 (e.g. 10000)")
        if self.seed < 0:
            raise UserError(f"seed={self.seed} must be 0 or more")
        _check_confidence(self.confidence)


@dataclass(frozen=True)
class Difference:
    """B minus A, paired by question: the mean difference, its interval, p-value and MDD."""

    #: mean of condition A and of condition B over the paired questions
    a: float | None
    b: float | None
    #: mean of the per-question differences B - A (= b - a)
    difference: float | None
    low: float | None
    high: float | None
    #: two-sided p-value for "no difference"
    p_two_sided: float | None
    #: 1 / resamples for a resampled p-value (it cannot resolve below this); None for analytic
    p_resolution: float | None
    #: minimum detectable difference (main method only; None for the resampled alternatives)
    mdd: float | None
    n: int
    clusters: int
    confidence: float
    method: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form: a resampled p below its resolution is stored as that bound, never 0.0."""
        data = asdict(self)
        data.update(p_as_json(self.p_two_sided, self.p_resolution))
        return data


# -- helpers --------------------------------------------------------------------------------
def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise UserError(f"confidence={confidence} must be between 0 and 1 (e.g. 0.95)")


def _check_power(power: float) -> None:
    if not 0 < power < 1:
        raise UserError(f"power={power} must be between 0 and 1 (e.g. 0.8)")


def _paired(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, y = _values(a, "a"), _values(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} and {y.size}")
    return x, y


def _one(unit: str) -> str:
    """The note of an interval over one cluster: ONE_CONVERSATION for LoCoMo's unit."""
    return ONE_CONVERSATION if unit == "conversation" else f"one {unit}: no between-{unit} uncertainty can be estimated"


def key_digest(*key: Any) -> int:
    """A stable 64-bit digest of a key (its parts as text), the same on every machine and run."""
    text = "\x1f".join(str(part) for part in key)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def resampling_rng(resampling: Resampling, *key: Any) -> np.random.Generator:
    """The generator for one resampled interval: seeded from the base seed and the key only."""
    return np.random.default_rng(np.random.SeedSequence([resampling.seed, key_digest(*key)]))


# -- main method: cluster-robust standard error -------------------------------------------------
def cluster_robust_se(values: Sequence[float], clusters: Sequence[Hashable]) -> float | None:
    """CR1 standard error of the mean of `values`; None with fewer than two conversations."""
    data = _values(values)
    codes, groups = _codes(clusters, data.size)
    if groups < 2:
        return None
    return _cr1(data, codes, groups)[1]


def minimum_detectable_difference(
    se: float | None,
    clusters: int,
    *,
    alpha: float = 0.05,
    power: float = DEFAULT_POWER,
) -> float | None:
    """(t(1 - alpha/2, G-1) + t(power, G-1)) * se: the smallest true difference detected with
    `power` by a two-sided test at `alpha`; None with fewer than two conversations."""
    _check_confidence(1 - alpha)
    _check_power(power)
    if se is None or clusters < 2:
        return None
    df = clusters - 1
    return (_t_quantile(1 - alpha / 2, df) + _t_quantile(power, df)) * se


def _main_label(groups: int, unit: str = "conversation") -> str:
    if groups < 2:
        return f"cluster-robust t (CR1), {_plural(groups, unit)}"
    return f"cluster-robust t (CR1), {_plural(groups, unit)}, {groups - 1} df"


#: what a metric is, which decides its interval: a `score` (F1, BLEU-1, a diagnostic, a mean of
#: scores) gets the cluster-robust t interval; a `rate` (the share of a yes/no event: a judge's
#: verdicts, an acceptance or refusal share) one that stays in [0, 1] (`memorybench.compare.rates`)
KINDS = ("score", "rate")


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    unit: str = "conversation",
    kind: str = "score",
) -> Interval:
    """The mean of `values` (one per question) with its interval: for a `score`, the
    cluster-robust t interval, cut at [0, 1] (noted); for a `rate`, Wilson's (independent
    questions) or Korn-Graubard's (questions in conversations), by the metric's kind and never
    by the values seen.

    `clusters` gives each question's conversation (``sample_id``; `unit` names what a
    cluster is: the benchmark's resampling unit, `memorybench.benchmark`). With one
    cluster the interval is None and `note` says why (a rate of one independent question
    still has Wilson's).
    """
    _check_confidence(confidence)
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: a metric is one of {', '.join(KINDS)}")
    data = _values(values)
    codes, groups = _codes(clusters, data.size)
    method = _main_label(groups, unit)
    if data.size == 0:
        return Interval(None, None, None, 0, 0, confidence, method, NO_VALUES)
    if kind == "rate" and (groups >= 2 or groups == data.size):
        from memorybench.compare.rates import clustered_rate_interval

        return clustered_rate_interval(data, clusters, confidence=confidence, unit=unit)
    if groups < 2:
        return Interval(float(data.mean()), None, None, int(data.size), groups, confidence, method, _one(unit))
    mean, se = _cr1(data, codes, groups)
    half = _t_quantile((1 + confidence) / 2, groups - 1) * se
    low, high = mean - half, mean + half
    note = None
    if se == 0:
        note = f"every score is {mean:g}: no spread between {unit}s, so the t interval has no width"
    elif _shares(data) and (low < SCORE_RANGE[0] or high > SCORE_RANGE[1]):
        # scores in [0, 1] have their mean there: the symmetric t interval is cut at the range
        # (differences of scores, in [-1, 1], are not shares and are left as they are)
        low, high = max(low, SCORE_RANGE[0]), min(high, SCORE_RANGE[1])
        note = f"clipped to the scores' range [{SCORE_RANGE[0]:g}, {SCORE_RANGE[1]:g}]"
    return Interval(mean, low, high, int(data.size), groups, confidence, method, note)


def _shares(data: np.ndarray) -> bool:
    return bool(np.all((data >= SCORE_RANGE[0]) & (data <= SCORE_RANGE[1])))


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    power: float = DEFAULT_POWER,
    unit: str = "conversation",
) -> Difference:
    """B minus A paired by question: mean difference, cluster-robust t interval, two-sided
    p-value from t(G-1) and the minimum detectable difference at `power` and
    alpha = 1 - `confidence`. `a`, `b` and `clusters` are aligned by question."""
    _check_confidence(confidence)
    _check_power(power)
    x, y = _paired(a, b)
    codes, groups = _codes(clusters, x.size)
    method = _main_label(groups, unit)
    if x.size == 0:
        return Difference(None, None, None, None, None, None, None, None, 0, 0, confidence, method, NO_VALUES)
    diff = y - x
    a_mean, b_mean, d_mean = float(x.mean()), float(y.mean()), float(diff.mean())
    if groups < 2:
        return Difference(
            a_mean, b_mean, d_mean, None, None, None, None, None, int(x.size), groups, confidence, method, _one(unit)
        )
    from scipy import stats

    _, se = _cr1(diff, codes, groups)
    if se <= 1e-12 * max(1.0, float(np.abs(diff).max())):
        se = 0.0  # rounding noise of differences that are equal in every conversation
    df = groups - 1
    half = _t_quantile((1 + confidence) / 2, df) * se
    note = None
    if se > 0:
        p = float(min(1.0, 2 * stats.t.sf(abs(d_mean) / se, df)))
    else:
        # every conversation's differences sum to the same share: no spread to test against
        p = 1.0 if d_mean == 0 else 0.0
        note = f"the differences do not vary between {unit}s: the t test is degenerate"
    mdd = minimum_detectable_difference(se, groups, alpha=1 - confidence, power=power)
    return Difference(
        a_mean, b_mean, d_mean, d_mean - half, d_mean + half, p, None, mdd, int(x.size), groups, confidence, method, note
    )


# -- alternatives: percentile bootstraps ------------------------------------------------------
def _percentile(means: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def _tail_p(means: np.ndarray) -> float:
    """Two-sided bootstrap p-value: twice the smaller share at or beyond zero, capped at 1."""
    return float(min(1.0, 2 * min(np.mean(means <= 0), np.mean(means >= 0))))


def _question_means(data: np.ndarray, resampling: Resampling, key: tuple[Any, ...]) -> np.ndarray:
    """`resamples` means of `data` resampled question by question (needs data.size >= 2).

    scipy's percentile bootstrap draws ``rng.integers(0, n, (batch, n))`` per batch, the same
    stream as a hand-written resampler, and its ``bootstrap_distribution`` and interval match
    ``numpy.quantile`` of those means exactly (checked with scipy 1.17), so scipy does it.
    """
    from scipy import stats

    rng = resampling_rng(resampling, *key)
    result = stats.bootstrap(
        (data,),
        np.mean,
        n_resamples=resampling.resamples,
        batch=_BATCH,
        vectorized=True,
        method="percentile",
        confidence_level=resampling.confidence,
        rng=rng,
    )  # scipy>=1.15
    return np.asarray(result.bootstrap_distribution, dtype=np.float64)


def _question_label(resampling: Resampling, groups: int, paired: bool, unit: str = "conversation") -> str:
    kind = "paired question-level" if paired else "question-level"
    return f"{kind} percentile bootstrap ({resampling.resamples:,} resamples), conditional on these {_plural(groups, unit)}"


def question_bootstrap_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    resampling: Resampling,
    *key: Any,
    unit: str = "conversation",
) -> Interval:
    """Percentile bootstrap over questions as if independent: an interval for these
    conversations only (the label says so). `clusters` only counts the conversations."""
    data = _values(values)
    _, groups = _codes(clusters, data.size)
    method = _question_label(resampling, groups, paired=False, unit=unit)
    if data.size == 0:
        return Interval(None, None, None, 0, 0, resampling.confidence, method, NO_VALUES)
    mean = float(data.mean())
    if data.size == 1:  # every resample is the one value
        return Interval(mean, mean, mean, 1, groups, resampling.confidence, method, "one question")
    low, high = _percentile(_question_means(data, resampling, key), resampling.confidence)
    return Interval(mean, low, high, int(data.size), groups, resampling.confidence, method)


def question_paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    resampling: Resampling,
    *key: Any,
    unit: str = "conversation",
) -> Difference:
    """B minus A, question ids resampled with each question's A and B together: an interval
    conditional on these conversations, and no p-value (a test over questions as if
    independent rejects a true null far too often on clustered data) and no MDD (that needs
    the between-conversation variance)."""
    x, y = _paired(a, b)
    _, groups = _codes(clusters, x.size)
    method = _question_label(resampling, groups, paired=True, unit=unit)
    if x.size == 0:
        return Difference(None, None, None, None, None, None, None, None, 0, 0, resampling.confidence, method, NO_VALUES)
    diff = y - x
    d_mean = float(diff.mean())
    if x.size == 1:
        means = np.full(resampling.resamples, d_mean)
    else:
        means = _question_means(diff, resampling, key)
    low, high = _percentile(means, resampling.confidence)
    return Difference(
        float(x.mean()),
        float(y.mean()),
        d_mean,
        low,
        high,
        None,
        None,
        None,
        int(x.size),
        groups,
        resampling.confidence,
        method,
        "one question" if x.size == 1 else None,
    )


def _cluster_means(sums: np.ndarray, sizes: np.ndarray, resampling: Resampling, key: tuple[Any, ...]) -> np.ndarray:
    """`resamples` means over conversations drawn with replacement, each with all its questions."""
    rng = resampling_rng(resampling, *key)
    groups = sums.size
    out = np.empty(resampling.resamples, dtype=np.float64)
    for start in range(0, resampling.resamples, _BATCH):
        size = min(_BATCH, resampling.resamples - start)
        idx = rng.integers(0, groups, size=(size, groups))
        out[start : start + size] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    return out


def _cluster_label(resampling: Resampling, groups: int, paired: bool) -> str:
    kind = "paired conversation-level" if paired else "conversation-level"
    return f"{kind} percentile bootstrap ({resampling.resamples:,} resamples), {_plural(groups)}"


def cluster_bootstrap_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    resampling: Resampling,
    *key: Any,
) -> Interval:
    """Percentile bootstrap resampling whole conversations (computed on per-conversation
    sums and sizes). Too narrow with few conversations; kept for the coverage bench."""
    data = _values(values)
    codes, groups = _codes(clusters, data.size)
    method = _cluster_label(resampling, groups, paired=False)
    if data.size == 0:
        return Interval(None, None, None, 0, 0, resampling.confidence, method, NO_VALUES)
    mean = float(data.mean())
    if groups < 2:
        return Interval(mean, None, None, int(data.size), groups, resampling.confidence, method, ONE_CONVERSATION)
    sums = np.bincount(codes, weights=data, minlength=groups)
    sizes = np.bincount(codes, minlength=groups).astype(np.float64)
    low, high = _percentile(_cluster_means(sums, sizes, resampling, key), resampling.confidence)
    return Interval(mean, low, high, int(data.size), groups, resampling.confidence, method)


def cluster_paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    resampling: Resampling,
    *key: Any,
) -> Difference:
    """B minus A, whole conversations resampled with every question's A and B together."""
    x, y = _paired(a, b)
    codes, groups = _codes(clusters, x.size)
    method = _cluster_label(resampling, groups, paired=True)
    if x.size == 0:
        return Difference(None, None, None, None, None, None, None, None, 0, 0, resampling.confidence, method, NO_VALUES)
    diff = y - x
    a_mean, b_mean, d_mean = float(x.mean()), float(y.mean()), float(diff.mean())
    if groups < 2:
        return Difference(
            a_mean,
            b_mean,
            d_mean,
            None,
            None,
            None,
            None,
            None,
            int(x.size),
            groups,
            resampling.confidence,
            method,
            ONE_CONVERSATION,
        )
    sums = np.bincount(codes, weights=diff, minlength=groups)
    sizes = np.bincount(codes, minlength=groups).astype(np.float64)
    means = _cluster_means(sums, sizes, resampling, key)
    low, high = _percentile(means, resampling.confidence)
    return Difference(
        a_mean,
        b_mean,
        d_mean,
        low,
        high,
        _tail_p(means),
        1 / resampling.resamples,
        None,
        int(x.size),
        groups,
        resampling.confidence,
        method,
    )


# -- several tests, and what the MDD says -------------------------------------------------------
def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values of one family of tests (None stays None and is not
    counted): the i-th smallest of m is multiplied by m - i + 1, made non-decreasing, capped
    at 1. A test is rejected at alpha exactly when its adjusted p is below alpha."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def mdd_sentence(
    difference: float | None,
    p: float | None,
    mdd: float,
    clusters: int,
    *,
    unit: str = "conversation",
    alpha: float = 0.05,
    power: float = DEFAULT_POWER,
) -> str:
    """What the MDD is, in words, and how the observed difference stands to it: never calls a
    significant difference noise, nor a non-significant one evidence of no difference."""
    what = (
        f"minimum detectable difference {mdd:.4f}: the true difference this design ({_plural(clusters, unit)}) "
        f"detects with {power:.0%} power at two-sided alpha {alpha:g}"
    )
    if difference is None or p is None:
        return what
    if p < alpha:
        if abs(difference) < mdd:
            return f"{what}; this difference is significant although smaller than it"
        return f"{what}; this difference is significant"
    return (
        f"{what}; this difference is not significant, which does not show there is none "
        f"(a true difference below the MDD is detected with less than {power:.0%} power)"
    )


# -- printing p-values ------------------------------------------------------------------------
def format_p(p: float | None, resolution: float | None) -> str:
    """A p-value for people: "< 1/N" below a resampling's resolution 1/N, "< 0.0001" for a
    tiny analytic p, otherwise 4 decimals; "n/a" when there is none."""
    if p is None:
        return "n/a"
    if resolution is not None and p < resolution:
        return f"< 1/{round(1 / resolution)}"
    if p < _P_FLOOR:
        return "< 0.0001"
    return f"{p:.4f}"


def p_as_json(p: float | None, resolution: float | None) -> dict[str, Any]:
    """A p-value for JSON: a resampled p below its resolution is stored as the bound
    (``p_two_sided`` = resolution, ``p_upper_bound`` true), never as 0.0; ``p_text`` is
    what `format_p` prints."""
    bound = p is not None and resolution is not None and p < resolution
    return {
        "p_two_sided": resolution if bound else p,
        "p_upper_bound": bound,
        "p_resolution": resolution,
        "p_text": format_p(p, resolution),
    }

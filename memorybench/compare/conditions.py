"""Compare finished packs: seeds of one config, and two conditions question by question.

Pure numpy and stdlib over the packs' stored files; no model call, nothing written into
a pack. Everything random comes from ``numpy.random.default_rng(seed)``, so the same
packs, resamples and seed give the same numbers on any machine.

Two numbers are compared: LoCoMo F1 (every question, category 5 included, as the pack's
``metrics.json``) and Mem0's J (category 1-4 questions, from ``autorater/``, only when
every pack has a finished autorater judged by the same judge).

**Seeds of one config** (`seed_summary`): the packs must share their config except the
``seed`` keys (and the judge group, which does not change what ``qa`` wrote) and hold
the same question ids. Reported per metric: each pack's own value, their mean and sample
standard deviation (n-1), and a percentile bootstrap interval of the mean over
questions: a question's score is its mean over the packs (and, for J, over the passes
with a parsed label); questions are resampled with replacement ``resamples`` times
(default 10,000) and the interval is the central ``confidence`` share (default 95%) of
the resampled means. The sd shows run-to-run noise; the interval shows how much the
number depends on which questions LoCoMo happens to hold.

**Two conditions** (`paired_difference`): condition B minus condition A over the same
question ids (each condition one pack or several seeds, averaged per question as above).
The paired bootstrap resamples question ids, keeping each question's A and B together,
and reports the mean difference, its percentile interval, the share of resampled
differences above zero and a two-sided bootstrap p-value (2 x the smaller tail share,
capped at 1). J is compared over the questions with a parsed label in both conditions.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memorybench.errors import OneLineParser, UserError, report
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import require_pack_folder

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "PackScores",
    "bootstrap_interval",
    "compare_main",
    "format_compare",
    "load_pack_scores",
    "paired_bootstrap",
    "paired_difference",
    "seed_summary",
]

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
#: resampled means computed per numpy batch (bounds memory: batch x questions indices)
_BATCH = 500
METRICS = ("locomo_f1", "j")
#: top-level config keys that do not make two packs different experiments here
_IGNORED_KEYS = frozenset({"judge"})


@dataclass
class PackScores:
    """Per-question scores of one finished pack."""

    #: the pack folder, or the `gs://` URI it was read from
    root: Path | str
    run_id: str | None
    #: the identity config without seed keys and the judge group
    config: dict[str, Any]
    question_ids: list[str]
    categories: dict[str, int]
    locomo_f1: dict[str, float]
    #: per-question J: mean score over the passes with a parsed label (categories 1-4);
    #: None when the pack has no finished autorater
    j: dict[str, float] | None = None
    #: the pack's own reported numbers (metrics.json and autorater_metrics.json)
    reported: dict[str, float | None] = field(default_factory=dict)
    judge_identity: dict[str, Any] | None = None


def _strip_seeds(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip_seeds(v) for k, v in data.items() if k != "seed"}
    if isinstance(data, list):
        return [_strip_seeds(v) for v in data]
    return data


def _config_of(pack: PackReader, root: Path) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from memorybench.run_id import identity_config

    if not pack.exists(layout.CONFIG):
        raise UserError(f"pack {root} has no {layout.CONFIG}; pass a finished pack folder")
    identity = identity_config(OmegaConf.create(pack.read_text(layout.CONFIG)))
    return _strip_seeds({k: v for k, v in identity.items() if k not in _IGNORED_KEYS})


def _judge_of(pack: PackReader, judge: str | None) -> str | None:
    """The judge whose J is compared: the one asked for, else the pack's only one. A pack
    with several judges and no choice is a one-line error: J is compared under one judge."""
    judges = pack.judges()
    if judge is not None:
        if judge not in judges:
            raise UserError(f"pack {pack.uri()} has no finished judge {judge!r}; its judges: {', '.join(judges) or 'none'}")
        return judge
    if len(judges) > 1:
        raise UserError(f"pack {pack.uri()} has {len(judges)} judges ({', '.join(judges)}); pass --judge ID to compare J under one")
    return judges[0] if judges else None


def load_pack_scores(pack_root: str | Path, judge: str | None = None) -> PackScores:
    """Read a finished pack's per-question LoCoMo F1 and, if judged, per-question J (of
    `judge`, or of the pack's only judge).

    The pack's own reported numbers (`reported`) are its run summary's (`memorybench.compare.summary`):
    LoCoMo F1 from metrics.json, J from that judge's autorater_metrics.json.
    """
    from memorybench.pack.scores import compute_scores
    from memorybench.compare.summary import judge_key, run_summary

    root = require_pack_folder(pack_root)
    pack = PackReader.open(root)
    if not pack.is_complete():
        raise UserError(f"pack {root} is not finished (no {layout.SUCCESS}); finish it with its `memorybench qa` command first")
    rows, _ = compute_scores(root)
    summary = run_summary(pack)
    scores = PackScores(
        root=root,
        run_id=summary["run_id"],
        config=_config_of(pack, root),
        question_ids=[r["question_id"] for r in rows],
        categories={r["question_id"]: int(r["category"]) for r in rows},
        locomo_f1={r["question_id"]: float(r["locomo_f1"]) for r in rows},
        reported={"locomo_f1": summary["locomo_f1"]},
    )
    judge_id = _judge_of(pack, judge)
    meta = pack.autorater_meta(judge_id) if judge_id else None
    if judge_id and meta is not None:
        per_question: dict[str, list[int]] = {}
        for verdict in pack.verdicts(judge_id):
            if verdict.status in ("CORRECT", "WRONG"):
                per_question.setdefault(verdict.question_id, []).append(int(verdict.score))  # type: ignore[arg-type]
        scores.j = {q: sum(v) / len(v) for q, v in per_question.items()}
        scores.reported["j"] = summary[judge_key("j_mean", judge_id)]
        scores.judge_identity = meta.identity.model_dump(mode="json", by_alias=True)
    return scores


# -- statistics -----------------------------------------------------------------------------
def _check_resampling(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise UserError(f"resamples={resamples} must be at least 1")
    if not 0 < confidence < 1:
        raise UserError(f"confidence={confidence} must be between 0 and 1 (e.g. 0.95)")


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """`resamples` means of `values` resampled with replacement (same seed, same means)."""
    rng = np.random.default_rng(seed)
    n = len(values)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _BATCH):
        size = min(_BATCH, resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        out[start : start + size] = values[idx].mean(axis=1)
    return out


def bootstrap_interval(
    values: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Percentile bootstrap interval of the mean of `values` (one value per question)."""
    _check_resampling(resamples, confidence)
    data = np.asarray(list(values), dtype=np.float64)
    if data.size == 0:
        return {"estimate": None, "low": None, "high": None, "n": 0, "resamples": resamples, "seed": seed,
                "confidence": confidence, "method": "percentile bootstrap over questions"}
    means = _resampled_means(data, resamples, seed)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return {
        "estimate": float(data.mean()),
        "low": float(low),
        "high": float(high),
        "n": int(data.size),
        "resamples": resamples,
        "seed": seed,
        "confidence": confidence,
        "method": "percentile bootstrap over questions",
    }


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """B minus A over paired items: mean difference, percentile interval, tail shares."""
    _check_resampling(resamples, confidence)
    x, y = np.asarray(list(a), dtype=np.float64), np.asarray(list(b), dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} and {y.size}")
    result: dict[str, Any] = {"n": int(x.size), "resamples": resamples, "seed": seed, "confidence": confidence,
                              "method": "paired percentile bootstrap over questions"}
    if x.size == 0:
        return {**result, "a": None, "b": None, "difference": None, "low": None, "high": None,
                "share_above_zero": None, "p_two_sided": None}
    diff = y - x
    means = _resampled_means(diff, resamples, seed)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    above = float(np.mean(means > 0))
    below = float(np.mean(means < 0))
    at_or_below = float(np.mean(means <= 0))
    at_or_above = float(np.mean(means >= 0))
    return {
        **result,
        "a": float(x.mean()),
        "b": float(y.mean()),
        "difference": float(diff.mean()),
        "low": float(low),
        "high": float(high),
        "share_above_zero": above,
        "share_below_zero": below,
        "p_two_sided": min(1.0, 2 * min(at_or_below, at_or_above)),
    }


# -- packs ---------------------------------------------------------------------------------
def _same_config(packs: Sequence[PackScores]) -> None:
    first = packs[0]
    for other in packs[1:]:
        if other.config != first.config:
            keys = sorted(
                k for k in set(first.config) | set(other.config) if first.config.get(k) != other.config.get(k)
            )
            raise UserError(
                f"packs {_name(first)} and {_name(other)} differ in more than their seeds ({', '.join(keys)}); "
                "seed_summary compares seeds of one config: compare two conditions with --vs"
            )


def _same_questions(packs: Sequence[PackScores], what: str) -> list[str]:
    first = packs[0]
    for other in packs[1:]:
        if set(other.question_ids) != set(first.question_ids):
            only_a = len(set(first.question_ids) - set(other.question_ids))
            only_b = len(set(other.question_ids) - set(first.question_ids))
            raise UserError(
                f"{what}: packs {_name(first)} and {_name(other)} hold different questions "
                f"({only_a} only in the first, {only_b} only in the second); compare packs of the same questions "
                "(same dataset and max_questions)"
            )
    return list(first.question_ids)


def _judged(packs: Sequence[PackScores]) -> bool:
    if not all(p.j is not None for p in packs):
        return False
    first = packs[0].judge_identity
    for other in packs[1:]:
        if other.judge_identity != first:
            raise UserError(
                f"packs {_name(packs[0])} and {_name(other)} were judged by different judges; "
                "J is compared only under one judge (rerun the autorater with the same judge options)"
            )
    return True


def _per_question(packs: Sequence[PackScores], metric: str, ids: Sequence[str]) -> dict[str, float]:
    """A question's score averaged over the packs that have one."""
    out = {}
    for q in ids:
        values = [getattr(p, metric)[q] for p in packs if q in getattr(p, metric)]
        if values:
            out[q] = sum(values) / len(values)
    return out


def _spread(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    return {
        "values": values,
        "n_packs": len(values),
        "mean": statistics.fmean(present) if present else None,
        "sd": statistics.stdev(present) if len(present) > 1 else None,
    }


def seed_summary(
    packs: Sequence[str | Path | PackScores], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE, check_config: bool = True,
) -> dict[str, Any]:
    """Several packs of one config with different seeds: mean ± sd and a bootstrap interval."""
    _check_resampling(resamples, confidence)
    scores = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in packs]
    if not scores:
        raise UserError("pass at least one pack")
    if check_config:
        _same_config(scores)
    ids = _same_questions(scores, "seed summary")
    result: dict[str, Any] = {
        "packs": [str(p.root) for p in scores],
        "run_ids": [p.run_id for p in scores],
        "questions": len(ids),
    }
    metrics = ["locomo_f1"] + (["j"] if _judged(scores) else [])
    for metric in metrics:
        per_question = _per_question(scores, metric, ids)
        values = [per_question[q] for q in ids if q in per_question]
        result[metric] = {
            **_spread([p.reported.get(metric) for p in scores]),
            "bootstrap": bootstrap_interval(values, resamples=resamples, seed=seed, confidence=confidence),
        }
    result["j_available"] = "j" in metrics
    return result


def paired_difference(
    a: Sequence[str | Path | PackScores], b: Sequence[str | Path | PackScores], *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Condition B minus condition A, paired by question id (each condition one or more seeds)."""
    _check_resampling(resamples, confidence)
    sa = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in a]
    sb = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in b]
    if not sa or not sb:
        raise UserError("pass at least one pack for each condition")
    ids = _same_questions([*sa, *sb], "paired difference")
    result: dict[str, Any] = {"a": [str(p.root) for p in sa], "b": [str(p.root) for p in sb], "questions": len(ids)}
    metrics = ["locomo_f1"]
    if _judged(sa) and _judged(sb):
        if sa[0].judge_identity != sb[0].judge_identity:
            raise UserError("the two conditions were judged by different judges; J is compared only under one judge")
        metrics.append("j")
    for metric in metrics:
        qa, qb = _per_question(sa, metric, ids), _per_question(sb, metric, ids)
        common = [q for q in ids if q in qa and q in qb]
        result[metric] = paired_bootstrap(
            [qa[q] for q in common], [qb[q] for q in common], resamples=resamples, seed=seed, confidence=confidence
        )
    result["j_available"] = "j" in metrics
    return result


# -- command line ---------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def format_compare(result: dict[str, Any]) -> str:
    lines = []
    names = {"locomo_f1": "LoCoMo F1 (cat 1-5)", "j": "J (cat 1-4)"}
    for label, summary in (("A", result.get("summary_a")), ("B", result.get("summary_b")), ("", result.get("summary"))):
        if not summary:
            continue
        lines.append(f"{('condition ' + label + ': ') if label else ''}{summary['questions']} questions, {len(summary['packs'])} pack(s)")
        for metric in METRICS:
            if metric not in summary:
                continue
            s = summary[metric]
            bs = s["bootstrap"]
            sd = f" ± {_fmt(s['sd'])}" if s["sd"] is not None else ""
            lines.append(
                f"  {names[metric]:<20} {_fmt(s['mean'])}{sd} (sd over {s['n_packs']} seed(s)); "
                f"{int(bs['confidence'] * 100)}% bootstrap [{_fmt(bs['low'])}, {_fmt(bs['high'])}] "
                f"({bs['resamples']} resamples, seed {bs['seed']})"
            )
    difference = result.get("difference")
    if difference:
        lines.append(f"B minus A, paired over {difference['questions']} question ids:")
        for metric in METRICS:
            if metric not in difference:
                continue
            d = difference[metric]
            lines.append(
                f"  {names[metric]:<20} {_fmt(d['difference'])} [{_fmt(d['low'])}, {_fmt(d['high'])}] "
                f"(A {_fmt(d['a'])}, B {_fmt(d['b'])}, n {d['n']}; p {_fmt(d['p_two_sided'])}, "
                f"{d['resamples']} resamples, seed {d['seed']})"
            )
    return "\n".join(lines)


def _name(scores: PackScores) -> str:
    """A pack's short name in a message: its folder's name (its run id)."""
    return str(scores.root).rstrip("/").rsplit("/", 1)[-1]


def _load_all(packs: Sequence[str], judge: str | None) -> list[PackScores]:
    """Every pack's scores; a `gs://` pack is read from a byte-exact temporary copy (its
    scores are recomputed from its rows, as for a local pack) and named by its URI."""
    from memorybench.pack.verify.context import local_pack

    out = []
    for location in packs:
        if not str(location).startswith("gs://"):
            out.append(load_pack_scores(location, judge))
            continue
        with local_pack(location) as root:
            scores = load_pack_scores(root, judge)
        scores.root = str(location).rstrip("/")
        out.append(scores)
    return out


def compare_main(argv: Sequence[str]) -> int:
    """`memorybench compare PACK [PACK ...] [--vs PACK [PACK ...]] [--resamples N] [--seed S] [--json FILE]`."""
    # cli.main prints a UserError raised here as one line and exits with its code.
    parser = OneLineParser(
        prog="memorybench compare",
        description="Seeds of one config: mean ± sd and a bootstrap interval. With --vs: a paired bootstrap of B minus A.",
    )
    parser.add_argument("packs", nargs="+", help="finished packs of one config (condition A)")
    parser.add_argument("--vs", nargs="+", default=None, metavar="PACK", help="finished packs of condition B")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, help=f"bootstrap resamples (default {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, help="interval coverage (default 0.95)")
    parser.add_argument("--judge", help="the judge id whose J is compared, when a pack has several (autorater/<judge id>/)")
    parser.add_argument("--json", dest="json_out", help="also write the result as JSON to this file ('-' for stdout)")
    ns = parser.parse_args(list(argv))
    options = dict(resamples=ns.resamples, seed=ns.seed, confidence=ns.confidence)
    _check_resampling(ns.resamples, ns.confidence)
    a = _load_all(ns.packs, ns.judge)
    result: dict[str, Any] = {"schema": "compare.v1"}
    if ns.vs:
        b = _load_all(ns.vs, ns.judge)
        result["summary_a"] = seed_summary(a, **options)
        result["summary_b"] = seed_summary(b, **options)
        result["difference"] = paired_difference(a, b, **options)
    else:
        result["summary"] = seed_summary(a, **options)
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if ns.json_out == "-":
        sys.stdout.write(text)
        return 0
    print(format_compare(result))
    if ns.json_out:
        Path(ns.json_out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(compare_main(sys.argv[1:]))
    except UserError as e:
        sys.exit(report(e))

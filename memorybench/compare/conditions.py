"""Compare finished packs: seeds of one config, and two conditions question by question.

Pure functions of the packs' stored files; no model call, nothing written into a pack.
Every interval and test comes from `memorybench.compare.intervals`, the one place that
`report`, the viewer and MLflow read too, so the same packs give the same numbers
everywhere.

Two numbers are compared: LoCoMo F1 and J (categories 1-4, from `autorater/`). Every
number says which categories it covers (`covers`), from the questions actually compared:
a Mem0-format pack holds categories 1-4 only, so its overall is a 1-4 overall, never a
1-5 one. `categories` (`--categories 1-4`) restricts both sides to those categories.

**The resampling unit is the conversation.** LoCoMo's questions sit in 10 conversations,
each with its own memory, and scores correlate inside one. The main interval of a mean
and of a paired difference is a cluster-robust standard error over conversations (CR1)
with a t distribution on conversations-1 degrees of freedom; every result names its
method and the number of conversations. A question-level percentile bootstrap stands
beside it, labelled "conditional on these N conversations": it answers how much the
number depends on which questions these conversations happen to hold, not how it would
move on other conversations. A run of one conversation (a prefix) has no
between-conversation uncertainty, and says so.

**Seeds of one config** (`seed_summary`): packs sharing their config except the ``seed``
keys (and the judge group), over the same questions. A question's score is its mean over
the packs (and, for J, over the passes with a parsed label). Reported per metric: each
pack's own value, their mean and sd (n-1), and the intervals of the mean.

**Two conditions** (`paired_difference`): condition B minus condition A over the
questions both hold (after `categories`), paired by question id. Reported: the mean
difference, its interval, the two-sided p-value, and the minimum detectable difference
(80% power, alpha 0.05) of this design; then, where the compared questions span several
categories, the same per category (`by_category`) with Holm-adjusted p-values over that
family (the category tests of one metric; `adjust="none"` leaves them unadjusted). The
question-level bootstrap gives an interval only, labelled conditional, never a p-value.

**A metric's kind decides its interval** (`metric_kind`): J is a rate (the share of
CORRECT verdicts) and so is LoCoMo's category-5 F1 (a refusal is 1, else 0); their
intervals stay inside [0, 1] (`memorybench.compare.rates`). Every other F1 is a score. J is compared only under one judge; when the two
sides were judged differently (an imported peer's grader against Mem0's prompt) J is left
out with the reason, and LoCoMo F1 is still compared. Runs whose question protocols
differ (`reader.prompt=locomo` against an open-ended prompt) are marked.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memorybench.answer.prompt import question_protocol
from memorybench.benchmark import DEFAULT as DEFAULT_BENCHMARK, benchmark_named, benchmark_of_pack
from memorybench.compare.category_tests import by_category, metric_kind
from memorybench.compare.intervals import (
    Resampling,
    mean_interval,
    question_bootstrap_interval,
    question_paired_bootstrap,
)
from memorybench.compare.gold_overlay import Overlay, corrected_f1, load_overlay
from memorybench.compare.intervals import paired_difference as paired_test
from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.judge_calibration import cache_dir_of
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import require_pack_folder
from memorybench.score.rows import covers_label
from memorybench.score.scorers import LEXICAL

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "PackScores",
    "answer_tokens",
    "budget_summary",
    "budget_warning",
    "load_pack_scores",
    "metric_kind",
    "paired_difference",
    "parse_categories",
    "seed_summary",
]

DEFAULT_RESAMPLES = Resampling().resamples
DEFAULT_SEED = Resampling().seed
DEFAULT_CONFIDENCE = Resampling().confidence
METRICS = (LEXICAL, "j", "j_failed_wrong")
#: how the p-values of a family of tests (a comparison's category tests of one metric) are adjusted
ADJUSTMENTS = ("holm", "none")
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
    #: each question's cluster (its sample id: a LoCoMo conversation, a LongMemEval question)
    conversations: dict[str, str]
    #: per-question lexical score (`memorybench.score.scorers.LEXICAL`)
    lexical: dict[str, float]
    #: per-question J: mean score over the passes with a parsed label (categories 1-4);
    #: None when the pack has no finished autorater
    j: dict[str, float] | None = None
    #: per-question J with a judge failure counted as WRONG (every judged question);
    #: None without an autorater; equal to `j` where the judge never failed
    j_failed_wrong: dict[str, float] | None = None
    #: verdicts with no readable label (judge failures)
    judge_failures: int = 0
    #: the pack's own reported numbers (metrics.json and autorater_metrics.json)
    reported: dict[str, float | None] = field(default_factory=dict)
    judge_identity: dict[str, Any] | None = None
    #: the resampling unit of the pack's benchmark (memorybench.benchmark): what a sample is
    unit: str = "conversation"
    #: the pack's benchmark (its judged kinds and labels)
    benchmark: str = DEFAULT_BENCHMARK
    #: how the questions were posed (`memorybench.answer.prompt.question_protocol`: locomo,
    #: open-ended, imported)
    protocol: str = "open-ended"
    #: each answer's length in whitespace tokens (`answer_tokens`)
    answer_tokens: dict[str, int] = field(default_factory=dict)
    #: the answers as stored (the corrected-gold column rescores them)
    predictions: dict[str, str] = field(default_factory=dict)
    #: the sha256 of the pack's dataset (the gold-error overlay applies to the pinned locomo10.json only)
    data_sha256: str | None = None
    #: the experiment name the pack was run or imported under (`name=`)
    experiment: str | None = None
    #: the run's `paths.cache`, where a judge's calibration (`memorybench judge-check`) is kept
    cache_dir: str | None = None
    #: the run's retrieval budget as the runs table shows it (`memorybench.compare.summary.BUDGET_COLUMNS`)
    budget: dict[str, Any] = field(default_factory=dict)

    def scores(self, metric: str) -> dict[str, float] | None:
        """Per-question scores of one of `METRICS` (the lexical scorer's, "j", "j_failed_wrong")."""
        if metric == LEXICAL:
            return self.lexical
        if metric in ("j", "j_failed_wrong"):
            return getattr(self, metric)
        raise KeyError(metric)


def condition_name(scores: PackScores) -> str:
    """A condition in words: its memory and reader model (an imported pack: its experiment's
    run id), so a printed comparison says what A and B are."""
    memory = (scores.config.get("memory") or {}).get("name") if isinstance(scores.config.get("memory"), dict) else None
    reader = scores.config.get("reader") if isinstance(scores.config.get("reader"), dict) else {}
    model = reader.get("model") if reader else None
    if scores.protocol == "imported" or not memory:
        return f"{scores.experiment or scores.run_id} (imported)" if scores.protocol == "imported" else str(scores.run_id)
    writer = scores.config.get("writer") if isinstance(scores.config.get("writer"), dict) else {}
    if writer and writer.get("provider") not in (None, "none") and writer.get("model"):  # a memory a model wrote
        memory = f"{memory} (writer {writer['model']})"
    return f"{memory} / {model}" if model else str(memory)


def config_differences(a: PackScores, b: PackScores) -> list[dict[str, Any]]:
    """Every setting of the two packs' identity configs (seeds left out) that differs, as dotted
    keys with A's and B's values (`writer.model`, `memory.max_sessions`), in key order: what a
    comparison of A and B compares besides the factor a user meant."""
    left, right = dict(_leaves(a.config)), dict(_leaves(b.config))
    return [
        {"key": key, "a": left.get(key), "b": right.get(key)}
        for key in sorted(set(left) | set(right))
        if left.get(key) != right.get(key)
    ]


def _leaves(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict) and data:
        return [leaf for k, v in data.items() for leaf in _leaves(v, f"{prefix}.{k}" if prefix else str(k))]
    return [(prefix, data)]


def _strip_seeds(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip_seeds(v) for k, v in data.items() if k != "seed"}
    if isinstance(data, list):
        return [_strip_seeds(v) for v in data]
    return data


def _config_of(pack: PackReader, root: Path) -> dict[str, Any]:
    from memorybench.pack.resolved_config import resolved_config_of
    from memorybench.run_id import identity_config

    if not pack.exists(layout.CONFIG):
        raise UserError(f"pack {root} has no {layout.CONFIG}; pass a finished pack folder")
    identity = identity_config(resolved_config_of(pack.read_text(layout.CONFIG)))
    # what the run asked its method: budget.top_k stands for memory.top_k where both are set
    # (`memorybench.memory._managed.budgeted_config`), so two runs held to one budget do not
    # differ in their YAMLs' top_k
    top_k = (identity.get("budget") or {}).get("top_k") if isinstance(identity.get("budget"), dict) else None
    memory = identity.get("memory")
    if top_k is not None and isinstance(memory, dict) and "top_k" in memory:
        identity["memory"] = {**memory, "top_k": top_k}
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
        raise UserError(
            f"pack {pack.uri()} has {len(judges)} judges ({', '.join(judges)}); pass --judge ID to compare J under one"
        )
    return judges[0] if judges else None


def load_pack_scores(pack_root: str | Path, judge: str | None = None) -> PackScores:
    """Read a finished pack's per-question LoCoMo F1 and, if judged, per-question J (of
    `judge`, or of the pack's only judge).

    The pack's own reported numbers (`reported`) are its run summary's (`memorybench.compare.summary`):
    LoCoMo F1 from metrics.json, J from that judge's autorater_metrics.json.
    """
    from memorybench.compare.summary import BUDGET_COLUMNS, judge_key, run_summary
    from memorybench.pack.scores import compute_scores

    root = require_pack_folder(pack_root)
    pack = PackReader.open(root)
    if not pack.is_complete():
        raise UserError(f"pack {root} is not finished (no {layout.SUCCESS}); finish it with its `memorybench qa` command first")
    rows, _ = compute_scores(root)
    summary = run_summary(pack)
    config = _config_of(pack, root)
    config_file = yaml.safe_load(pack.read_text(layout.CONFIG)) or {}
    protocol = question_protocol(config_file)
    scores = PackScores(
        root=root,
        run_id=summary["run_id"],
        config=config,
        question_ids=[r["question_id"] for r in rows],
        categories={r["question_id"]: int(r["category"]) for r in rows},
        conversations={r["question_id"]: str(r["sample_id"]) for r in rows},
        unit=benchmark_of_pack(pack.meta()).unit,
        benchmark=benchmark_of_pack(pack.meta()).name,
        lexical={r["question_id"]: float(r[LEXICAL]) for r in rows},
        answer_tokens={r["question_id"]: answer_tokens(r["prediction"]) for r in rows},
        predictions={r["question_id"]: str(r["prediction"] or "") for r in rows},
        data_sha256=summary.get("data_sha256"),
        experiment=summary.get("experiment"),
        cache_dir=cache_dir_of(config_file),
        reported={LEXICAL: summary[LEXICAL]},
        protocol=protocol,
        budget={k: summary.get(k) for k in BUDGET_COLUMNS},
    )
    judge_id = _judge_of(pack, judge)
    meta = pack.autorater_meta(judge_id) if judge_id else None
    if judge_id and meta is not None:
        parsed: dict[str, list[float]] = {}
        failed: dict[str, list[float]] = {}
        for verdict in pack.verdicts(judge_id):
            if verdict.status in ("CORRECT", "WRONG"):
                parsed.setdefault(verdict.question_id, []).append(verdict.score)  # type: ignore[arg-type]
                failed.setdefault(verdict.question_id, []).append(verdict.score)  # type: ignore[arg-type]
            elif verdict.status == "FAILED":
                scores.judge_failures += 1
                failed.setdefault(verdict.question_id, []).append(0)
        scores.j = {q: sum(v) / len(v) for q, v in parsed.items()}
        scores.j_failed_wrong = {q: sum(v) / len(v) for q, v in failed.items()}
        scores.reported["j"] = summary[judge_key("j_mean", judge_id)]
        scores.judge_identity = meta.identity.model_dump(mode="json", by_alias=True)
    return scores


def answer_tokens(prediction: str | None) -> int:
    """An answer's length in whitespace-separated tokens: the same count for every reader,
    model and imported pack (a model's own tokenizer would differ between them)."""
    return len(str(prediction or "").split())


def length_summary(packs: Sequence[PackScores], ids: Sequence[str]) -> dict[str, float | None]:
    """Mean and p95 (nearest rank) answer length over `ids` and the packs' answers."""
    from memorybench.stats import nearest_rank

    lengths = sorted(p.answer_tokens[q] for p in packs for q in ids if q in p.answer_tokens)
    if not lengths:
        return {"mean": None, "p95": None}
    return {"mean": sum(lengths) / len(lengths), "p95": nearest_rank(lengths, 0.95)}


#: two conditions whose mean answer lengths differ by more than this factor get a warning:
#: a judge that counts a CORRECT "as long as it touches on the same topic" favours long answers
LENGTH_RATIO_WARNING = 2.0


def length_warning(a: dict[str, float | None], b: dict[str, float | None]) -> str | None:
    """A warning when the two conditions' mean answer lengths differ by more than 2x."""
    if not a["mean"] or not b["mean"]:
        return None
    ratio = max(a["mean"], b["mean"]) / min(a["mean"], b["mean"])
    if ratio <= LENGTH_RATIO_WARNING:
        return None
    return (
        f"answer lengths differ {ratio:.1f}x (A mean {a['mean']:.1f} tokens, B {b['mean']:.1f}): a lenient judge favours "
        "longer answers; compare J with care, or control the length (reader.max_tokens, the prompt)"
    )


def budget_summary(packs: Sequence[PackScores]) -> dict[str, Any]:
    """A condition's retrieval budget: context tokens per question (mean, p50, p95) and retrieval
    latency (p50, p95), each the mean over its packs; budget.top_k, the most items returned, and
    whether the budget held in every pack (`flags`: how it did not, one per pack that did not)."""

    def mean_of(key: str) -> float | None:
        values = [p.budget.get(key) for p in packs if p.budget.get(key) is not None]
        return sum(values) / len(values) if values else None

    held = [p.budget.get("budget_held") for p in packs]
    returned = [p.budget["budget_returned_max"] for p in packs if p.budget.get("budget_returned_max") is not None]
    return {
        **{k: mean_of(k) for k in ("context_tokens_mean", "context_tokens_p50", "context_tokens_p95")},
        **{k: mean_of(k) for k in ("retrieval_latency_p50_s", "retrieval_latency_p95_s")},
        "top_k": next((p.budget.get("budget_top_k") for p in packs if p.budget.get("budget_top_k") is not None), None),
        "returned_max": max(returned) if returned else None,
        "held": False if False in held else (True if held and all(h is True for h in held) else None),
        "flags": [f"run {p.run_id}: {p.budget['budget_flag']}" for p in packs if p.budget.get("budget_flag")],
    }


def budget_warning(side: str, summary: dict[str, Any]) -> str | None:
    """One line for a condition whose retrieval budget did not hold (None where it held or none was set)."""
    flags = (summary.get("budget") or {}).get("flags") or []
    if not flags:
        return None
    more = f" (and {len(flags) - 1} more of its packs)" if len(flags) > 1 else ""
    who = f"{side.strip()} ({summary['condition']})" if side.strip() else summary["condition"]
    return f"{who}: the retrieval budget did not hold: {flags[0]}{more}"


# -- selection -------------------------------------------------------------------------------
def parse_categories(text: str | None, kinds: Iterable[int] = (1, 2, 3, 4, 5), what: str = "LoCoMo's") -> frozenset[int] | None:
    """`1-4`, `1,2,5` or `5` as a set of question kinds (LoCoMo's categories, or `kinds` of
    another benchmark, named `what`); None for all. One line on a typo, a reversed range or a
    kind outside `kinds`, each bound checked before any range is built."""
    if text is None or str(text).strip() in ("", "all"):
        return None
    allowed = sorted(int(k) for k in kinds)
    span = f"{allowed[0]}-{allowed[-1]}"
    found: set[int] = set()
    for part in str(text).split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise UserError(f"--categories {text!r} is not a category list; write e.g. 1-4, or 1,2,5") from None
        if first > last:
            raise UserError(f"--categories {text!r}: the range {part.strip()} runs backwards; write e.g. 1-4")
        if first < allowed[0] or last > allowed[-1]:
            raise UserError(f"--categories {text!r} names categories outside {what} {span}; write e.g. {span}")
        found.update(range(first, last + 1))
    if not found <= set(allowed):
        raise UserError(f"--categories {text!r} names categories outside {what} {span}; write e.g. {span}")
    return frozenset(found)


def _selected(scores: PackScores, categories: frozenset[int] | None) -> list[str]:
    return [q for q in scores.question_ids if categories is None or scores.categories[q] in categories]


def _covers(scores: PackScores, ids: Iterable[str]) -> str:
    held = sorted({scores.categories[q] for q in ids})
    bench = benchmark_named(scores.benchmark)
    if not bench.own_lexical_rules:  # LoCoMo's labels name its categories 1-5
        kinds = sorted(bench.category_names)
        return f"{bench.kinds_word} {held[0]}-{held[-1]}" if held == kinds else f"{bench.kinds_word} " + ", ".join(map(str, held))
    return covers_label(held)


# -- packs ---------------------------------------------------------------------------------
def _same_config(packs: Sequence[PackScores]) -> None:
    first = packs[0]
    for other in packs[1:]:
        if other.config != first.config:
            keys = sorted(k for k in set(first.config) | set(other.config) if first.config.get(k) != other.config.get(k))
            raise UserError(
                f"packs {_name(first)} and {_name(other)} differ in more than their seeds ({', '.join(keys)}); "
                "seed_summary compares seeds of one config: compare two conditions with --vs"
            )


def _same_questions(packs: Sequence[PackScores], categories: frozenset[int] | None) -> list[str]:
    first = packs[0]
    ids = _selected(first, categories)
    for other in packs[1:]:
        theirs = _selected(other, categories)
        if set(theirs) != set(ids):
            only_a = len(set(ids) - set(theirs))
            only_b = len(set(theirs) - set(ids))
            raise UserError(
                f"seed summary: packs {_name(first)} and {_name(other)} hold different questions "
                f"({only_a} only in the first, {only_b} only in the second); seeds of one config hold the same "
                "questions (same dataset and max_questions)"
            )
    if not ids:
        raise UserError(f"pack {_name(first)} holds no question of categories {_category_text(categories)}")
    return ids


def _category_text(categories: frozenset[int] | None) -> str:
    return covers_label(sorted(categories)).removeprefix("categories ").removeprefix("category ") if categories else "1-5"


def _judge_name(identity: dict[str, Any] | None) -> str:
    if not identity:
        return "none"
    protocol, model = identity.get("protocol"), identity.get("model")
    if protocol == "imported":  # a released file's own labels: the peer's grader, prompt and model
        return f"the released {model} file's own labels (its grader and prompt, not ours)"
    grader = {"mem0": "Mem0's pinned judge prompt", "strict": "our strict judge prompt"}.get(
        str(protocol), f"the {protocol} protocol"
    )
    return f"{grader}, model {model}"


def _judges_agree(packs: Sequence[PackScores]) -> tuple[bool, str | None]:
    """Whether J can be compared over these packs: (True, None), or (False, why not)."""
    missing = [p for p in packs if p.j is None]
    if missing:
        return False, f"pack {_name(missing[0])} has no finished autorater"
    first = packs[0].judge_identity
    for other in packs[1:]:
        if other.judge_identity != first:
            return False, (
                f"judged by different judges ({_judge_name(first)}; {_judge_name(other.judge_identity)}): "
                "J is compared only under one judge (rerun the autorater with the same judge options)"
            )
    return True, None


def _per_question(packs: Sequence[PackScores], metric: str, ids: Sequence[str]) -> dict[str, float]:
    """A question's score averaged over the packs that have one."""
    out = {}
    for q in ids:
        values = [p.scores(metric)[q] for p in packs if q in p.scores(metric)]
        if values:
            out[q] = sum(values) / len(values)
    return out


def _own_mean(pack: PackScores, metric: str, ids: Sequence[str]) -> float | None:
    """One pack's mean of `metric` over `ids` (those it has a score for)."""
    from memorybench.stats import mean

    values = pack.scores(metric) or {}
    return mean([values[q] for q in ids if q in values])


def _spread(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    return {
        "values": values,
        "n_packs": len(values),
        "mean": statistics.fmean(present) if present else None,
        "sd": statistics.stdev(present) if len(present) > 1 else None,
    }


def judge_calibration(identity: dict[str, Any] | str | None, cache_dir: str | None) -> str:
    """What the judge (its identity's fields, or its judge id) accepts, from its `memorybench
    judge-check` record (kept in the run's cache, else `outputs/cache`): "accepts 63% of vague
    wrong answers, ..." or "not calibrated"."""
    from memorybench.pack.judge_calibration import NOT_CALIBRATED, find_calibration

    found = find_calibration(identity, [cache_dir] if cache_dir else [])
    return NOT_CALIBRATED if found is None else found.summary()


def _metrics_of(packs: Sequence[PackScores], result: dict[str, Any]) -> list[str]:
    """LoCoMo F1, and J (with J failures-as-WRONG beside it where a judge failed) when one
    judge judged every pack; otherwise why J is left out, in `result`."""
    agree, why = _judges_agree(packs)
    if not agree:
        result["j_left_out"] = why
        return [LEXICAL]
    result["judge"] = _judge_name(packs[0].judge_identity)
    result["judge_calibration"] = judge_calibration(packs[0].judge_identity, packs[0].cache_dir)
    failures = sum(p.judge_failures for p in packs)
    result["judge_failures"] = failures
    return [LEXICAL, "j", *(["j_failed_wrong"] if failures else [])]


def _gold_columns(
    packs: Sequence[PackScores],
    metric: str,
    kept: Sequence[str],
    overlay: Overlay,
    corrected: bool,
    per_question: dict[str, float],
    confidence: float,
) -> dict[str, Any]:
    """Beside a mean over `kept`: the mean over those without a known wrong gold answer
    (`without_gold_errors`, with how many were removed), and for LoCoMo F1 where asked the
    mean with the audit's corrected answers scored by LoCoMo's rules (`corrected_gold`)."""
    if overlay.errors is None:
        return {}
    first = packs[0]
    wrong = overlay.wrong_gold(kept)
    clean = [q for q in kept if q not in wrong]
    kind = metric_kind(metric, first.benchmark, {first.categories[q] for q in kept})
    out = {
        "without_gold_errors": {
            "removed": len(wrong),
            **mean_interval(
                [per_question[q] for q in clean], [first.conversations[q] for q in clean], confidence=confidence, kind=kind
            ).as_dict(),
        }
    }
    if corrected and metric == LEXICAL:
        values = [_corrected(packs, q, overlay, per_question) for q in kept]
        out["corrected_gold"] = {
            "rescored": len(wrong),
            **mean_interval(values, [first.conversations[q] for q in kept], confidence=confidence, kind=kind).as_dict(),
        }
    return out


def _corrected(packs: Sequence[PackScores], q: str, overlay: Overlay, per_question: dict[str, float]) -> float:
    """A question's LoCoMo F1 with the audit's corrected answer where its gold is wrong."""
    error = overlay.errors.get(q) if overlay.errors else None
    if error is None or not error.wrong_answer:
        return per_question[q]
    scores = [corrected_f1(overlay, p.predictions[q], error, p.categories[q]) for p in packs if q in p.predictions]
    return sum(scores) / len(scores)


def seed_summary(
    packs: Sequence[str | Path | PackScores],
    *,
    resampling: Resampling = Resampling(),  # noqa: B008 - a frozen record
    check_config: bool = True,
    categories: frozenset[int] | None = None,
    corrected_gold: bool = False,
) -> dict[str, Any]:
    """Several packs of one config with different seeds: mean ± sd and the intervals of the mean."""
    scores = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in packs]
    if not scores:
        raise UserError("pass at least one pack")
    if check_config:
        _same_config(scores)
    ids = _same_questions(scores, categories)
    result: dict[str, Any] = {
        "packs": [str(p.root) for p in scores],
        "run_ids": [p.run_id for p in scores],
        "questions": len(ids),
        "conversations": len({scores[0].conversations[q] for q in ids}),
        "protocol": scores[0].protocol,
        "condition": condition_name(scores[0]),
        "answer_tokens": length_summary(scores, ids),
        "benchmark": scores[0].benchmark,
        "budget": budget_summary(scores),
    }
    overlay = load_overlay(p.data_sha256 for p in scores)
    result["gold_errors"] = overlay.note
    metrics = _metrics_of(scores, result)
    for metric in metrics:
        bench = benchmark_named(scores[0].benchmark)
        judged_ids = ids if metric == LEXICAL else [q for q in ids if bench.judges(scores[0].categories[q])]
        per_question = _per_question(scores, metric, judged_ids)
        kept = [q for q in judged_ids if q in per_question]
        values = [per_question[q] for q in kept]
        clusters = [scores[0].conversations[q] for q in kept]
        covers = _covers(scores[0], kept)
        # each pack's own number: its reported one where it covers exactly what is compared here,
        # else its mean over the compared questions (a 1,986-question run beside a 1-4 peer)
        reported = [
            p.reported.get(metric) if len(kept) == len(p.scores(metric) or {}) else _own_mean(p, metric, kept) for p in scores
        ]
        result[metric] = {
            "covers": covers,
            **_spread(reported),
            "estimate": sum(values) / len(values) if values else None,
            "kind": (kind := metric_kind(metric, scores[0].benchmark, {scores[0].categories[q] for q in kept})),
            "interval": mean_interval(
                values, clusters, confidence=resampling.confidence, unit=scores[0].unit, kind=kind
            ).as_dict(),
            "conditional": question_bootstrap_interval(
                values, clusters, resampling, metric, covers, unit=scores[0].unit
            ).as_dict(),
            **_gold_columns(scores, metric, kept, overlay, corrected_gold, per_question, resampling.confidence),
        }
    result["j_available"] = "j" in metrics
    return result


def common_questions(
    sa: Sequence[PackScores],
    sb: Sequence[PackScores],
    categories: frozenset[int] | None,
) -> tuple[list[str], int, int]:
    """The questions every pack of both conditions holds (of `categories`), in A's order,
    and how many each side holds beyond them."""
    held_a = set.intersection(*(set(_selected(p, categories)) for p in sa))
    held_b = set.intersection(*(set(_selected(p, categories)) for p in sb))
    ids = [q for q in sa[0].question_ids if q in held_a and q in held_b]
    if not ids:
        raise UserError(
            f"the two conditions hold no question in common (A {len(held_a)}, B {len(held_b)} questions of categories "
            f"{_category_text(categories)}); compare packs of one dataset, or choose --categories both hold"
        )
    return ids, len(held_a) - len(ids), len(held_b) - len(ids)


def paired_difference(
    a: Sequence[str | Path | PackScores],
    b: Sequence[str | Path | PackScores],
    *,
    resampling: Resampling = Resampling(),  # noqa: B008 - a frozen record
    categories: frozenset[int] | None = None,
    corrected_gold: bool = False,
    adjust: str = "holm",
) -> dict[str, Any]:
    """Condition B minus condition A over the questions both hold, paired by question id
    (each condition one or more seeds); with `corrected_gold`, LoCoMo F1's difference also with
    the audit's corrected answers where a gold answer is known wrong (each side rescored alike).
    Where the questions span several categories, each metric's `by_category` tests them one by
    one, their p-values adjusted over that family by `adjust` (Holm's method, or none)."""
    if adjust not in ADJUSTMENTS:
        raise UserError(f"adjust={adjust!r}: choose one of {', '.join(ADJUSTMENTS)}")
    sa = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in a]
    sb = [p if isinstance(p, PackScores) else load_pack_scores(p) for p in b]
    if not sa or not sb:
        raise UserError("pass at least one pack for each condition")
    ids, only_a, only_b = common_questions(sa, sb, categories)
    first = sa[0]
    result: dict[str, Any] = {
        "a": [str(p.root) for p in sa],
        "b": [str(p.root) for p in sb],
        "questions": len(ids),
        "conversations": len({first.conversations[q] for q in ids}),
        "only_a": only_a,
        "only_b": only_b,
        "protocols": {"a": sorted({p.protocol for p in sa}), "b": sorted({p.protocol for p in sb})},
        "benchmark": first.benchmark,
    }
    result["protocols_differ"] = result["protocols"]["a"] != result["protocols"]["b"]
    result["config_differences"] = config_differences(first, sb[0])
    overlay = load_overlay(p.data_sha256 for p in [*sa, *sb])
    result["gold_errors"] = overlay.note
    metrics = _metrics_of([*sa, *sb], result)
    for metric in metrics:
        pool = ids if metric == LEXICAL else [q for q in ids if benchmark_named(first.benchmark).judges(first.categories[q])]
        qa, qb = _per_question(sa, metric, pool), _per_question(sb, metric, pool)
        common = [q for q in pool if q in qa and q in qb]
        x, y = [qa[q] for q in common], [qb[q] for q in common]
        covers = _covers(first, common)
        clusters = [first.conversations[q] for q in common]
        result[metric] = {
            "covers": covers,
            **paired_test(x, y, clusters, confidence=resampling.confidence, unit=first.unit).as_dict(),
            "conditional": question_paired_bootstrap(
                x, y, clusters, resampling, metric, covers, "difference", unit=first.unit
            ).as_dict(),
        }
        tests = by_category(first, metric, common, x, y, clusters, resampling.confidence, adjust)
        if tests:
            result[metric]["by_category"] = tests
        if overlay.errors is not None:
            wrong = overlay.wrong_gold(common)
            clean = [i for i, q in enumerate(common) if q not in wrong]
            result[metric]["without_gold_errors"] = {
                "removed": len(wrong),
                **paired_test(
                    [x[i] for i in clean], [y[i] for i in clean], [clusters[i] for i in clean], confidence=resampling.confidence
                ).as_dict(),
            }
            if corrected_gold and metric == LEXICAL:
                cx, cy = [_corrected(sa, q, overlay, qa) for q in common], [_corrected(sb, q, overlay, qb) for q in common]
                result[metric]["corrected_gold"] = {
                    "rescored": sum(1 for q in common if q in wrong),
                    **paired_test(cx, cy, clusters, confidence=resampling.confidence, unit=first.unit).as_dict(),
                }
    result["j_available"] = "j" in metrics
    return result


def _name(scores: PackScores) -> str:
    """A pack's short name in a message: its folder's name (its run id)."""
    return str(scores.root).rstrip("/").rsplit("/", 1)[-1]

"""`memorybench compare`: the command line over `memorybench.compare.conditions`, and the
text it prints (every number with what it covers, its interval and method, the minimum
detectable difference, what was left out and why)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from memorybench.compare.conditions import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    ADJUSTMENTS,
    METRICS,
    PackScores,
    budget_warning,
    common_questions,
    length_warning,
    load_pack_scores,
    paired_difference,
    parse_categories,
    seed_summary,
)
from memorybench.benchmark import benchmark_named
from memorybench.compare.intervals import Resampling, format_p, mdd_sentence
from memorybench.errors import OneLineParser, UserError, printable, report
from memorybench.fs import write_atomic
from memorybench.score.scorers import LEXICAL

__all__ = ["compare_main", "format_compare"]


# -- command line ---------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def _p(d: dict[str, Any]) -> str:
    """A stored p-value as people read it: its `p_text` ("< 1/10000" for a resampled p below
    the resampling's resolution, stored as that bound), else formatted here."""
    return d.get("p_text") or format_p(d["p_two_sided"], d.get("p_resolution"))


def _metric_name(metric: str, covers: str, benchmark: str | None = None) -> str:
    """A metric's name in the printed lines: its benchmark's judge figure ("J", or LongMemEval's
    accuracy), and a lexical F1 on another benchmark labelled a diagnostic."""
    from memorybench.benchmark import benchmark_named

    bench = benchmark_named(benchmark)
    names = {
        LEXICAL: bench.lexical_figure,
        "j": bench.judge_figure,
        "j_failed_wrong": f"{bench.judge_figure}, failures WRONG",
    }
    return f"{names[metric]} ({covers})"


def _benchmark(summary: dict[str, Any]) -> Any:
    """The benchmark a summary or difference is over (its `benchmark`; absent: LoCoMo's)."""
    from memorybench.benchmark import benchmark_named

    return benchmark_named(summary.get("benchmark"))


def _figure(benchmark: str | None) -> str:
    from memorybench.benchmark import benchmark_named

    return benchmark_named(benchmark).judge_figure


def _interval_text(i: dict[str, Any]) -> str:
    if i["low"] is None:
        return f"no interval: {i['note']}" if i.get("note") else "no interval"
    how = f"{i['method']}; {i['note']}" if i.get("note") else i["method"]  # cut at [0, 1], or no width
    return f"{int(round(i['confidence'] * 100))}% interval [{_fmt(i['low'])}, {_fmt(i['high'])}] ({how})"


def _conditional_text(i: dict[str, Any]) -> str:
    if i["low"] is None:
        return ""
    return f"; {i['method']}: [{_fmt(i['low'])}, {_fmt(i['high'])}]"


def _signed(v: float | None) -> str:
    return "-" if v is None else f"{v:+.4f}"


def _category_lines(tests: dict[str, Any], unit: str) -> list[str]:
    """The per-category tests of one metric: difference, interval, p and the family's adjusted p."""
    adjusted = "Holm p" if tests["adjust"] == "holm" else "p (unadjusted)"
    lines = [f"    by {tests['kind_word']} ({tests['family']}):"]
    for t in tests["tests"]:
        head = f"      {t['category']} {t['name']:<13} {_signed(t['difference'])} (n {t['n']}"
        if t["low"] is None:
            lines.append(f"{head}); no interval: {t.get('note') or 'none'}")
            continue
        p_adj = "n/a" if t["p_adjusted"] is None else format_p(t["p_adjusted"], None)
        lines.append(f"{head}, {t['clusters']} {unit}s) [{_fmt(t['low'])}, {_fmt(t['high'])}], p {_p(t)}, {adjusted} {p_adj}")
    return lines


def _summary_lines(label: str, summary: dict[str, Any]) -> list[str]:
    name = f"condition {label} ({summary['condition']}): " if label else f"{summary['condition']}: "
    samples = _benchmark(summary).samples(summary["conversations"])
    lines = [
        f"{name}{summary['questions']} questions in "
        f"{samples}, {len(summary['packs'])} pack(s), question protocol {summary['protocol']}"
    ]
    for metric in METRICS:
        if metric not in summary:
            continue
        s = summary[metric]
        sd = f" ± {_fmt(s['sd'])} (sd over {s['n_packs']} seeds)" if s["sd"] is not None else ""
        lines.append(
            f"  {_metric_name(metric, s['covers'], summary.get('benchmark')):<34} {_fmt(s['estimate'])}{sd}; "
            f"{_interval_text(s['interval'])}{_conditional_text(s['conditional'])}"
        )
        clean = s.get("without_gold_errors")
        if clean:
            lines.append(
                f"    without the {clean['removed']} questions of known wrong gold (n {clean['n']}): "
                f"{_fmt(clean['estimate'])}; {_interval_text(clean)}"
            )
        fixed = s.get("corrected_gold")
        if fixed:
            lines.append(
                f"    with the audit's {fixed['rescored']} corrected answers (n {fixed['n']}): "
                f"{_fmt(fixed['estimate'])}; {_interval_text(fixed)}"
            )
    if "j_left_out" in summary:
        lines.append(f"  {_figure(summary.get('benchmark'))} left out: {summary['j_left_out']}")
    elif summary.get("judge"):
        lines.append(f"  J's judge: {summary['judge']}; {summary['judge_calibration']}")
    length = summary.get("answer_tokens") or {}
    if length.get("mean") is not None:
        lines.append(f"  answer length: mean {length['mean']:.1f} tokens, p95 {length['p95']:.0f}")
    budget = _budget_line(summary.get("budget") or {})
    if budget:
        lines.append(budget)
    return lines


def _budget_line(b: dict[str, Any]) -> str | None:
    """Context tokens per question, retrieval latency and whether the retrieval budget held."""
    if b.get("context_tokens_mean") is None and b.get("retrieval_latency_p50_s") is None:
        return None
    tokens = (
        f"context tokens per question mean {b['context_tokens_mean']:.0f} (p50 {b['context_tokens_p50']:.0f}, "
        f"p95 {b['context_tokens_p95']:.0f})"
        if b.get("context_tokens_mean") is not None
        else "context tokens per question unknown"
    )
    latency = (
        f"retrieval latency p50 {b['retrieval_latency_p50_s']:.4f} s, p95 {b['retrieval_latency_p95_s']:.4f} s"
        if b.get("retrieval_latency_p50_s") is not None
        else "no retrieval per question"
    )
    retrieved = b.get("retrieval_latency_p50_s") is not None or b.get("returned_max") is not None
    nothing = "nothing to hold (no budget set)" if retrieved else "does not apply (no retrieval)"
    held = {True: "held", False: "did not hold", None: nothing}[b.get("held")]
    top_k = f"budget.top_k {b['top_k']}" if b.get("top_k") is not None else "no budget.top_k"
    returned = f", up to {b['returned_max']} items returned" if b.get("returned_max") is not None else ""
    return f"  retrieval: {tokens}; {latency}; {top_k}{returned}: {held}"


def _value(value: Any) -> str:
    """A setting's value as a comparison line shows it (`-` for none)."""
    return "-" if value is None else json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value


def _difference_lines(difference: dict[str, Any]) -> list[str]:
    d0 = difference
    left = [f"{d0['only_a']} of A's" if d0["only_a"] else "", f"{d0['only_b']} of B's" if d0["only_b"] else ""]
    left_text = f" ({' and '.join(x for x in left if x)} questions held by one side only left out)" if any(left) else ""
    samples = _benchmark(d0).samples(d0["conversations"])
    lines = [f"B minus A, paired over {d0['questions']} questions in {samples}{left_text}:"]
    differences = d0.get("config_differences") or []
    if differences:  # what else B changes besides the factor meant: each one named, never silently compared
        shown = "; ".join(f"{d['key']} {_value(d['a'])} -> {_value(d['b'])}" for d in differences[:12])
        more = f"; and {len(differences) - 12} more (--json lists them)" if len(differences) > 12 else ""
        lines.append(f"  A and B differ in {len(differences)} setting(s): {shown}{more}")
        if len({d["key"].split(".", 1)[0] for d in differences}) > 1:
            lines.append(
                "  warning: more than one group of settings differs: a difference below is theirs together, not one factor's"
            )
    if d0.get("protocols_differ"):
        lines.append(
            f"  question protocols differ (A {', '.join(d0['protocols']['a'])}; B {', '.join(d0['protocols']['b'])}): "
            "category 2 and 5 were not asked alike"
        )
    for metric in METRICS:
        if metric not in d0:
            continue
        d = d0[metric]
        line = f"  {_metric_name(metric, d['covers'], d0.get('benchmark')):<34} {_fmt(d['difference'])} (A {_fmt(d['a'])}, B {_fmt(d['b'])}, n {d['n']}); "
        if d["low"] is None:
            line += f"no interval: {d['note']}" if d.get("note") else "no interval"
        else:
            line += (
                f"{int(round(d['confidence'] * 100))}% interval [{_fmt(d['low'])}, {_fmt(d['high'])}], p {_p(d)} ({d['method']})"
            )
        lines.append(line)
        if d.get("mdd") is not None:
            lines.append(
                "    "
                + mdd_sentence(
                    d["difference"],
                    d["p_two_sided"],
                    d["mdd"],
                    d["clusters"],
                    unit=_benchmark(d0).sample,
                    alpha=round(1 - d["confidence"], 10),
                )
            )
        clean = d.get("without_gold_errors")
        if clean and clean["difference"] is not None:
            lines.append(
                f"    without the {clean['removed']} questions of known wrong gold (n {clean['n']}): "
                f"{_fmt(clean['difference'])}"
                + (f" [{_fmt(clean['low'])}, {_fmt(clean['high'])}], p {_p(clean)}" if clean["low"] is not None else "")
            )
        fixed = d.get("corrected_gold")
        if fixed and fixed["difference"] is not None:
            lines.append(
                f"    B minus A with the audit's {fixed['rescored']} corrected answers (n {fixed['n']}): "
                f"{_fmt(fixed['difference'])}"
                + (f" [{_fmt(fixed['low'])}, {_fmt(fixed['high'])}], p {_p(fixed)}" if fixed["low"] is not None else "")
            )
        c = d["conditional"]
        if c["low"] is not None:  # an interval only: a test over questions as if independent is no test here
            lines.append(f"    {c['method']}: [{_fmt(c['low'])}, {_fmt(c['high'])}] (an interval only, no p-value)")
        if d.get("by_category"):
            lines.extend(_category_lines(d["by_category"], _benchmark(d0).sample))
    if "j_left_out" in d0:
        lines.append(f"  {_figure(d0.get('benchmark'))} left out: {d0['j_left_out']}")
    return lines


def format_compare(result: dict[str, Any]) -> str:
    lines = []
    for label, summary in (("A", result.get("summary_a")), ("B", result.get("summary_b")), ("", result.get("summary"))):
        if summary:
            lines.extend(_summary_lines(label, summary))
    if result.get("difference"):
        lines.extend(_difference_lines(result["difference"]))
    # a benchmark's known gold errors (LoCoMo's audit of locomo10.json) say nothing of another's
    notes = {
        (result.get(k) or {}).get("gold_errors")
        for k in ("summary", "summary_a", "difference")
        if result.get(k) and _benchmark(result[k]).gold_audit is not None
    } - {None}
    lines.extend(sorted(notes))
    lines.extend(f"warning: {w}" for w in result.get("warnings") or [])
    return "\n".join(lines)


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
    """`memorybench compare PACK [PACK ...] [--vs PACK [PACK ...]] [--categories 1-4] [--json FILE]`."""
    # cli.main prints a UserError raised here as one line and exits with its code.
    parser = OneLineParser(
        prog="memorybench compare",
        description="Seeds of one config: mean ± sd and its interval over conversations. With --vs: B minus A, paired by question.",
    )
    parser.add_argument("packs", nargs="+", help="finished packs of one config (condition A)")
    parser.add_argument("--vs", nargs="+", default=None, metavar="PACK", help="finished packs of condition B")
    parser.add_argument("--categories", default=None, help="compare only these LoCoMo categories, e.g. 1-4 (default: all held)")
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"resamples of the question-level bootstrap (default {DEFAULT_RESAMPLES})",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, help="interval coverage (default 0.95)")
    parser.add_argument(
        "--corrected-gold",
        action="store_true",
        help="also score LoCoMo F1 against the audit's corrected answers where a gold answer is known wrong",
    )
    parser.add_argument(
        "--adjust",
        choices=ADJUSTMENTS,
        default="holm",
        help="with --vs: how the per-category p-values of each metric are adjusted over that family "
        "(default holm: Holm's step-down method; none: unadjusted)",
    )
    parser.add_argument("--judge", help="the judge id whose J is compared, when a pack has several (autorater/<judge id>/)")
    parser.add_argument("--json", dest="json_out", help="also write the result as JSON to this file ('-' for stdout)")
    ns = parser.parse_args(list(argv))
    if ns.resamples < 1:
        raise UserError(f"--resamples {ns.resamples} must be at least 1")
    if not 0 < ns.confidence < 1:
        raise UserError(f"--confidence {ns.confidence} must be between 0 and 1 (e.g. 0.95)")
    resampling = Resampling(resamples=ns.resamples, seed=ns.seed, confidence=ns.confidence)
    parse_categories(ns.categories, range(1, 100), "any benchmark's")  # a typo, before any pack is read
    a = _load_all(ns.packs, ns.judge)
    bench = benchmark_named(a[0].benchmark)
    categories = parse_categories(ns.categories, bench.category_names, f"{bench.title}'s")
    result: dict[str, Any] = {"schema": "compare.v2", "categories": sorted(categories) if categories else None}
    if ns.vs:
        b = _load_all(ns.vs, ns.judge)
        # each side summarised over the questions compared, so its numbers are the difference's A and B
        keep = set(common_questions(a, b, categories)[0])
        result["summary_a"] = seed_summary(_restricted(a, keep), resampling=resampling, corrected_gold=ns.corrected_gold)
        result["summary_b"] = seed_summary(_restricted(b, keep), resampling=resampling, corrected_gold=ns.corrected_gold)
        result["difference"] = paired_difference(
            a, b, resampling=resampling, categories=categories, corrected_gold=ns.corrected_gold, adjust=ns.adjust
        )
        warning = length_warning(result["summary_a"]["answer_tokens"], result["summary_b"]["answer_tokens"])
        result["warnings"] = [warning] if warning else []
        sides = (("A ", result["summary_a"]), ("B ", result["summary_b"]))
    else:
        result["summary"] = seed_summary(a, resampling=resampling, categories=categories, corrected_gold=ns.corrected_gold)
        result["warnings"] = []
        sides = (("", result["summary"]),)
    # a side whose system returned more than budget.top_k or handed over its whole memory: one line each
    result["warnings"] += [w for side, summary in sides if (w := budget_warning(side, summary))]
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    # a pack's run id, experiment and condition names are outside text: printed without control characters
    if ns.json_out == "-":
        sys.stdout.write(printable(text))  # JSON's own escape: still valid JSON
        return 0
    print(printable(format_compare(result)))
    if ns.json_out:
        try:
            write_atomic(Path(ns.json_out), text)
        except OSError as e:
            raise UserError(
                f"--json {ns.json_out}: cannot write there ({e.strerror or e}); name a file in a writable folder"
            ) from None
    return 0


def _restricted(packs: Sequence[PackScores], keep: set[str]) -> list[PackScores]:
    """The packs with only the questions in `keep` (every side's summary then covers the
    questions the difference compares)."""
    return [replace(p, question_ids=[q for q in p.question_ids if q in keep]) for p in packs]


if __name__ == "__main__":
    try:
        sys.exit(compare_main(sys.argv[1:]))
    except UserError as e:
        sys.exit(report(e))

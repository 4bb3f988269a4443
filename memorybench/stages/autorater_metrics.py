"""`autorater_metrics.json` from one judge's stored files, and the table printed from it.

No model and no clock: the metrics are a function of `predictions.jsonl`, `run_meta.json`
and the files of the judge's folder `autorater/<judge id>/` (meta, verdicts, traces), so a
resumed run and an uninterrupted one write the same bytes (latency aside), and so do a
judge that got its passes in one run and one whose passes were added later.

J of a pass is the mean of the parsed verdicts' scores over the judged rows (failures
excluded); with several passes, J is the mean of the passes' J, with their sample
standard deviation and the share of rows whose passes all agree. Mem0's F1 and BLEU-1
are means over every judged row, not means of category means. A LongMemEval pack's judge
also gets the authors' QA metrics (`memorybench.benchmarks.longmemeval.autorater`); its
categories are the question types, all judged.
"""

from __future__ import annotations

import os
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.errors import UserError
from memorybench.llm.usage import usage_summary
from memorybench.pack import layout
from memorybench.benchmark import Benchmark, benchmark_named
from memorybench.pack.autorater_schemas import (
    Agreement,
    AutoraterCounts,
    AutoraterMetrics,
    CategoryMeans,
    JScores,
    JudgeFailure,
    JudgeSummary,
    PassCounts,
)
from memorybench.pack.reader import PackReader
from memorybench.registry import JUDGES
from memorybench.score.judge import Mem0Judge
from memorybench.stages.autorater_judge import pack_benchmark

__all__ = ["JUDGED_CATEGORIES", "LABELS", "autorater_metrics", "compute_autorater_metrics", "format_autorater_table", "one_judge"]

#: the default protocol's judged categories: Mem0 judges 1-4 and skips 5 (adversarial)
JUDGED_CATEGORIES = Mem0Judge.judged_categories
PARSED = ("CORRECT", "WRONG")

LABELS = {
    "j": (
        "Mem0's LLM-as-a-judge J: share of CORRECT labels over judged category 1-4 rows (failures excluded); "
        "with several passes, the mean of the per-pass J and their sample standard deviation (n-1)"
    ),
    "j.agreement": "share of category 1-4 rows judged in every pass whose passes all gave the same score",
    "mem0_f1": "Mem0's lexical F1 (token sets): mean over every category 1-4 row, not a mean of category means",
    "mem0_bleu1": "Mem0's BLEU-1 (NLTK, smoothing method1): mean over every category 1-4 row",
}


def _mean(values: Sequence[float]) -> float | None:
    # a plain sum, as this file has always been written (stats.mean's fsum may differ in the last bit)
    return sum(values) / len(values) if values else None


def _category_means(pairs: Sequence[tuple[int, float]], categories: Sequence[int]) -> dict[str, float | None]:
    return {str(c): _mean([v for cat, v in pairs if cat == c]) for c in categories}


def one_judge(pack: PackReader, judge_id: str | None) -> str:
    """`judge_id`, or the pack's only finished judge when it is None."""
    if judge_id is not None:
        return judge_id
    judges = pack.judges()
    if len(judges) != 1:
        have = ", ".join(judges) if judges else "none"
        raise UserError(f"pack {pack.uri()} has {len(judges)} finished judges ({have}); name one by its judge id")
    return judges[0]


def _judged_categories(protocol: str, benchmark: Benchmark) -> tuple[int, ...]:
    """The categories a judge judges: its protocol's; an unregistered one (`imported`) judges
    those the benchmark's judge judges (LoCoMo's 1-4, as Mem0 does), else every kind."""
    if protocol in JUDGES:
        return tuple(JUDGES.get(protocol).judged_categories)
    return tuple(benchmark.judged) if benchmark.judged is not None else tuple(sorted(benchmark.category_names))


def _labels(protocol: str) -> dict[str, str] | None:
    """What a protocol's figures mean, where it says so itself (`labels`: a benchmark's own judge)."""
    labels = getattr(JUDGES.get(protocol), "labels", None) if protocol in JUDGES else None
    return dict(labels) if labels else None


def autorater_metrics(
    pack_root: str | os.PathLike[str] | PackReader,
    judge_id: str | None = None,
    judged_categories: Sequence[int] | None = None,
) -> AutoraterMetrics:
    """The `autorater_metrics.v1` record of one judge of a pack (None: its only finished
    judge), from its stored files only. `judged_categories` default to its protocol's.

    A LongMemEval pack (metrics.json's `benchmark`, else run_meta's dataset) also gets
    `longmemeval`: what print_qa_metrics.py gives over the verdicts, and whether the judge is
    the one the authors' figures come from (`memorybench.benchmarks.longmemeval.autorater`)."""
    pack = PackReader.open(pack_root)
    judge_id = one_judge(pack, judge_id)
    rows = pack.predictions()
    meta = pack.autorater_meta(judge_id)
    if meta is None:
        raise FileNotFoundError(pack.uri(pack.judge_path(judge_id, layout.JUDGE_META)))
    run_meta = pack.meta() if pack.exists(layout.RUN_META) else None
    verdicts = pack.verdicts(judge_id)
    traces = list(pack.rows(pack.judge_path(judge_id, layout.JUDGE_TRACES)))  # dicts: what usage_summary sums
    passes = meta.passes
    benchmark = pack_benchmark(pack)
    # a benchmark with figures of its own (LongMemEval's print_qa_metrics.py) gets them beside the per-kind means
    own = benchmark.judge_figures is not None
    categories = (
        tuple(judged_categories) if judged_categories is not None else _judged_categories(meta.identity.protocol, benchmark)
    )
    names = benchmark.category_names
    order = {row.question_id: i for i, row in enumerate(rows)}
    judged_rows = [row for row in rows if row.category in categories]

    scores: dict[tuple[str, int], float] = {}
    by_pass = []
    j_passes: list[float | None] = []
    j_passes_by_category: list[dict[str, float | None]] = []
    for n in range(1, passes + 1):
        these = [v for v in verdicts if v.pass_ == n]
        parsed = [v for v in these if v.status in PARSED]
        for v in parsed:
            scores[(v.question_id, n)] = v.score  # type: ignore[assignment]
        by_pass.append(
            PassCounts(
                pass_=n,
                judged=len(parsed),
                skipped=sum(1 for v in these if v.status == "SKIPPED"),
                failed=sum(1 for v in these if v.status == "FAILED"),
            )
        )
        j_passes.append(_mean([v.score for v in parsed]))  # type: ignore[misc]
        j_passes_by_category.append(_category_means([(v.category, v.score) for v in parsed], categories))  # type: ignore[misc]

    present = [j for j in j_passes if j is not None]
    by_category = {}
    for c in categories:
        values = [p[str(c)] for p in j_passes_by_category if p[str(c)] is not None]
        by_category[str(c)] = _mean(values)  # type: ignore[arg-type]
    unanimous = agreed_rows = 0
    for row in judged_rows:
        row_scores = [scores.get((row.question_id, n)) for n in range(1, passes + 1)]
        if None in row_scores:
            continue
        agreed_rows += 1
        unanimous += len(set(row_scores)) == 1
    share = (unanimous / agreed_rows if agreed_rows else None) if passes > 1 else None

    failed = [v for v in verdicts if v.status == "FAILED"]
    failed.sort(key=lambda v: (v.pass_, order.get(v.question_id, 0)))
    failed_ids = sorted({v.question_id for v in failed}, key=lambda q: order.get(q, 0))
    labels = Counter(v.label_raw for v in verdicts if v.status in PARSED and not v.label_standard)

    lexical = {
        v.question_id: (v.category, v.mem0_f1, v.mem0_bleu1) for v in verdicts if v.status != "SKIPPED" and v.mem0_f1 is not None
    }
    lexical_rows = [lexical[row.question_id] for row in judged_rows if row.question_id in lexical]

    responses = [t for t in traces if t.get("response") is not None]
    usage = usage_summary(responses) if responses else {}
    if usage:
        usage["failed_calls"] = sum(1 for t in traces if t.get("response") is None)
    answered = sorted({t["model_answered"] for t in traces if t.get("model_answered")})
    judge_cfg = meta.judge_config
    summary = JudgeSummary(
        name=judge_cfg.get("name"),
        provider=judge_cfg.get("provider"),
        model_requested=meta.judge_model_sent,
        model_configured=meta.judge.requested,
        models_answered=answered,
        base_url=judge_cfg.get("base_url"),
        temperature=judge_cfg.get("temperature"),
        max_tokens=judge_cfg.get("max_tokens"),
        seed=judge_cfg.get("seed"),
        response_format=meta.response_format,
        local=meta.local_judge,
        weights=meta.judge.weights,
    )
    return AutoraterMetrics(
        run_id=meta.run_id,
        questions=len(rows),
        is_prefix=run_meta.is_prefix if run_meta else None,
        reader_local_model=run_meta.local_model if run_meta else None,
        local_judge=meta.local_judge,
        passes=passes,
        judge=summary,
        judge_prompt_sha256=meta.prompt["sha256"],
        prompt=meta.prompt,
        category_names={str(c): names[c] for c in categories},
        j=JScores(
            overall=_mean(present),
            by_category=by_category,
            passes=j_passes,
            passes_by_category=j_passes_by_category,
            mean=_mean(present),
            sd=statistics.stdev(present) if len(present) > 1 else None,
            agreement=Agreement(rows=agreed_rows, unanimous=unanimous, share=share),
            interval=_j_interval(judged_rows, scores, passes, benchmark.unit) if passes > 1 else None,
        ),
        counts=AutoraterCounts(
            rows=len(rows),
            judged_rows=len(judged_rows),
            skipped_rows=len(rows) - len(judged_rows),
            requests=len(traces),
            judged=sum(p.judged for p in by_pass),
            skipped=sum(p.skipped for p in by_pass),
            failed=len(failed),
            by_pass=by_pass,
            by_category={str(c): sum(1 for r in judged_rows if r.category == c) for c in categories},
            failed_question_ids=failed_ids,
            failures=[JudgeFailure(question_id=v.question_id, pass_=v.pass_, failure=v.failure, error=v.error) for v in failed],
            nonstandard_labels=sum(labels.values()),
            nonstandard_label_values=dict(sorted(labels.items())),  # type: ignore[arg-type]
            in_j_by_category={
                str(c): sum(
                    1 for r in judged_rows if r.category == c and all((r.question_id, n) in scores for n in range(1, passes + 1))
                )
                for c in categories
            },
        ),
        mem0_f1=CategoryMeans(
            overall=_mean([f1 for _, f1, _ in lexical_rows]),  # type: ignore[misc]
            by_category=_category_means([(c, f1) for c, f1, _ in lexical_rows], categories),  # type: ignore[misc]
        ),
        mem0_bleu1=CategoryMeans(
            overall=_mean([b for _, _, b in lexical_rows]),  # type: ignore[misc]
            by_category=_category_means([(c, b) for c, _, b in lexical_rows], categories),  # type: ignore[misc]
        ),
        usage={"judge": usage} if usage else {},
        labels=_labels(meta.identity.protocol) or (benchmark.own("judge_figures", "LABELS") if own else LABELS),
        notes=meta.notes,
        # absent where it is the benchmark an absent key means (LoCoMo's): its file keeps its bytes
        benchmark=None if benchmark is benchmark_named(None) else benchmark.name,
        **(
            {
                benchmark.own("judge_figures", "FIELD"): benchmark.own("judge_figures", "scores")(
                    verdicts, passes, meta.identity.protocol, summary, traces=traces
                )
            }
            if own
            else {}
        ),
    )


def _j_interval(rows: Sequence[Any], scores: Mapping[tuple[str, int], float], passes: int, unit: str) -> dict[str, Any]:
    """J's interval over the benchmark's unit with several passes: each question's mean over the
    passes that labelled it, its sample the cluster (a rate's interval, as compare and report give)."""
    from memorybench.compare.intervals import mean_interval

    values, clusters = [], []
    for row in rows:
        found = [scores[(row.question_id, n)] for n in range(1, passes + 1) if (row.question_id, n) in scores]
        if found:
            values.append(sum(found) / len(found))
            clusters.append(row.sample_id)
    found = mean_interval(values, clusters, unit=unit, kind="rate")
    return {"low": found.low, "high": found.high, "confidence": found.confidence, "units": found.clusters, "unit": unit}


def compute_autorater_metrics(pack_root: str | os.PathLike[str] | PackReader, judge_id: str | None = None) -> dict[str, Any]:
    """`autorater_metrics.json`'s content (the record as JSON) of one judge (None: the only
    finished one), from the stored files only."""
    return autorater_metrics(pack_root, judge_id).model_dump(mode="json", by_alias=True)


def format_autorater_table(metrics: Mapping[str, Any]) -> str:
    """The table printed at the end: J, Mem0 F1 and BLEU-1 per category, passes, failures (a
    LongMemEval judge: accuracy per type, task-averaged, overall, abstention)."""
    lines = list(metrics.get("notes", []))
    judge = metrics["judge"]
    lines.append(
        f"judge: {judge['name']} ({judge['provider']}), model {judge['model_requested']}"
        f" answered by {', '.join(judge['models_answered']) or '-'}; prompt sha256 {metrics['judge_prompt_sha256'][:12]}"
    )
    own = benchmark_named(metrics.get("benchmark"))
    if own.judge_figures and metrics.get(own.own("judge_figures", "FIELD")) is not None:  # the benchmark's own figures
        return "\n".join(lines + own.own("judge_figures", "lines")(metrics) + _usage_lines(metrics))
    # Mem0's J over the kinds its judge judges (LoCoMo's 1-4, named by their subset), or the benchmark's own score
    bench = benchmark_named(metrics.get("benchmark"))
    judged = next((name for name, s in bench.subsets.items() if bench.judged and tuple(s.kinds) == tuple(bench.judged)), None)
    header = f"{'cat':<4}{'name':<13}{'n':>5}  {'J' if bench.figure_key == 'j' else 'score':>7}  {'Mem0 F1':>8}  {'BLEU-1':>8}"
    lines += [header, "-" * len(header)]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    counts = metrics["counts"]
    in_j = counts.get("in_j_by_category") or counts["by_category"]
    for key in metrics["category_names"]:
        c = int(key)
        lines.append(
            f"{c:<4}{metrics['category_names'][key]:<13}{in_j[key]:>5}  "
            f"{fmt(metrics['j']['by_category'][key]):>7}  "
            f"{fmt(metrics['mem0_f1']['by_category'][key]):>8}  {fmt(metrics['mem0_bleu1']['by_category'][key]):>8}"
        )
    lines.append("-" * len(header))
    lines.append(
        f"{judged or 'overall':<17}{sum(in_j.values()):>5}  {fmt(metrics['j']['overall']):>7}  "
        f"{fmt(metrics['mem0_f1']['overall']):>8}  {fmt(metrics['mem0_bleu1']['overall']):>8}"
    )
    unjudged = [k for k in bench.category_names if bench.judged is not None and k not in bench.judged]
    if unjudged:
        kinds = ", ".join(f"{k} ({bench.category_names[k]})" for k in unjudged)
        lines.append(f"{kinds} skipped: {counts['skipped_rows']} rows, no judge request")
    j = metrics["j"]
    if metrics["passes"] > 1:
        sd = "-" if j["sd"] is None else f"{j['sd']:.4f}"
        share = "-" if j["agreement"]["share"] is None else f"{j['agreement']['share']:.4f}"
        interval = j.get("interval") or {}
        over = (
            f"{interval['confidence']:.0%} interval [{fmt(interval['low'])}, {fmt(interval['high'])}] over "
            f"{interval['units']} {interval['unit']}s"
            if interval.get("low") is not None
            else "no interval over the benchmark's unit (fewer than two)"
        )
        # the pass-to-pass sd is the judge's own spread, far narrower than the figure's uncertainty:
        # never shown without the interval over the benchmark's unit
        lines.append(
            f"passes: {metrics['passes']}; J per pass {', '.join(fmt(p) for p in j['passes'])}; "
            f"mean {fmt(j['mean'])}, {over}; sd over passes {sd} (the judge's run-to-run spread, not the "
            f"figure's uncertainty); all passes agree on {share} of {j['agreement']['rows']} rows"
        )
    lines.append(judge_accounting(metrics))
    return "\n".join(lines + _usage_lines(metrics))


def _usage_lines(metrics: Mapping[str, Any]) -> list[str]:
    usage = metrics.get("usage", {}).get("judge")
    if not usage:
        return []
    cost = f"${usage['cost_usd']:.4f}" if usage["cost_known"] else "unknown (model not in the price table)"
    return [
        f"judge usage: {usage['calls']} calls ({usage['failed_calls']} without a reply, retries {usage['retries']}); "
        f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens; cost {cost}"
    ]


#: Mem0's published J: their pinned prompt (judge=mem0) sent to this model
MEM0_JUDGE_MODELS = ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")


def judge_accounting(metrics: Mapping[str, Any]) -> str:
    """One line that accounts for every judged row: labelled (non-standard labels among them,
    scored WRONG as Mem0 does), unreadable and left out of J, and the n J is over."""
    counts, passes = metrics["counts"], metrics["passes"]
    in_j = sum((counts.get("in_j_by_category") or counts["by_category"]).values())
    per_pass = f" x {passes} passes" if passes > 1 else ""
    parts = [f"{counts['judged']} labelled"]
    if counts["nonstandard_labels"]:
        values = ", ".join(f"{k!r} x{v}" for k, v in counts["nonstandard_label_values"].items())
        parts.append(f"{counts['nonstandard_labels']} of them non-standard ({values}), scored WRONG as Mem0 does")
    if counts["failed"]:
        ids = counts["failed_question_ids"]
        shown = ", ".join(ids[:10]) + (f" (+{len(ids) - 10} more)" if len(ids) > 10 else "")
        parts.append(
            f"{counts['failed']} unreadable, excluded from {'J' if metrics.get('benchmark') is None else 'the figure'}: {shown}"
        )
    else:
        parts.append("0 unreadable")
    judge = metrics["judge"]
    if metrics.get("benchmark") is not None:  # another benchmark's own judge: its figure, every kind judged
        from memorybench.benchmark import benchmark_named

        bench = benchmark_named(metrics["benchmark"])
        published = judge.get("name") == bench.judge and not judge.get("local")
        label = "" if published else f"; not comparable with {bench.title}'s published figures (that is judge={bench.judge})"
        return (
            f"judge accounting: {counts['judged_rows']} rows{per_pass}: {'; '.join(parts)}; "
            f"{bench.judge_figure} over {in_j} rows{label}"
        )
    comparable = not judge.get("local") and judge.get("name") == "mem0" and str(judge.get("model_requested")) in MEM0_JUDGE_MODELS
    label = "" if comparable else ("; not comparable with Mem0's published J (that is judge=mem0 with gpt-4o-mini)")
    return (
        f"judge accounting: {counts['judged_rows']} rows of categories 1-4{per_pass}: {'; '.join(parts)}; "
        f"J over {in_j} rows{label}"
    )

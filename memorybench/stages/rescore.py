"""Scores of a pack from its stored rows: `predictions.csv` and `metrics.json`.

Pure function of the pack's files (no model, no clock), so `memorybench rescore PACK`
is byte-identical on every run and equals what `qa` wrote at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.benchmark import benchmark_named
from memorybench.pack import layout
from memorybench.pack.lock import folder_lock
from memorybench.pack.run_pack import RunPack
from memorybench.pack.scores import compute_scores
from memorybench.pack.success import reclose
from memorybench.score.score_record import kind_counts_of, kind_names_of, scores_of
from memorybench.score.rows import predictions_csv
from memorybench.score.scorers import LEXICAL


def rescore(pack_root: Path) -> dict[str, Any]:
    """Rewrite predictions.csv and metrics.json from the stored rows; return the metrics.

    On a finished pack, rescore is the one writer of these two files: it records their
    new sha256 in `_SUCCESS` (`reclose`; nothing is rewritten when the scores are the same),
    and verify checks their content against a fresh rescore of its own. It holds the pack's
    lock while it does (`memorybench.pack.lock`): a pack that `qa` is writing is refused.
    """
    with folder_lock(pack_root, "pack"):
        return write_scores(pack_root)


def write_scores(pack_root: Path) -> dict[str, Any]:
    """`rescore` for a caller that holds the pack's lock already (`qa`, at the end of its run)."""
    rows, metrics = compute_scores(pack_root)
    pack = RunPack(pack_root)
    pack.write_text(layout.PREDICTIONS_CSV, predictions_csv(rows, benchmark_named(metrics.get("benchmark"))))
    pack.write_json(layout.METRICS, metrics)
    reclose(pack_root, (layout.PREDICTIONS_CSV, layout.METRICS))
    return metrics


def selection_label(selection: dict[str, Any]) -> str:
    """The line a results table gives a run of selected questions (RunMeta.selection)."""
    n = len(selection.get("question_ids") or ())
    if selection.get("by") == "question_sample":
        how = f"a sample of up to {selection.get('per_kind')} per kind, seed {selection.get('seed')} (question_sample)"
    else:
        how = "chosen by id (question_ids)"
    return f"Subset: {n} questions, {how}; not the whole benchmark."


def format_table(metrics: dict[str, Any]) -> str:
    """The results table printed at the end of a run: category number beside its name."""
    lines = []
    if metrics.get("local_model"):
        lines.append(
            f"Embedded local model: not comparable with published {benchmark_named(metrics.get('benchmark')).title} numbers."
        )
    selection = metrics.get("selection")
    if selection:  # question_ids or question_sample (RunMeta.selection): a part, labelled as a prefix is
        lines.append(selection_label(selection))
    elif metrics.get("is_prefix"):
        lines.append(f"Smoke test: the first {metrics['questions']} questions only (max_questions).")
    partial = metrics.get("partial")
    if partial:  # a partial import (import --allow-partial): not a prefix, some conversations or rows
        lines.append(
            f"Partial import: {partial['questions']} of {partial['of']} questions ({len(partial['conversations'])} "
            "conversations held); not comparable with figures over the whole set."
        )

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    benchmark = benchmark_named(metrics.get("benchmark"))
    scores, counts, names = scores_of(metrics), kind_counts_of(metrics), kind_names_of(metrics)
    if not benchmark.own_lexical_rules:
        return (
            "\n".join(lines + _other_table(benchmark, scores, counts, names, metrics, fmt))
            + "\n"
            + "\n".join(_usage_lines(metrics))
        )
    header = f"{'cat':<4}{'name':<13}{'n':>5}  {benchmark.lexical_figure:>9}  {'EM (ours)':>9}  {'tokF1 (ours)':>12}"
    lines += [header, "-" * len(header)]
    columns = (LEXICAL, "exact_match", "token_f1")

    def kind(metric: str, key: str) -> float | None:
        return scores[metric]["by_kind"][key]["value"]

    for category, name in benchmark.category_names.items():
        key = str(category)
        lines.append(
            f"{category:<4}{name:<13}{counts[key]:>5}  {fmt(kind(LEXICAL, key)):>9}  "
            f"{fmt(kind('exact_match', key)):>9}  {fmt(kind('token_f1', key)):>12}"
        )
    lines.append("-" * len(header))
    # each overall over the kinds it names (the benchmark's subsets: LoCoMo's 1-4 always, 1-5 where
    # category 5 was asked); a metrics.json from before the two overalls has only `overall`, over
    # every question it holds
    subsets = scores[LEXICAL].get("subsets") or {}
    if not subsets:
        values = [fmt(scores[m]["overall"]["value"]) for m in columns]
        lines.append(f"{'all':<17}{metrics['counts']['total']:>5}  {values[0]:>9}  {values[1]:>9}  {values[2]:>12}")
    for name, subset in benchmark.subsets.items():
        if name not in subsets or subsets[name]["value"] is None:
            continue
        n = sum(counts[str(k)] for k in subset.kinds)
        values = [fmt(scores[m]["subsets"][name]["value"]) for m in columns]
        lines.append(f"{'overall ' + name:<17}{n:>5}  {values[0]:>9}  {values[1]:>9}  {values[2]:>12}")
    lines += _usage_lines(metrics)
    return "\n".join(lines)


def _other_table(
    benchmark: Any, scores: dict[str, Any], counts: dict[str, int], names: dict[str, str], metrics: dict[str, Any], fmt: Any
) -> list[str]:
    """Another benchmark's table: per kind, overall and task-averaged, its lexical scores
    labelled a diagnostic (the benchmark's score is its judge's)."""
    lines = [
        f"{benchmark.name}: lexical scores are a diagnostic; its score is its judge's ({benchmark.scored_by}): "
        "memorybench autorater PACK"
    ]
    header = f"{'kind':<30}{'n':>5}  {'tokF1':>7}  {'EM':>7}"
    lines += [header, "-" * len(header)]
    token, exact = scores["token_f1"], scores["exact_match"]
    for key, name in names.items():
        lines.append(
            f"{key + ' ' + name:<30}{counts[key]:>5}  {fmt(token['by_kind'][key]['value']):>7}  "
            f"{fmt(exact['by_kind'][key]['value']):>7}"
        )
    lines.append("-" * len(header))
    lines.append(
        f"{'overall':<30}{metrics['counts']['total']:>5}  {fmt(token['overall']['value']):>7}  "
        f"{fmt(exact['overall']['value']):>7}"
    )
    if "task_average" in token:
        lines.append(
            f"{'task-averaged':<30}{'':>5}  {fmt(token['task_average']['value']):>7}  {fmt(exact['task_average']['value']):>7}"
        )
    return lines


def _usage_lines(metrics: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    reader = metrics.get("usage", {}).get("reader")
    if reader:
        cost = f"${reader['cost_usd']:.4f}" if reader["cost_known"] else "unknown (model not in the price table)"
        p50 = reader["latency_s"]["p50"]
        # latency is over calls the server answered: none when every call came from the cache
        latency = (
            f"latency p50 {round(p50, 3)} s"
            if p50 is not None
            else f"no latency ({reader.get('cache_hits', 0)} calls from the response cache)"
        )
        lines.append(
            f"reader: {reader['calls']} calls, {reader['prompt_tokens']} prompt + {reader['completion_tokens']} completion tokens, "
            f"cost {cost}, {latency}, retries {reader['retries']}"
            + (f", {reader['empty_replies']} empty replies stored as empty answers" if reader.get("empty_replies") else "")
            + (f", {reader['answers_cut']} answers cut to reader.max_answer_chars" if reader.get("answers_cut") else "")
        )
    lines += cost_lines(metrics)
    return lines


def cost_lines(metrics: dict[str, Any]) -> list[str]:
    """The build + answer = total cost line, and the writer's failed tasks: what the reader
    line alone leaves out (a writer-made memory can cost more than its answers)."""
    usage = metrics.get("usage") or {}

    def dollars(part: dict[str, Any]) -> str:
        return f"${part['cost_usd']:.4f}" if part.get("cost_known") and part.get("cost_usd") is not None else "unknown"

    lines = []
    total = usage.get("total")
    if total:
        parts = [
            f"{name} {dollars(usage[name])} ({usage[name]['calls']} calls)"
            for name in ("build", "reader", "agent")
            if name in usage
        ]
        per_question = "" if total["cost_per_question_usd"] is None else f", ${total['cost_per_question_usd']:.6f} per question"
        lines.append(
            f"cost: {' + '.join(parts)} = total {dollars(total)}{per_question}"
            + ("" if total["cost_known"] else " (a model is not in the price table)")
        )
    memory = metrics.get("memory")
    if memory:
        where = f"; skipped, listed in {memory['failures_file']}" if memory["failed"] else ""
        library = memory.get("library_reported")
        said = (
            (
                f" ({library['failed_tasks']} of them by the library's own report; {library['reports']} reports in "
                f"{library['file']})"
            )
            if library
            else ""
        )
        lines.append(f"memory: {memory['failed']} of {memory['tasks']} writer tasks failed{said}{where}")
    return lines

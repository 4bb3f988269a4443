"""Scores of a pack's stored answers: one row's local scores, the CSV, and the metrics.v1 of older
packs (metrics.json's record is `memorybench.score.score_record`).

Pure functions of the rows (no model, no clock, no files), so a rescore is byte-identical
on every run. Reading the rows from a pack is `memorybench.pack.scores`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memorybench.benchmark import Benchmark, benchmark_named
from memorybench.benchmark import PLAIN_RULE as SPEC_PLAIN_RULE
from memorybench.errors import UserError
from memorybench.score.scorers import LEXICAL, scorers
from memorybench.stats import mean

ROW_COLUMNS = ("question_id", "sample_id", "category", "category_name", "question", "prediction", "gold", "adversarial_answer")


#: the categories of Mem0's basis (its judge, F1 and BLEU-1 skip category 5)
JUDGED = (1, 2, 3, 4)


def covers_label(categories: Sequence[int], benchmark: Benchmark | None = None) -> str:
    """What an overall over these kinds of a benchmark (None: the default's) covers, in words:
    "categories 1-5", "categories 1-4 (category 5 not asked)", "categories 1, 2 (3, 4, 5 absent)"
    (a kind only some subset needs asked, `Subset.asked`, is "not asked" when it is missing)."""
    benchmark = benchmark or benchmark_named(None)
    word, words = benchmark.kind_word, benchmark.kinds_word
    held = sorted(set(int(c) for c in categories))
    if not held:
        return "no questions"
    every = sorted(benchmark.category_names)
    if held == every:
        return f"{words} {every[0]}-{every[-1]}"
    span = (
        f"{words} {held[0]}-{held[-1]}"
        if held == list(range(held[0], held[-1] + 1)) and len(held) > 2
        else (f"{word} {held[0]}" if len(held) == 1 else f"{words} " + ", ".join(map(str, held)))
    )
    absent = [c for c in every if c not in held]
    optional = {kind for subset in benchmark.subsets.values() for kind in subset.asked}
    if set(absent) <= optional:
        return f"{span} ({word if len(absent) == 1 else words} {', '.join(map(str, absent))} not asked)"
    return f"{span} ({', '.join(map(str, absent))} absent)"


#: another benchmark's rows are scored lexically by LoCoMo's single-hop rule (normalised
#: token F1, no category rules) where it names no rule of a LoCoMo category for a kind
#: (`Benchmark.lexical_rules`): a diagnostic beside the benchmark's own judge, never its score
PLAIN_RULE = SPEC_PLAIN_RULE
#: what such a diagnostic is called where a LoCoMo pack's column says `locomo_f1`: the single-hop
#: rule is a normalised, Porter-stemmed token F1, and on another benchmark it is not LoCoMo F1
DIAGNOSTIC_NAMES = {LEXICAL: "stemmed_token_f1"}


def diagnostic_name(metric: str) -> str:
    """A qa scorer's name on another benchmark's rows (`locomo_f1` -> `stemmed_token_f1`; the others as they are)."""
    return DIAGNOSTIC_NAMES.get(metric, metric)


def score_row(row: Mapping[str, Any], benchmark: Benchmark | None = None) -> dict[str, float]:
    """Every qa-stage scorer's score of one prediction row."""
    benchmark = benchmark or benchmark_named(None)
    if not benchmark.own_lexical_rules:
        row = {**row, "category": benchmark.lexical_rule(row["category"])}
    scores = {}
    for scorer in scorers("qa"):
        try:
            scores[scorer.name] = scorer(row)
        except (UserError, KeyError, TypeError, ValueError):
            raise  # a row that does not match its schema (a category, a gold): the caller's one-line error
        except Exception as e:  # noqa: BLE001 - a scorer that cannot score this text: one line naming the row
            raise UserError(
                f"question {row.get('question_id')!r}: scorer {scorer.name} could not score its stored answer "
                f"({len(str(row.get('prediction', '')))} characters; {type(e).__name__}: {str(e)[:120]}); every answer "
                "is kept in predictions.jsonl; rerun after upgrading memorybench, or report this answer as a scorer bug"
            ) from None
    return scores


def metrics_v1(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], benchmark: Benchmark | None = None) -> dict[str, Any]:
    """`metrics.json` in the LoCoMo-shaped metrics.v1 of packs written before metrics.v2
    (`memorybench.score.score_record`), from scored rows: `verify` rescores an older pack in its
    own shape, so its metrics.json still verifies."""
    benchmark = benchmark or benchmark_named(None)
    if not benchmark.own_lexical_rules:
        return _other_metrics(rows, meta, benchmark)
    names = benchmark.category_names
    metrics: dict[str, Any] = {
        "schema": "metrics.v1",
        "run_id": meta.get("run_id"),
        "questions": len(rows),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "category_names": {str(k): v for k, v in names.items()},
        "counts": {"total": len(rows), "by_category": {}},
        "labels": {s.name: s.label for s in scorers("qa")},
    }
    held = sorted({int(r["category"]) for r in rows})
    metrics["overall_covers"] = covers_label(held, benchmark)
    for metric in (s.name for s in scorers("qa")):
        by_category = {str(c): mean([r[metric] for r in rows if r["category"] == c]) for c in names}
        metrics[metric] = {
            "overall": mean([r[metric] for r in rows]),
            # the two overalls the field reports, each only over the categories it names:
            # 1-4 (Mem0's basis), and 1-5 (LoCoMo's) only where category 5 was asked
            "overall_1_4": mean([r[metric] for r in rows if r["category"] in JUDGED]),
            "overall_1_5": mean([r[metric] for r in rows]) if 5 in held else None,
            "by_category": by_category,
        }
    for category in names:
        metrics["counts"]["by_category"][str(category)] = sum(1 for r in rows if r["category"] == category)
    if meta.get("partial"):  # a partial import (RunMeta.partial): what it holds and what is absent
        metrics["partial"] = meta["partial"]
    if meta.get("selection"):  # questions chosen by id or by a seeded sample (RunMeta.selection)
        metrics["selection"] = meta["selection"]
    return metrics


def _other_metrics(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any], benchmark: Benchmark) -> dict[str, Any]:
    """metrics.json of a benchmark other than LoCoMo (LongMemEval): per kind, overall and the
    mean of the kinds (LongMemEval's "task-averaged"), each lexical score labelled a
    diagnostic; the benchmark's own score is its judge's (autorater)."""
    names = benchmark.category_names
    metrics: dict[str, Any] = {
        "schema": "metrics.v1",
        "run_id": meta.get("run_id"),
        "benchmark": benchmark.name,
        "questions": len(rows),
        "is_prefix": meta.get("is_prefix"),
        "local_model": meta.get("local_model"),
        "category_names": {str(k): v for k, v in names.items()},
        "counts": {"total": len(rows), "by_category": {str(c): sum(1 for r in rows if r["category"] == c) for c in names}},
        "labels": {
            s.name: f"{s.label}; on {benchmark.name}: a lexical diagnostic (its score is its judge's: {benchmark.scored_by})"
            for s in scorers("qa")
        },
        "overall_covers": f"{benchmark.name}: {len({r['category'] for r in rows})} of {len(names)} kinds",
    }
    for metric in (s.name for s in scorers("qa")):
        by_category = {str(c): mean([r[metric] for r in rows if r["category"] == c]) for c in names}
        held = [v for v in by_category.values() if v is not None]
        metrics[metric] = {"overall": mean([r[metric] for r in rows]), "by_category": by_category}
        if benchmark.task_averaged:  # LongMemEval's mean of its per-kind figures, only where every kind has questions
            every = len(held) == len(names)
            metrics[metric] = {
                "overall": metrics[metric]["overall"],
                "task_averaged": mean(held) if every else None,
                "by_category": by_category,
            }
    if meta.get("partial"):  # a partial import (RunMeta.partial), as for LoCoMo
        metrics["partial"] = meta["partial"]
    if meta.get("selection"):  # questions chosen by id or by a seeded sample, as for LoCoMo
        metrics["selection"] = meta["selection"]
    return metrics


#: a cell a spreadsheet would run as a formula (= + - @, or a tab or CR before one), behind any quotes
_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_NEUTRALISED = re.compile(r"'+[=+\-@\t\r]")


def csv_cell(text: str) -> str:
    """A text cell of a CSV file we write (predictions.csv, runs.csv), safe to open in a spreadsheet:
    one that would start a formula (`=HYPERLINK(...)`, a model named `=1+1`, `-5`) gets a leading `'`,
    which spreadsheets show as text. Reversible (`csv_text`): a cell already starting with quotes
    before such a character gets one more. Only CSV files: Parquet and JSONL keep the exact text."""
    return "'" + text if _FORMULA.match(text) else text


def csv_text(cell: str) -> str:
    """The exact text of a cell `csv_cell` wrote."""
    return cell[1:] if _NEUTRALISED.match(cell) else cell


def predictions_csv(rows: Sequence[Mapping[str, Any]], benchmark: Benchmark | None = None) -> str:
    benchmark = benchmark or benchmark_named(None)
    names_of = benchmark.category_names
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [s.name for s in scorers("qa")]
    writer.writerow((*ROW_COLUMNS, *names))
    for r in rows:
        writer.writerow(
            [
                *(csv_cell(str(v)) for v in (r["question_id"], r["sample_id"])),
                r["category"],
                names_of[r["category"]],
                *(
                    csv_cell(v)
                    for v in (
                        r["question"],
                        r["prediction"],
                        "" if r["gold"] is None else str(r["gold"]),
                        r.get("adversarial_answer") or "",
                    )
                ),
                *(repr(r[name]) for name in names),
            ]
        )
    return buffer.getvalue()

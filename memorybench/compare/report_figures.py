"""The report's figures: PNG files drawn with matplotlib's Agg canvas (no pyplot state).

Every figure is meant to be read at a glance without misleading: legends sit outside the
axes, every bar says how many questions it stands on (n=0 included), a kind scored by the
refusal rule says so (LoCoMo's category 5), J is drawn per judge beside the lexical F1, latency
axes start at zero and show p50 and p95, and a cost axis is logarithmic when costs span more
than 10x. Kinds, their names, overalls and figure names are the record's of the benchmark the
scores belong to (`memorybench.benchmark`; LoCoMo's where none is given).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memorybench.benchmark import Benchmark, benchmark_named
from memorybench.compare.report_tables import headline, judged_kinds, judged_subsets, subset_of
from memorybench.compare.summary import JUDGE_SEPARATOR, judge_key
from memorybench.errors import printable
from memorybench.fs import atomic_path
from memorybench.score.scorers import LEXICAL, subset_column

__all__ = ["figure_accuracy_vs_cost", "figure_accuracy_vs_latency", "figure_scores_by_category"]


def _figure(width: float = 8.0, height: float = 4.5) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> Path:
    from matplotlib.text import Text

    # a condition, run id or judge id from a pack is outside text: no control character is
    # drawn (nor named raw in matplotlib's missing-glyph warning on the terminal)
    for text in fig.findobj(Text):
        text.set_text(printable(text.get_text()))
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    return path


#: how a kind scored by the refusal rule is scored (`Benchmark.refusal_kinds`: LoCoMo's 5), named under its bars
REFUSAL_RULE_LABEL = "refusal rule"


def _category_label(category: int | str, bench: Benchmark) -> str:
    names = bench.category_names
    if category in bench.refusal_kinds:
        return f"{category} {names[category]}\n({REFUSAL_RULE_LABEL})"  # type: ignore[index]
    return f"{category} {names[category]}" if category in names else f"overall {category}"  # type: ignore[index]


def _plural(word: str) -> str:
    """`category` -> `categories`, `type` -> `types`, `conversation` -> `conversations`."""
    return f"{word[:-1]}ies" if word.endswith("y") else f"{word}s"


def _kinds_text(bench: Benchmark, kinds: tuple[int, ...]) -> str:
    """`categories 1-4`: these kinds by their subset's name, else by their numbers."""
    return f"{_plural(bench.kind_word)} {subset_of(bench, kinds) or ', '.join(map(str, kinds))}"


def _ci(metric: str, side: str) -> str:
    """The interval column of a metric: `f1` -> `f1_ci_low`, `j/<judge>` -> `j_ci_low/<judge>`."""
    name, sep, judge = metric.partition(JUDGE_SEPARATOR)
    return f"{name}_ci_{side}{sep}{judge}"


def _bars(
    ax: Any,
    bench: Benchmark,
    table: pd.DataFrame,
    conditions: list[str],
    categories: list[int | str],
    metric: str,
    ci: str,
    n_column: str,
    ylabel: str,
    title: str,
) -> list[Any]:
    """Grouped bars of `metric` per category and condition with bootstrap intervals, and the
    number of questions written at the foot of every bar (n=0 where a category is empty)."""
    width = 0.8 / max(1, len(conditions))
    x = np.arange(len(categories))
    handles = []
    for i, condition in enumerate(conditions):
        sel = table[table["condition"] == condition].set_index("category").reindex(categories)
        mean = sel[metric].to_numpy(dtype=float)
        low, high = sel[_ci(ci, "low")].to_numpy(dtype=float), sel[_ci(ci, "high")].to_numpy(dtype=float)
        err = np.nan_to_num(np.vstack([mean - low, high - mean]))
        positions = x + (i - (len(conditions) - 1) / 2) * width
        handles.append(ax.bar(positions, np.nan_to_num(mean), width, yerr=err, capsize=3, label=condition))
        # the count sits under its bar, between the axis and the category names
        for position, n in zip(positions, sel[n_column].fillna(0).astype(int)):
            ax.text(position, -0.015, f"n={n}", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=6)
    ax.set_xticks(x, [_category_label(c, bench) for c in categories], fontsize=8)
    ax.tick_params(axis="x", pad=12, length=0)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    return handles


def _table_judges(table: pd.DataFrame) -> list[str]:
    """The judges with a J column in the scores table (`j/<judge id>`) that has a value."""
    prefix = "j" + JUDGE_SEPARATOR
    return [c[len(prefix) :] for c in table.columns if c.startswith(prefix) and table[c].notna().any()]


def figure_scores_by_category(table: pd.DataFrame, path: Path, bench: Benchmark | None = None) -> Path:
    """The lexical F1 by kind and overall of the benchmark (`bench`, the default's when None:
    LoCoMo F1 by category, 5 with its rule named, then 1-4 and 1-5), and beside it one panel of
    J per judge over the kinds and overalls its judge scores (titled by its judge id); the
    legend sits below the axes, never over a bar."""
    bench = bench or benchmark_named(None)
    conditions = list(dict.fromkeys(table["condition"]))
    judges = _table_judges(table)
    units = _plural(bench.unit)
    fig = _figure(8.0 + 5.5 * len(judges), 5.2)
    axes = fig.subplots(1, 1 + len(judges), width_ratios=[6] + [5] * len(judges), squeeze=False)[0]
    _bars(
        axes[0],
        bench,
        table,
        conditions,
        [*bench.category_names, *bench.subsets],
        LEXICAL,
        "f1",
        "n",
        f"{bench.lexical_figure} (95% interval over {units})",
        f"{bench.lexical_figure} by {bench.kind_word}",
    )
    judged = judged_kinds(bench)
    for ax, judge in zip(axes[1:], judges):
        _bars(
            ax,
            bench,
            table,
            conditions,
            [*judged, *judged_subsets(bench)],
            judge_key("j", judge),
            judge_key("j", judge),
            judge_key("j_n", judge),
            f"{bench.judge_figure} (95% interval over {units})",
            f"{bench.judge_figure} by judge {judge}\n({_kinds_text(bench, judged)})",
        )
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=min(3, len(conditions)), fontsize="small")
    return _save(fig, path)


def _log_scale_if_wide(ax: Any, values: Sequence[float]) -> None:
    """A log axis when the positive values span more than 10x (a linear one hides the cheap end)."""
    positive = [v for v in values if v is not None and not math.isnan(v) and v > 0]
    if positive and max(positive) / min(positive) > 10:
        ax.set_xscale("log")


def _overall_ci(scores: pd.DataFrame, condition: str, f1: float, overall: str) -> np.ndarray | None:
    overall = scores[(scores["category"] == overall) & (scores["condition"] == condition)]
    if overall.empty:
        return None
    ci = overall.iloc[0]
    return np.nan_to_num(np.array([[f1 - ci["f1_ci_low"]], [ci["f1_ci_high"] - f1]], dtype=float))


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _headline(table: pd.DataFrame, bench: Benchmark) -> tuple[list[float], str, str]:
    """Per row of the cost table, the lexical F1 over the benchmark's headline overall (`headline`:
    LoCoMo's 1-4, its `locomo_f1_1_4` column; nan where the benchmark names none), that overall's
    name and the axis label."""
    name = headline(bench) or ""
    column = subset_column(name)
    values = list(table[column]) if name and column in table else [math.nan] * len(table)
    kinds = tuple(bench.subsets[name].kinds) if name else tuple(bench.category_names)
    return values, name, f"{bench.lexical_figure} ({_kinds_text(bench, kinds)})"


def figure_accuracy_vs_cost(table: pd.DataFrame, scores: pd.DataFrame, path: Path, bench: Benchmark | None = None) -> Path:
    """The lexical F1 over the benchmark's headline overall (LoCoMo F1, categories 1-4) against
    cost per question (USD where every price is known, else tokens)."""
    f1s, overall, ylabel = _headline(table, bench or benchmark_named(None))
    fig = _figure(6.5, 4.8)
    ax = fig.subplots()
    if table["cost_per_question_usd"].notna().any():
        x, label = "cost_per_question_usd", "cost per question: build + answer (USD)"
    else:
        x, label = "tokens_per_question", "tokens per question (prices unknown)"
    for row, f1 in zip(table.itertuples(index=False), f1s):
        if _is_missing(getattr(row, x)):
            continue
        ax.errorbar(
            [getattr(row, x)],
            [f1],
            yerr=_overall_ci(scores, row.condition, f1, overall),
            fmt="o",
            capsize=3,
            label=row.condition,
        )
    _log_scale_if_wide(ax, list(table[x]))
    ax.set_xlabel(label + (" (log scale)" if ax.get_xscale() == "log" else ""))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)  # the whole scale: a small gap looks small
    ax.set_title("Accuracy against cost")
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    return _save(fig, path)


def figure_accuracy_vs_latency(table: pd.DataFrame, scores: pd.DataFrame, path: Path, bench: Benchmark | None = None) -> Path:
    """The lexical F1 over the benchmark's headline overall (LoCoMo F1, categories 1-4) against
    answer latency: p50 (filled) and p95 (open) joined by a line, on an axis from zero so that
    milliseconds of noise do not fill the plot."""
    f1s, _, ylabel = _headline(table, bench or benchmark_named(None))
    fig = _figure(6.5, 4.8)
    ax = fig.subplots()
    for row, f1 in zip(table.itertuples(index=False), f1s):
        if _is_missing(row.latency_p50_s):
            continue
        (point,) = ax.plot([row.latency_p50_s], [f1], "o", label=row.condition)
        if not _is_missing(row.latency_p95_s):
            ax.plot([row.latency_p50_s, row.latency_p95_s], [f1] * 2, "-", color=point.get_color(), alpha=0.6)
            ax.plot([row.latency_p95_s], [f1], "o", mfc="none", color=point.get_color())
    ax.set_xlim(
        left=0,
        right=max(1e-3, float(np.nanmax(table[["latency_p50_s", "latency_p95_s"]].to_numpy(dtype=float), initial=0.0))) * 1.15,
    )
    ax.set_xlabel("answer latency (s): p50 filled, p95 open")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)  # the whole scale: a small gap looks small
    ax.set_title("Accuracy against latency")
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    return _save(fig, path)

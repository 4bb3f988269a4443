"""The report's tables: pure functions of the examples frame (and the runs frame), each a
DataFrame with one row per condition (and category, or judge, or judge pair). The scores
and their intervals are `report_scores`'s.

The examples frame is `collected/examples.parquet` with a `condition` column. Its kinds, their
names, its overalls and the kinds its judge scores are those of the record of the benchmark the
rows belong to (`benchmark_of_rows`, `memorybench.benchmark`: LoCoMo's categories 1-5, its
overalls 1-4 and 1-5, J over 1-4); no table names a benchmark. J is always read per judge:
the columns `j_score/<judge id>`, `j_verdict/<judge id>`, ... of `memorybench.compare.aggregate`,
and every J a table shows is named by its judge id.
A question answered by several runs of a condition (its replicates) counts once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from memorybench.benchmark import FIRST_ANSWER_RULE, Benchmark, Subset, benchmark_of_meta
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import ReferencePin
from memorybench.score.agreement import judge_agreement as agreement_of
from memorybench.stats import spread
from memorybench.compare.summary import JUDGE_SEPARATOR, judge_key
from memorybench.score.scorers import LEXICAL, subset_column

__all__ = [
    "LENGTH_BINS",
    "answer_length",
    "answered_kinds",
    "benchmark_of_rows",
    "blame_table",
    "category_name",
    "cost_latency",
    "gold_token_drop",
    "in_category",
    "judge_agreement",
    "judge_passes",
    "judged_conditions",
    "judged_kinds",
    "judges_of",
    "kinds_key",
    "markdown_table",
    "overall_shown",
    "refusals",
    "requests_budget",
    "rows_where",
    "stems",
]


def _fmt(value: Any, column: str = "") -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        # a cost nobody priced is unknown, never free and never blank
        return "unknown" if "cost" in column else "-"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (no extra dependency)."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = [
        "| " + " | ".join(_fmt(v, str(c)).replace("|", "\\|") for c, v in zip(frame.columns, row)) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *rows])


# -- scores ---------------------------------------------------------------------------
def judges_of(frame: pd.DataFrame) -> list[str]:
    """The judge ids whose columns the examples frame has, sorted."""
    prefix = "j_score" + JUDGE_SEPARATOR
    return sorted(c[len(prefix) :] for c in frame.columns if c.startswith(prefix))


def judged_conditions(frame: pd.DataFrame, judge: str) -> pd.Series:
    """Per condition: whether every pack of it has this judge (J is shown only then)."""
    column = judge_key("j_passes", judge)
    return frame.groupby("condition", sort=False)[column].apply(lambda s: bool(s.notna().all()))


# -- kinds: the record of the rows' benchmark ----------------------------------------
def benchmark_of_rows(rows: pd.DataFrame) -> Benchmark:
    """The benchmark of a condition's rows (their `dataset` column; LoCoMo's without one)."""
    names = rows["dataset"].dropna().unique() if "dataset" in rows else []
    return benchmark_of_meta({"name": str(names[0])} if len(names) else None)


def rows_where(frame: pd.DataFrame, test: Callable[[Benchmark, Any], bool]) -> pd.Series:
    """Per row, `test(benchmark, kind)` of its kind and its benchmark (its `dataset`; the default
    benchmark's without one): `rows_where(frame, Benchmark.judges)`, the rows its judge scores."""
    out = pd.Series(False, index=frame.index, dtype=bool)
    datasets = frame["dataset"].astype("string").fillna("") if "dataset" in frame else pd.Series("", index=frame.index)
    for name in datasets.unique():
        bench, here = benchmark_of_meta({"name": name} if name else None), datasets == name
        out[here] = [bool(test(bench, kind)) for kind in frame.loc[here, "category"]]
    return out


def judged_kinds(bench: Benchmark) -> tuple[int, ...]:
    """The kinds its judge scores (`Benchmark.judges`: J's categories 1-4)."""
    return tuple(k for k in bench.category_names if bench.judges(k))


def answered_kinds(bench: Benchmark) -> tuple[int, ...]:
    """The kinds whose right answer is no refusal (not `Benchmark.refusal_kinds`)."""
    return tuple(k for k in bench.category_names if k not in bench.refusal_kinds)


def _answered(bench: Benchmark, kind: Any) -> bool:
    return kind not in bench.refusal_kinds


def subset_of(bench: Benchmark, kinds: tuple[int, ...]) -> str | None:
    """The name of its subset of exactly these kinds (categories 1-4: "1-4"), else None."""
    return next((name for name, s in bench.subsets.items() if set(s.kinds) == set(kinds)), None)


def kinds_key(bench: Benchmark, kinds: tuple[int, ...]) -> str:
    """These kinds in a column name: their subset's name ("1-4" -> "1_4"), else their numbers
    joined by "_" (category 5: "5")."""
    name = subset_of(bench, kinds)
    return (name if name is not None else "_".join(map(str, kinds))).replace("-", "_")


def judged_subsets(bench: Benchmark) -> dict[str, Subset]:
    """Its subsets whose every kind its judge scores (1-4, not 1-5): a judge's figure has
    a number over them; over another it would be the judged kinds' under the subset's name."""
    return {name: s for name, s in bench.subsets.items() if all(bench.judges(k) for k in s.kinds)}


def headline(bench: Benchmark) -> str | None:
    """The subset every pack has (the first that needs no kind `asked`: 1-4, Mem0's basis),
    shown against cost and latency; None: it names none."""
    return next((name for name, s in bench.subsets.items() if not s.asked), None)


def category_name(category: int | str, bench: Benchmark) -> str:
    """A kind's name, or an overall's (its subset's `label`, else `overall <name>`)."""
    if category in bench.category_names:
        return bench.category_names[category]  # type: ignore[index]
    return bench.subsets[str(category)].label or f"overall {category}"


def in_category(frame: pd.DataFrame, category: int | str, bench: Benchmark) -> pd.Series:
    """The rows of a kind, or of one of the benchmark's overalls (`Benchmark.subsets`: "1-4",
    "1-5"; "all": every row)."""
    if category == "all":
        return pd.Series(True, index=frame.index)
    if category in bench.subsets:
        return frame["category"].isin(bench.subsets[str(category)].kinds)
    return frame["category"] == category


# -- cost -----------------------------------------------------------------------------
def _percentile(values: pd.Series, q: float) -> float:
    values = values.dropna()
    return float(np.percentile(values, q * 100)) if len(values) else math.nan


def _per_question_cost(runs: pd.DataFrame, column: str) -> float:
    """Dollars per answered question over a condition's runs; nan (unknown) when any run's is."""
    costs = runs[column]
    if costs.isna().any() or not runs["questions"].sum():
        return math.nan
    return float(costs.sum() / runs["questions"].sum())


def _overall_columns(rows: pd.DataFrame) -> dict[str, float]:
    """`locomo_f1_<subset>` over a condition's rows, one per subset of its benchmark (`_1_4` and
    `_1_5`): like with like in one column (1-5 is nan where category 5 was not asked). A
    benchmark whose lexical score is not its own has no such overall: its `locomo_f1` is LoCoMo's
    single-hop rule over every row, a lexical diagnostic (`memorybench.score.rows.PLAIN_RULE`),
    named as one."""
    bench = benchmark_of_rows(rows)
    if not bench.own_lexical_rules:
        from memorybench.score.rows import diagnostic_name

        return {f"diagnostic_{diagnostic_name(LEXICAL)}": rows[LEXICAL].mean()}
    held = set(rows["category"].unique())
    return {
        subset_column(name): rows.loc[rows["category"].isin(subset.kinds), LEXICAL].mean()
        if overall_shown(subset, held)
        else math.nan
        for name, subset in bench.subsets.items()
    }


def overall_shown(subset: Subset, held: set[int]) -> bool:
    """Whether an overall has a number over these held kinds: where any of its kinds beside those
    it needs `asked` was asked (1-4: a prefix may lack one, `overall_covers` says which),
    and every kind it needs asked was (1-5 only where category 5 was asked too, so a 1-4 number
    never stands under a 1-5 label)."""
    answerable = bool(held & (set(subset.kinds) - set(subset.asked)))
    return answerable and set(subset.asked) <= held


def _j_columns(rows: pd.DataFrame, judges: list[str]) -> dict[str, float]:
    """`j/<judge id>`: each judge's J over the kinds of the rows its benchmark's judge scores
    (`Benchmark.judges`: categories 1-4), where every such row has it. A benchmark whose
    figure is not J names it its own way (`figure_key`: `longmemeval_accuracy/<judge id>`)."""
    bench = benchmark_of_rows(rows)
    judged = rows[rows_where(rows, Benchmark.judges)]
    out = {}
    for judge in judges:
        scores = judged[judge_key("j_score", judge)]
        out[judge_key(bench.figure_key, judge)] = scores.mean() if scores.notna().all() and len(scores) else math.nan
    return out


def cost_latency(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy against cost per question (building the memory + answering, and each part)
    and answer latency (p50/p95 of calls not served from the response cache)."""
    out = []
    judges = judges_of(frame)
    for condition, rows in frame.groupby("condition", sort=False):
        mine = runs[runs["condition"] == condition]
        tokens = rows["prompt_tokens"].fillna(0) + rows["completion_tokens"].fillna(0)
        build_tokens = (mine["build_prompt_tokens"].fillna(0) + mine["build_completion_tokens"].fillna(0)).sum()
        latency = rows.loc[~rows["cache_hit"].fillna(False).astype(bool), "latency_s"]
        row: dict[str, Any] = {
            "condition": condition,
            "runs": rows["pack"].nunique(),
            "questions": rows["question_id"].nunique(),
            "rows": len(rows),
            **_overall_columns(rows),
            **_j_columns(rows, judges),
        }
        build, answer = _per_question_cost(mine, "build_cost_usd"), _per_question_cost(mine, "answer_cost_usd")
        row.update(
            {
                "tokens_per_question": float(tokens.mean()) if len(rows) else math.nan,
                "build_tokens_per_question": float(build_tokens / mine["questions"].sum())
                if mine["questions"].sum()
                else math.nan,
                "build_cost_per_question_usd": build,
                "answer_cost_per_question_usd": answer,
                "cost_per_question_usd": build + answer,
                "cost_usd": float(mine["build_cost_usd"].sum() + mine["answer_cost_usd"].sum())
                if not math.isnan(build + answer)
                else math.nan,
                "latency_p50_s": _percentile(latency, 0.5),
                "latency_p95_s": _percentile(latency, 0.95),
            }
        )
        out.append(row)
    return pd.DataFrame(out)


# -- requests and budgets -----------------------------------------------------------
def _spread_columns(name: str, values: pd.Series) -> dict[str, float]:
    """`<name>_p50`, `_p95`, `_max` over the known values (nearest rank, as COMPARISON.md)."""
    found = spread([float(v) for v in values.dropna()]) if values.notna().all() else None
    return {f"{name}_{k}": (found or {}).get(k, math.nan) for k in ("p50", "p95", "max")}


def _comparable(runs: pd.DataFrame) -> tuple[str, str]:
    """A condition's comparison status: `reader` (the baseline), `yes` when every agent run is
    comparable with reader runs, `no` when any is not, with each distinct reason once."""
    status = runs["agent_comparable"]
    if status.isna().all():
        return "reader", ""
    reasons = dict.fromkeys(str(text) for text in runs["agent_reasons"].dropna())  # each run's, once
    return ("yes" if status.fillna(False).astype(bool).all() else "no"), "; ".join(reasons)


def requests_budget(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Accuracy beside what answering took per question: model requests and tokens (p50, p95,
    max over the condition's rows), the token budget, the questions that hit it (scored as
    given, counted here) and whether an agent condition is comparable with reader runs."""
    out = []
    judges = judges_of(frame)
    for condition, rows in frame.groupby("condition", sort=False):
        mine = runs[runs["condition"] == condition]
        row: dict[str, Any] = {
            "condition": condition,
            "answerer": ", ".join(sorted(rows["answerer"].dropna().astype(str).unique())) or "-",
            "runs": rows["pack"].nunique(),
            "rows": len(rows),
            **_overall_columns(rows),
            **_j_columns(rows, judges),
        }
        tokens = rows["prompt_tokens"] + rows["completion_tokens"]
        hits = rows["agent_status"] == "budget_exceeded"
        comparable, reasons = _comparable(mine)
        row.update(
            {
                **_spread_columns("requests", rows["requests"]),
                **_spread_columns("tokens", tokens),
                "token_budget_p50": _spread_columns("token_budget", rows["token_budget"])["token_budget_p50"],
                "budget_exceeded": int(hits.sum()),
                "budget_exceeded_f1": rows.loc[hits, LEXICAL].mean() if hits.any() else math.nan,
                "comparable": comparable,
                "why_not": reasons or "-",
            }
        )
        out.append(row)
    table = pd.DataFrame(out)
    # nearest rank keeps counts whole: shown as counts, not as 1.0000
    counts = [c for c in table.columns if c.startswith(("requests_", "tokens_", "token_budget_"))]
    return table.astype({c: "Int64" for c in counts})


# -- judges ---------------------------------------------------------------------------
def _rate_interval(values: pd.Series, clusters: pd.Series, unit: str, confidence: float) -> tuple[float, float, str]:
    """(low, high, method) of a rate's interval over its clusters (`intervals.mean_interval`,
    kind rate); nan bounds where there is none, the method saying why."""
    from memorybench.compare.intervals import mean_interval

    found = mean_interval(values.to_numpy(float), clusters.to_numpy(), confidence=confidence, unit=unit, kind="rate")
    method = found.method if found.note is None else f"{found.method}: {found.note}"
    return (math.nan, math.nan, method) if found.low is None else (float(found.low), float(found.high), method)


def judge_passes(frame: pd.DataFrame, runs: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per condition and judge: its passes, J mean and sd over passes, and beside them J's
    interval over the benchmark's unit (`j_ci_low`, `j_ci_high`, `interval`: a question's J is
    its mean over passes and packs; the sd over passes says how the judge wavers, the interval
    how J would move on other conversations, about ten times as much), the share of rows whose
    parsed passes all agree, and the rows and verdicts with no readable label."""
    out = []
    for judge in judges_of(frame):
        with_j = judged_conditions(frame, judge)
        for condition, rows in frame.groupby("condition", sort=False):
            if not with_j.get(condition, False):
                continue
            run_rows = runs[runs["pack"].isin(rows["pack"].unique())]
            judged = rows[rows_where(rows, Benchmark.judges)]
            compared = judged[judge_key("j_agree", judge)].dropna()
            failed = judged[judge_key("j_failed", judge)].fillna(0)
            passes = run_rows[judge_key("j_passes", judge)]
            sd = run_rows[judge_key("j_sd", judge)]
            bench = benchmark_of_rows(rows)
            scored = judged.dropna(subset=[judge_key("j_score", judge)])
            per_question = scored.groupby(["question_id", "sample_id"], sort=False)[judge_key("j_score", judge)].mean()
            low, high, method = _rate_interval(
                per_question, per_question.index.get_level_values("sample_id").to_series(), bench.unit, confidence
            )
            out.append(
                {
                    "condition": condition,
                    "judge": judge,
                    "runs": len(run_rows),
                    "passes": int(passes.max()) if passes.notna().any() else 0,
                    "j_mean": run_rows[judge_key("j_mean", judge)].mean(),
                    "j_sd": sd.mean() if sd.notna().any() else math.nan,
                    "j_ci_low": low,
                    "j_ci_high": high,
                    "interval": method,
                    "rows_compared": len(compared),
                    "agreement": compared.astype(bool).mean() if len(compared) else math.nan,
                    "failed_rows": int((failed > 0).sum()),
                    "failed_verdicts": int(failed.sum()),
                }
            )
    return pd.DataFrame(
        out,
        columns=[
            "condition",
            "judge",
            "runs",
            "passes",
            "j_mean",
            "j_sd",
            "j_ci_low",
            "j_ci_high",
            "interval",
            "rows_compared",
            "agreement",
            "failed_rows",
            "failed_verdicts",
        ],
    )


def _label(value: Any) -> str | None:
    """Pass 1's verdict as a label to compare; a failed or skipped verdict is no label."""
    return value if value in ("CORRECT", "WRONG") else None


def judge_agreement(frame: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Two judges on the same rows: per condition, judge pair and kind its benchmark's judge scores
    (1-4), and all of them (named by their subset: "1-4"), the rows both labelled (pass 1),
    the share with equal labels and Cohen's kappa with its interval over the benchmark's unit
    (leave-one-conversation-out jackknife, `memorybench.compare.rates.kappa_interval`)."""
    from memorybench.compare.rates import kappa_interval

    judges = judges_of(frame)
    out = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            va, vb = judge_key("j_verdict", a), judge_key("j_verdict", b)
            both = frame[frame[va].notna() & frame[vb].notna() & rows_where(frame, Benchmark.judges)]
            for condition, rows in both.groupby("condition", sort=False):
                bench = benchmark_of_rows(rows)
                judged = judged_kinds(bench)
                for category in [*judged, "all"]:
                    sel = rows[in_category(rows, category, bench)]
                    result = agreement_of([_label(x) for x in sel[va]], [_label(x) for x in sel[vb]])
                    labelled = sel[sel[va].map(_label).notna() & sel[vb].map(_label).notna()]
                    found = kappa_interval(
                        labelled[va] == "CORRECT",
                        labelled[vb] == "CORRECT",
                        labelled["sample_id"],
                        confidence=confidence,
                        unit=bench.unit,
                    )
                    out.append(
                        {
                            "condition": condition,
                            "judge_a": a,
                            "judge_b": b,
                            "category": category,
                            "category_name": bench.category_names[category]
                            if category != "all"
                            else subset_of(bench, judged) or "all",
                            "rows": result.rows,
                            "unlabelled": result.unlabelled,
                            "equal_share": math.nan if result.share is None else result.share,
                            "kappa": math.nan if result.kappa is None else result.kappa,
                            "kappa_ci_low": math.nan if found.low is None else found.low,
                            "kappa_ci_high": math.nan if found.high is None else found.high,
                            "interval": found.method if found.note is None else f"{found.method}: {found.note}",
                        }
                    )
    return pd.DataFrame(
        out,
        columns=[
            "condition",
            "judge_a",
            "judge_b",
            "category",
            "category_name",
            "rows",
            "unlabelled",
            "equal_share",
            "kappa",
            "kappa_ci_low",
            "kappa_ci_high",
            "interval",
        ],
    )


# -- answers --------------------------------------------------------------------------
def stems(text: str) -> set[str]:
    """The lexical scorer's tokens (LoCoMo's F1 stems: `Scorer.tokens`), imported when first
    needed: the scorers load nltk, which loads scipy when installed."""
    from memorybench.score.scorers import lexical_scorer

    return lexical_scorer().tokens(text)


class _MemoryTexts:
    """Memory text given to the answerer, by (pack, memory sha256), via REFERENCE_PIN.json."""

    def __init__(self) -> None:
        self.packs: dict[str, tuple[PackReader, dict[str, str]]] = {}
        self.cache: dict[tuple[str, str], set[str] | None] = {}

    def _pack(self, location: str) -> tuple[PackReader, dict[str, str]]:
        """The pack and where its refs live (sha256 -> relpath), read once."""
        if location not in self.packs:
            pack = PackReader.open(location)
            pin = pack.record(layout.REFERENCE_PIN, ReferencePin) if pack.exists(layout.REFERENCE_PIN) else None
            self.packs[location] = pack, {sha: ref.path for sha, ref in (pin.refs if pin else {}).items()}
        return self.packs[location]

    def stems(self, location: str, sha: str | None) -> set[str] | None:
        if not sha:
            return None
        key = (location, sha)
        if key not in self.cache:
            pack, refs = self._pack(location)
            relpath = refs.get(sha, layout.blob(sha))
            self.cache[key] = stems(pack.read_text(relpath)) if pack.exists(relpath) else None
        return self.cache[key]


def gold_token_drop(frame: pd.DataFrame) -> pd.DataFrame:
    """Per condition and kind with a gold answer (not a refusal kind: 1-4), then all of
    them (named by their subset, "1-4"): of the gold stems in the memory the answerer was given,
    those missing from its answer."""
    memories = _MemoryTexts()
    rows = frame[rows_where(frame, _answered) & frame["gold"].notna()]
    # the gold its lexical rule compares: the open-domain rule takes the part before the first ";"
    first_part = rows_where(rows, lambda bench, kind: bench.lexical_rule(kind) == FIRST_ANSWER_RULE)
    records = []
    for r, first in zip(rows.itertuples(index=False), first_part):
        memory = memories.stems(r.pack, r.memory_sha256)
        gold = str(r.gold).split(";")[0].strip() if first else str(r.gold)
        g = stems(gold)
        if memory is None:
            records.append((r.condition, r.question_id, r.category, len(g), None, None))
            continue
        in_memory = g & memory
        dropped = in_memory - stems(r.prediction)
        records.append((r.condition, r.question_id, r.category, len(g), len(in_memory), len(dropped)))
    columns = ["condition", "question_id", "category", "gold_stems", "in_memory", "dropped"]
    # one row per question: a question answered by several replicates counts once, with its
    # stem counts averaged over them
    data = (
        pd.DataFrame(records, columns=columns).groupby(["condition", "question_id", "category"], sort=False).mean().reset_index()
    )
    out = []
    for condition in frame["condition"].unique():
        mine = data[data["condition"] == condition]
        bench = benchmark_of_rows(frame[frame["condition"] == condition])
        kinds = answered_kinds(bench)
        every = subset_of(bench, kinds) or "all"
        for category in [*kinds, every]:
            sel = mine if category == every else mine[mine["category"] == category]
            known = sel.dropna(subset=["in_memory"])
            in_memory, dropped, gold = known["in_memory"].sum(), known["dropped"].sum(), known["gold_stems"].sum()
            out.append(
                {
                    "condition": condition,
                    "category": category,
                    "category_name": bench.category_names[category] if category != every else every,  # type: ignore[index]
                    "questions": len(sel),
                    "memory_unknown": int(len(sel) - len(known)),
                    "gold_stems": float(gold),
                    "in_memory": float(in_memory),
                    "in_memory_share": in_memory / gold if gold else math.nan,
                    "dropped": float(dropped),
                    "drop_rate": dropped / in_memory if in_memory else math.nan,
                    "questions_with_drop": int((known["dropped"] > 0).sum()),
                }
            )
    return pd.DataFrame(out)


def _refuses(prediction: str) -> bool:
    from memorybench.score.scorers import lexical_scorer

    lowered = str(prediction).lower()
    return any(phrase in lowered for phrase in lexical_scorer().refusals)


def refusals(frame: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per condition the share of answers that refuse (the lexical scorer's refusal phrases) on the
    kinds whose right answer is a refusal (`Benchmark.refusal_kinds`: category 5, columns
    `cat5_*`) and on the others (1-4, `cat1_4_*`: named by their subset), each a rate with
    its interval over the benchmark's unit (stays in [0, 1])."""
    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        # a question's refusal rate over its replicates; each question counts once
        refused = (
            rows.assign(refused=rows["prediction"].map(_refuses).astype(float))
            .groupby(["question_id", "sample_id", "category"], sort=False)["refused"]
            .mean()
            .reset_index()
        )
        row: dict[str, Any] = {"condition": condition}
        bench = benchmark_of_rows(rows)
        unit = bench.unit
        groups = [kinds for kinds in (bench.refusal_kinds, answered_kinds(bench)) if kinds]
        for kinds in groups:
            name, sel = f"cat{kinds_key(bench, kinds)}", refused[refused["category"].isin(kinds)]
            low, high, method = (
                _rate_interval(sel["refused"], sel["sample_id"], unit, confidence) if len(sel) else (math.nan, math.nan, "-")
            )
            row.update(
                {
                    f"{name}_n": len(sel),
                    f"{name}_refusal_rate": sel["refused"].mean() if len(sel) else math.nan,
                    f"{name}_ci_low": low,
                    f"{name}_ci_high": high,
                    f"{name}_interval": method,
                }
            )
        out.append(row)
    return pd.DataFrame(out)


# -- answer length ------------------------------------------------------------------
#: answer-length bins in whitespace tokens (lower bound, upper bound inclusive; None: open)
LENGTH_BINS: tuple[tuple[int, int | None], ...] = ((0, 5), (6, 10), (11, 20), (21, None))


def _bin_name(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high is not None else f"{low}+"


def answer_length(frame: pd.DataFrame) -> pd.DataFrame:
    """Answer length as a control, on the kinds the benchmark's judge scores (categories 1-4):
    per condition the answers' length in whitespace tokens (mean, p95 nearest rank), then
    per length bin the answers in it, their lexical F1 and each judge's J, so a judge that
    favours long answers shows as J rising with length where F1 does not."""
    from memorybench.compare.conditions import answer_tokens

    rows = frame[rows_where(frame, Benchmark.judges)]
    lengths = rows["prediction"].map(answer_tokens)
    judges = judges_of(frame)
    out = []
    for condition in frame["condition"].unique():
        mine = rows["condition"] == condition
        found = spread([float(v) for v in lengths[mine]])
        base = {
            "condition": condition,
            "answers": int(mine.sum()),
            "tokens_mean": float(lengths[mine].mean()) if mine.any() else math.nan,
            "tokens_p95": (found or {}).get("p95", math.nan),
        }
        for low, high in ((0, None), *LENGTH_BINS):
            sel = mine & (lengths >= low) & ((lengths <= high) if high is not None else True)
            row = {
                **base,
                "length_bin": "all" if (low, high) == (0, None) else _bin_name(low, high),
                "n": int(sel.sum()),
                LEXICAL: rows.loc[sel, LEXICAL].mean() if sel.any() else math.nan,
            }
            for judge in judges:
                scores = rows.loc[sel, judge_key("j_score", judge)]
                row[judge_key("j", judge)] = scores.mean() if scores.notna().any() else math.nan
            out.append(row)
    return pd.DataFrame(out)


# -- blame ----------------------------------------------------------------------------
def blame_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per condition and kind of its benchmark (1-5), and all: the share of each blame class
    (`memorybench.compare.blame`) over the condition's rows, replicates included (each run's
    row counts: a class is a fact about one answer), the counts beside them (`<class>_n`,
    summing to `rows`), the rows whose correctness a judge decided and those whose gold
    evidence is unknown."""
    from memorybench.compare.blame import CLASSES

    out = []
    for condition in frame["condition"].unique():
        mine = frame[frame["condition"] == condition]
        bench = benchmark_of_rows(mine)
        for category in [*bench.category_names, "all"]:
            sel = mine[in_category(mine, category, bench)]
            counts = sel["blame"].value_counts()
            row: dict[str, Any] = {
                "condition": condition,
                "category": category,
                "category_name": bench.category_names[category] if category != "all" else "all",  # type: ignore[index]
                "rows": len(sel),
            }
            row.update({name: counts.get(name, 0) / len(sel) if len(sel) else math.nan for name in CLASSES})
            row.update({f"{name}_n": int(counts.get(name, 0)) for name in CLASSES})
            row["judged_rows"] = int(sel["blame_basis"].fillna("").str.startswith("judge ").sum())
            row["evidence_unknown"] = int(sel["evidence_stored"].isna().sum())
            out.append(row)
    return pd.DataFrame(out)

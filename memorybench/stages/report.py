"""The `report` stage: an analysis design YAML -> Markdown, CSV tables and PNG figures.

    memorybench report conf/analysis/example.yaml --out outputs/report

No model call; only finished packs are read (through `aggregate`). The design names the
packs, the columns that make a *condition* (default: memory and reader model), the
tables and figures, and the bootstrap settings. Output:

    <out>/report.md             every table, the figures, and what each number means
    <out>/tables/<name>.csv     one CSV per table
    <out>/figures/<name>.png    one PNG per figure (matplotlib, Agg, no pyplot state)

Tables (`TABLES`):

* `scores_by_category`: LoCoMo F1 per condition and category (1-5 and all; category
  number beside its name) with a seeded percentile bootstrap interval; J beside it
  (categories 1-4) when every pack of the condition has an autorater. A question's score
  is its mean over the condition's packs (seeds); questions are resampled with
  replacement. The seed of each interval is derived from the design's seed and the
  (condition, category, metric) key, so adding a condition does not move the others.
* `cost_latency`: accuracy against cost (USD per question when every call's price is
  known, else tokens per question) and latency (p50/p95 of uncached calls).
* `judge_agreement`: judge passes, J mean and sd over passes, the share of rows whose
  parsed passes all agree (when an autorater ran).
* `gold_token_drop`: of the gold stems that were in the memory given to the answerer,
  the share missing from the answer (categories 1-4). Stems: LoCoMo's normalizer
  (`memorybench.score.locomo.normalize_answer`) then NLTK's `PorterStemmer()`, exactly the
  tokens LoCoMo's F1 compares; category 3 uses the gold before its first `;` as LoCoMo
  does. The memory text is found through the pack's REFERENCE_PIN.json (memory dumps).
* `refusals`: category-5 refusal rate and the rate of the same phrases ("not mentioned",
  "no information available", LoCoMo's `ABSTENTION_PHRASES`) on categories 1-4.

Every pack file is read through `PackReader`, so a design may name `gs://` packs too.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memorybench.errors import OneLineParser, UserError
from memorybench.hashing import sha256_text
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import ReferencePin
from memorybench.stages.aggregate import EXAMPLES_SCHEMA, examples_table, experiment_packs, runs_table, scan_packs

__all__ = ["FIGURES", "TABLES", "AnalysisDesign", "Report", "load_design", "report_main", "run_report"]

#: LoCoMo's category names (memorybench.score.CATEGORY_NAMES; that package is imported only
#: where a stem is needed: it loads nltk, and nltk loads scipy when installed)
CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TableName = Literal["scores_by_category", "cost_latency", "judge_agreement", "gold_token_drop", "refusals"]
FigureName = Literal["scores_by_category", "accuracy_vs_cost", "accuracy_vs_latency"]
TABLES: tuple[str, ...] = ("scores_by_category", "cost_latency", "judge_agreement", "gold_token_drop", "refusals")
FIGURES: tuple[str, ...] = ("scores_by_category", "accuracy_vs_cost", "accuracy_vs_latency")
RUN_COLUMNS = tuple(f.name for f in EXAMPLES_SCHEMA if f.name in (
    "run_id", "experiment", "config_sha256", "dataset", "memory", "reader", "writer", "embedder", "answerer", "judge",
    "reader_model",
))


class Bootstrap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: resamples of the questions per interval
    resamples: int = Field(2000, ge=100)
    seed: int = 0
    confidence: float = Field(0.95, gt=0, lt=1)


class AnalysisDesign(BaseModel):
    """`conf/analysis/<name>.yaml`: which packs, which conditions, which tables and figures."""

    model_config = ConfigDict(extra="forbid")

    name: str = "report"
    title: str | None = None
    #: pack folders or packs roots (relative paths: against `base_dir`, the current directory by default)
    packs: list[str]
    #: keep only packs of this experiment name (null: all)
    experiment: str | None = None
    #: columns whose values name a condition: run columns of examples.parquet or `choice.<group>`
    conditions: list[str] = Field(default_factory=lambda: ["memory", "reader_model"])
    tables: list[TableName] = Field(default_factory=lambda: list(TABLES))
    figures: list[FigureName] = Field(default_factory=lambda: list(FIGURES))
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)


def load_design(path: str | os.PathLike[str]) -> AnalysisDesign:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"analysis design {path} does not exist; see conf/analysis/example.yaml")
    try:
        data = yaml.safe_load(path.read_text("utf-8")) or {}
        return AnalysisDesign.model_validate(data)
    except yaml.YAMLError as e:
        raise UserError(f"{path} is not valid YAML: {' '.join(str(e).split())}") from None
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'design'}: {err['msg']}" for err in e.errors())
        raise UserError(f"{path}: {problems}. Tables: {', '.join(TABLES)}; figures: {', '.join(FIGURES)}") from None


@dataclass
class Report:
    out_dir: Path
    markdown: Path
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    table_files: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# -- statistics -----------------------------------------------------------------------
def _rng(seed: int, *key: Any) -> np.random.Generator:
    digest = int(sha256_text(json.dumps([str(k) for k in key]))[:16], 16)
    return np.random.default_rng(np.random.SeedSequence([seed, digest]))


def bootstrap_interval(values: np.ndarray, boot: Bootstrap, *key: Any) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; (nan, nan) for fewer than two values."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return math.nan, math.nan
    rng = _rng(boot.seed, *key)
    means = np.empty(boot.resamples)
    step = max(1, 2_000_000 // len(values))  # bound the index matrix to ~16 MB
    for start in range(0, boot.resamples, step):
        count = min(step, boot.resamples - start)
        means[start:start + count] = values[rng.integers(0, len(values), size=(count, len(values)))].mean(axis=1)
    tail = (1 - boot.confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


# -- loading --------------------------------------------------------------------------
def _condition_frame(frame: pd.DataFrame, conditions: Sequence[str]) -> pd.Series:
    parts = []
    for column in conditions:
        if column.startswith("choice."):
            group = column[len("choice."):]
            parts.append(frame["choices"].map(lambda text, g=group: str(json.loads(text).get(g))))
        elif column in RUN_COLUMNS:
            parts.append(frame[column].astype("string").fillna("-"))
        else:
            raise UserError(f"condition column {column!r} is unknown; choices: {', '.join(RUN_COLUMNS)}, choice.<group>")
    label = parts[0].astype(str)
    for part in parts[1:]:
        label = label + " / " + part.astype(str)
    return label


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (no extra dependency)."""
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


# -- tables ---------------------------------------------------------------------------
def _per_question(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A question's score in a condition: its mean over the condition's packs."""
    rows = frame.dropna(subset=[metric])
    return rows.groupby(["condition", "question_id", "category"], sort=False, observed=True)[metric].mean().reset_index()


def scores_by_category(frame: pd.DataFrame, boot: Bootstrap) -> pd.DataFrame:
    with_j = frame.groupby("condition", sort=False)["j_passes"].apply(lambda s: bool(s.notna().all()))
    f1 = _per_question(frame, "locomo_f1")
    judged = _per_question(frame[frame["condition"].map(with_j) & frame["category"].between(1, 4)], "j_score")
    out = []
    for condition in frame["condition"].unique():
        for category in [*CATEGORY_NAMES, "all"]:
            row: dict[str, Any] = {"condition": condition, "category": category,
                                   "category_name": CATEGORY_NAMES.get(category, "overall") if category != "all" else "all (LoCoMo: incl. 5)"}
            sel = f1[(f1["condition"] == condition) & ((f1["category"] == category) if category != "all" else True)]
            values = sel["locomo_f1"].to_numpy()
            low, high = bootstrap_interval(values, boot, condition, category, "locomo_f1")
            row.update({"n": len(values), "locomo_f1": values.mean() if len(values) else math.nan, "f1_ci_low": low, "f1_ci_high": high})
            if with_j.any():
                if category == 5:
                    jv = np.array([])
                else:
                    jsel = judged[(judged["condition"] == condition) & ((judged["category"] == category) if category != "all" else True)]
                    jv = jsel["j_score"].to_numpy()
                jl, jh = bootstrap_interval(jv, boot, condition, category, "j")
                row.update({"j_n": len(jv), "j": jv.mean() if len(jv) else math.nan, "j_ci_low": jl, "j_ci_high": jh})
            out.append(row)
    return pd.DataFrame(out)


def _percentile(values: pd.Series, q: float) -> float:
    values = values.dropna()
    return float(np.percentile(values, q * 100)) if len(values) else math.nan


def cost_latency(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        n = len(rows)
        cost_known = bool(rows["cost_usd"].notna().all())
        tokens = rows["prompt_tokens"].fillna(0) + rows["completion_tokens"].fillna(0)
        latency = rows.loc[~rows["cache_hit"].fillna(False).astype(bool), "latency_s"]
        judged = rows[rows["category"].between(1, 4)]["j_score"]
        out.append({
            "condition": condition,
            "runs": rows["run_id"].nunique(),
            "rows": n,
            "locomo_f1": rows["locomo_f1"].mean(),
            "j": judged.mean() if judged.notna().any() else math.nan,
            "prompt_tokens": int(rows["prompt_tokens"].fillna(0).sum()),
            "completion_tokens": int(rows["completion_tokens"].fillna(0).sum()),
            "tokens_per_question": float(tokens.mean()) if n else math.nan,
            "cost_usd": float(rows["cost_usd"].sum()) if cost_known else math.nan,
            "cost_per_question_usd": float(rows["cost_usd"].mean()) if cost_known else math.nan,
            "latency_p50_s": _percentile(latency, 0.5),
            "latency_p95_s": _percentile(latency, 0.95),
        })
    return pd.DataFrame(out)


def judge_agreement(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        if rows["j_passes"].isna().all():
            continue
        run_rows = runs[runs["run_id"].isin(rows["run_id"].unique())]
        judged = rows[rows["category"].between(1, 4)]
        compared = judged["j_agree"].dropna()
        out.append({
            "condition": condition,
            "runs": len(run_rows),
            "passes": int(run_rows["j_passes"].max()) if run_rows["j_passes"].notna().any() else 0,
            "j_mean": run_rows["j_mean"].mean(),
            "j_sd": run_rows["j_sd"].mean() if run_rows["j_sd"].notna().any() else math.nan,
            "rows_compared": len(compared),
            "agreement": compared.astype(bool).mean() if len(compared) else math.nan,
            "failed_rows": int((judged["j_failed"].fillna(0) > 0).sum()),
            "failed_verdicts": int(judged["j_failed"].fillna(0).sum()),
        })
    return pd.DataFrame(out, columns=["condition", "runs", "passes", "j_mean", "j_sd", "rows_compared", "agreement", "failed_rows",
                                      "failed_verdicts"])


@lru_cache(maxsize=200_000)
def _stem(token: str) -> str:
    return _stemmer().stem(token)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def stems(text: str) -> set[str]:
    """LoCoMo's tokens: `normalize_answer`, whitespace split, Porter stem (as its F1)."""
    from memorybench.score.locomo import normalize_answer

    return {_stem(t) for t in normalize_answer(text).split()}


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
    memories = _MemoryTexts()
    rows = frame[frame["category"].between(1, 4) & frame["gold"].notna()]
    records = []
    for r in rows.itertuples(index=False):
        memory = memories.stems(r.pack, r.memory_sha256)
        gold = str(r.gold).split(";")[0].strip() if r.category == 3 else str(r.gold)
        g = stems(gold)
        if memory is None:
            records.append((r.condition, r.category, len(g), None, None))
            continue
        in_memory = g & memory
        dropped = in_memory - stems(r.prediction)
        records.append((r.condition, r.category, len(g), len(in_memory), len(dropped)))
    data = pd.DataFrame(records, columns=["condition", "category", "gold_stems", "in_memory", "dropped"])
    out = []
    for condition in frame["condition"].unique():
        mine = data[data["condition"] == condition]
        for category in [1, 2, 3, 4, "1-4"]:
            sel = mine if category == "1-4" else mine[mine["category"] == category]
            known = sel.dropna(subset=["in_memory"])
            in_memory, dropped, gold = known["in_memory"].sum(), known["dropped"].sum(), known["gold_stems"].sum()
            out.append({
                "condition": condition,
                "category": category,
                "category_name": CATEGORY_NAMES.get(category, "1-4") if category != "1-4" else "1-4",
                "questions": len(sel),
                "memory_unknown": int(len(sel) - len(known)),
                "gold_stems": int(gold),
                "in_memory": int(in_memory),
                "in_memory_share": in_memory / gold if gold else math.nan,
                "dropped": int(dropped),
                "drop_rate": dropped / in_memory if in_memory else math.nan,
                "questions_with_drop": int((known["dropped"] > 0).sum()),
            })
    return pd.DataFrame(out)


def _refuses(prediction: str) -> bool:
    from memorybench.score.locomo import ABSTENTION_PHRASES

    lowered = str(prediction).lower()
    return any(phrase in lowered for phrase in ABSTENTION_PHRASES)


def refusals(frame: pd.DataFrame) -> pd.DataFrame:
    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        refused = rows["prediction"].map(_refuses)
        adversarial = rows["category"] == 5
        answerable = rows["category"].between(1, 4)
        out.append({
            "condition": condition,
            "cat5_n": int(adversarial.sum()),
            "cat5_refusal_rate": refused[adversarial].mean() if adversarial.any() else math.nan,
            "cat1_4_n": int(answerable.sum()),
            "cat1_4_refusal_rate": refused[answerable].mean() if answerable.any() else math.nan,
        })
    return pd.DataFrame(out)


# -- figures --------------------------------------------------------------------------
def _figure(width: float = 8.0, height: float = 4.5) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def figure_scores_by_category(table: pd.DataFrame, path: Path) -> Path:
    fig = _figure()
    ax = fig.subplots()
    conditions = list(dict.fromkeys(table["condition"]))
    categories = [*CATEGORY_NAMES, "all"]
    width = 0.8 / max(1, len(conditions))
    x = np.arange(len(categories))
    for i, condition in enumerate(conditions):
        sel = table[table["condition"] == condition].set_index("category").reindex(categories)
        mean = sel["locomo_f1"].to_numpy(dtype=float)
        err = np.vstack([mean - sel["f1_ci_low"].to_numpy(dtype=float), sel["f1_ci_high"].to_numpy(dtype=float) - mean])
        ax.bar(x + (i - (len(conditions) - 1) / 2) * width, mean, width, yerr=np.nan_to_num(err), capsize=3, label=condition)
    ax.set_xticks(x, [f"{c} {CATEGORY_NAMES[c]}" if c in CATEGORY_NAMES else "all" for c in categories])
    ax.set_ylabel("LoCoMo F1 (bootstrap 95% interval)")
    ax.set_ylim(0, 1)
    ax.set_title("LoCoMo F1 by category")
    ax.legend(fontsize="small")
    return _save(fig, path)


def _scatter(table: pd.DataFrame, scores: pd.DataFrame, x: str, xlabel: str, title: str, path: Path) -> Path:
    fig = _figure(6.5, 4.5)
    ax = fig.subplots()
    overall = scores[scores["category"] == "all"].set_index("condition")
    for row in table.itertuples(index=False):
        xv = getattr(row, x)
        if xv is None or (isinstance(xv, float) and math.isnan(xv)):
            continue
        ci = overall.loc[row.condition] if row.condition in overall.index else None
        yerr = None if ci is None else [[row.locomo_f1 - ci["f1_ci_low"]], [ci["f1_ci_high"] - row.locomo_f1]]
        ax.errorbar([xv], [row.locomo_f1], yerr=np.nan_to_num(np.array(yerr, dtype=float)) if yerr else None, fmt="o", capsize=3, label=row.condition)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("LoCoMo F1 (all categories)")
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return _save(fig, path)


# -- the report -----------------------------------------------------------------------
DEFINITIONS = {
    "scores_by_category": "LoCoMo F1 per category (category number beside its name; `all` includes category 5, as LoCoMo's "
                          "overall) with a seeded percentile bootstrap {conf:.0%} interval over questions ({resamples} resamples, "
                          "seed {seed}). `j`: Mem0's J (categories 1-4) when every pack of the condition has an autorater.",
    "cost_latency": "Accuracy against cost and latency. Cost is in USD when every call had a price, else empty (tokens per "
                    "question are always given). Latency percentiles are over calls not served from the response cache.",
    "judge_agreement": "Judge passes: J mean and sd over passes (from autorater_metrics.json), and the share of category 1-4 "
                       "rows with at least two parsed passes whose passes all gave the same score; rows and verdicts "
                       "whose judge reply had no readable label (never counted as WRONG).",
    "gold_token_drop": "Of the gold stems that were in the memory given to the answerer, the share missing from the answer "
                       "(`drop_rate`). Stems are LoCoMo's tokens: normalize_answer, whitespace split, Porter stem; category 3 "
                       "uses the gold before the first ';'. `in_memory_share`: gold stems found in the memory at all.",
    "refusals": "Share of answers containing 'not mentioned' or 'no information available' (LoCoMo's category-5 rule): on "
                "category 5 (a refusal is right) and on categories 1-4 (a refusal is a miss).",
}


def _resolve(paths: Sequence[str], base_dir: Path) -> list[str | Path]:
    """Local paths against `base_dir` (absolute ones as they are); `gs://` URIs untouched."""
    out: list[str | Path] = []
    for text in paths:
        path = Path(os.path.expanduser(text))
        out.append(text if text.startswith("gs://") else path if path.is_absolute() else base_dir / path)
    return out


def run_report(design_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, base_dir: str | os.PathLike[str] | None = None) -> Report:
    """Write `<out_dir>/report.md`, `tables/*.csv` and `figures/*.png` for a design; return them."""
    design = load_design(design_path)
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    scan = scan_packs(_resolve(design.packs, base))
    packs = experiment_packs(scan.finished, design.experiment)
    if not packs:
        raise UserError(f"design {design_path}: no finished pack in {design.packs}" + (f" of experiment {design.experiment!r}" if design.experiment else ""))
    frame = examples_table(packs).to_pandas()
    runs = runs_table(packs).to_pandas()
    frame["condition"] = _condition_frame(frame, design.conditions)
    out = Path(out_dir).expanduser().resolve()
    (out / "tables").mkdir(parents=True, exist_ok=True)
    report = Report(out, out / "report.md")

    notes = []
    if runs["local_model"].fillna(False).astype(bool).any():
        notes.append("Some answers come from the embedded local model: not comparable with published LoCoMo numbers.")
    if runs["is_prefix"].fillna(False).astype(bool).any():
        notes.append("Some packs are prefix runs (max_questions): smoke tests, not benchmark results.")
    if scan.unfinished:
        notes.append(f"{len(scan.unfinished)} unfinished pack(s) (no _SUCCESS) were left out.")
    report.notes = notes

    builders = {
        "scores_by_category": lambda: scores_by_category(frame, design.bootstrap),
        "cost_latency": lambda: cost_latency(frame),
        "judge_agreement": lambda: judge_agreement(frame, runs),
        "gold_token_drop": lambda: gold_token_drop(frame),
        "refusals": lambda: refusals(frame),
    }
    needed = list(dict.fromkeys([*design.tables, *(["scores_by_category"] if design.figures else []),
                                 *(["cost_latency"] if {"accuracy_vs_cost", "accuracy_vs_latency"} & set(design.figures) else [])]))
    computed = {name: builders[name]() for name in needed}
    for name in design.tables:
        table = computed[name]
        if name == "judge_agreement" and table.empty:
            notes.append("No autorater in these packs: no judge agreement table.")
            continue
        report.tables[name] = table
        path = out / "tables" / f"{name}.csv"
        table.to_csv(path, index=False, float_format="%.6g")
        report.table_files[name] = path

    figures = out / "figures"
    for name in design.figures:
        if name == "scores_by_category":
            report.figures[name] = figure_scores_by_category(computed["scores_by_category"], figures / f"{name}.png")
        else:
            table = computed["cost_latency"]
            if name == "accuracy_vs_cost":
                if table["cost_per_question_usd"].notna().any():
                    x, label = "cost_per_question_usd", "cost per question (USD)"
                else:
                    x, label = "tokens_per_question", "tokens per question (prices unknown)"
                title = "Accuracy against cost"
            else:
                x, label, title = "latency_p50_s", "reader latency p50 (s)", "Accuracy against latency"
            report.figures[name] = _scatter(table, computed["scores_by_category"], x, label, title, figures / f"{name}.png")

    lines = [f"# {design.title or design.name}", ""]
    lines += [f"{len(packs)} finished pack(s); conditions by {', '.join(design.conditions)}.", ""]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += ["| condition | runs | run ids |", "|---|---|---|"]
    for condition, rows in frame.groupby("condition", sort=False):
        ids = sorted(rows["run_id"].unique())
        lines.append(f"| {condition} | {len(ids)} | {', '.join(ids)} |")
    lines.append("")
    boot = design.bootstrap
    for name, table in report.tables.items():
        lines += [f"## {name}", "", DEFINITIONS[name].format(conf=boot.confidence, resamples=boot.resamples, seed=boot.seed), "",
                  markdown_table(table), "", f"CSV: `tables/{name}.csv`", ""]
    for name, path in report.figures.items():
        lines += [f"## Figure: {name}", "", f"![{name}](figures/{path.name})", ""]
    report.markdown.write_text("\n".join(lines), "utf-8")
    return report


def report_main(argv: Sequence[str]) -> int:
    """`memorybench report DESIGN.yaml [--out DIR]`."""
    parser = OneLineParser(prog="memorybench report", description="Tables and figures for an analysis design (conf/analysis/*.yaml).")
    parser.add_argument("design", help="an analysis design YAML, e.g. conf/analysis/example.yaml")
    parser.add_argument("--out", help="output folder (default: outputs/reports/<design name>)")
    ns = parser.parse_args(list(argv))
    design = load_design(ns.design)
    out = ns.out or os.path.join("outputs", "reports", design.name)
    report = run_report(ns.design, out)
    print(f"report: {report.markdown}")
    for name, path in {**report.table_files, **report.figures}.items():
        print(f"  {name}: {path}")
    return 0

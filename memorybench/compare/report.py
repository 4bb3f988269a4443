"""The `report` stage: an analysis design YAML -> Markdown, CSV tables and PNG figures.

    memorybench report conf/analysis/example.yaml --out outputs/report

No model call; only finished packs are read (through `aggregate`). The design names the
packs, the columns that make a *condition* (default: memory and reader model; any
identity leaf such as `cfg.memory.top_k` may be one), the *replicates* (the identity
leaves that may vary inside a condition, by default the seeds), the tables and figures,
and the bootstrap settings. Runs of one condition that differ in any other identity leaf
are never pooled: the report stops with one line naming the leaf and its values. Output:

    <out>/report.md             every table, the figures, and what each number means
    <out>/tables/<name>.csv     one CSV per table
    <out>/figures/<name>.png    one PNG per figure (matplotlib, Agg, no pyplot state)

Tables (`TABLES`):

* `scores_by_category`: LoCoMo F1 per condition and category (1-5, then the overalls 1-4
  and 1-5, each over the categories it names; 1-5 empty where category 5 was not asked;
  another benchmark whose lexical F1 is its own: its record's kinds and `subsets`)
  with its interval over conversations (`memorybench.compare.intervals`: cluster-robust t,
  conversations-1 degrees of freedom); J per judge beside it (categories 1-4) when every
  pack of the condition has that judge, and J with the judge's failures counted WRONG. A
  question's score is its mean over the condition's packs (seeds).
* `accuracy_by_type`: another benchmark's own figure (LongMemEval's judge accuracy), per
  condition and judge: accuracy per question type (number and name from the benchmark record,
  `memorybench.benchmark`) with n and its interval over the benchmark's unit, the
  task-averaged accuracy, overall, and abstention (`memorybench.compare.report_scores`); no
  row for a LoCoMo condition.
* `paired_differences`: every condition minus the first (or the design's `pairs`, each
  `[baseline, condition]`), paired by question over the questions both hold, per overall and
  per category: difference, interval and p over conversations, Holm-adjusted p over each
  metric's category tests (`family`), the minimum detectable difference, the question-level
  interval conditional on these conversations (seeded by the design's seed and the
  metric's key, as `compare`; no p-value), and the protocols.
* `cost_latency`: accuracy against cost (USD per question when every call's price is
  known, else tokens per question) and latency (p50/p95 of uncached calls).
* `latency_tokens`: the columns of Mem0's Table 2 beside accuracy: search p50/p95 (the
  time to get a question's memory, the reader's call excluded), total p50/p95 (search +
  answer) and memory tokens per query; then the build's seconds and tokens per
  conversation (`memorybench.compare.report_latency`).
* `judge_agreement`: judge passes, J mean and sd over passes, the share of rows whose
  parsed passes all agree (when an autorater ran).
* `gold_token_drop`: of the gold stems that were in the memory given to the answerer,
  the share missing from the answer (categories 1-4). Stems: LoCoMo's normalizer
  (`memorybench.score.locomo.normalize_answer`) then NLTK's `PorterStemmer()`, exactly the
  tokens LoCoMo's F1 compares; category 3 uses the gold before its first `;` as LoCoMo
  does. The memory text is found through the pack's REFERENCE_PIN.json (memory dumps).
* `refusals`: category-5 refusal rate and the rate of the same phrases ("not mentioned",
  "no information available", LoCoMo's `ABSTENTION_PHRASES`) on categories 1-4.
* `requests_budget`: accuracy beside model requests and tokens per question (p50, p95,
  max: nearest rank over the condition's rows, the figures of an agent pack's
  COMPARISON.md), its token budget, the budget hits (`agent_status` budget_exceeded:
  scored as given, counted here, with their own F1) and whether an agent condition is
  comparable with reader runs (`agent_comparison.v1`) and why not. A reader's requests are
  its HTTP attempts (0 on a cache hit); an agent's are those its gateway forwarded.
* `answer_length`: answer length in whitespace tokens (mean, p95) and F1 and J per length
  bin (categories 1-4): a judge that rewards length shows here.
* `blame`: per condition and category, the share of each blame class of
  `memorybench.compare.blame` (`not_stored`, `not_retrieved`, `ignored`, `wrong_judged`,
  `correct`; the counts beside them sum to the rows): where answers were lost, at
  writing, at retrieval or at reading.

Every pack file is read through `PackReader`, so a design may name `gs://` packs too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from memorybench.answer.prompt import question_protocol
from memorybench.compare.aggregate import EXAMPLES_SCHEMA, examples_table, experiment_packs, runs_table, scan_packs
from memorybench.compare.report_latency import budget_notes, latency_tokens
from memorybench.compare.report_figures import figure_accuracy_vs_cost, figure_accuracy_vs_latency, figure_scores_by_category
from memorybench.compare.report_scores import (
    Bootstrap,
    accuracy_by_type,
    bootstrap_interval,
    detectable_notes,
    paired_differences,
    scores_by_category,
)
from memorybench.compare.report_tables import (
    answer_length,
    blame_table,
    cost_latency,
    gold_token_drop,
    judge_agreement,
    judge_passes,
    benchmark_of_rows,
    judges_of,
    markdown_table,
    refusals,
    requests_budget,
    stems,
)
from memorybench.compare.conditions import parse_categories
from memorybench.compare.gold_overlay import CORRECTED, corrected_f1, load_overlay
from memorybench.compare.judge_sensitivity import judge_sensitivity
from memorybench.compare.summary import CONFIG_PREFIX, judge_key
from memorybench.benchmark import benchmark_named, benchmark_of, benchmark_of_meta, imported, own_tables
from memorybench.errors import OneLineParser, UserError, printable
from memorybench.fs import atomic_path, write_atomic
from memorybench.names import ALLOWED, unsafe_reason
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.score.scorers import LEXICAL

__all__ = [
    "FIGURES",
    "TABLES",
    "AnalysisDesign",
    "Bootstrap",
    "Report",
    "bootstrap_interval",
    "load_design",
    "report_main",
    "run_report",
    "stems",
]

FigureName = Literal["scores_by_category", "accuracy_vs_cost", "accuracy_vs_latency"]
TABLES: tuple[str, ...] = (
    "scores_by_category",
    "accuracy_by_type",
    "paired_differences",
    "cost_latency",
    "latency_tokens",
    "requests_budget",
    "judge_passes",
    "judge_agreement",
    "judge_sensitivity",
    "gold_token_drop",
    "refusals",
    "answer_length",
    "blame",
)
FIGURES: tuple[str, ...] = ("scores_by_category", "accuracy_vs_cost", "accuracy_vs_latency")
#: the tables that read no LoCoMo category: made for another benchmark's packs too
BENCHMARK_NEUTRAL_TABLES = ("cost_latency", "latency_tokens", "requests_budget", "judge_sensitivity")
#: the tables of another benchmark's own figures (none for LoCoMo packs: scores_by_category is theirs)
OWN_BENCHMARK_TABLES = ("accuracy_by_type",)
RUN_COLUMNS = tuple(
    f.name
    for f in EXAMPLES_SCHEMA
    if f.name
    in (
        "run_id",
        "experiment",
        "config_sha256",
        "dataset",
        "memory",
        "reader",
        "writer",
        "embedder",
        "answerer",
        "judge",
        "reader_model",
    )
)


#: what may vary between the runs of one condition by default: the seeds
DEFAULT_REPLICATES = ("cfg.reader.seed", "cfg.writer.seed", "cfg.judge.seed")
ABSENT = "<absent>"


class AnalysisDesign(BaseModel):
    """`conf/analysis/<name>.yaml`: which packs, which conditions, which tables and figures."""

    model_config = ConfigDict(extra="forbid")

    name: str = "report"
    title: str | None = None
    #: pack folders or packs roots (relative paths: against `base_dir`, the current directory by default)
    packs: list[str]
    #: keep only packs of this experiment name (null: all)
    experiment: str | None = None
    #: columns whose values name a condition: run columns of examples.parquet, `choice.<group>`,
    #: or an identity leaf of runs.parquet (`cfg.memory.top_k`)
    conditions: list[str] = Field(default_factory=lambda: ["memory", "reader_model"])
    #: identity leaves that may vary inside one condition (its replicates, reported as mean and
    #: sd over runs); any other identity leaf that varies inside a condition stops the report
    replicates: list[str] = Field(default_factory=lambda: list(DEFAULT_REPLICATES))
    #: core tables (`TABLES`) and the benchmarks' own (`memorybench.benchmark.own_tables`)
    tables: list[str] = Field(default_factory=lambda: list(all_tables()))
    figures: list[FigureName] = Field(default_factory=lambda: list(FIGURES))
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    #: LoCoMo categories to report, e.g. "1-4" to put an own run beside a Mem0-format peer
    #: pack on the questions both hold (null: every category a pack holds)
    categories: str | None = None
    #: the paired comparisons, each [baseline, condition] by condition label (e.g. [mem0, mem0_lib]:
    #: the real library minus our clone); null: every condition minus the first
    pairs: list[tuple[str, str]] | None = None
    #: also score LoCoMo F1 against the audit's corrected answers where a gold answer is
    #: known wrong (`f1_corrected_gold`); the figures without those questions are always shown
    corrected_gold: bool = False

    @field_validator("tables")
    @classmethod
    def _known_tables(cls, tables: list[str]) -> list[str]:
        unknown = [t for t in tables if t not in all_tables()]
        if unknown:
            raise ValueError(f"unknown table {', '.join(unknown)}")
        return tables


def all_tables() -> tuple[str, ...]:
    """Every table a design may name: the core's, then each benchmark's own."""
    return (*TABLES, *own_tables())


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
        raise UserError(f"{path}: {problems}. Tables: {', '.join(all_tables())}; figures: {', '.join(FIGURES)}") from None


@dataclass
class Report:
    out_dir: Path
    markdown: Path
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    table_files: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# -- loading --------------------------------------------------------------------------
def condition_labels(runs: pd.DataFrame, conditions: Sequence[str]) -> pd.Series:
    """Each run's condition: the values of the `conditions` columns, joined by " / "."""
    parts = []
    for column in conditions:
        if column.startswith("choice."):
            group = column[len("choice.") :]
            parts.append(runs["choices"].map(lambda text, g=group: str(json.loads(text).get(g))))
        elif column in RUN_COLUMNS or column.startswith(CONFIG_PREFIX):
            if column not in runs.columns:
                known = sorted(c for c in runs.columns if c.startswith(CONFIG_PREFIX))
                raise UserError(
                    f"condition column {column!r} is no config leaf of these packs; leaves: {', '.join(known[:12])}, ..."
                )
            parts.append(runs[column].astype("string").fillna("-"))
        else:
            raise UserError(
                f"condition column {column!r} is unknown; choices: {', '.join(RUN_COLUMNS)}, choice.<group>, cfg.<config leaf>"
            )
    label = parts[0].astype(str)
    for part in parts[1:]:
        label = label + " / " + part.astype(str)
    return label


def check_pooling(runs: pd.DataFrame, conditions: Sequence[str], replicates: Sequence[str]) -> None:
    """Refuse, in one line, a condition whose runs differ in an identity leaf that is neither a
    condition nor a replicate: averaging them would mix two experiments into one number."""
    free = set(conditions) | set(replicates)
    keys = [c for c in runs.columns if c.startswith(CONFIG_PREFIX) and c not in free]
    for condition, rows in runs.groupby("condition", sort=False):
        values = rows[keys].astype("string").fillna(ABSENT)
        differing = [c for c in keys if values[c].nunique() > 1]
        if differing:
            shown = "; ".join(f"{c} = {', '.join(sorted(values[c].unique()))}" for c in differing[:4])
            more = f" (and {len(differing) - 4} more)" if len(differing) > 4 else ""
            raise UserError(
                f"condition {condition!r} would pool {len(rows)} runs that differ in {shown}{more}; "
                f"add {differing[0]} to the design's conditions (or to replicates if it is a replicate), "
                f"or on the command line: --conditions ... {differing[0]}"
            )


# -- the report -----------------------------------------------------------------------
DEFINITIONS = {
    "scores_by_category": "LoCoMo F1 per category (category number beside its name), then two overalls, each over the "
    "categories it names only: `1-4` (Mem0's basis; every pack has it) and `1-5` (LoCoMo's; empty where "
    "the condition never asked category 5, as a Mem0-, Zep- or CORE-format peer pack). The {conf:.0%} "
    "interval resamples conversations, not questions: a cluster-robust t interval over the questions' "
    "conversations (CR1, conversations-1 degrees of freedom; `interval` names the method and the number "
    "of conversations); a one-conversation run has none. J and category 5's F1 (a refusal is 1, "
    "else 0) are rates: their interval stays in [0, 1] (Korn-Graubard: Clopper-Pearson on the "
    "effective size after the design effect, t on conversations-1 df). A question answered by several runs "
    "(replicates) counts once, with its mean score; `f1_sd_runs`: sd over the runs of each run's mean. "
    "`j/<judge id>`: J (categories 1-4) by that judge under its own protocol (the id starts with it: "
    "`mem0-...` Mem0's pinned judge prompt, a peer's id its own grader), when every pack of the "
    "condition has it; two judges never share a column; `j_failed_wrong/<judge id>` beside it where the "
    "judge failed on a row: J with its failed verdicts counted WRONG (a lower bound).",
    "accuracy_by_type": "The benchmark's own figure, from its judge (LongMemEval: the share of questions its judge "
    "said yes to, as print_qa_metrics.py counts them), per condition and judge (`judge`, by its id: "
    "comparable with the authors' figures only for judge=longmemeval, see its autorater_metrics.json): "
    "accuracy per question `type` (its number and `type_name` from the benchmark record) with `n`; "
    "`task-averaged`, the mean of the per-type accuracies (a small type weighs as much as a large one; "
    "none unless every type has questions; its interval is Wilson's on the effective size of that "
    "mean of rates); `overall`, every judged question; `abstention`, the "
    "questions whose id marks them (also counted in their type). A question's score is the mean over "
    "its labelled passes, then over the condition's packs. The {conf:.0%} interval resamples the "
    "benchmark's unit (`interval` names it: LongMemEval's questions are independent). Lexical scores "
    "of these packs are diagnostics and are not shown here.",
    "paired_differences": "Every condition minus the first (the baseline), or each pair the design names (`pairs`: "
    "baseline, condition), paired by question over the questions both "
    "hold, per overall (1-4; 1-5 where both asked category 5), then per category, and metric: the "
    "mean difference, its {conf:.0%} interval and two-sided p over conversations (cluster-robust t, "
    "as above), `mdd` the minimum detectable difference of this design (the true difference it "
    "detects with 80% power at alpha 0.05; an observed difference below it can still be "
    "significant, and one that is not significant does not show there is none), and a "
    "question-level percentile bootstrap interval conditional on these conversations ({resamples} "
    "resamples, seed {seed}; an interval only, no p-value). `p_adjusted`: a category row's p "
    "adjusted over the family `family` names (Holm's step-down method over the category tests of "
    "one metric in one pair, the design's `bootstrap.adjust`); an overall row is one test, not "
    "adjusted. `exceeds_mdd`: whether the observed difference is at least `mdd` (the notes list, per "
    "metric and overall, the pairs that are). `protocols` says whether the two posed their questions alike.",
    "cost_latency": "Accuracy against cost and latency. Cost per answered question in USD: building the memory (writer, "
    "embedder) + answering (reader or agent) = `cost_per_question_usd`; `unknown` when a model has no "
    "price (never $0). Tokens per question are always given. Latency percentiles are over answer calls "
    "not served from the response cache.",
    "latency_tokens": "Retrieval as the papers measure it (Mem0's Table 2), beside accuracy. `search_p50_s` / "
    "`search_p95_s`: seconds from the question to the memory the reader gets (the method's search, its "
    "query embedding and library calls included, the reader's call not; `memory/<method>/retrievals.jsonl`), "
    "empty for a memory that needs no search; `total_p50_s` / `total_p95_s`: search + the answer call, over "
    "answers not served from the response cache; `memory_tokens_per_query`: cl100k_base tokens of the memory "
    "handed to the reader, mean over the rows. `budget_top_k`, `returned_max`, `budget_held`: the run's "
    "retrieval budget (`memory/budget.json`): budget.top_k, the most items the system returned for one "
    "question before the budget cut them, and whether every pack kept to it (false: a system returned "
    "more than top_k, or handed over its whole memory; empty: no budget set, or no retrieval; the notes "
    "say how). Per conversation the condition's packs built: the build's "
    "wall-clock seconds, the writer's prompt + completion tokens and the embedder's tokens (mean; "
    "`memory/build_cost.jsonl`). Times are this machine's: compare them between runs on one machine.",
    "requests_budget": "What answering took per question, beside accuracy: model requests (a reader's HTTP attempts, 0 on a "
    "cache hit; an agent's requests as the memorybench gateway forwarded them, agent/requests.jsonl) and "
    "tokens (input + output; an agent's as the gateway counted them), p50 / p95 / max by nearest rank over "
    "the condition's rows; `token_budget_p50`: the total token budget per question the gateway enforced; "
    "`budget_exceeded`: questions the budget stopped (scored as given; `budget_exceeded_f1` their LoCoMo "
    "F1); `comparable`: `yes` when every agent run of the condition is comparable with reader runs "
    "(agent/comparison.json), `no` with `why_not`, `reader` for the one-call reader.",
    "judge_passes": "Per condition and judge: passes, J mean and sd over passes (from autorater_metrics.json), and the share "
    "of category 1-4 rows with at least two parsed passes whose passes all gave the same score; rows and "
    "verdicts whose judge reply had no readable label (never counted as WRONG). The sd over passes "
    "says how much the judge wavers, not how J would move on other conversations: `j_ci_low`, "
    "`j_ci_high` are J's {conf:.0%} interval over the benchmark's unit (`interval` names it; a rate's "
    "interval, inside [0, 1]), usually about ten times as wide.",
    "judge_agreement": "Two judges on the same rows (pass 1, categories 1-4): the rows both labelled, the share with equal "
    "labels and Cohen's kappa (chance-corrected; empty when both gave one label to every row) with its "
    "{conf:.0%} interval (`kappa_ci_low`, `kappa_ci_high`: leave-one-conversation-out jackknife, "
    "t on conversations-1 degrees of freedom, cut at [-1, 1]).",
    "judge_sensitivity": "The same answers under each judge: per judge and condition, the judge's figure over the kinds its "
    "benchmark's judge scores (LoCoMo: categories 1-4) with its {conf:.0%} interval over the benchmark's unit, the "
    "condition's `rank` among the `of` conditions that judge judged (1 the highest), `places_moved` (its worst rank "
    "minus its best over the judges that judged it), and what the judge accepts of answers known to be wrong "
    "(`memorybench judge-check`: `specific_wrong_accepted`, `vague_wrong_accepted`, and `gold_accepted` of the right "
    "ones; empty where the judge was never checked, `calibration` says so).",
    "gold_token_drop": "Of the gold stems that were in the memory given to the answerer, the share missing from the answer "
    "(`drop_rate`). Stems are LoCoMo's tokens: normalize_answer, whitespace split, Porter stem; category 3 "
    "uses the gold before the first ';'. `in_memory_share`: gold stems found in the memory at all.",
    "refusals": "Share of answers containing 'not mentioned' or 'no information available' (LoCoMo's category-5 rule): on "
    "category 5 (a refusal is right) and on categories 1-4 (a refusal is a miss), each a rate with its "
    "{conf:.0%} interval over conversations (`*_interval`: Korn-Graubard, Clopper-Pearson on the effective "
    "size after the conversations' design effect; it stays in [0, 1] and keeps a width at 0 or 1).",
    "answer_length": "Answer length as a control (categories 1-4): each answer's length in whitespace tokens, the mean and "
    "p95 (nearest rank) per condition, then per length bin the answers in it, their LoCoMo F1 and each "
    "judge's J. Mem0's judge counts an answer CORRECT \"as long as it touches on the same topic\": a J that "
    "rises with length where F1 does not is the judge rewarding length. `compare` warns when two "
    "conditions' mean lengths differ by more than 2x.",
    "blame": "Where each answer was lost (memorybench.compare.blame), as the share of the condition's rows (replicates "
    "included) per category, the counts beside them (`<class>_n`, summing to `rows`). A wrong answer is "
    "`not_stored` when the memory's lineage does not keep every gold evidence turn, `not_retrieved` when it "
    "keeps them but they did not reach this question's prompt (retrieval hits; an agent: what its steps "
    "printed), `wrong_judged` when the answer carries every gold stem it was given yet is scored wrong, "
    "`ignored` otherwise. Correct: the pack's first judge (mean over parsed passes >= 0.5); rows without a "
    "judge verdict (category 5, no autorater) by LoCoMo F1 >= 0.5 (`judged_rows` counts the others). "
    "`evidence_unknown`: rows without evidence ids (unknown facts decide no class). For packs of the pinned "
    "locomo10.json, the evidence ids are the outside audit's corrected ones where it found a question miscited "
    "(dial481/locomo-audit errors.json).",
}


def _resolve(paths: Sequence[str], base_dir: Path) -> list[str | Path]:
    """Local paths against `base_dir` (absolute ones as they are); `gs://` URIs untouched."""
    out: list[str | Path] = []
    for text in paths:
        path = Path(os.path.expanduser(text))
        out.append(text if text.startswith("gs://") else path if path.is_absolute() else base_dir / path)
    return out


def _pairs(design: AnalysisDesign, frame: pd.DataFrame, notes: list[str]) -> list[tuple[str, str]] | None:
    """The design's pairs whose two conditions these packs hold; a note for each other one."""
    if design.pairs is None:
        return None
    held = list(frame["condition"].unique())
    kept = [(a, b) for a, b in design.pairs if a in held and b in held]
    for a, b in design.pairs:
        if (a, b) not in kept:
            missing = ", ".join(c for c in (a, b) if c not in held)
            notes.append(f"Pair {a} / {b} is not compared: no pack of {missing} (conditions held: {', '.join(held)}).")
    return kept


def _protocols(runs: pd.DataFrame) -> pd.Series:
    """Each pack's question protocol (`memorybench.answer.prompt.question_protocol`), from
    its answerer and `cfg.reader.prompt`."""
    prompts = runs["cfg.reader.prompt"] if "cfg.reader.prompt" in runs.columns else pd.Series(None, index=runs.index)
    protocol = [
        question_protocol({"answerer": {"name": answerer}, "reader": {"prompt": prompt}})
        for answerer, prompt in zip(runs["answerer"], prompts)
    ]
    return pd.Series(protocol, index=runs["pack"].to_numpy())


def _calibration(judge: str, runs: pd.DataFrame) -> Any:
    """The judge's judge-check record, from the runs' `paths.cache` (each pack's
    config.resolved.yaml), else `outputs/cache`; None where it was never checked."""
    from memorybench.pack.judge_calibration import cache_dir_of, find_calibration

    caches = []
    for location in runs["pack"]:
        pack = PackReader.open(location)
        caches.append(cache_dir_of(yaml.safe_load(pack.read_text(layout.CONFIG)) if pack.exists(layout.CONFIG) else None))
    return find_calibration(judge, [c for c in caches if c])


def _judge_calibration(judge: str, runs: pd.DataFrame) -> str:
    """The judge's calibration line (`_calibration`)."""
    from memorybench.pack.judge_calibration import NOT_CALIBRATED

    found = _calibration(judge, runs)
    return NOT_CALIBRATED if found is None else found.summary()


def run_report(
    design_path: str | os.PathLike[str] | AnalysisDesign,
    out_dir: str | os.PathLike[str],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    categories: str | None = None,
) -> Report:
    """Write `<out_dir>/report.md`, `tables/*.csv` and `figures/*.png` for a design (a YAML
    file, or one built in memory from the command line); return them.
    `categories` (e.g. "1-4") overrides the design's."""
    design = design_path if isinstance(design_path, AnalysisDesign) else load_design(design_path)
    if isinstance(design_path, AnalysisDesign):
        design_path = f"{design.name} (from the command line)"
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    scan = scan_packs(_resolve(design.packs, base))
    packs = experiment_packs(scan.finished, design.experiment)
    if not packs:
        raise UserError(
            f"design {design_path}: no finished pack in {design.packs}"
            + (f" of experiment {design.experiment!r}" if design.experiment else "")
        )
    frame = examples_table(packs).to_pandas()
    runs = runs_table(packs).to_pandas()
    runs["condition"] = condition_labels(runs, design.conditions)
    check_pooling(runs, design.conditions, design.replicates)
    frame["condition"] = frame["pack"].map(runs.set_index("pack")["condition"])
    frame["question_protocol"] = frame["pack"].map(_protocols(runs))
    overlay = load_overlay(runs["data_sha256"])
    if overlay.errors is not None:
        frame["wrong_gold"] = frame["question_id"].isin(overlay.wrong_gold(frame["question_id"].unique()))
        if design.corrected_gold:
            frame[CORRECTED] = [
                corrected_f1(overlay, prediction, overlay.errors[q], category) if wrong else f1
                for q, prediction, category, f1, wrong in zip(
                    frame["question_id"],
                    frame["prediction"].fillna(""),
                    frame["category"],
                    frame[LEXICAL],
                    frame["wrong_gold"],
                )
            ]
    selected = parse_categories(categories if categories is not None else design.categories)
    if selected is not None:
        frame = frame[frame["category"].isin(sorted(selected))].reset_index(drop=True)
        if frame.empty:
            raise UserError(f"design {design_path}: no question of categories {categories or design.categories} in these packs")
    out = Path(out_dir).expanduser().resolve()
    (out / "tables").mkdir(parents=True, exist_ok=True)
    report = Report(out, out / "report.md")

    notes = []
    if runs["local_model"].fillna(False).astype(bool).any():
        local = runs[runs["local_model"].fillna(False).astype(bool)]
        named = local["dataset"].dropna().astype(str) if "dataset" in local else []
        titles = " or ".join(dict.fromkeys(benchmark_of_meta({"name": d}).title for d in [*named] or [None]))
        notes.append(f"Some answers come from the embedded local model: not comparable with published {titles} numbers.")
    if runs["is_prefix"].fillna(False).astype(bool).any():
        notes.append(
            "Some packs answer part of the benchmark (the first max_questions, or questions chosen by "
            "question_ids or question_sample): smoke tests or subsets, not benchmark results."
        )
    if scan.unfinished:
        notes.append(f"{len(scan.unfinished)} unfinished pack(s) (no _SUCCESS) were left out.")
    failed = runs.groupby("condition", sort=False)["memory_failed_tasks"].sum(min_count=1).dropna()
    if (failed > 0).any():  # a writer's or a wrapped library's failed tasks: the memory lacks their inputs
        shown = "; ".join(f"{c}: {int(n)}" for c, n in failed.items() if n > 0)
        notes.append(
            f"Writer tasks failed ({shown}): a reply that did not parse, or one the wrapped library itself "
            "reported it could not use; the memory lacks what they would have written (each pack's "
            "memory/writer/failures.jsonl)."
        )
    notes.append(
        overlay.note
        + (
            ""
            if overlay.errors is None
            else f": `scores_by_category` shows {benchmark_of_rows(frame).lexical_figure} on all questions "
            "and on those without a known wrong gold answer (`n_no_gold_error`, `f1_no_gold_error`)."
        )
    )
    for judge in judges_of(frame):  # what each judge accepts (`memorybench judge-check`), beside its J
        bench = benchmark_of_rows(frame[frame[judge_key("j_score", judge)].notna()])  # another benchmark's figure is not J
        notes.append(
            f"{'J' if bench.figure_key == 'j' else bench.figure_key} by judge {judge}: {_judge_calibration(judge, runs)}."
        )
    if selected is not None:
        notes.append(
            f"Only categories {', '.join(map(str, sorted(selected)))} are reported (categories={categories or design.categories})."
        )
    by_protocol = frame.groupby("condition", sort=False)["question_protocol"].agg(lambda s: ", ".join(sorted(set(s))))
    if by_protocol.nunique() > 1:  # what differs is the benchmark's to say (`Benchmark.protocol_note`)
        shown = "; ".join(f"{c}: {p}" for c, p in by_protocol.items())
        said = benchmark_of_rows(frame).protocol_note
        notes.append(f"The question protocols differ ({shown})" + (f": {said}" if said else "."))
    notes += budget_notes(frame)  # a run whose system returned more than budget.top_k, or its whole memory
    if frame["sample_id"].nunique() < 2:
        notes.append(
            "These packs hold one conversation: no between-conversation uncertainty can be estimated, so no "
            "interval is given (a prefix or single-conversation run is a smoke test)."
        )
    report.notes = notes

    builders = {
        "scores_by_category": lambda: scores_by_category(frame, design.bootstrap),
        "accuracy_by_type": lambda: accuracy_by_type(frame, design.bootstrap),
        "paired_differences": lambda: paired_differences(frame, design.bootstrap, _pairs(design, frame, notes)),
        "cost_latency": lambda: cost_latency(frame, runs),
        "latency_tokens": lambda: latency_tokens(frame),
        "requests_budget": lambda: requests_budget(frame, runs),
        "judge_passes": lambda: judge_passes(frame, runs, design.bootstrap.confidence),
        "judge_agreement": lambda: judge_agreement(frame, design.bootstrap.confidence),
        "judge_sensitivity": lambda: judge_sensitivity(
            frame, lambda judge: _calibration(judge, runs), design.bootstrap.confidence
        ),
        "gold_token_drop": lambda: gold_token_drop(frame),
        "refusals": lambda: refusals(frame, design.bootstrap.confidence),
        "answer_length": lambda: answer_length(frame),
        "blame": lambda: blame_table(frame),
    }
    # the benchmarks' own tables (LongMemEval's retrieval metrics): empty where no pack is theirs
    builders.update({name: (lambda t=t: imported(t.builder)(frame, design.bootstrap)) for name, t in own_tables().items()})
    tables, figure_names = list(design.tables), list(design.figures)
    datasets = sorted({str(d) for d in frame["dataset"].dropna()}) if "dataset" in frame else []
    other = [d for d in datasets if not benchmark_of(d).own_lexical_rules]
    if other:
        lexical = benchmark_named(None)  # the benchmark whose categories, overalls and J the shared tables read
        # LoCoMo's categories, overalls and J run through these tables: another benchmark's
        # figures are its own (compare, autorater_metrics.json), never LoCoMo-labelled ones
        kept = [t for t in tables if t in BENCHMARK_NEUTRAL_TABLES + OWN_BENCHMARK_TABLES or t in own_tables()]
        notes.append(
            f"Datasets {', '.join(other)} are not {lexical.title}: only the tables that do not read {lexical.title}'s categories are "
            f"made ({', '.join(kept) or 'none'}); their own figure, the judge's accuracy per question type, is "
            f"`accuracy_by_type` ({', '.join(sorted({f'docs/{benchmark_of(d).name}.md' for d in other}))})."
        )
        tables, figure_names = kept, []
    needed = list(
        dict.fromkeys(
            [
                *tables,
                *(["scores_by_category"] if figure_names else []),
                *(["cost_latency"] if {"accuracy_vs_cost", "accuracy_vs_latency"} & set(figure_names) else []),
            ]
        )
    )
    computed = {name: builders[name]() for name in needed}
    if "paired_differences" in computed and not computed["paired_differences"].empty:
        # which differences this design can detect, over the benchmark's unit
        notes += detectable_notes(computed["paired_differences"], benchmark_of_rows(frame).unit)
    for name in tables:
        table = computed[name]
        if name == "judge_passes" and table.empty:
            notes.append("No autorater in these packs: no judge tables.")
            continue
        if name == "judge_sensitivity" and table.empty:  # no judge: said once, by judge_passes
            continue
        if name in own_tables() and table.empty:
            continue
        if name == "accuracy_by_type" and table.empty:
            if other:  # LoCoMo packs have no such table; another benchmark's unjudged packs have no figure yet
                judge = "|".join(sorted({benchmark_of(d).name for d in other}))
                notes.append(
                    f"No judge on the {', '.join(other)} packs: no accuracy_by_type table (run `memorybench "
                    f"autorater PACK judge={judge}`)."
                )
            continue  # LoCoMo packs, or methods that retrieve nothing: LongMemEval's retrieval metrics do not apply
        if name == "judge_agreement" and table.empty:
            if not report.tables.get("judge_passes", pd.DataFrame()).empty:
                notes.append("One judge per condition: no judge agreement table (it compares two judges on the same rows).")
            continue
        report.tables[name] = table
        path = out / "tables" / f"{name}.csv"
        with atomic_path(path) as tmp:
            table.to_csv(tmp, index=False, float_format="%.6g")
        report.table_files[name] = path

    figures, bench = out / "figures", benchmark_of_rows(frame)  # its kinds, overalls and figure names
    for name in figure_names:
        target = figures / f"{name}.png"
        if name == "scores_by_category":
            report.figures[name] = figure_scores_by_category(computed["scores_by_category"], target, bench)
        elif name == "accuracy_vs_cost":
            report.figures[name] = figure_accuracy_vs_cost(
                computed["cost_latency"], computed["scores_by_category"], target, bench
            )
        else:
            report.figures[name] = figure_accuracy_vs_latency(
                computed["cost_latency"], computed["scores_by_category"], target, bench
            )

    lines = [f"# {design.title or design.name}", ""]
    lines += [
        f"{len(packs)} finished pack(s); conditions by {', '.join(design.conditions)}; the runs of a condition may differ "
        f"only in {', '.join(design.replicates) or 'nothing'} (replicates: numbers are means over their questions, "
        "`*_sd_runs` the sd over runs).",
        "",
    ]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    lines += ["| condition | runs | run ids |", "|---|---|---|"]
    for condition, rows in frame.groupby("condition", sort=False):
        ids = sorted(rows["run_id"].unique())
        lines.append(f"| {condition} | {len(ids)} | {', '.join(ids)} |")
    lines.append("")
    boot = design.bootstrap
    for name, table in report.tables.items():
        about = own_tables()[name].about if name in own_tables() else DEFINITIONS[name]
        lines += [
            f"## {name}",
            "",
            about.format(conf=boot.confidence, resamples=boot.resamples, seed=boot.seed),
            "",
            markdown_table(table),
            "",
            f"CSV: `tables/{name}.csv`",
            "",
        ]
    for name, path in report.figures.items():
        lines += [f"## Figure: {name}", "", f"![{name}](figures/{path.name})", ""]
    write_atomic(report.markdown, printable("\n".join(lines)))  # a terminal may show it (cat, less): no control character
    return report


def report_main(argv: Sequence[str]) -> int:
    """`memorybench report [DESIGN.yaml] [--packs P...] [--conditions C...] [--out DIR]`."""
    parser = OneLineParser(
        prog="memorybench report",
        description="Tables and figures for an analysis design (conf/analysis/*.yaml), "
        "or for packs and conditions given on the command line (they override the design's).",
    )
    parser.add_argument(
        "design", nargs="?", help="an analysis design YAML, e.g. conf/analysis/example.yaml (optional with --packs)"
    )
    parser.add_argument("--packs", nargs="+", metavar="PACK", help="packs, experiment folders or packs roots")
    parser.add_argument(
        "--conditions",
        nargs="+",
        metavar="COLUMN",
        help="columns that name a condition, e.g. choice.memory cfg.max_questions (default: the design's)",
    )
    parser.add_argument("--replicates", nargs="+", metavar="LEAF", help="identity leaves that may vary inside a condition")
    parser.add_argument("--experiment", help="keep only packs of this experiment name")
    parser.add_argument("--name", help="the report's name (default: the design's, else 'report')")
    parser.add_argument("--out", help="output folder (default: outputs/reports/<design name>)")
    parser.add_argument("--categories", help="report only these LoCoMo categories, e.g. 1-4 (default: the design's, else all)")
    ns = parser.parse_args(list(argv))
    flags = {k: getattr(ns, k) for k in ("packs", "conditions", "replicates", "experiment", "name") if getattr(ns, k) is not None}
    if ns.design is None and "packs" not in flags:
        raise UserError(
            "report needs a design file or --packs PACK...; e.g. memorybench report --packs outputs/packs/default "
            "--conditions choice.memory"
        )
    design = load_design(ns.design) if ns.design is not None else None
    if flags:  # the command line's packs and conditions, over the design's (a design file stays the way to save them)
        base = design.model_dump() if design is not None else {}
        design = AnalysisDesign.model_validate({**base, **flags})
    parse_categories(ns.categories)
    reason = unsafe_reason(design.name) if ns.out is None else None
    if reason is not None:  # the default folder is outputs/reports/<name>: a name is one folder name, as a run's
        raise UserError(
            f"report name {design.name!r} cannot be a folder name ({reason}); use {ALLOWED}, or name the "
            "output folder with --out DIR"
        )
    out = ns.out or os.path.join("outputs", "reports", design.name)
    report = run_report(design if flags else ns.design, out, categories=ns.categories)
    print(printable(f"report: {report.markdown}", newlines=False))
    for name, path in {**report.table_files, **report.figures}.items():
        print(printable(f"  {name}: {path}", newlines=False))
    return 0

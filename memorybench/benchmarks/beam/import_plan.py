"""The records of a BEAM import (`importer.py`): what it plans to write, and the reproduction's own block.

`ImportPlan` is one import: the tier, the released runs with their rows found in it, the
profile and judge its scores are; `BeamImport` is `imported/reproduction.json`'s `own` (the
runs and the figures the release states, each beside the same arithmetic over the files and
beside the packs), which `format_reproduction` prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from memorybench.answer.imported import Reproduction
from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.data import ABILITIES, BeamQuestion, BeamTier
from memorybench.benchmarks.beam.released_files import BeamRow
from memorybench.pack.schemas import Coverage
from memorybench.records import Record
from memorybench.stages.importers._pack import IMPORTED

__all__ = [
    "AMB",
    "ANSWERER",
    "COGNEE",
    "MEMORY",
    "PROFILES",
    "BeamImport",
    "Figure",
    "ImportPlan",
    "ImportRun",
    "Mapped",
    "RunFigure",
    "StatedFigures",
    "category_of",
    "format_reproduction",
]

COGNEE = "cognee_beam"
AMB = "amb_beam"
ANSWERER = MEMORY = IMPORTED
PROFILES = {
    "beam_paper": (
        "beam_paper: the judge's 0.5 kept (Cognee's metrics/beam_rubric.py: float(score), snapped to 1 / 0.5 / 0, "
        "mean over the rubric items); unlike our beam_paper, event ordering is scored by the same rubric judge, "
        "not tau_norm, and the judge prompt has the question filled in (our `beam` protocol's requests, not "
        "compute_metrics.py's)"
    ),
    "mem0_nugget": (
        "mem0_nugget (non-official): AMB's dataset/beam.py score_result, mem0's nugget-judge prompt per rubric "
        'item, 0 / 0.5 / 1 kept, mean over the items; event ordering by its rubric items as "should mention" '
        "nuggets, no tau; neither beam_official nor beam_paper"
    ),
    "amb_binary": (
        "amb_binary (non-official): AMB's per-ability binary judge (dataset/beam.py get_judge_prompt_fn), "
        "`correct` as 1 / 0; no BEAM profile"
    ),
}


# -- the reproduction's own block ---------------------------------------------------------------------------


class Figure(Record):
    """One stated figure beside what its own arithmetic over the files gives and what the packs give."""

    #: as the release states it (null: it states none)
    stated: Optional[float] = None
    #: the release's own arithmetic over the files' per-question values (Cognee: aggregate_cross_run.py's
    #: pooling and numpy's mean; AMB: runner.py's mean over the scored rows)
    recomputed: Optional[float] = None
    #: from the packs: each run's judge folder (`j`), then their mean and sd over the runs
    ours: Optional[float] = None
    #: `equal` (recomputed is the stated figure, bit for bit), `rounding` (within 1e-12: summed in
    #: another order), `differs`, `not stated`
    agreement: str
    #: the same between the stated figure and the packs' (null where the packs have none)
    ours_agreement: Optional[str] = None


class StatedFigures(Record):
    """A metric's figures over one scope (overall, or one ability)."""

    #: questions per run in the scope
    questions: Optional[int] = None
    mean: Figure
    run_sd: Optional[Figure] = None
    #: the stated interval (Cognee: a bootstrap over the pooled questions of every run, unseeded)
    ci_stated: Optional[list[Optional[float]]] = None


class RunFigure(Record):
    """One released run and the pack it became."""

    run_idx: Optional[int] = None
    file: str
    sha256: str
    run_id: str
    questions: int
    #: rows with a score the release counts
    scored: int
    #: the release's arithmetic over this run's scores; the pack's judge folder's `j` overall
    mean_recomputed: Optional[float] = None
    mean_ours: Optional[float] = None
    #: Cognee: its kendall_tau over this run (event ordering rows), recomputed
    kendall_tau_recomputed: Optional[float] = None


class BeamImport(Record, schema="beam_import.v1"):
    """`imported/reproduction.json`'s `own`: what a BEAM release states and how far the packs give it back."""

    format: str
    #: the profile its scores are (`PROFILES`) and what that means, in words
    profile: str
    profile_note: str
    #: the judge model as the release names it, and where that comes from
    judge_model: str
    judge_note: str
    dataset: str
    #: who answered: Cognee's retriever and conversation, AMB's provider, run name, mode, answer model
    system: dict[str, Any] = Field(default_factory=dict)
    #: the file's conversation keys -> our sample ids
    conversations: dict[str, str] = Field(default_factory=dict)
    runs: list[RunFigure]
    #: metric -> its overall figures (Cognee: beam_rubric, kendall_tau; AMB: accuracy)
    overall: dict[str, StatedFigures]
    #: ability -> metric -> figures
    by_ability: dict[str, dict[str, StatedFigures]] = Field(default_factory=dict)
    #: the other files read beside the results (config, summary, the other runs): role, name, sha256
    files: list[dict[str, str]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def category_of(q: BeamQuestion) -> int:
    """A question's category: its ability's number."""
    return ABILITIES.index(q.ability) + 1


@dataclasses.dataclass(frozen=True)
class Mapped:
    #: the file's row index -> its question
    questions: dict[int, BeamQuestion]
    #: file conversation key -> our sample id
    conversations: dict[str, str]
    notes: list[str]


@dataclasses.dataclass
class ImportRun:
    """One pack to write: a released run and its rows mapped."""

    path: Path
    run_idx: int | None
    rows: tuple[BeamRow, ...]
    mapped: Mapped


@dataclasses.dataclass
class ImportPlan:
    fmt: str
    dataset: str
    data_path: Path
    data_info: dict[str, Any]
    tier: BeamTier
    runs: list[ImportRun]
    #: other files read beside the runs: (role, path)
    side: list[tuple[str, Path]]
    partial: Coverage | None
    profile: str
    judge_model: str
    judge_note: str
    system: dict[str, Any]
    notes: list[str]
    #: (plan, per-run judge metrics) -> the figures the release states, beside ours
    stated: Callable[
        [ImportPlan, list[RunFigure], list[Any]], tuple[dict[str, StatedFigures], dict[str, dict[str, StatedFigures]], list[str]]
    ]
    #: the reported score's field, and how a row's score is checked against the row's own words
    score_field: str
    #: what the imported judge's identity names as its prompt: the pinned file that holds the
    #: release's judge prompt (Cognee's metrics/beam_rubric.py), else None: each results file's sha256
    judge_prompt_sha256: str | None
    row_check: Callable[[BeamRow, BeamQuestion], bool]
    row_check_words: str


# -- the printed table --------------------------------------------------------------------------------------


def format_reproduction(rep: Reproduction) -> str:
    """What `memorybench import` prints for a BEAM release: the run's table, the runs, the stated figures."""

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    def full(v: float | None) -> str:
        return "-" if v is None else repr(v)

    lines = [f"import ({rep.format}, results sha256 {rep.results_sha256[:12]})"]
    own = BeamImport.model_validate(rep.own) if rep.own else None
    if own is not None:
        lines += [f"profile: {own.profile_note}", f"judge: {own.judge_note}"]
    if rep.partial is not None:
        lines.append(f"PARTIAL: {rep.partial.questions} of {rep.partial.of} questions ({rep.partial.reason})")
    score = rep.metrics.get("score")
    if score is not None and score.rows is not None:
        lines += [
            "",
            f"{score.label}",
            f"rows ({score.rows.reported_field}): {score.rows.equal} of {score.rows.rows} agree"
            + (f", {score.rows.mismatched} do not" if score.rows.mismatched else "")
            + f" ({score.rows.compared})",
        ]
        lines.append(f"  {'ability':<30}{'n':>4}  {'pack':>7}  {'file':>7}")
        for c, f in score.by_category.items():
            lines.append(f"  {c + ' ' + BENCHMARK.category_names[int(c)]:<30}{f.rows:>4}  {fmt(f.ours):>7}  {fmt(f.reported):>7}")
        lines.append(
            f"  {'overall (mean over questions)':<30}{score.overall.rows:>4}  {fmt(score.overall.ours):>7}  "
            f"{fmt(score.overall.reported):>7}"
        )
    if own is not None:
        lines += ["", "runs (one pack each):", f"  {'run':<5}{'n':>4}  {'file mean':>10}  {'pack mean':>10}  run id"]
        for r in own.runs:
            lines.append(
                f"  {('-' if r.run_idx is None else str(r.run_idx)):<5}{r.questions:>4}  {fmt(r.mean_recomputed):>10}  "
                f"{fmt(r.mean_ours):>10}  {r.run_id}"
            )
        lines += ["", "stated figures: as stated, recomputed from the files, from the packs"]
        for scope, cells in [("overall", own.overall), *own.by_ability.items()]:
            for metric, cell in cells.items():
                for kind, fig in (("mean", cell.mean), ("run sd", cell.run_sd)):
                    if fig is None or (fig.stated is None and kind == "run sd" and fig.recomputed is None):
                        continue
                    lines.append(
                        f"  {scope + ' ' + metric + ' ' + kind:<52} stated {full(fig.stated):<22} recomputed "
                        f"{full(fig.recomputed):<22} packs {fmt(fig.ours):>7}  {fig.agreement}"
                        + (f" (packs: {fig.ours_agreement})" if fig.ours_agreement else "")
                    )
        lines += own.notes
    lines += rep.notes
    return "\n".join(lines)

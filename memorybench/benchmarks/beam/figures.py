"""BEAM's own figures of a judge (`autorater_metrics.json`'s `figures`): both profiles from its stored calls.

The record's `judge_figures` hook names this module. `scores` replays a judge's traces: per
(question, pass) its rubric replies in item order (`part` `rubric N`) and its alignment replies
(`align R S`), read as `score.py` reads them, so `beam_official` (0.5 truncated, event ordering's
`tau_norm`) and `beam_paper` (0.5 kept) come from the one pass that was paid for. Per profile:
per ability the mean over conversations of each conversation's mean (report_results.py's cell),
its conversations and questions, and the plain mean of the ten (report_results.py prints no
overall); per pass, and the mean over passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from memorybench.benchmarks.beam.data import ABILITIES
from memorybench.benchmarks.beam.judge import BeamJudge, BeamOfficialJudge
from memorybench.benchmarks.beam.score import (
    EVENT_ORDERING,
    OFFICIAL,
    PAPER,
    PROFILES,
    Equivalence,
    JudgedQuestion,
    parse_judge_reply,
    profile_figures,
    score_question,
)

__all__ = [
    "CALIBRATION_SETS",
    "FIELD",
    "LABELS",
    "brief_line",
    "judge_acceptance",
    "lines",
    "named",
    "profiles_table",
    "question_figures",
    "question_lines",
    "scores",
]

#: the key of autorater_metrics.json that holds them
FIELD = "figures"
SCHEMA = "beam_figures.v1"

LABELS = {
    "j": (
        "BEAM's rubric judge, a question's figure under the profile the protocol is named for (beam: beam_paper, "
        "beam_official: beam_official), per ability a plain mean over its judged questions; the benchmark's own "
        "figures are `figures` (per ability a mean over conversations, as report_results.py computes it)"
    ),
    "j.agreement": "share of rows judged in every pass whose passes all gave the same figure",
    "figures": (
        "both profiles from the same stored replies: beam_official (compute_metrics.py's int() truncates every "
        "0.5 to 0; event ordering by tau_norm) and beam_paper (0.5 kept); per ability the mean over "
        "conversations of each conversation's mean, its conversations and questions; overall the plain mean of "
        "the ten abilities (report_results.py writes no overall), null unless all ten have a figure"
    ),
    "mem0_f1": "not computed: Mem0's lexical F1 is not a BEAM score",
    "mem0_bleu1": "not computed: Mem0's BLEU-1 is not a BEAM score",
}


def _part(trace: Mapping[str, Any]) -> tuple[str, list[int]]:
    kind, *numbers = str(trace.get("part") or "").split(" ")
    return kind, [int(n) for n in numbers if n.isdigit()]


def _judged(verdict: Any, calls: Sequence[Mapping[str, Any]]) -> JudgedQuestion | None:
    """A question's stored pass as `score.py` reads it (None: it has no answered rubric call)."""
    rubric: dict[int, tuple[str, Any]] = {}
    equivalences: list[Equivalence] = []
    answer = None
    for trace in calls:
        kind, numbers = _part(trace)
        response = trace.get("response") or {}
        text = response.get("text") if isinstance(response, Mapping) else None
        slots = (trace.get("request") or {}).get("slots") or {}
        if kind == "rubric" and numbers:
            rubric[numbers[0]] = (str(slots.get("<rubric_item>", "")), parse_judge_reply(text).score)
            answer = slots.get("<llm_response>", answer)
        elif kind == "align" and len(numbers) == 2 and text is not None:
            equivalences.append(Equivalence(numbers[0], numbers[1], str(text)))
    if not rubric:
        return None
    ordered = [rubric[n] for n in sorted(rubric)]
    ability = ABILITIES[int(verdict.category) - 1]
    return JudgedQuestion(
        verdict.question_id,
        verdict.sample_id,
        ability,
        tuple(i for i, _ in ordered),
        tuple(v for _, v in ordered),
        answer if ability == EVENT_ORDERING else None,
        tuple(equivalences),
    )


def _profile(figures: Any) -> dict[str, Any]:
    return {
        "per_ability": dict(figures.per_ability),
        "conversations": dict(figures.conversations),
        "questions": dict(figures.questions),
        "overall": figures.overall,
        "failed": len(figures.failures),
        "failures": dict(sorted(figures.failures.items())),
    }


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present and len(present) == len(values) else None


def scores(
    verdicts: Sequence[Any], passes: int, protocol: str, judge: Any, *, traces: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Both profiles per pass and their means over the passes, from the judge's stored calls."""
    calls: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for trace in traces:
        calls.setdefault((str(trace.get("question_id")), int(trace.get("pass", 0))), []).append(trace)
    per_pass = []
    for n in range(1, passes + 1):
        judged = [_judged(v, calls.get((v.question_id, n), [])) for v in verdicts if v.pass_ == n]
        scored = [score_question(j) for j in judged if j is not None]
        per_pass.append({p: _profile(profile_figures(scored, p)) for p in PROFILES})
    means = {
        p: {
            "per_ability": {a: _mean([q[p]["per_ability"].get(a) for q in per_pass]) for a in ABILITIES},
            "overall": _mean([q[p]["overall"] for q in per_pass]),
        }
        for p in PROFILES
    }
    return {
        "schema": SCHEMA,
        "protocol": protocol,
        "ours": protocol == BeamJudge.name,
        "official_requests": protocol != BeamJudge.name,
        "profiles": means,
        "passes": per_pass,
    }


def named(judge: Any, benchmark: Any, passes: bool = False) -> dict[str, float | None]:
    """A judge's figures under BEAM's names (`Benchmark.judge_values`): `beam_score`, the overall of
    the profile its protocol is named for (beam: beam_paper, beam_official: beam_official), per
    ability under that profile, both profiles' overalls (`_official`, `_paper`), `_sd` over the
    passes, and with `passes` each pass's overall under the protocol's profile (`_pass<n>`)."""
    key = benchmark.figure_key
    own = judge.block(FIELD) if judge is not None else None
    profile = (OFFICIAL if own.get("protocol") == BeamOfficialJudge.name else PAPER) if own else PAPER
    profiles = own["profiles"] if own else {}
    chosen = profiles.get(profile) or {}
    return {
        key: chosen.get("overall"),
        f"{key}_official": (profiles.get(OFFICIAL) or {}).get("overall"),
        f"{key}_paper": (profiles.get(PAPER) or {}).get("overall"),
        f"{key}_sd": judge.j.sd if own else None,
        **{f"{key}_{ability}": (chosen.get("per_ability") or {}).get(ability) for ability in ABILITIES},
        **(
            {f"{key}_pass{n}": (p.get(profile) or {}).get("overall") for n, p in enumerate(own["passes"], 1)}
            if passes and own
            else {}
        ),
    }


def brief_line(judge_id: str, metrics: Mapping[str, Any], ability: str) -> str:
    """`show --brief`'s line of a judge's figures over the pack: both profiles' overall and this
    question's ability (each a mean over the passes)."""
    profiles = metrics[FIELD]["profiles"]

    def fmt(v: Any) -> str:
        return "unknown" if v is None else f"{v:.4f}"

    return f"score by judge {judge_id}: " + "; ".join(
        f"{p} overall {fmt(profiles[p]['overall'])}, {ability} {fmt(profiles[p]['per_ability'].get(ability))}" for p in PROFILES
    )


def lines(metrics: Mapping[str, Any]) -> list[str]:
    """The printed table: per ability both profiles and their difference, then the overall."""
    own = metrics[FIELD]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    first = own["passes"][0] if own["passes"] else None
    header = f"{'ability':<27}{'convs':>6}{'n':>5}  {'official':>8}  {'paper':>8}  {'paper-off':>9}"
    out = [header, "-" * len(header)]
    for ability in ABILITIES:
        official, paper = (own["profiles"][p]["per_ability"].get(ability) for p in PROFILES)
        convs = first["beam_paper"]["conversations"].get(ability, 0) if first else 0
        n = first["beam_paper"]["questions"].get(ability, 0) if first else 0
        diff = None if official is None or paper is None else paper - official
        out.append(f"{ability:<27}{convs:>6}{n:>5}  {fmt(official):>8}  {fmt(paper):>8}  {fmt(diff):>9}")
    out.append("-" * len(header))
    official, paper = (own["profiles"][p]["overall"] for p in PROFILES)
    diff = None if official is None or paper is None else paper - official
    out.append(f"{'overall (mean of the ten)':<38}  {fmt(official):>8}  {fmt(paper):>8}  {fmt(diff):>9}")
    failed = {p: first[p]["failed"] for p in PROFILES} if first else {}
    if any(failed.values()):
        out.append("left out (a verdict the profile cannot read): " + ", ".join(f"{p} {k}" for p, k in failed.items()))
    if metrics["passes"] > 1:
        out.append(f"passes: {metrics['passes']}; each figure is the mean over the passes")
    out.append(
        "requests: "
        + (
            "ours (the question filled in, no fact extraction)"
            if own["ours"]
            else "the pinned compute_metrics.py's, byte for byte (the discarded fact-extraction call included)"
        )
    )
    return out


def question_lines(category: int, calls: Sequence[Mapping[str, Any]]) -> list[str]:
    """One question's rubric items with each item's verdict under both profiles, per pass (`show`)."""
    out: list[str] = []
    for n in sorted({int(c.get("pass", 1)) for c in calls}):
        these = [c for c in calls if int(c.get("pass", 1)) == n]
        row = SimpleNamespace(question_id=str(these[0].get("question_id")), sample_id="", category=category)
        judged = _judged(row, these)
        if judged is None:
            continue
        scored = score_question(judged)
        out.append(f"pass {n}: BEAM's rubric ({judged.ability}): each item's verdict as written -> beam_official, beam_paper")
        for k, item in enumerate(scored.items):
            out.append(f"  item {k}: {item.raw!r} -> {item.official}, {item.paper}: {item.item}")
        if scored.event is not None:
            out.append(
                f"  event ordering: tau_norm {scored.event.tau_norm:.4f} in both profiles (precision "
                f"{scored.event.precision:.4f}, recall {scored.event.recall:.4f})"
            )
        for profile in PROFILES:
            figure = scored.figure(profile)
            why = f" ({scored.failures[profile]})" if profile in scored.failures else ""
            out.append(f"  {profile}: {'-' if figure is None else f'{figure:.4f}'}{why}")
    return out


# -- the report's table -------------------------------------------------------------------------------


def question_figures(pack_root: str, judge_id: str) -> dict[str, dict[str, float | None]]:
    """Per question id of a pack's judge (its first pass): its figure under each profile."""
    from memorybench.pack import layout
    from memorybench.pack.reader import PackReader

    pack = PackReader.open(pack_root)
    traces_path, verdicts_path = (pack.judge_path(judge_id, name) for name in (layout.JUDGE_TRACES, layout.JUDGE_VERDICTS))
    if not pack.exists(traces_path) or not pack.exists(verdicts_path):
        return {}
    calls: dict[str, list[Mapping[str, Any]]] = {}
    for trace in pack.rows(traces_path):
        if int(trace.get("pass", 1)) == 1:
            calls.setdefault(str(trace.get("question_id")), []).append(trace)
    out: dict[str, dict[str, float | None]] = {}
    for verdict in pack.rows(verdicts_path):
        if int(verdict.get("pass", 1)) != 1:
            continue
        row = SimpleNamespace(
            question_id=str(verdict["question_id"]), sample_id=str(verdict["sample_id"]), category=int(verdict["category"])
        )
        judged = _judged(row, calls.get(row.question_id, []))
        if judged is not None:
            scored = score_question(judged)
            out[row.question_id] = {p: scored.figure(p) for p in PROFILES}
    return out


#: the judge-check sets whose acceptance stands beside every figure (`judge_sets.py`), as columns
#: `judge_accepts_<set>`: the share of each set the judge accepted (a figure of 0.5 or more)
CALIBRATION_SETS = ("vague_wrong", "specific_wrong", "one_side", "gold")


def judge_acceptance(judge_id: str, packs: Sequence[str]) -> dict[str, float | None]:
    """What the judge accepts (`memorybench judge-check dataset=beam_128k`, found by its judge id in
    the packs' `paths.cache`, else outputs/cache): `judge_accepts_<set>` of each set, None where
    never calibrated; `judge_calibration`, the summary line (or "not calibrated")."""
    import yaml

    from memorybench.pack import layout
    from memorybench.pack.judge_calibration import NOT_CALIBRATED, cache_dir_of, find_calibration
    from memorybench.pack.reader import PackReader

    caches = []
    for location in packs:
        pack = PackReader.open(location)
        config = yaml.safe_load(pack.read_text(layout.CONFIG)) if pack.exists(layout.CONFIG) else None
        caches.append(cache_dir_of(config))
    found = find_calibration(judge_id, [c for c in caches if c])
    out: dict[str, Any] = {
        f"judge_accepts_{name}": None if found is None or name not in found.sets else found.sets[name].overall.rate
        for name in CALIBRATION_SETS
    }
    out["judge_calibration"] = NOT_CALIBRATED if found is None else found.summary()
    return out


def profiles_table(frame: Any, boot: Any = None) -> Any:
    """The report's `beam_profiles` table: per condition of BEAM packs and judge, per ability and
    overall (the plain mean of the ten), both profiles' figure with its interval over
    conversations (cluster-robust, as every figure of the report), and their difference
    (beam_paper minus beam_official, paired by question), and beside them what the judge accepts
    of the judge-check sets (`judge_acceptance`). A question's figure is its first pass's,
    averaged over the condition's packs; empty when no pack of the report is BEAM's."""
    import math

    import numpy as np
    import pandas as pd

    from memorybench.benchmark import benchmark_of
    from memorybench.compare.intervals import mean_interval
    from memorybench.compare.report_tables import judges_of

    confidence = getattr(boot, "confidence", 0.95)
    out: list[dict[str, Any]] = []
    for condition, rows in frame.groupby("condition", sort=False):
        datasets = set(rows["dataset"].dropna()) if "dataset" in rows else set()
        if not datasets or any(benchmark_of(str(d)).name != "beam" for d in datasets):
            continue
        for judge in judges_of(frame):
            per_pack = [question_figures(str(p), judge) for p in rows["pack"].unique()]
            if not per_pack or not all(per_pack):
                continue
            accepts = judge_acceptance(judge, [str(p) for p in rows["pack"].unique()])
            samples = dict(zip(rows["question_id"], rows["sample_id"]))
            categories = dict(zip(rows["question_id"], rows["category"]))
            figures: dict[str, dict[str, float]] = {}
            for qid in samples:
                for profile in PROFILES:
                    values = [f[qid][profile] for f in per_pack if qid in f and f[qid][profile] is not None]
                    if values and len(values) == len(per_pack) and not any(math.isnan(v) for v in values):
                        figures.setdefault(qid, {})[profile] = sum(values) / len(values)

            def row(
                name: str,
                qids: list[str],
                condition: Any = condition,
                judge: str = judge,
                figures: dict[str, dict[str, float]] = figures,
                samples: dict[str, Any] = samples,
                accepts: dict[str, Any] = accepts,
            ) -> dict[str, Any]:
                both = [q for q in qids if len(figures.get(q, {})) == len(PROFILES)]
                clusters = np.array([samples[q] for q in both])
                found: dict[str, Any] = {
                    "condition": condition,
                    "judge": judge,
                    "ability": name,
                    "n": len(both),
                    "conversations": len(set(clusters.tolist())),
                }
                for profile in (*PROFILES, "difference"):
                    values = np.array(
                        [
                            figures[q]["beam_paper"] - figures[q]["beam_official"]
                            if profile == "difference"
                            else figures[q][profile]
                            for q in both
                        ],
                        dtype=float,
                    )
                    if not len(values):
                        found.update({profile: math.nan, f"{profile}_ci_low": math.nan, f"{profile}_ci_high": math.nan})
                        continue
                    interval = mean_interval(values, clusters, confidence=confidence, unit="conversation")
                    found[profile] = float(interval.estimate)
                    found[f"{profile}_ci_low"] = math.nan if interval.low is None else float(interval.low)
                    found[f"{profile}_ci_high"] = math.nan if interval.high is None else float(interval.high)
                return {**found, **accepts}

            abilities = [row(a, [q for q in samples if int(categories[q]) == n]) for n, a in enumerate(ABILITIES, 1)]
            out += [a for a in abilities if a["n"]]
            if all(a["n"] for a in abilities):
                overall = {
                    "condition": condition,
                    "judge": judge,
                    "ability": "overall (mean of the ten)",
                    "n": sum(a["n"] for a in abilities),
                    "conversations": max(a["conversations"] for a in abilities),
                }
                for key in (*PROFILES, "difference"):
                    overall[key] = float(np.mean([a[key] for a in abilities]))
                    overall[f"{key}_ci_low"] = overall[f"{key}_ci_high"] = math.nan  # a mean of ten means: no interval here
                out.append({**overall, **accepts})
    return pd.DataFrame(out)

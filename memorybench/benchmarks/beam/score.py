"""BEAM's figures from one stored judge pass, under two profiles.

One judge pass stores, per question, the judge's `score` for each rubric item (its reply read as
compute_metrics.py reads it: `parse_judge_reply`) and, for event ordering, the alignment replies
(`Equivalence`). Both profiles are computed from the same stored verdicts:

- `beam_official`: the pinned compute_metrics.py and report_results.py, arithmetic and all.
  A rubric ability's question scores `sum(int(score)) / len(rubric)` (`int` truncates: every 0.5
  counts 0, and a score written as the string "0.5" or "1.0" makes `int` raise, which fails the
  authors' whole run; here that question is a judge failure, counted). An event-ordering question
  scores its `tau_norm`: the answer split on "\\n" (every line, blank ones too), aligned to the
  rubric items by the LLM (`align_with_llm`: each line against each unused item in order, first
  "yes" wins), ranks over the union of both lists (an item missing from one list ranked last,
  all tied), Kendall tau-b, `(tau + 1) / 2`. report_results.py reads `tau_norm`, not the
  `final_score` (tau_norm x F1) that compute_metrics.py also computes, nor event ordering's rubric
  judge score (which compute_metrics.py adds up with `float`). Per conversation, an ability is the
  mean of its questions (`score += x` then `/ len`); per ability, the mean over conversations of
  those means (`sum(...) / N`). report_results.py writes only those ten columns: the overall is
  their plain mean, labelled so.
- `beam_paper`: the same with the judge's 0.5 kept (`float(score)`): what the judge prompt asks
  for and what Cognee's and supermemory's "paper" numbers use. Event ordering is the same `tau_norm`.

`kendall_tau_b` is scipy's `kendalltau(variant="b")` arithmetic in plain Python (the same integer
counts, the same two square roots and divisions, the same clipping); a test compares them bit for
bit. A tau-b that scipy leaves undefined (all ranks tied in one list: a one-item union) is NaN,
as in the authors' files, and a NaN makes the authors' ability mean NaN: kept here too, and shown.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memorybench.benchmarks.beam.data import ABILITIES

__all__ = [
    "EVENT_ORDERING",
    "OFFICIAL",
    "PAPER",
    "PROFILES",
    "Alignment",
    "Equivalence",
    "EventOrdering",
    "ItemScore",
    "JudgedQuestion",
    "ProfileFigures",
    "QuestionScore",
    "VerdictParse",
    "align",
    "event_ordering_score",
    "kendall_tau_b",
    "parse_judge_reply",
    "profile_figures",
    "score_question",
    "system_lines",
]

OFFICIAL = "beam_official"
PAPER = "beam_paper"
PROFILES = (OFFICIAL, PAPER)
EVENT_ORDERING = "event_ordering"
_FENCED = re.compile(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", re.DOTALL)
_FIRST_JSON = re.compile(r"(\{.*?\}|\[.*?\])", re.DOTALL)


# -- the judge's reply ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictParse:
    """A rubric judge reply as compute_metrics.py reads it: `score` as the JSON holds it (a float,
    an int, a string...), or why there is none."""

    score: Any = None
    error: str | None = None


def parse_judge_reply(reply: str | None) -> VerdictParse:
    """`parse_json_response(model.invoke(prompt).content.strip())['score']`, step by step:
    strip; a reply starting with a code fence gives the fence's JSON; `json.loads`; else the
    first (shortest) `{...}` or `[...]`. Where the authors then try `json_repair` (not
    installed here), or where their code raises (no `score` key, a JSON list), this is a
    failure, with the reason."""
    if reply is None:
        return VerdictParse(error="no reply")
    response = reply.strip()  # `.content.strip()`; parse_json_response strips again, to the same
    if response.startswith("```"):
        match = _FENCED.search(response)
        if match:
            response = match.group(1).strip()
    try:
        parsed = json.loads(response)
    except json.JSONDecodeError:
        match = _FIRST_JSON.search(response)
        if match is None:
            return VerdictParse(error="no JSON in the reply (the authors' code tries json_repair next)")
        try:
            parsed = json.loads(match.group(1))
        except Exception as e:  # noqa: BLE001 - the authors' own catch-all
            return VerdictParse(error=f"the reply's JSON does not parse ({e}; the authors' code tries json_repair next)")
    if not isinstance(parsed, dict) or "score" not in parsed:
        return VerdictParse(error="the reply's JSON has no 'score' key (the authors' code raises)")
    return VerdictParse(score=parsed["score"])


# -- event ordering -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Equivalence:
    """One `llm_equivalence` call: a rubric item (the reference) against one line of the answer."""

    reference_index: int
    system_index: int
    reply: str

    @property
    def same(self) -> bool:
        """`"yes" in reply.lower()` (so "Yes." and "not yes" are both yes)."""
        return "yes" in self.reply.lower()


@dataclass(frozen=True)
class Alignment:
    """What `align_with_llm` gives: the reference and the answer's lines, each matched line
    replaced by its reference item; and the (reference, line) pairs it asked about, in order."""

    reference: tuple[str, ...]
    system: tuple[str, ...]
    asked: tuple[tuple[int, int], ...]


def system_lines(response: str) -> list[str]:
    """`llm_response.split("\\n")`: the answer's events as the official code takes them (the
    fact-extraction reply is computed first and thrown away)."""
    return response.split("\n")


def align(reference: Sequence[str], system: Sequence[str], same: Callable[[int, int], bool]) -> Alignment:
    """`align_with_llm(reference, system, llm)`, with `same(reference index, line index)` for
    the call's verdict: each line is compared with each unused item in order; the first item it
    matches replaces it, else it stays as it is."""
    used: set[int] = set()
    out: list[str] = []
    asked: list[tuple[int, int]] = []
    for s_index, s in enumerate(system):
        matched = None
        for r_index, _ in enumerate(reference):
            if r_index in used:
                continue
            asked.append((r_index, s_index))
            if same(r_index, s_index):
                matched = r_index
                break
        if matched is not None:
            out.append(reference[matched])
            used.add(matched)
        else:
            out.append(s)
    return Alignment(tuple(reference), tuple(out), tuple(asked))


def kendall_tau_b(x: Sequence[int], y: Sequence[int]) -> float:
    """scipy.stats.kendalltau(x, y, variant="b").statistic, the same arithmetic in plain Python."""
    size = len(x)
    if size != len(y):
        raise ValueError("kendall_tau_b needs two sequences of one length")
    tot = size * (size - 1) // 2
    xtie = ytie = ntie = dis = 0
    for i in range(size):
        for j in range(i + 1, size):
            dx, dy = x[i] - x[j], y[i] - y[j]
            xtie += dx == 0
            ytie += dy == 0
            ntie += dx == 0 and dy == 0
            dis += (dx < 0 < dy) or (dy < 0 < dx)
    if size == 0 or xtie == tot or ytie == tot:
        return math.nan
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / math.sqrt(tot - xtie) / math.sqrt(tot - ytie)
    return min(1.0, max(-1.0, tau))


@dataclass(frozen=True)
class EventOrdering:
    """compute_metrics.py's `event_ordering_score` for one answer."""

    precision: float
    recall: float
    f1: float
    #: `(tau_b + 1) / 2`: the figure report_results.py reads
    tau_norm: float
    #: `tau_norm * f1`: computed by the authors, read by no table of theirs
    final_score: float


def event_ordering_score(reference_canon: Sequence[str], system_canon: Sequence[str]) -> EventOrdering:
    """`event_ordering_score` after its alignment, operation by operation."""
    tp = len(set(reference_canon) & set(system_canon))
    fp = len([x for x in system_canon if x not in reference_canon])
    fn = len([x for x in reference_canon if x not in system_canon])
    precision = tp / (tp + fp) if tp + fp else 0
    recall = tp / (tp + fn) if tp + fn else 0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0
    union = list(dict.fromkeys(list(reference_canon) + list(system_canon)))
    tie_rank = len(union) + 1

    def to_rank(seq: Sequence[str]) -> list[int]:
        r = {item: i + 1 for i, item in enumerate(seq)}  # a repeated item keeps its last position
        return [r.get(u, tie_rank) for u in union]

    tau_b_norm = (kendall_tau_b(to_rank(reference_canon), to_rank(system_canon)) + 1) / 2
    return EventOrdering(precision, recall, f1, tau_b_norm, tau_b_norm * f1)


# -- one question ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedQuestion:
    """One answered question's stored judge pass."""

    question_id: str
    sample_id: str
    ability: str
    rubric: tuple[str, ...]
    #: the judge's `score` for each rubric item, in rubric order, as its reply held it
    #: (`parse_judge_reply`); None where the reply could not be read
    verdicts: tuple[Any, ...]
    #: event ordering: the answer, whose lines are aligned with the rubric items
    response: str | None = None
    #: event ordering: the alignment calls' replies
    equivalences: tuple[Equivalence, ...] = ()


@dataclass(frozen=True)
class ItemScore:
    """One rubric item's verdict under both profiles (None: the profile cannot read it)."""

    item: str
    raw: Any
    official: int | float | None
    paper: float | None


@dataclass(frozen=True)
class QuestionScore:
    question_id: str
    sample_id: str
    ability: str
    items: tuple[ItemScore, ...]
    #: compute_metrics.py's `llm_judge_score` under each profile (event ordering's is a float
    #: mean in both: the authors add its items up with `float`)
    judge_official: float | None
    judge_paper: float | None
    event: EventOrdering | None = None
    #: profile -> why it has no figure for the question (a verdict it cannot read: the authors'
    #: code raises there; a missing alignment verdict)
    failures: Mapping[str, str] = field(default_factory=dict)

    def figure(self, profile: str) -> float | None:
        """The question's figure under a profile: event ordering's `tau_norm`, else its judge score."""
        if profile not in PROFILES:
            raise ValueError(f"BEAM has no profile {profile!r}; the profiles are {', '.join(PROFILES)}")
        if profile in self.failures:
            return None
        if self.ability == EVENT_ORDERING:
            return None if self.event is None else self.event.tau_norm
        return self.judge_official if profile == OFFICIAL else self.judge_paper


def _as_int(raw: Any) -> int | None:
    try:
        return int(raw)
    except (TypeError, ValueError, OverflowError):
        return None


def _as_float(raw: Any) -> float | None:
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


def _mean(values: list[Any], count: int) -> float | None:
    """`score = 0; score += v ...; score / count`, as compute_metrics.py adds up a rubric."""
    if any(v is None for v in values):
        return None
    total: Any = 0
    for value in values:
        total += value
    return total / count


def score_question(judged: JudgedQuestion) -> QuestionScore:
    """A question's item scores, its judge score under both profiles and, for event ordering,
    its alignment scored (compute_metrics.py's `evaluate_<ability>`)."""
    if len(judged.verdicts) != len(judged.rubric):
        raise ValueError(
            f"{judged.question_id}: {len(judged.verdicts)} verdicts for {len(judged.rubric)} rubric items; "
            "store one verdict per item"
        )
    event = judged.ability == EVENT_ORDERING
    # event ordering's rubric judge is added up with float() in the official code too
    items = tuple(
        ItemScore(item, raw, _as_float(raw) if event else _as_int(raw), _as_float(raw))
        for item, raw in zip(judged.rubric, judged.verdicts)
    )
    ordering, missing = _ordering(judged) if event else (None, None)
    failures: dict[str, str] = {}
    for profile, read in ((OFFICIAL, lambda i: i.official), (PAPER, lambda i: i.paper)):
        bad = next((n for n, item in enumerate(items) if read(item) is None), None)
        if bad is not None:
            failures[profile] = f"rubric item {bad}: the verdict {items[bad].raw!r} is not a score here"
        elif missing:
            failures[profile] = missing
    return QuestionScore(
        judged.question_id,
        judged.sample_id,
        judged.ability,
        items,
        _mean([i.official for i in items], len(judged.rubric)),
        _mean([i.paper for i in items], len(judged.rubric)),
        ordering,
        failures,
    )


def _ordering(judged: JudgedQuestion) -> tuple[EventOrdering | None, str | None]:
    if judged.response is None:
        return None, "event ordering without the answer, whose lines are aligned"
    verdicts = {(e.reference_index, e.system_index): e.same for e in judged.equivalences}
    lines = system_lines(judged.response)
    missing: list[tuple[int, int]] = []

    def same(r: int, s: int) -> bool:
        if (r, s) not in verdicts:
            missing.append((r, s))
            return False
        return verdicts[(r, s)]

    alignment = align(judged.rubric, lines, same)
    if missing:
        r, s = missing[0]
        return None, f"no stored alignment verdict for rubric item {r} against answer line {s} ({len(missing)} missing)"
    return event_ordering_score(alignment.reference, alignment.system), None


# -- per conversation, per ability, overall -------------------------------------------------------------


@dataclass(frozen=True)
class ProfileFigures:
    """A profile's figures over a set of questions."""

    profile: str
    #: per conversation (in the order given), per ability: the mean of its questions' figures
    per_conversation: Mapping[str, Mapping[str, float]]
    #: per ability: the mean over conversations of their means (report_results.py's cell)
    per_ability: Mapping[str, float]
    #: per ability: over how many conversations, and how many questions
    conversations: Mapping[str, int]
    questions: Mapping[str, int]
    #: the plain mean of the ten per-ability figures (report_results.py prints no overall);
    #: None unless all ten abilities have a figure
    overall: float | None
    #: the questions left out (no figure under this profile), with why
    failures: Mapping[str, str] = field(default_factory=dict)


def profile_figures(scores: Iterable[QuestionScore], profile: str) -> ProfileFigures:
    """report_results.py's arithmetic over one run's questions: each conversation's per-ability
    means (its questions in the order given), then per ability their mean over conversations."""
    grouped: dict[str, dict[str, list[float]]] = {}
    failures: dict[str, str] = {}
    for score in scores:
        value = score.figure(profile)
        if value is None:
            failures[score.question_id] = score.failures.get(profile, "no figure")
            continue
        grouped.setdefault(score.sample_id, {}).setdefault(score.ability, []).append(value)
    per_conversation: dict[str, dict[str, float]] = {}
    for sample_id, abilities in grouped.items():
        row: dict[str, float] = {}
        for ability, values in abilities.items():
            total: Any = 0
            for value in values:  # report_results.py: `score += object[...]`, then `score/len(objects)`
                total += value
            row[ability] = total / len(values)
        per_conversation[sample_id] = row
    per_ability: dict[str, float] = {}
    conversations: dict[str, int] = {}
    questions: dict[str, int] = {}
    for ability in ABILITIES:
        having = [row[ability] for row in per_conversation.values() if ability in row]
        if having:
            # report_results.py: `sum(directory_scores[n][m][k] for n in range(N)) / N`
            per_ability[ability] = sum(v for v in having) / len(having)
            conversations[ability] = len(having)
            questions[ability] = sum(len(a.get(ability, ())) for a in grouped.values())
    overall = sum(per_ability[a] for a in ABILITIES) / len(ABILITIES) if len(per_ability) == len(ABILITIES) else None
    return ProfileFigures(profile, per_conversation, per_ability, conversations, questions, overall, failures)

"""BEAM's `judge-check` sets (the record's `judge_sets`): answers to the probing questions of the
pinned 128K tier (`dataset=beam_128k`, every ability), each made deterministically from the
pinned files, so a judge's acceptance of them is a number anyone can rebuild.

    specific_wrong   a specific but wrong answer: the reference answer of the question of the same
                     ability and the same position (`BeamQuestion.index`) in the next conversation
                     of the tier (conversation 20's comes from conversation 1). It reads like a
                     right answer of its kind (a date, an ordered list, a summary, a refusal) about
                     another user's project. For abstention it is a refusal that names another
                     conversation's missing detail: it asks whether the judge reads what is declined.
    vague_wrong      a topical non-answer made of the question's own words:
                     `About "<question without its ?>": we went over this in our conversations, and
                     several points and details about it shaped how things went.` It is on topic
                     and says nothing the rubric asks for (no fact, no order, no refusal, no
                     contradiction flagged, no code).
    one_side         contradiction resolution only: the answer that picks one side. The rubric of
                     every such question asks the answer to mention two statements ("LLM response
                     should mention: You said ...", "... you also mentioned ...") and to flag the
                     contradiction; this answer states the first of the two as the fact
                     (`Based on what you told me, you said ...`), flagging nothing.
    gold             the question's reference answer (its ideal response: `REFERENCE_KEY`) as the
                     right answer. For instruction and preference following the reference describes
                     a compliant response (`expected_compliance`) rather than being one; a note says
                     so beside the table.

BEAM's judge scores (1 / 0.5 / 0 per rubric item), it does not label. An answer counts as accepted
when its figure under the judge's own profile (`judge=beam`: beam_paper, `judge=beam_official`:
beam_official) is at least `PASS_LEVEL`, 0.5: for a rubric ability the mean of its items' scores
(half the rubric met), for event ordering its `tau_norm` (its figure in every table). That is the
verdict row's `score`, the figure the judge's tables average, so an accepted wrong answer is one
that adds at least half a point to a BEAM figure. Note that event ordering's tau_norm is generous
to short answers: an answer of one line aligned to the first event scores about 0.9, one aligned
to none about 0.15.
"""

from __future__ import annotations

from typing import Any

from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.data import ABILITIES, BeamQuestion, read_tier
from memorybench.benchmarks.beam.pins import TIER_128K
from memorybench.errors import UserError
from memorybench.stages.judge_check import CalibrationSets, CheckRow, CheckSet

__all__ = ["PASS_LEVEL", "WHERE", "calibration_sets", "one_side_answer", "specific_wrong_answers", "vague_answer"]

#: the figure at or above which an answer counts as accepted: half the rubric met
PASS_LEVEL = 0.5
#: what a judge of another benchmark is told it was asked to judge (`check_benchmark`)
WHERE = "judge-check dataset=beam_128k"
CONTRADICTION = "contradiction_resolution"
#: the abilities whose reference describes a compliant answer instead of being one
_DESCRIBED = ("instruction_following", "preference_following")
_MENTION = "llm response should mention:"
#: each set: its table label and its words in the summary, in judging order
_NAMES = {
    "specific_wrong": ("specific wrong", "specific ones"),
    "vague_wrong": ("vague wrong", "vague wrong answers"),
    "one_side": ("one-sided", "one-sided contradiction answers"),
    "gold": ("ideal response", "ideal responses"),
}


def vague_answer(question: str) -> str:
    """The vague wrong answer: the question's own words, on topic, answering nothing."""
    topic = question.strip().rstrip("?.! ")
    return (
        f'About "{topic}": we went over this in our conversations, and several points and details about it '
        "shaped how things went."
    )


def one_side_answer(question: BeamQuestion) -> str | None:
    """A contradiction-resolution answer that states the first of the two statements its rubric
    asks for as the fact; None for another ability, or a rubric that names no statement."""
    if question.ability != CONTRADICTION:
        return None
    sides = [
        item.split(":", 1)[1].strip().rstrip(".")
        for item in question.rubric
        if item.lower().startswith(_MENTION) and "which statement" not in item.lower()
    ]
    if not sides:
        return None
    side = sides[0]
    side = side[0].lower() + side[1:] if side[:4].lower() == "you " else side
    return f"Based on what you told me, {side}."


def specific_wrong_answers(order: list[str], questions: dict[str, BeamQuestion]) -> dict[str, str]:
    """Per question id, the reference answer of the question of the same ability and position in
    the next conversation that has one (cyclically, in tier order; `order`: the sample ids)."""
    by_place = {(q.sample_id, q.ability, q.index): q for q in questions.values()}
    out: dict[str, str] = {}
    for q in questions.values():
        at = order.index(q.sample_id)
        for step in range(1, len(order)):
            other = by_place.get((order[(at + step) % len(order)], q.ability, q.index))
            if other is not None:
                out[q.question_id] = other.ideal_response
                break
    return out


def calibration_sets(pins: Any = None, max_questions: int | None = None, dataset: str | None = None) -> CalibrationSets:
    """The four sets over the questions among the tier's first `max_questions` (all with None),
    in tier order (conversation by conversation, each in its file's order)."""
    pinned = BENCHMARK.datasets[0].name
    if dataset not in (None, pinned):
        raise UserError(
            f"dataset={dataset}: judge-check's BEAM sets are built from the pinned 128K tier only (its files' sha256 "
            f"are checked); use dataset={pinned}"
        )
    folder = TIER_128K.verify(pins)
    tier = read_tier(folder)
    every = [q for conversation in tier.conversations for q in conversation.questions]
    asked = every[:max_questions]
    gold = dict(tier.questions)
    specific = specific_wrong_answers([c.sample_id for c in tier.conversations], gold)
    answers: dict[str, dict[str, str]] = {"specific_wrong": specific, "vague_wrong": {}, "one_side": {}, "gold": {}}
    for q in asked:
        answers["vague_wrong"][q.question_id] = vague_answer(q.question)
        one_side = one_side_answer(gold[q.question_id])
        if one_side is not None:
            answers["one_side"][q.question_id] = one_side
        answers["gold"][q.question_id] = gold[q.question_id].ideal_response
    where = {"folder": TIER_128K.relpath, "sha256": TIER_128K.sha256}
    sources = {
        "specific_wrong": {
            "made": "the reference answer of the question of the same ability and position in the next conversation "
            "of the tier (cyclically)",
            **where,
        },
        "vague_wrong": {"made": vague_answer("<the question>"), **where},
        "one_side": {
            "made": "contradiction resolution only: the first of the two statements its rubric asks the answer to "
            "mention, stated as the fact: {one_side_answer.__doc__ and 'Based on what you told me, <statement>.'}",
            **where,
        },
        "gold": {"made": "the question's reference answer (ideal response), judged against its rubric", **where},
    }
    sets = tuple(
        CheckSet(
            name,
            label,
            words,
            sources[name],
            tuple(
                CheckRow(name, q.question_id, q.sample_id, q.category, q.question, q.answer, answers[name][q.question_id])
                for q in asked
                if q.question_id in answers[name]
            ),
        )
        for name, (label, words) in _NAMES.items()
    )
    described = ", ".join(f"{ABILITIES.index(a) + 1} ({a})" for a in _DESCRIBED)
    return CalibrationSets(
        benchmark=BENCHMARK.name,
        title=BENCHMARK.title,
        dataset={"name": pinned, **where, "repository": TIER_128K.repository, "commit": TIER_128K.commit},
        kinds=tuple(sorted(BENCHMARK.category_names)),
        kind_word=BENCHMARK.kind_word,
        kind_header="ab ",
        kind_names={str(n): name for n, name in BENCHMARK.category_names.items()},
        sets=sets,
        right="gold",
        summary_order=("vague_wrong", "specific_wrong", "one_side", "gold"),
        pass_level=PASS_LEVEL,
        acceptance=f"figure >= {PASS_LEVEL} under the judge's profile (mean rubric item score; event ordering: tau_norm)",
        bind=folder,
        notes=(
            f"The references of abilities {described} describe a compliant response rather than being one: the ideal "
            "responses' acceptance there is the judge's reading of a description.",
        ),
    )

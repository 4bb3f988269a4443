"""BEAM's judge, two protocols over the same pinned prompts: `beam_official` sends what the pinned
compute_metrics.py sends, `beam` what its prompt says the judge checks.

A BEAM question is judged by several calls (`several_calls`: the autorater hands `judge_question`
an `ask` that sends one call and traces it):

- every ability: one call per rubric item, `unified_llm_judge_base_prompt` filled for that item
  and the answer; its reply's `score` (1.0 / 0.5 / 0.0) is the item's verdict;
- event ordering, before those: the answer's lines aligned to the rubric items by
  `llm_equivalence` calls (`score.align`: each line against each unused item in order, until a
  "yes"), whose replies the figures replay; and, in `beam_official` only and first of all, the
  fact-extraction call (`extract_facts`), whose reply the official code throws away: it is sent
  because it is part of what the official scoring costs, traced, and changes nothing.

`beam_official` fills the rubric prompt as compute_metrics.py's `.replace` chain does (`<rubric_item>`,
then `<llm_response>`; `<question>` is left as the literal text, so the judge never sees the
question); `beam` fills all three slots in one pass (a value is never searched for slots).
Every call is one user message (`model.invoke(prompt)` with a string) but the alignment's,
which is the pinned system message and a user message; temperature 0, no max_tokens (the authors'
langchain client sends none), gpt-4.1-mini (src/llm.py).

Both profiles (`beam_official`: 0.5 truncated, `beam_paper`: kept) are computed from the same
stored replies by `figures.py`; a verdict row's `score` is the question's figure under the
profile its protocol is named for (`beam_paper` for `beam`), `label_raw` its items' scores.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.data import BeamQuestion, beam_questions
from memorybench.benchmarks.beam.pins import COMPUTE_METRICS, PROMPTS
from memorybench.benchmarks.beam.prompts import (
    FACTS_PROMPT,
    JUDGE_MODEL,
    JUDGE_TEMPERATURE,
    equivalence_parts,
    fact_extraction_chain,
    judge_template,
    prompt_literal,
    rubric_chain,
)
from memorybench.benchmarks.beam.score import (
    EVENT_ORDERING,
    OFFICIAL,
    PAPER,
    Equivalence,
    JudgedQuestion,
    align,
    parse_judge_reply,
    score_question,
    system_lines,
)
from memorybench.errors import UserError
from memorybench.hashing import sha256_text
from memorybench.llm.records import ChatRequest
from memorybench.score.judge import JudgeCall, pinned_prompt_info

__all__ = ["BeamJudge", "BeamOfficialJudge", "QuestionVerdict", "RUBRIC_FILE", "FACTS_FILE", "EQUIVALENCE_FILE"]

RUBRIC_FILE = "beam_rubric_judge.txt"
FACTS_FILE = "beam_fact_extraction.txt"
EQUIVALENCE_FILE = "beam_equivalence.txt"
#: the alignment's user message, its f-string's two names as `{name}` slots
_EQUIVALENCE_SLOTS = ("{first_paragraph}", "{second_paragraph}")


@dataclass(frozen=True)
class QuestionVerdict:
    """What a question's calls decided: its figure (None: a reply no profile reads), the items'
    scores as written, and why there is no figure."""

    score: float | None
    label: str | None
    error: str | None = None

    @property
    def status(self) -> str:
        if self.score is None:
            return "FAILED"
        return "CORRECT" if self.score == 1 else "WRONG"


def fill_once(template: str, slots: Mapping[str, str]) -> str:
    """Every slot of `template` replaced in one pass, left to right: a value is never searched."""
    if not slots:
        return template
    pattern = re.compile("|".join(re.escape(k) for k in sorted(slots, key=len, reverse=True)))
    return pattern.sub(lambda m: slots[m.group(0)], template)


def fill_in_turn(template: str, slots: Mapping[str, str]) -> str:
    """Each slot replaced in the order stored, over the whole text (`str.replace` chains)."""
    text = template
    for old, value in slots.items():
        text = text.replace(old, value)
    return text


class BeamJudge:
    """`judge.protocol=beam`: the rubric prompt with the question filled in, no fact extraction."""

    name: ClassVar[str] = "beam"
    benchmark: ClassVar[str] = BENCHMARK.name
    published: ClassVar[str] = "the BEAM authors' published figures"
    response_format: ClassVar[dict[str, str] | None] = None
    request_settings: ClassVar[dict[str, Any]] = {"temperature": JUDGE_TEMPERATURE, "max_tokens": None}
    judged_categories: ClassVar[tuple[int, ...]] = tuple(sorted(BENCHMARK.category_names))
    published_model: ClassVar[str] = JUDGE_MODEL
    #: the autorater asks `judge_question` (several traced calls) instead of `request`/`verdict`
    several_calls: ClassVar[bool] = True
    #: whether the question reaches the rubric judge; whether the discarded fact extraction is sent
    fills_question: ClassVar[bool] = True
    extracts_facts: ClassVar[bool] = False
    #: the profile a verdict row's `score` is
    profile: ClassVar[str] = PAPER

    def __init__(self, pins: str | os.PathLike[str] | None = None) -> None:
        self.pins = pins
        system, parts = equivalence_parts(pins)
        self.equivalence_system = system
        texts = {
            RUBRIC_FILE: judge_template(pins),
            EQUIVALENCE_FILE: "".join("{" + text + "}" if kind == "slot" else text for kind, text in parts),
        }
        if self.extracts_facts:
            texts[FACTS_FILE] = prompt_literal(FACTS_PROMPT, pins)
        self.templates = {name: texts[name] for name in self.template_files()}
        self.template_sha256 = sha256_text("\n".join(f"{k}\n{v}" for k, v in sorted(self.templates.items())) + "\n" + system)
        self.gold: Mapping[str, BeamQuestion] = {}

    @classmethod
    def load(cls, pins: str | os.PathLike[str] | None = None) -> BeamJudge:
        return cls(pins)

    # -- the gold it judges against -------------------------------------------------------------------
    def bind(self, dataset_path: str | os.PathLike[str]) -> None:
        """The rubric of every question of the pack's dataset (scorer-side: read here, after answering)."""
        self.gold = beam_questions(dataset_path)

    def question(self, row: Any) -> BeamQuestion:
        found = self.gold.get(str(row.question_id))
        if found is None:
            raise UserError(f"question {row.question_id!r} is not in the BEAM dataset the pack names; is this pack BEAM's?")
        return found

    # -- what verify rebuilds --------------------------------------------------------------------------
    def skips(self, row: Any) -> bool:
        return False

    @classmethod
    def template_files(cls) -> tuple[str, ...]:
        return (RUBRIC_FILE, EQUIVALENCE_FILE, *((FACTS_FILE,) if cls.extracts_facts else ()))

    @classmethod
    def fill(cls, template: str, slots: Mapping[str, str]) -> str:
        """A message from a stored template and its slots: the alignment's f-string and our rubric
        prompt in one pass; the official rubric and fact prompts by their `.replace` chains."""
        if any(k in _EQUIVALENCE_SLOTS for k in slots) or cls.fills_question:
            return fill_once(template, slots)
        return fill_in_turn(template, slots)

    @staticmethod
    def slots_fit(row: Any, template: str, slots: Mapping[str, str]) -> str | None:
        """Why a stored call's slots are not those of the question's stored row (None: they are)."""
        if template == EQUIVALENCE_FILE:
            if slots.get("{second_paragraph}") not in system_lines(str(row.prediction or "")):
                return "the alignment's second snippet is no line of the stored answer"
            return None
        answer = slots.get("<llm_response>", slots.get("<input_text>"))
        if answer != str(row.prediction or ""):
            return "the answer in the judge message is not the stored answer"
        if "<question>" in slots and slots["<question>"] != str(row.question):
            return "the question in the judge message is not the stored question"
        return None

    def prompt_text(self, row: Any) -> str:
        """The longest message of a row: its longest rubric item's."""
        gold = self.question(row)
        item = max(gold.rubric, key=len, default="")
        return self.fill(self.templates[RUBRIC_FILE], self._rubric_slots(row, gold, item))

    def row_scores(self, row: Any) -> dict[str, float]:
        return {}

    def prompt_info(self, stored_at: str) -> dict[str, Any]:
        return {
            **pinned_prompt_info(
                f"BEAM src/prompts.py and compute_metrics.py ({self.name})", PROMPTS, self.template_sha256, stored_at
            ),
            "files": {name: sha256_text(text) for name, text in self.templates.items()},
            "equivalence_system_sha256": sha256_text(self.equivalence_system),
            "compute_metrics": COMPUTE_METRICS.url,
        }

    # -- the calls ---------------------------------------------------------------------------------------
    def _rubric_slots(self, row: Any, gold: BeamQuestion, item: str) -> dict[str, str]:
        if self.fills_question:
            return {"<question>": str(row.question), "<rubric_item>": item, "<llm_response>": str(row.prediction or "")}
        steps = rubric_chain(gold.ability, self.pins).steps
        values = {"item": item, "llm_response": str(row.prediction or "")}
        return {old: values[name] for old, name in steps}

    def _call(
        self, name: str, slots: dict[str, str], *, model: str, sampling: Mapping[str, Any], system: str | None = None
    ) -> JudgeCall:
        prompt = self.fill(self.templates[name], slots)
        messages = ({"role": "user", "content": prompt},)
        if system is not None:
            messages = ({"role": "system", "content": system}, *messages)
        seed, limit = sampling.get("seed"), sampling.get("max_tokens")
        request = ChatRequest(
            model=model,
            messages=messages,
            temperature=float(sampling["temperature"]),
            max_tokens=None if limit is None else int(limit),
            seed=None if seed is None else int(seed),
        )
        return JudgeCall(
            request,
            slots,
            sha256_text(prompt),
            template_file=name,
            template_sha256=sha256_text(self.templates[name]),
            system=system,
        )

    def judge_question(
        self, row: Any, ask: Callable[[JudgeCall, str], str], *, model: str, sampling: Mapping[str, Any]
    ) -> QuestionVerdict:
        """Every call of one question, in the official code's order; `ask(call, part)` sends one
        (raising `ModelCallError` when it gets no reply) and gives the reply's text."""
        gold = self.question(row)
        answer = str(row.prediction or "")
        equivalences: list[Equivalence] = []
        if gold.ability == EVENT_ORDERING:
            if self.extracts_facts:
                chain = fact_extraction_chain(self.pins)
                values = {"question": str(row.question), "paragraph": answer}
                ask(
                    self._call(FACTS_FILE, {old: values[name] for old, name in chain.steps}, model=model, sampling=sampling),
                    "facts (discarded, as compute_metrics.py discards it)",
                )

            def same(r: int, s: int) -> bool:
                slots = {"{first_paragraph}": gold.rubric[r], "{second_paragraph}": lines[s]}
                reply = ask(
                    self._call(EQUIVALENCE_FILE, slots, model=model, sampling=sampling, system=self.equivalence_system),
                    f"align {r} {s}",
                )
                equivalences.append(Equivalence(r, s, reply))
                return equivalences[-1].same

            lines = system_lines(answer)
            align(gold.rubric, lines, same)
        verdicts = []
        for n, item in enumerate(gold.rubric):
            reply = ask(
                self._call(RUBRIC_FILE, self._rubric_slots(row, gold, item), model=model, sampling=sampling), f"rubric {n}"
            )
            verdicts.append(parse_judge_reply(reply).score)
        scored = score_question(
            JudgedQuestion(
                str(row.question_id),
                str(row.sample_id),
                gold.ability,
                gold.rubric,
                tuple(verdicts),
                answer if gold.ability == EVENT_ORDERING else None,
                tuple(equivalences),
            )
        )
        label = ",".join("-" if v is None else str(v) for v in verdicts)
        value = scored.figure(self.profile)
        if value is None:
            return QuestionVerdict(None, label, scored.failures.get(self.profile, "no figure"))
        return QuestionVerdict(float(value), label)


class BeamOfficialJudge(BeamJudge):
    """`judge.protocol=beam_official`: the pinned compute_metrics.py's requests byte for byte."""

    name: ClassVar[str] = "beam_official"
    fills_question: ClassVar[bool] = False
    extracts_facts: ClassVar[bool] = True
    profile: ClassVar[str] = OFFICIAL

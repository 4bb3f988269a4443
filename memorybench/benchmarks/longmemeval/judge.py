"""LongMemEval's judge as a registered judge protocol (`judge.protocol=longmemeval`, class
`LongMemEvalJudge`): what the `autorater` stage asks for each stored answer, and how it reads
the reply, as the authors' evaluate_qa.py does (`memorybench.benchmarks.longmemeval.score`).

- Every question is judged (no kind is skipped): the question's type is its category's name
  (`memorybench.benchmark.LONGMEMEVAL.category_names`), and an abstention question
  (`'_abs' in question_id`) takes the abstention prompt whatever its type.
- The message is the pinned `get_anscheck_prompt(type, question, answer, response,
  abstention)` itself (`anscheck_prompt`), one user message; no system message, no JSON mode
  (`response_format` is None), temperature 0 and max_tokens 10 (`REQUEST_SETTINGS`: the
  autorater sets them in the judge config, whatever option the protocol runs on).
- A verdict: score 1 when `'yes' in reply.strip().lower()`, else 0 (`judge_label`); a reply
  without text is a judge failure, never a silent no. The raw reply is kept as the label;
  it is "standard" when it is exactly yes or no (any case, a final full stop allowed).

The templates are stored one file per selector (the six types and `abstention`, so three
types share one text) under the judge folder's `prompts/`; a trace names the file its message
was filled from, and `fill` rebuilds the message from that file and the trace's slots by the
authors' own `template.format(question, answer, response)`, which `verify` checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from memorybench.benchmark import LONGMEMEVAL
from memorybench.data.pins import Pin
from memorybench.benchmarks.longmemeval.pins import EVALUATE_QA
from memorybench.errors import UserError
from memorybench.hashing import sha256_text
from memorybench.llm.records import ChatRequest
from memorybench.registry import JUDGES
from memorybench.score.judge import JudgeCall, JudgedRow, JudgeParse, pinned_prompt_info
from memorybench.benchmarks.longmemeval.score import (
    ABSTENTION,
    JUDGE_MAX_TOKENS,
    JUDGE_MODEL,
    JUDGE_TEMPERATURE,
    QUESTION_TYPES,
    anscheck_prompt,
    anscheck_templates,
    anscheck_templates_sha256,
    is_abstention,
    judge_label,
)

__all__ = ["LONGMEMEVAL_SLOTS", "REQUEST_SETTINGS", "LongMemEvalJudge", "LongMemEvalParse", "template_file_name"]

#: the three positional fields of every template, in the order the authors fill them
LONGMEMEVAL_SLOTS = ("question", "answer", "response")
#: evaluate_qa.py's request settings: the autorater puts them in the judge config
REQUEST_SETTINGS: dict[str, Any] = {"temperature": float(JUDGE_TEMPERATURE), "max_tokens": JUDGE_MAX_TOKENS}
_STANDARD = ("yes", "no")


def template_file_name(key: str) -> str:
    """The file (under the judge folder's prompts/) of the template a selector picks: a type or `abstention`."""
    return f"longmemeval_anscheck_{key}.txt"


@dataclass(frozen=True)
class LongMemEvalParse(JudgeParse):
    """A reply read by evaluate_qa.py's rule: `label` is the reply as written (None: no text)."""

    @property
    def score(self) -> int | None:
        verdict = judge_label(self.label)
        return None if verdict is None else int(verdict)

    @property
    def standard(self) -> bool | None:
        if self.label is None:
            return None
        return self.label.strip().lower().removesuffix(".") in _STANDARD

    @property
    def status(self) -> str:
        if self.label is None:
            return "FAILED"
        return "CORRECT" if self.score == 1 else "WRONG"


@JUDGES.register("longmemeval")
class LongMemEvalJudge:
    """LongMemEval's judge: the pinned per-type prompts (the abstention prompt for `_abs` ids), one
    user message, temperature 0, max_tokens 10, label = 'yes' in the lower-cased reply."""

    name: ClassVar[str] = "longmemeval"
    pin: ClassVar[Pin] = EVALUATE_QA
    #: the benchmark whose packs this protocol judges (its categories are that benchmark's kinds)
    benchmark: ClassVar[str] = LONGMEMEVAL.name
    #: what its labels would be compared with (for the labels of a judge that is not it)
    published: ClassVar[str] = "the LongMemEval authors' published figures"
    response_format: ClassVar[dict[str, str] | None] = None
    request_settings: ClassVar[dict[str, Any]] = REQUEST_SETTINGS
    judged_categories: ClassVar[tuple[int, ...]] = tuple(sorted(LONGMEMEVAL.category_names))
    #: the model whose labels the authors report (for the comparability label)
    published_model: ClassVar[str] = JUDGE_MODEL

    def __init__(self, templates: Mapping[str, str], templates_sha256: str, pins: str | os.PathLike[str] | None = None) -> None:
        missing = [k for k in (*QUESTION_TYPES, ABSTENTION) if k not in templates]
        if missing:
            raise UserError(f"LongMemEval's judge has no template for {', '.join(missing)}; the pin is broken")
        self.pins = pins
        #: file name under prompts/ -> template text (one per type, and the abstention one)
        self.templates = {template_file_name(k): templates[k] for k in (*QUESTION_TYPES, ABSTENTION)}
        self.template_sha256 = templates_sha256

    @classmethod
    def load(cls, pins: str | os.PathLike[str] | None = None) -> LongMemEvalJudge:
        """The judge with the templates of the pinned evaluate_qa.py (verified against its sha256)."""
        return cls(anscheck_templates(pins), anscheck_templates_sha256(pins), pins)

    @staticmethod
    def question_type(row: JudgedRow) -> str:
        try:
            return LONGMEMEVAL.category_names[row.category]
        except KeyError:
            raise UserError(
                f"a LongMemEval row has category {row.category!r}, which names no question type "
                f"(1-{len(LONGMEMEVAL.category_names)}); is this pack LongMemEval's?"
            ) from None

    def skips(self, row: JudgedRow) -> bool:
        return False

    @classmethod
    def template_file(cls, row: Any) -> str:
        """The template file a row's message is filled from (its type's, or the abstention one)."""
        return template_file_name(ABSTENTION if is_abstention(row.question_id) else cls.question_type(row))

    @staticmethod
    def slots(row: Any) -> dict[str, str]:
        """The template's three fields as `str.format` prints them (an int answer as `3`)."""
        return {"question": str(row.question), "answer": str(row.gold), "response": str(row.prediction)}

    @staticmethod
    def fill(template: str, slots: Mapping[str, str]) -> str:
        """The message from a stored template and its slots: the authors' `template.format(question, answer, response)`."""
        return template.format(*(slots[name] for name in LONGMEMEVAL_SLOTS))

    def prompt_text(self, row: Any) -> str:
        """The one user message: the pinned `get_anscheck_prompt` run on this row."""
        return anscheck_prompt(
            self.question_type(row), row.question, row.gold, row.prediction, is_abstention(row.question_id), pins=self.pins
        )

    def request(self, row: Any, *, model: str, sampling: Mapping[str, Any]) -> JudgeCall:
        """evaluate_qa.py's request: the message as one user message, `sampling`'s temperature and
        max_tokens (the autorater sets them to 0 and 10), no response format; a seed only when the
        config sets one. The message is checked to be the stored template filled with the slots."""
        prompt = self.prompt_text(row)
        slots = self.slots(row)
        name = self.template_file(row)
        if self.fill(self.templates[name], slots) != prompt:  # the stored file must rebuild what is sent
            raise UserError(f"LongMemEval's {name} does not rebuild the pinned prompt of {row.question_id}; the pin is broken")
        seed = sampling.get("seed")
        request = ChatRequest(
            model=model,
            messages=({"role": "user", "content": prompt},),
            temperature=float(sampling["temperature"]),
            max_tokens=int(sampling["max_tokens"]),
            seed=None if seed is None else int(seed),
        )
        return JudgeCall(
            request, slots, sha256_text(prompt), template_file=name, template_sha256=sha256_text(self.templates[name])
        )

    def verdict(self, text: str | None) -> JudgeParse:
        if text is None or not text.strip():
            return LongMemEvalParse(None, "empty reply")
        return LongMemEvalParse(text)

    def row_scores(self, row: Any) -> dict[str, float]:
        """No per-row score beside the label (the authors report none)."""
        return {}

    def prompt_info(self, stored_at: str) -> dict[str, Any]:
        """What the meta records of the prompts: the pin, one hash over them, and each stored file."""
        return {
            **pinned_prompt_info("LongMemEval get_anscheck_prompt", self.pin, self.template_sha256, stored_at),
            "files": {name: sha256_text(text) for name, text in self.templates.items()},
        }

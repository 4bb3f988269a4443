"""LongMemEval scored as its authors score it: the judge and the QA metrics.

The authors' code is pinned (`memorybench.benchmarks.longmemeval.pins.CODE_PINS`, xiaowu0162/
LongMemEval @ 9e0b455) and read, never retyped:

- The judge (src/evaluation/evaluate_qa.py, `get_anscheck_prompt` and its `__main__`): one
  user message, the prompt of the question's type; an abstention question (`'_abs' in
  question_id`) takes the abstention prompt whatever its type. `anscheck_prompt` runs the
  pinned function itself (`memorybench.score._pinned_source.pinned_function`), so its bytes
  are the authors'. The request: model gpt-4o-2024-08-06 (`model_zoo['gpt-4o']`), n=1,
  temperature 0, max_tokens 10; the label is `'yes' in reply.strip().lower()`.
- The QA metrics (src/evaluation/print_qa_metrics.py): accuracy per question type (six
  types, in the script's order), task-averaged accuracy (the mean of the six per-type
  accuracies), overall accuracy (all judged rows) and abstention accuracy (the `_abs`
  rows, which also count in their type and overall). `authors_report` prints what the
  script prints, byte for byte, numbers rounded as it rounds them (numpy's `round`).

Where the script has no number (a type without rows; no abstention question) it prints
`nan`; `QaMetrics` holds None there, and its task-averaged accuracy is None unless all six
types have rows, as the script's mean over six means would be nan.

The retrieval metrics are `memorybench.benchmarks.longmemeval.retrieval`, the reader prompts
`memorybench.benchmarks.longmemeval.reader`, the authors' files `memorybench.benchmarks.longmemeval.files`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from memorybench.benchmarks.longmemeval.pins import EVALUATE_QA
from memorybench.errors import UserError
from memorybench.hashing import sha256_text
from memorybench.llm.records import ChatRequest
from memorybench.data.pinned_source import function_node, pinned_function, string_constants

__all__ = [
    "ABSTENTION",
    "ABSTENTION_MARK",
    "JUDGE_MAX_TOKENS",
    "JUDGE_MODEL",
    "JUDGE_N",
    "JUDGE_TEMPERATURE",
    "QUESTION_TYPES",
    "JudgedQuestion",
    "QaMetrics",
    "TypeAccuracy",
    "anscheck_prompt",
    "anscheck_templates",
    "anscheck_templates_sha256",
    "authors_report",
    "is_abstention",
    "judge_label",
    "judge_request",
    "qa_metrics",
]

#: the six question types in print_qa_metrics.py's order (its `type2acc` keys; a test reads them
#: from the pinned script)
QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-preference",
    "single-session-assistant",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
#: an abstention question's id holds this (evaluate_qa.py: `abstention='_abs' in entry['question_id']`)
ABSTENTION_MARK = "_abs"
#: the key of the abstention template in `anscheck_templates`
ABSTENTION = "abstention"

# The judge's request, as evaluate_qa.py's __main__ sends it at the pinned commit: `python3
# evaluate_qa.py gpt-4o ...` (the README's command) maps gpt-4o to this snapshot in `model_zoo`,
# and kwargs = {'model': ..., 'messages': [user prompt], 'n': 1, 'temperature': 0, 'max_tokens': 10}
JUDGE_MODEL = "gpt-4o-2024-08-06"
JUDGE_TEMPERATURE = 0
JUDGE_MAX_TOKENS = 10
#: sent by the authors; the API's default, so a request without it asks the same
JUDGE_N = 1

_GET_ANSCHECK_PROMPT = "get_anscheck_prompt"
_BUILTINS = {"NotImplementedError": NotImplementedError}


def is_abstention(question_id: str) -> bool:
    """Whether a question is an abstention question, by evaluate_qa.py's test (a substring, not a suffix)."""
    return ABSTENTION_MARK in question_id


def _anscheck(pins: str | os.PathLike[str] | None) -> Any:
    return pinned_function(EVALUATE_QA, _GET_ANSCHECK_PROMPT, pins, builtins=_BUILTINS)


def anscheck_prompt(
    question_type: str, question: Any, answer: Any, response: Any, abstention: bool, *, pins: str | os.PathLike[str] | None = None
) -> str:
    """The judge's user message: the pinned `get_anscheck_prompt(task, question, answer, response,
    abstention)`, run as it is (`str.format` of the raw values: an int answer prints as `3`).

    A type the authors do not know is refused (their function raises NotImplementedError), unless
    the question is an abstention question, which takes the abstention prompt whatever its type."""
    if not abstention and question_type not in QUESTION_TYPES:
        raise UserError(f"LongMemEval has no question type {question_type!r}; the types are {', '.join(QUESTION_TYPES)}")
    return str(_anscheck(pins)(question_type, question, answer, response, abstention=bool(abstention)))


def anscheck_templates(pins: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The five distinct templates by what selects them: each question type, then `abstention`.

    Each is what the pinned function returns with `{}` for its three slots, checked to be one of
    its string literals exactly (so a template is the literal, not a reconstruction)."""
    literals = set(string_constants(function_node(EVALUATE_QA, _GET_ANSCHECK_PROMPT, pins)))
    fn = _anscheck(pins)
    out = {t: fn(t, "{}", "{}", "{}", abstention=False) for t in QUESTION_TYPES}
    out[ABSTENTION] = fn(QUESTION_TYPES[0], "{}", "{}", "{}", abstention=True)
    for key, template in out.items():
        if template not in literals:
            raise UserError(f"{EVALUATE_QA.url}: the {key} template is not one literal; the pin is broken")
    return out


def anscheck_templates_sha256(pins: str | os.PathLike[str] | None = None) -> str:
    """One hash over the judge's templates (the five distinct ones, in `anscheck_templates` order,
    each followed by a NUL): what a judge identity records as its prompt's sha256."""
    templates = anscheck_templates(pins)
    distinct = list(dict.fromkeys(templates.values()))
    return sha256_text("".join(t + "\0" for t in distinct))


def judge_request(
    question_id: str,
    question_type: str,
    question: Any,
    answer: Any,
    hypothesis: Any,
    *,
    model: str = JUDGE_MODEL,
    pins: str | os.PathLike[str] | None = None,
) -> ChatRequest:
    """The request evaluate_qa.py sends for one hypothesis: the prompt of its type (the abstention
    prompt for an `_abs` id) as one user message, temperature 0, max_tokens 10 (n=1 is the API's
    default and is not a field of ours)."""
    prompt = anscheck_prompt(question_type, question, answer, hypothesis, is_abstention(question_id), pins=pins)
    return ChatRequest(
        model=model,
        messages=({"role": "user", "content": prompt},),
        temperature=float(JUDGE_TEMPERATURE),
        max_tokens=JUDGE_MAX_TOKENS,
    )


def judge_label(reply: str | None) -> bool | None:
    """evaluate_qa.py's label: `'yes' in completion.choices[0].message.content.strip().lower()`
    (so "Yes.", "yes, because" and "eyes" are all yes). No reply (None) is None: the authors'
    script would crash there; a caller records a judge failure, never a silent no."""
    if reply is None:
        return None
    return "yes" in reply.strip().lower()


# -- the QA metrics ------------------------------------------------------------------------


class JudgedRow(Protocol):
    """What the metrics read of one judged question."""

    question_id: str
    question_type: str
    label: bool


@dataclass(frozen=True)
class JudgedQuestion:
    """One judged question: its id, type (from the dataset, as print_qa_metrics.py takes it from
    the reference file) and the judge's label."""

    question_id: str
    question_type: str
    label: bool


@dataclass(frozen=True)
class TypeAccuracy:
    question_type: str
    n: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        """The mean label (None without rows: the script prints nan)."""
        return self.correct / self.n if self.n else None


@dataclass(frozen=True)
class QaMetrics:
    """What print_qa_metrics.py prints, unrounded (`authors_report` prints it as the script does)."""

    #: the six types in the script's order, each with its rows and correct count
    by_type: tuple[TypeAccuracy, ...]
    #: the mean of the six per-type accuracies; None unless every type has rows
    task_averaged_accuracy: float | None
    #: correct / all judged rows (None without rows)
    overall_accuracy: float | None
    n: int
    #: correct / abstention rows (None without any)
    abstention_accuracy: float | None
    abstention_n: int
    abstention_correct: int

    @property
    def missing_types(self) -> tuple[str, ...]:
        """Types without a row: why the task-averaged accuracy is None."""
        return tuple(t.question_type for t in self.by_type if not t.n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "by_type": {t.question_type: {"accuracy": t.accuracy, "n": t.n, "correct": t.correct} for t in self.by_type},
            "task_averaged_accuracy": self.task_averaged_accuracy,
            "overall_accuracy": self.overall_accuracy,
            "n": self.n,
            "abstention_accuracy": self.abstention_accuracy,
            "abstention_n": self.abstention_n,
            "abstention_correct": self.abstention_correct,
        }


def _mean(values: list[float]) -> float:
    import numpy as np  # the script's own mean (summation order included)

    return float(np.mean(values))


def qa_metrics(rows: Iterable[JudgedRow]) -> QaMetrics:
    """print_qa_metrics.py's numbers over judged rows (every row counts, as every line of its
    input does; an unknown type is refused, where the script raises KeyError)."""
    labels: dict[str, list[int]] = {t: [] for t in QUESTION_TYPES}
    abstention: list[int] = []
    for row in rows:
        if row.question_type not in labels:
            raise UserError(
                f"question {row.question_id} has type {row.question_type!r}, which LongMemEval does not have; "
                f"the types are {', '.join(QUESTION_TYPES)}"
            )
        value = 1 if row.label else 0
        labels[row.question_type].append(value)
        if is_abstention(row.question_id):
            abstention.append(value)
    by_type = tuple(TypeAccuracy(t, len(v), sum(v)) for t, v in labels.items())
    every = [x for v in labels.values() for x in v]
    per_type = [_mean(v) for v in labels.values() if v]
    return QaMetrics(
        by_type=by_type,
        task_averaged_accuracy=_mean(per_type) if len(per_type) == len(QUESTION_TYPES) else None,
        overall_accuracy=_mean(every) if every else None,
        n=len(every),
        abstention_accuracy=_mean(abstention) if abstention else None,
        abstention_n=len(abstention),
        abstention_correct=sum(abstention),
    )


def _rounded(value: float | None) -> str:
    """`round(np.mean(v), 4)` as print formats it: numpy's rounding, `nan` for no value."""
    import numpy as np

    return "{}".format(round(np.float64("nan" if value is None else value), 4))


def authors_report(metrics: QaMetrics) -> str:
    """The text print_qa_metrics.py writes to stdout for these rows, byte for byte."""
    lines = ["", "Evaluation results by task:"]
    lines += [f"\t{t.question_type}: {_rounded(t.accuracy)} ({t.n})" for t in metrics.by_type]
    lines += [
        "",
        f"Task-averaged Accuracy: {_rounded(metrics.task_averaged_accuracy)}",
        f"Overall Accuracy: {_rounded(metrics.overall_accuracy)}",
        f"Abstention Accuracy: {_rounded(metrics.abstention_accuracy)} ({metrics.abstention_n})",
    ]
    return "\n".join(lines) + "\n"

"""LongMemEval's QA metrics of a judge, in its `autorater_metrics.json`, and their printed table.

From a judge's stored verdicts only: per pass, what the authors' print_qa_metrics.py gives
(`memorybench.benchmarks.longmemeval.score.qa_metrics`: accuracy per question type, task-averaged,
overall, abstention) and the text it prints (`authors_report`); each accuracy's mean over the
passes. A verdict's type is its category's name (`LONGMEMEVAL.category_names`), its label its
score (1: the judge said yes by the authors' rule). FAILED verdicts (no reply, or a reply
without text) have no label: they are left out and counted, where the authors' script would
have stopped.

Comparable with the authors' published figures are only labels of their judge: protocol
`longmemeval` with gpt-4o-2024-08-06 requested from OpenAI itself (provider `openai`, its
API) and answered by that model, or an imported judged file whose labels say that model gave
them (`memorybench import --format longmemeval_judged`). The same bytes sent to a compatible server, the embedded
model or another model are labelled not comparable, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from memorybench.benchmark import LONGMEMEVAL
from pydantic import Field

from memorybench.pack.autorater_schemas import AutoraterVerdict, JudgeSummary
from memorybench.records import Record
from memorybench.benchmarks.longmemeval.score import JUDGE_MODEL, QUESTION_TYPES, JudgedQuestion, authors_report, qa_metrics

__all__ = [
    "FIELD",
    "LABELS",
    "OPENAI_API",
    "LongMemEvalPass",
    "LongMemEvalScores",
    "LongMemEvalTypeAccuracy",
    "brief_line",
    "comparability",
    "lines",
    "named",
    "scores",
]

#: where OpenAI's own API is served (a provider=openai judge with another base URL is not OpenAI)
OPENAI_API = "https://api.openai.com/"
_PARSED = ("CORRECT", "WRONG")

#: the key of autorater_metrics.json that holds its figures (`LongMemEvalScores`)
FIELD = "longmemeval"


class LongMemEvalTypeAccuracy(Record):
    #: the mean label (null without rows: print_qa_metrics.py prints nan)
    accuracy: Optional[float] = None
    n: int
    correct: int


class LongMemEvalPass(Record):
    """print_qa_metrics.py's numbers over one pass's labelled verdicts
    (`memorybench.benchmarks.longmemeval.score.QaMetrics`), and the text it prints for them."""

    pass_: int = Field(alias="pass")
    #: the six question types in the script's order
    by_type: dict[str, LongMemEvalTypeAccuracy]
    #: the mean of the six per-type accuracies; null unless every type has rows
    task_averaged_accuracy: Optional[float] = None
    overall_accuracy: Optional[float] = None
    n: int
    abstention_accuracy: Optional[float] = None
    abstention_n: int
    abstention_correct: int
    #: what print_qa_metrics.py prints for these rows, byte for byte
    report: str


class LongMemEvalScores(Record):
    """LongMemEval's QA metrics of a judge (a LongMemEval pack only): per pass, and each accuracy's
    mean over the passes (with one pass, that pass's number)."""

    accuracy_by_type: dict[str, Optional[float]]
    task_averaged_accuracy: Optional[float] = None
    overall_accuracy: Optional[float] = None
    abstention_accuracy: Optional[float] = None
    passes: list[LongMemEvalPass]
    #: FAILED verdicts (no reply, or a reply without text), left out of every number
    failed: int
    #: types without a labelled row: why the task-averaged accuracy is null
    missing_types: list[str]
    #: whether these labels are comparable with the authors' published figures: the judge is
    #: judge.protocol=longmemeval with gpt-4o-2024-08-06 through OpenAI
    comparable: bool
    #: one line that says so, or why not
    comparability: str


LABELS = {
    "j": (
        "LongMemEval judge accuracy: share of judged rows the judge labelled yes ('yes' in the lower-cased "
        "reply, as evaluate_qa.py reads it), failures excluded; by_category is per question type; with several "
        "passes, the mean of the per-pass accuracies and their sample standard deviation (n-1)"
    ),
    "j.agreement": "share of rows judged in every pass whose passes all gave the same label",
    "longmemeval": (
        "print_qa_metrics.py's numbers over the labelled verdicts: accuracy per question type, "
        "task-averaged accuracy (the mean of the six per-type accuracies), overall accuracy, abstention "
        "accuracy (the _abs questions, also counted in their type); per pass, and each one's mean over "
        "the passes"
    ),
    "mem0_f1": "not computed: Mem0's lexical F1 is not a LongMemEval score",
    "mem0_bleu1": "not computed: Mem0's BLEU-1 is not a LongMemEval score",
}


def comparability(protocol: str, judge: JudgeSummary) -> tuple[bool, str]:
    """Whether labels of this judge are comparable with the authors' published figures, and one line why (not).

    An imported judged file's labels (protocol `imported`: evaluate_qa.py's `autoeval_label`,
    given, not asked here) are comparable when the file says its judge was theirs."""
    if protocol == "imported":
        model = str(judge.model_requested)
        if model == JUDGE_MODEL:
            return True, (
                f"the imported file's own labels (evaluate_qa.py's autoeval_label, judged by {JUDGE_MODEL} as the "
                "file records; not asked here): comparable with the authors' figures as far as the file is theirs"
            )
        return False, (
            f"not comparable with the LongMemEval authors' published figures: the imported file's labels are "
            f"{model}'s, not {JUDGE_MODEL}'s (print_qa_metrics.py refuses such a file)"
        )
    reasons = []
    if protocol != "longmemeval":
        reasons.append(f"judge.protocol is {protocol}, not longmemeval (the authors' per-type prompts)")
    if judge.local:
        reasons.append("judged by the embedded local model")
    if str(judge.model_requested) != JUDGE_MODEL:
        reasons.append(f"the judge model is {judge.model_requested}, not {JUDGE_MODEL}")
    if judge.provider != "openai" or not str(judge.base_url or OPENAI_API).startswith(OPENAI_API):
        where = f" at {judge.base_url}" if judge.base_url else " (on this machine)" if judge.local else ""
        reasons.append(f"served by {judge.provider}{where}, not OpenAI's API")
    other = [m for m in judge.models_answered if m != JUDGE_MODEL]
    if other:
        reasons.append(f"answered by {', '.join(other)}")
    if reasons:
        return False, (
            "not comparable with the LongMemEval authors' published figures (their judge is "
            f"judge=longmemeval: {JUDGE_MODEL} through OpenAI): " + "; ".join(reasons)
        )
    return True, f"the LongMemEval authors' judge ({JUDGE_MODEL} through OpenAI, their prompts): comparable with their figures"


def _pass_metrics(verdicts: Sequence[AutoraterVerdict], n: int) -> LongMemEvalPass:
    rows = [
        JudgedQuestion(v.question_id, LONGMEMEVAL.category_names[v.category], v.score == 1)
        for v in verdicts
        if v.pass_ == n and v.status in _PARSED
    ]
    metrics = qa_metrics(rows)
    data = metrics.as_dict()
    return LongMemEvalPass(
        pass_=n,
        by_type={t: LongMemEvalTypeAccuracy(**v) for t, v in data.pop("by_type").items()},
        **data,
        report=authors_report(metrics),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean over passes (a plain sum, as J's); None when a pass has no number."""
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def scores(
    verdicts: Sequence[AutoraterVerdict], passes: int, protocol: str, judge: JudgeSummary, *, traces: Sequence[Any] = ()
) -> LongMemEvalScores:
    """LongMemEval's QA metrics of a judge's verdicts, per pass and their means, with its comparability."""
    per_pass = [_pass_metrics(verdicts, n) for n in range(1, passes + 1)]
    comparable, why = comparability(protocol, judge)
    return LongMemEvalScores(
        accuracy_by_type={t: _mean([p.by_type[t].accuracy for p in per_pass]) for t in QUESTION_TYPES},
        task_averaged_accuracy=_mean([p.task_averaged_accuracy for p in per_pass]),
        overall_accuracy=_mean([p.overall_accuracy for p in per_pass]),
        abstention_accuracy=_mean([p.abstention_accuracy for p in per_pass]),
        passes=per_pass,
        failed=sum(1 for v in verdicts if v.status == "FAILED"),
        missing_types=[t for t in QUESTION_TYPES if any(not p.by_type[t].n for p in per_pass)],
        comparable=comparable,
        comparability=why,
    )


def named(judge: Any, benchmark: Any, passes: bool = False) -> dict[str, float | None]:
    """A judge's figures under LongMemEval's names (`Benchmark.judge_values`), the numbers
    print_qa_metrics.py gives: `longmemeval_accuracy` overall, `_sd` over the passes, `_task_avg`,
    `_abstention`, per question type, and with `passes` each pass's overall (`_pass<n>`)."""
    found = judge.block(FIELD) if judge is not None else None
    key, block = benchmark.figure_key, LongMemEvalScores.model_validate(found) if found is not None else None
    by_kind = (block.accuracy_by_type if block is not None else None) or {}
    return {
        key: block.overall_accuracy if block is not None else None,
        f"{key}_sd": judge.j.sd if block is not None else None,
        f"{key}_task_avg": block.task_averaged_accuracy if block is not None else None,
        # a subset's figure is the block's `<subset>_accuracy` (abstention_accuracy)
        **{f"{key}_{subset}": getattr(block, f"{subset}_accuracy", None) for subset in benchmark.id_marks},
        **{f"{key}_{kind}": by_kind.get(kind) for kind in benchmark.category_names.values()},
        **({f"{key}_pass{p.pass_}": p.overall_accuracy for p in block.passes} if passes and block is not None else {}),
    }


def _score(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "unknown" if value is None else str(value)


def brief_line(judge_id: str, metrics: Mapping[str, Any], type_name: str) -> str:
    """`show --brief`'s line of a judge's figures over the pack: overall, task-averaged,
    abstention and this question's type, each with its n (the first pass's)."""
    block = metrics[FIELD]
    first = block["passes"][0] if block["passes"] else {"by_type": {}, "n": 0, "abstention_n": 0}
    n_type = (first["by_type"].get(type_name) or {}).get("n", 0)
    return (
        f"accuracy by judge {judge_id}: overall {_score(block['overall_accuracy'])} (n {first['n']}), "
        f"task-averaged {_score(block['task_averaged_accuracy'])}, "
        f"abstention {_score(block['abstention_accuracy'])} (n {first['abstention_n']}), "
        f"{type_name} {_score(block['accuracy_by_type'].get(type_name))} (n {n_type})"
    )


def lines(metrics: Mapping[str, Any]) -> list[str]:
    """The printed lines of a LongMemEval judge: per type, task-averaged, overall, abstention; failures; comparability."""
    lme = metrics[FIELD]

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    first = lme["passes"][0] if lme["passes"] else None
    header = f"{'question type':<28}{'n':>5}  {'accuracy':>8}"
    lines = [header, "-" * len(header)]
    for t in QUESTION_TYPES:
        n = first["by_type"][t]["n"] if first else 0
        lines.append(f"{t:<28}{n:>5}  {fmt(lme['accuracy_by_type'][t]):>8}")
    lines.append("-" * len(header))
    missing = f" (no row of {', '.join(lme['missing_types'])})" if lme["missing_types"] else ""
    lines.append(f"{'task-averaged':<33}  {fmt(lme['task_averaged_accuracy']):>8}{missing}")
    lines.append(f"{'overall':<28}{first['n'] if first else 0:>5}  {fmt(lme['overall_accuracy']):>8}")
    lines.append(f"{'abstention':<28}{first['abstention_n'] if first else 0:>5}  {fmt(lme['abstention_accuracy']):>8}")
    if metrics["passes"] > 1:
        lines.append(f"passes: {metrics['passes']}; each accuracy is the mean over the passes")
    counts = metrics["counts"]
    nonstandard = (
        f"; {counts['nonstandard_labels']} replies other than a plain yes or no, read by the authors' rule"
        if counts["nonstandard_labels"]
        else ""
    )
    lines.append(f"judge accounting: {counts['judged']} labelled, {lme['failed']} without a reply (left out){nonstandard}")
    lines.append(lme["comparability"])
    return lines

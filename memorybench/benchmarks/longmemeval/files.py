"""The LongMemEval authors' answer files, read into typed records (issue 32, item 5).

Two formats, as the pinned code writes and reads them (xiaowu0162/LongMemEval @ 9e0b455):

- a hypothesis file: JSON lines of `{"question_id": ..., "hypothesis": ...}` (run_generation.py
  writes them; the README asks a system to write them; evaluate_qa.py reads them, falling
  back to one JSON list of such objects);
- a judged file: evaluate_qa.py's output, each hypothesis line with `autoeval_label:
  {"model": ..., "label": true|false}` added (print_qa_metrics.py reads it as JSON lines and
  asserts the model is gpt-4o-2024-08-06).

A malformed line is a one-line `DataError` naming the file, the line and the fix. Blank lines
are passed over. A question id given twice is refused (a pack holds one answer per question;
the authors' scripts would count it twice). Keys other than these are kept (`extra`).

`judged_questions` joins judged rows with the dataset's question types (print_qa_metrics.py
takes the type from the reference file, never from the judged file) for
`memorybench.benchmarks.longmemeval.score.qa_metrics`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import DataError
from memorybench.benchmarks.longmemeval.score import JUDGE_MODEL, JudgedQuestion

__all__ = [
    "Hypothesis",
    "JudgedHypothesis",
    "check_authors_judge",
    "judge_models",
    "judged_questions",
    "parse_hypotheses",
    "parse_judged",
    "read_hypotheses",
    "read_judged",
]

_HYPOTHESIS_SHAPE = '{"question_id": "...", "hypothesis": "..."}'
_JUDGED_SHAPE = '{"question_id": "...", "hypothesis": "...", "autoeval_label": {"model": "...", "label": true}}'


@dataclass(frozen=True)
class Hypothesis:
    """One answer of a hypothesis file."""

    question_id: str
    hypothesis: str
    #: 1-based line (for a JSON list: 1-based item)
    line: int
    #: the row's other keys, as written
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgedHypothesis:
    """One judged answer of evaluate_qa.py's output."""

    question_id: str
    hypothesis: str
    #: `autoeval_label.model`: the judge model the authors' script sent
    model: str
    #: `autoeval_label.label`: whether the judge's reply held "yes"
    label: bool
    line: int
    extra: Mapping[str, Any] = field(default_factory=dict)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{source} is not UTF-8 ({e.reason} at byte {e.start}); pass the file as written") from None


def _rows(data: bytes, source: str, shape: str, *, allow_list: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of each non-blank line; with `allow_list`, a file that is one JSON list gives its items."""
    text = _decode(data, source)
    if allow_list and text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(
                f"{source} is not a valid JSON list ({e.msg} at line {e.lineno}); write one JSON object per line, {shape}"
            ) from None
        if not isinstance(items, list):
            raise DataError(f"{source} is not a JSON list; write one JSON object per line, {shape}")
        for n, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise DataError(f"{source}: item {n} is a {_kind(item)}, not an object; each item is {shape}")
            yield n, item
        return
    for n, line in enumerate(text.split("\n"), start=1):  # readlines' lines: a U+2028 inside a string is no break
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(
                f"{source}:{n}: not valid JSON ({e.msg} at column {e.colno}); each line is one JSON object, {shape}"
            ) from None
        if not isinstance(item, dict):
            raise DataError(f"{source}:{n}: a {_kind(item)}, not an object; each line is one JSON object, {shape}")
        yield n, item


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _where(source: str, line: int, listed: bool) -> str:
    return f"{source}: item {line}" if listed else f"{source}:{line}"


def _answer(item: dict[str, Any], where: str, shape: str) -> tuple[str, str]:
    qid, hypothesis = item.get("question_id"), item.get("hypothesis")
    missing = [k for k in ("question_id", "hypothesis") if k not in item]
    if missing:
        raise DataError(f"{where}: no {' and no '.join(missing)}; each row is {shape}")
    if not isinstance(qid, str) or not qid:
        raise DataError(
            f"{where}: question_id must be a non-empty string, got {_kind(qid)} {json.dumps(qid)[:40]}; "
            "write the dataset's question_id as it is"
        )
    if not isinstance(hypothesis, str):
        raise DataError(
            f"{where}: question {qid}: hypothesis must be a string, got {_kind(hypothesis)}; write the answer as text"
        )
    return qid, hypothesis


def _check_unique(seen: dict[str, int], qid: str, line: int, where: str, listed: bool = False) -> None:
    if qid in seen:
        first = f"item {seen[qid]}" if listed else f"line {seen[qid]}"
        raise DataError(f"{where}: question {qid} again (first at {first}); keep one answer per question")
    seen[qid] = line


def parse_hypotheses(data: bytes, source: str) -> list[Hypothesis]:
    """A hypothesis file's rows (JSON lines, or one JSON list as evaluate_qa.py also accepts)."""
    listed = _decode(data, source).lstrip().startswith("[")
    out: list[Hypothesis] = []
    seen: dict[str, int] = {}
    for line, item in _rows(data, source, _HYPOTHESIS_SHAPE, allow_list=True):
        where = _where(source, line, listed)
        qid, hypothesis = _answer(item, where, _HYPOTHESIS_SHAPE)
        _check_unique(seen, qid, line, where, listed)
        extra = {k: v for k, v in item.items() if k not in ("question_id", "hypothesis")}
        out.append(Hypothesis(qid, hypothesis, line, extra))
    if not out:
        raise DataError(f"{source} holds no answers; a hypothesis file has one JSON object per line, {_HYPOTHESIS_SHAPE}")
    return out


def parse_judged(data: bytes, source: str) -> list[JudgedHypothesis]:
    """evaluate_qa.py's judged rows (JSON lines, as print_qa_metrics.py reads them)."""
    out: list[JudgedHypothesis] = []
    seen: dict[str, int] = {}
    for line, item in _rows(data, source, _JUDGED_SHAPE, allow_list=False):
        where = _where(source, line, False)
        qid, hypothesis = _answer(item, where, _JUDGED_SHAPE)
        if "autoeval_label" not in item:
            raise DataError(
                f"{where}: question {qid} has no autoeval_label; this is a hypothesis file, not evaluate_qa.py's "
                "judged output: import it as a hypothesis file, or pass the .eval-results file"
            )
        verdict = item["autoeval_label"]
        if not isinstance(verdict, dict) or "model" not in verdict or "label" not in verdict:
            raise DataError(
                f"{where}: question {qid}: autoeval_label must be an object with model and label, got "
                f"{json.dumps(verdict)[:60]}; pass evaluate_qa.py's output as written"
            )
        if not isinstance(verdict["model"], str) or not verdict["model"]:
            raise DataError(
                f"{where}: question {qid}: autoeval_label.model must be the judge model's name, got "
                f"{json.dumps(verdict['model'])[:40]}"
            )
        if not isinstance(verdict["label"], bool):
            raise DataError(
                f"{where}: question {qid}: autoeval_label.label must be true or false, got "
                f"{json.dumps(verdict['label'])[:40]}; evaluate_qa.py writes a JSON boolean"
            )
        _check_unique(seen, qid, line, where)
        extra = {k: v for k, v in item.items() if k not in ("question_id", "hypothesis", "autoeval_label")}
        out.append(JudgedHypothesis(qid, hypothesis, verdict["model"], verdict["label"], line, extra))
    if not out:
        raise DataError(f"{source} holds no judged answers; evaluate_qa.py writes one JSON object per line, {_JUDGED_SHAPE}")
    return out


def read_hypotheses(path: str | os.PathLike[str]) -> list[Hypothesis]:
    return parse_hypotheses(_read(path), str(path))


def read_judged(path: str | os.PathLike[str]) -> list[JudgedHypothesis]:
    return parse_judged(_read(path), str(path))


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise DataError(f"{path} cannot be read ({e.strerror}); pass the path of the file") from None


def judge_models(judged: Iterable[JudgedHypothesis]) -> tuple[str, ...]:
    """The judge models a judged file names, sorted."""
    return tuple(sorted({row.model for row in judged}))


def check_authors_judge(judged: Iterable[JudgedHypothesis], source: str) -> None:
    """Refuse, as print_qa_metrics.py asserts, a row judged by another model than gpt-4o-2024-08-06."""
    for row in judged:
        if row.model != JUDGE_MODEL:
            raise DataError(
                f"{source}:{row.line}: question {row.question_id} was judged by {row.model}, not "
                f"{JUDGE_MODEL}; its figures are not comparable with the authors' (print_qa_metrics.py refuses it)"
            )


def judged_questions(judged: Iterable[JudgedHypothesis], question_types: Mapping[str, str], source: str) -> list[JudgedQuestion]:
    """Judged rows with each question's type from the dataset (`question_id -> question_type`)."""
    out = []
    for row in judged:
        qtype = question_types.get(row.question_id)
        if qtype is None:
            raise DataError(
                f"{source}:{row.line}: question {row.question_id} is not in the dataset; pass the dataset "
                "the answers were judged against"
            )
        out.append(JudgedQuestion(row.question_id, qtype, row.label))
    return out

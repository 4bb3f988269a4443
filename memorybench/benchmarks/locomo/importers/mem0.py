"""mem0's evaluation files: `evals.py`'s output (`mem0_evals`) and its input, the search output (`mem0_search`).

Both are `{"<conversation index>": [row, ...]}`, the index being the conversation's
position in mem0's copy of locomo10.json (not trusted here: a conversation is found by its
questions' text). `evals.py` (mem0ai/mem0, evaluation/evals.py) skips category 5 and
writes, per row, `question`, `answer` (`str(gold)`), `response`, `category` (a string),
`bleu_score`, `f1_score` and `llm_score` (1 when its judge said CORRECT). Forks add
`response_time`, `token_usage`, `llm_judge_token_usage`, and some leave `llm_score` out.
The search output has every category, no score, and the memories each answer was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from memorybench.errors import UserError
from memorybench.benchmarks.locomo.importers.released import JudgeLabels, Released, ReleasedRow, category_of
from memorybench.stages.importers._base import read_json, shape_error

__all__ = ["Mem0Evals", "Mem0Search"]

#: evals.py's per-row score fields, by our metric name
SCORE_FIELDS = {"mem0_bleu1": "bleu_score", "mem0_f1": "f1_score"}
LABEL_FIELD = "llm_score"
#: what the rows' own fields are: the rest of a row is kept as it is
ROW_FIELDS = ("question", "answer", "response", "category")


def _one_file(files: Sequence[Path], fmt: str, model_key: str | None) -> Path:
    if model_key is not None:
        raise UserError(f"--model {model_key} is for locomo_task_eval files, which hold several models; a {fmt} file holds one")
    if len(files) != 1:
        raise UserError(
            f"a {fmt} import reads one file, got {len(files)} ({', '.join(p.name for p in files)}); import each on its own"
        )
    return files[0]


def _rows(path: Path, fmt: str, shape: str) -> list[tuple[str, int, dict[str, Any]]]:
    data = read_json(path)
    if not isinstance(data, dict) or not data or not all(isinstance(v, list) for v in data.values()):
        found = type(data).__name__ if not isinstance(data, dict) else "an object whose values are not all lists"
        raise shape_error(path, fmt, shape, found)
    out = []
    for key, items in data.items():
        for index, item in enumerate(items):
            where = f"row {key}[{index}]"
            if not isinstance(item, dict):
                raise UserError(f"{path}: {where} is a {type(item).__name__}, not an object; a {fmt} row is {shape}")
            missing = [k for k in ROW_FIELDS if k not in item and not (k == "answer" and fmt == "mem0_search")]
            if missing:
                raise UserError(f"{path}: {where} has no {', '.join(missing)}; a {fmt} row has {', '.join(ROW_FIELDS)}")
            if not isinstance(item["question"], str) or not isinstance(item["response"], str):
                raise UserError(f"{path}: {where}: question and response must be strings")
            out.append((str(key), index, item))
    return out


class Mem0Evals:
    name: ClassVar[str] = "mem0_evals"
    shape: ClassVar[str] = '{"<conv index>": [{question, answer, response, category, bleu_score, f1_score, llm_score}]}'

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        path = _one_file(files, self.name, model_key)
        rows: list[ReleasedRow] = []
        bad_labels: list[str] = []
        for key, index, item in _rows(path, self.name, self.shape):
            reported: dict[str, Any] = {
                metric: item[field] for metric, field in SCORE_FIELDS.items() if item.get(field) is not None
            }
            label = item.get(LABEL_FIELD)
            if label is not None:
                # evals.py writes 1 or 0 (`1 if label == "CORRECT" else 0`); anything else is not its label
                if type(label) is not int or label not in (0, 1):
                    bad_labels.append(f"{key}[{index}]={label!r}")
                reported["label"] = label
            extra = {k: v for k, v in item.items() if k not in ROW_FIELDS and k not in SCORE_FIELDS.values() and k != LABEL_FIELD}
            rows.append(
                ReleasedRow(
                    key=key,
                    index=index,
                    question=item["question"],
                    gold=item["answer"],
                    category=category_of(item["category"], path, f"row {key}[{index}]"),
                    prediction=item["response"],
                    reported=reported,
                    extra=extra,
                )
            )
        if bad_labels:
            raise UserError(
                f"{path}: {len(bad_labels)} rows have an {LABEL_FIELD} that is not 1 or 0 (first: {', '.join(bad_labels[:3])}); "
                "mem0's evals.py writes 1 for CORRECT and 0 otherwise"
            )
        labelled = any("label" in r.reported for r in rows)
        return Released(
            rows=rows,
            files=[("results", path)],
            fields={m: f for m, f in SCORE_FIELDS.items() if any(m in r.reported for r in rows)},
            labels=JudgeLabels(LABEL_FIELD, "mem0's LLM judge as the file's evals.py run called it (llm_score)")
            if labelled
            else None,
            drops=(5,),  # evals.py: "Skip category 5"
        )


class Mem0Search:
    name: ClassVar[str] = "mem0_search"
    shape: ClassVar[str] = '{"<conv index>": [{question, answer, category, evidence, response, adversarial_answer, ...}]}'

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        path = _one_file(files, self.name, model_key)
        rows = []
        for key, index, item in _rows(path, self.name, self.shape):
            # the dataset's own fields are checked against the dataset, not kept twice
            extra = {k: v for k, v in item.items() if k not in (*ROW_FIELDS, "evidence", "adversarial_answer")}
            rows.append(
                ReleasedRow(
                    key=key,
                    index=index,
                    question=item["question"],
                    gold=item.get("answer"),
                    category=category_of(item["category"], path, f"row {key}[{index}]"),
                    prediction=item["response"],
                    extra=extra,
                )
            )
        return Released(rows=rows, files=[("results", path)])

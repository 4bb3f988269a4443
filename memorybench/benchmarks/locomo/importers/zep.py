"""Zep's LoCoMo results (`zep`): its grades file, and optionally its responses file.

getzep/zep-papers, kg_architecture_agent_memory/locomo_eval/data: the grades are
`{"locomo_experiment_user_<i>": [{question, answer, golden_answer, grade, category}]}`,
where `answer` is Zep's prediction and `grade` its judge's label (true: correct);
category 5 is left out. The responses file has the same keys and rows, with
`duration_ms` instead of the grade and no category: its rows are matched to the grades'
by key and position (and must ask the same question), and their duration kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from memorybench.errors import UserError
from memorybench.benchmarks.locomo.importers.released import JudgeLabels, Released, ReleasedRow, category_of
from memorybench.stages.importers._base import read_json, shape_error

__all__ = ["Zep"]

GRADE = "grade"
DURATION = "duration_ms"
ROW_FIELDS = ("question", "answer", "golden_answer", "category", GRADE)


def _keyed_rows(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and all(isinstance(v, list) for v in data.values())


def _role(data: Any) -> str | None:
    rows = [r for v in data.values() for r in v if isinstance(r, dict)] if _keyed_rows(data) else []
    if rows and all(GRADE in r for r in rows):
        return "results"
    if rows and all(DURATION in r for r in rows):
        return "responses"
    return None


class Zep:
    name: ClassVar[str] = "zep"
    shape: ClassVar[str] = (
        '{"locomo_experiment_user_<i>": [{question, answer, golden_answer, grade, category}]} (+ the responses file)'
    )

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        if model_key is not None:
            raise UserError(f"--model {model_key} is for locomo_task_eval files; a zep file holds one system's answers")
        by_role: dict[str, list[tuple[Path, Any]]] = {"results": [], "responses": []}
        for path in files:
            data = read_json(path)
            role = _role(data)
            if role is None:
                raise shape_error(
                    path, self.name, self.shape, "neither a grades file (every row with grade) nor a responses file (duration_ms)"
                )
            by_role[role].append((path, data))
        if len(by_role["results"]) != 1 or len(by_role["responses"]) > 1:
            raise UserError(
                f"a zep import reads one grades file and at most one responses file, got {len(by_role['results'])} grades and "
                f"{len(by_role['responses'])} responses files ({', '.join(p.name for p in files)})"
            )
        path, grades = by_role["results"][0]
        durations = self._durations(path, grades, *by_role["responses"][0]) if by_role["responses"] else {}
        rows = []
        bad = []
        for key, items in grades.items():
            for index, item in enumerate(items):
                where = f"row {key}[{index}]"
                missing = [k for k in ROW_FIELDS if not isinstance(item, dict) or k not in item]
                if missing:
                    raise UserError(f"{path}: {where} has no {', '.join(missing)}; a zep grades row has {', '.join(ROW_FIELDS)}")
                if type(item[GRADE]) is not bool:
                    bad.append(f"{key}[{index}]={item[GRADE]!r}")
                extra = {k: v for k, v in item.items() if k not in ROW_FIELDS}
                if (key, index) in durations:
                    extra[DURATION] = durations[(key, index)]
                rows.append(
                    ReleasedRow(
                        key=str(key),
                        index=index,
                        question=str(item["question"]),
                        gold=item["golden_answer"],
                        category=category_of(item["category"], path, where),
                        prediction=str(item["answer"]),
                        reported={"label": item[GRADE]},
                        extra=extra,
                    )
                )
        if bad:
            raise UserError(f"{path}: {len(bad)} rows have a grade that is not true or false (first: {', '.join(bad[:3])})")
        read = [("results", path)] + ([("responses", by_role["responses"][0][0])] if by_role["responses"] else [])
        return Released(
            rows=rows,
            files=read,
            labels=JudgeLabels(GRADE, "Zep's LLM grader as its released grades give it (grade)"),
            drops=(5,),
        )

    @staticmethod
    def _durations(
        grades_path: Path, grades: dict[str, Any], path: Path, responses: dict[str, Any]
    ) -> dict[tuple[str, int], Any]:
        """`duration_ms` by (key, position), from a responses file whose rows ask the grades' questions."""
        out = {}
        for key, items in grades.items():
            answered = responses.get(key, [])
            if len(answered) != len(items):
                raise UserError(
                    f"{path} has {len(answered)} rows under {key!r}, {grades_path} has {len(items)}; pass the two files of one run"
                )
            for index, (graded, response) in enumerate(zip(items, answered)):
                if not isinstance(response, dict) or response.get("question") != graded.get("question"):
                    raise UserError(
                        f"{path}: row {key}[{index}] asks another question than {grades_path}'s; pass the two files of one run"
                    )
                out[(str(key), index)] = response.get(DURATION)
        return out

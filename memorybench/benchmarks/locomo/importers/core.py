"""CORE's LoCoMo results (`core`): one file per conversation, several at once.

RedPlanetHQ/core-benchmark, locomo/evals/evaluation_locomo<N>.json: `{timestamp, summary,
conversations: [{conversationId, results: [{question, expectedAnswer, evidence, category,
generatedAnswer, evaluationResult, evaluationReasoning, evaluationMethod}]}]}`, where
`evaluationResult` is CORE's LLM judge's label (`CORRECT` or `WRONG`) and category 5 is
left out. Each file's `summary.categoryBreakdown` states, per category, how many answers
its judge called correct and wrong: those are the stated J figures the import puts beside
ours (summed over the files given).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from memorybench.errors import UserError
from memorybench.benchmarks.locomo.importers.released import JudgeLabels, Released, ReleasedRow, Stated, category_of
from memorybench.stages.importers._base import read_json, shape_error

__all__ = ["Core"]

LABEL = "evaluationResult"
ROW_FIELDS = ("question", "expectedAnswer", "category", "generatedAnswer", LABEL)
#: CORE's judge labels, as its files write them
LABELS = {"CORRECT": True, "WRONG": False}


def _is_results(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("conversations"), list) and isinstance(data.get("summary"), dict)


class Core:
    name: ClassVar[str] = "core"
    shape: ClassVar[str] = (
        "one file per conversation {summary, conversations: [{conversationId, results: "
        "[{question, expectedAnswer, category, generatedAnswer, evaluationResult}]}]}"
    )

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        if model_key is not None:
            raise UserError(f"--model {model_key} is for locomo_task_eval files; a core file holds one system's answers")
        rows: list[ReleasedRow] = []
        bad: list[str] = []
        correct: dict[int, int] = {}
        judged: dict[int, int] = {}
        seen: dict[str, Path] = {}
        for path in files:
            data = read_json(path)
            if not _is_results(data):
                raise shape_error(path, self.name, self.shape, f"a JSON {type(data).__name__} without summary and conversations")
            self._stated(path, data["summary"], correct, judged)
            for c, conversation in enumerate(data["conversations"]):
                if not isinstance(conversation, dict) or not isinstance(conversation.get("results"), list):
                    raise UserError(f"{path}: conversations[{c}] has no results list; a core file has {self.shape}")
                key = str(conversation.get("conversationId", f"{path.name}[{c}]"))
                if key in seen:
                    raise UserError(f"{path} and {seen[key]} both hold conversation {key}; pass each conversation's file once")
                seen[key] = path
                for index, item in enumerate(conversation["results"]):
                    where = f"row {key}[{index}]"
                    missing = [k for k in ROW_FIELDS if not isinstance(item, dict) or k not in item]
                    if missing:
                        raise UserError(f"{path}: {where} has no {', '.join(missing)}; a core result has {', '.join(ROW_FIELDS)}")
                    label = LABELS.get(item[LABEL]) if isinstance(item[LABEL], str) else None
                    if label is None:
                        bad.append(f"{key}[{index}]={item[LABEL]!r}")
                    rows.append(
                        ReleasedRow(
                            key=key,
                            index=index,
                            question=str(item["question"]),
                            gold=item["expectedAnswer"],
                            category=category_of(item["category"], path, where),
                            prediction=str(item["generatedAnswer"] or ""),
                            reported={} if label is None else {"label": label},
                            extra={k: v for k, v in item.items() if k not in ROW_FIELDS},
                        )
                    )
        if bad:
            raise UserError(
                f"{len(bad)} core rows have an evaluationResult that is not CORRECT or WRONG "
                f"(first: {', '.join(bad[:3])}); pass the files as released"
            )
        stated = {"j": {c: Stated(rows=judged[c], total=float(correct.get(c, 0))) for c in sorted(judged)}}
        return Released(
            rows=rows,
            files=[("results", p) for p in files],
            stated=stated,
            labels=JudgeLabels(LABEL, "CORE's LLM judge as its released evaluation files give it (evaluationResult)"),
            drops=(5,),
        )

    @staticmethod
    def _stated(path: Path, summary: dict[str, Any], correct: dict[int, int], judged: dict[int, int]) -> None:
        """Add one file's per-category correct and judged (correct + wrong) counts."""
        breakdown = summary.get("categoryBreakdown", {})
        if not isinstance(breakdown, dict):
            raise UserError(f"{path}: summary.categoryBreakdown is a {type(breakdown).__name__}, not an object of categories")
        for key, figures in breakdown.items():
            category = category_of(key, path, f"summary.categoryBreakdown key {key!r}")
            try:
                right, wrong = int(figures["correct"]), int(figures["wrong"])
            except (TypeError, KeyError, ValueError):
                raise UserError(f"{path}: summary.categoryBreakdown[{key!r}] has no integer correct and wrong counts") from None
            correct[category] = correct.get(category, 0) + right
            judged[category] = judged.get(category, 0) + right + wrong

"""AMB's LoCoMo output (`amb_locomo`): vectorize-io/agent-memory-benchmark's per-question results.

`outputs/locomo/<system>/<mode>/locomo10.json.gz`: runner.py's EvalSummary, whose shared layout
and checks are the core's (`memorybench.stages.importers.amb`, as BEAM's `amb_beam` reads it).
LoCoMo's own fields, from AMB's dataset/locomo.py (`load_queries`):

- `query_id` is `<sample_id>_q<i>`, `i` the question's position in the conversation's `qa` list
  (category 5 skipped but counted): LoCoMo's own question id `<sample_id>-q-<i>`. The rows are
  joined by it, and each row's `query`, gold and category must be that question's in the pinned
  locomo10.json (`mapping.py`), every fault counted in one error;
- `gold_answers` is `[qa["answer"]]`, the gold as LoCoMo writes it (six conv-26 golds are ints);
- `meta.category` names the category by AMB's `_CATEGORY_NAMES`: single-hop 1, temporal 2,
  multi-hop 3, open-domain 4, names that differ from LoCoMo's own scorer's for 1, 3 and 4 (its
  multi-hop, open-domain, single-hop): the pack keeps the numbers and LoCoMo's names;
- category 5 is never asked (`_SKIP_CATEGORIES`): the format leaves it out, as mem0's does.

`correct` is its judge's label (dataset/locomo.py `build_judge_prompt`: a generous CORRECT/WRONG
prompt in Mem0's words, answered as a boolean by the file's `judge_llm`; false without a call
where the memory returned no context): the pack's judge folder (J). The file states `accuracy`
(= correct / total_queries), `correct`, `total_queries`, `avg_context_tokens` and
`avg_retrieve_time_ms`; `AmbFigures` sets each beside runner.py's arithmetic over the file's rows
and beside the pack's judge folder, per category too (the file states none per category). The
pinned release (Cognee, rag mode) answers the 152 questions of conv-26 alone: a partial file,
imported with `--allow-partial`, and judged by another model than Mem0's: its figure reproduces
exactly, yet is comparable with no LoCoMo figure over the whole set or under Mem0's judge.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Optional, Union

from pydantic import Field

from memorybench.benchmarks.locomo import BENCHMARK
from memorybench.benchmarks.locomo.importers.released import JudgeLabels, Released, ReleasedRow
from memorybench.errors import UserError
from memorybench.pack.schemas import Coverage
from memorybench.records import Record
from memorybench.stages.importers import amb
from memorybench.stages.importers._base import need

__all__ = ["AMB_CATEGORIES", "AmbFigures", "AmbLocomo", "CategoryShare", "StatedFigure"]

#: AMB's category names (dataset/locomo.py `_CATEGORY_NAMES`) -> LoCoMo's category numbers
AMB_CATEGORIES = {"single-hop": 1, "temporal": 2, "multi-hop": 3, "open-domain": 4}
#: AMB's LoCoMo split (dataset/locomo.py `SPLITS`)
SPLIT = "locomo10"
#: its query id (`load_queries`: f"{sample_id}_q{qi}")
_QUERY_ID = re.compile(r"^(?P<sample>.+)_q(?P<index>\d+)$", re.DOTALL)
#: the stated figures, in the order printed
FIGURES = ("accuracy", "correct", "total_queries", "avg_context_tokens", "avg_retrieve_time_ms")
#: who answered and how, as the file states it
SYSTEM = (
    "memory_provider",
    "run_name",
    "mode",
    "oracle",
    "answer_llm",
    "judge_llm",
    "split",
    "category",
    "description",
    "ingestion_time_ms",
    "ingested_docs",
)
Number = Union[int, float]


class StatedFigure(Record):
    """One figure the file states, beside runner.py's arithmetic over its rows and beside the pack."""

    name: str
    #: as the file states it (null: it states none, or not as a number)
    stated: Optional[Number] = None
    #: runner.py `_save`'s arithmetic over the file's rows (`memorybench.stages.importers.amb.runner_figures`)
    recomputed: Optional[Number] = None
    #: the pack's: its judge folder of the file's labels (J, its verdicts); null where the pack holds
    #: no such value (the contexts and retrieval times stay in imported/rows.jsonl's reported_extra)
    ours: Optional[Number] = None
    #: `equal` (the same number, every digit), `differs`, `not stated`
    agreement: str
    ours_agreement: Optional[str] = None


class CategoryShare(Record):
    """One category's correct share: the file states none; its rows give it, and the judge folder's J."""

    category: int
    #: LoCoMo's name of the number, and AMB's (they differ for 1, 3 and 4)
    name: str
    amb_name: str
    rows: int
    correct: int
    recomputed: float
    ours: Optional[float] = None
    agreement: str


class AmbFigures(Record, schema="amb_locomo_figures.v1"):
    """reproduction.json's `own` for an `amb_locomo` file: what the file states, reproduced or not, and why
    its figure is comparable with others' (or not)."""

    format: str
    #: who answered and how (memory provider, mode, answer and judge models, ...), as stated
    system: dict[str, Any] = Field(default_factory=dict)
    figures: list[StatedFigure]
    by_category: list[CategoryShare]
    #: whether every stated figure is reproduced exactly from the rows and by the judge folder
    reproduced: bool
    #: why the figure compares with no other LoCoMo figure (the questions held, the judge, the answer model)
    comparability: list[str] = Field(default_factory=list)

    def lines(self) -> list[str]:
        """What `memorybench import` prints under the tables."""

        def show(v: Number | None) -> str:
            return "-" if v is None else repr(v)

        lines = ["AMB's stated figures: as stated, runner.py's arithmetic over the file's rows, the pack's judge folder"]
        for f in self.figures:
            lines.append(
                f"  {f.name:<22}stated {show(f.stated):<20} recomputed {show(f.recomputed):<20} pack {show(f.ours):<20} "
                f"{f.agreement}" + (f" (pack: {f.ours_agreement})" if f.ours_agreement else "")
            )
        lines.append("  per category (the file states none): correct / rows from its rows, beside the judge folder's J")
        for c in self.by_category:
            lines.append(
                f"  {c.category}   {c.name:<12} (AMB: {c.amb_name + ')':<13}{c.correct:>4} / {c.rows:<4} {c.recomputed:.4f}"
                f"  pack {'-' if c.ours is None else f'{c.ours:.4f}'}  {c.agreement}"
            )
        lines.append(
            "reproduced: every stated figure, exactly" if self.reproduced else "NOT reproduced: see the figures that differ above"
        )
        return lines + [f"not comparable: {why}" for why in self.comparability]


def _agreement(stated: Number | None, value: Number | None) -> str:
    if stated is None:
        return "not stated"
    return "equal" if value is not None and stated == value else "differs"


def _number(value: Any) -> Number | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class AmbLocomo:
    name: ClassVar[str] = "amb_locomo"
    shape: ClassVar[str] = (
        "AMB's LoCoMo output (outputs/locomo/<system>/<mode>/locomo10.json[.gz]: an object with split, accuracy, "
        "judge_llm and results[] {query_id <sample_id>_q<i>, query, answer, gold_answers, correct, meta.category})"
    )

    def read(self, files: Sequence[Path], model_key: str | None) -> Released:
        if model_key is not None:
            raise UserError(f"--model {model_key} is for locomo_task_eval files; an {self.name} file holds one system's answers")
        if len(files) != 1:
            raise UserError(
                f"an {self.name} import reads one file, got {len(files)} ({', '.join(p.name for p in files)}); import each on its own"
            )
        path = files[0]
        data = amb.read_summary(
            path, self.name, dataset="locomo", title="LoCoMo", layout=f"outputs/locomo/<system>/<mode>/{SPLIT}.json.gz"
        )
        split = need(data, "split", str, str(path), self.name)
        if split != SPLIT:
            raise UserError(f"{path}: split {split!r} is not AMB's LoCoMo split {SPLIT!r}; pass the file as released")
        rows, items = [], []
        under: dict[str, int] = {}
        for result in amb.results(path, data, self.name):
            rows.append(self._row(path, result, under))
            items.append(result.item)
        amb.check_ids(path, [r.extra["query_id"] for r in rows])
        stated = amb.stated(data)
        judge = str(stated.get("judge_llm") or "unknown")
        empty = sum(1 for r in rows if not r.extra.get("context"))

        def own(metrics: Any, verdicts: Mapping[str, int], partial: Coverage | None, total: int) -> AmbFigures:
            return _figures(self.name, stated, rows, items, metrics, verdicts, partial, total)

        return Released(
            rows=rows,
            files=[("results", path)],
            labels=JudgeLabels(
                "correct", f"AMB's LLM judge ({judge}, dataset/locomo.py's prompt) as its released output gives it"
            ),
            drops=(5,),  # dataset/locomo.py: "adversarial — excluded from benchmark"
            notes=[
                "AMB's category names are its own (single-hop 1, temporal 2, multi-hop 3, open-domain 4); the pack "
                "keeps the numbers, named as LoCoMo's scorer names them; rows joined by query_id (<sample_id>_q<i>: "
                "qa[i]), each question, gold and category checked against the pinned locomo10.json",
                *(
                    [f"{empty} rows have an empty context: AMB judged none of them (correct false, 'empty context')"]
                    if empty
                    else []
                ),
            ],
            own=own,
        )

    def _row(self, path: Path, result: amb.AmbResult, under: dict[str, int]) -> ReleasedRow:
        """One result as a row: its question id from `query_id`, its category from `meta.category`."""
        item, at = result.item, result.at
        parsed = _QUERY_ID.match(result.query_id)
        if parsed is None:
            raise UserError(
                f"{at}: query_id {result.query_id!r} is not <sample_id>_q<index> (dataset/locomo.py's); is this AMB's LoCoMo output?"
            )
        meta = need(item, "meta", dict, at, self.name)
        sample = meta.get("sample_id", parsed["sample"])
        if sample != parsed["sample"]:
            raise UserError(
                f"{at}: query_id {result.query_id!r} names {parsed['sample']}, meta.sample_id {sample!r}; pass the file as released"
            )
        name = meta.get("category")
        if name not in AMB_CATEGORIES:
            raise UserError(
                f"{at}: meta.category {name!r} is none of AMB's LoCoMo categories ("
                + ", ".join(f"{n} {c}" for n, c in AMB_CATEGORIES.items())
                + "; dataset/locomo.py skips 5); pass the file as released"
            )
        golds = need(item, "gold_answers", list, at, self.name)
        if len(golds) != 1:
            raise UserError(
                f"{at}: gold_answers holds {len(golds)} answers; dataset/locomo.py writes LoCoMo's one gold as [answer]"
            )
        index = under.get(sample, 0)
        under[sample] = index + 1
        return ReleasedRow(
            key=sample,
            index=index,
            question=result.query,
            gold=golds[0],
            category=AMB_CATEGORIES[name],
            prediction=result.answer or "",
            reported={"label": result.correct},
            extra={k: v for k, v in item.items() if k not in ("query", "answer", "gold_answers", "correct")},
            question_id=f"{sample}-q-{int(parsed['index'])}",
        )


def _figures(
    fmt: str,
    stated: Mapping[str, Any],
    rows: Sequence[ReleasedRow],
    items: Sequence[Mapping[str, Any]],
    metrics: Any,
    verdicts: Mapping[str, int],
    partial: Coverage | None,
    total: int,
) -> AmbFigures:
    """The file's stated figures beside runner.py's arithmetic over its rows and beside the pack's
    judge folder (`metrics`: its autorater_metrics; `verdicts`: question id -> score), and why the
    figure is comparable with no other (`partial`: the pack's coverage; `total`: locomo10's questions)."""
    recomputed = amb.runner_figures(items)
    judged = len(verdicts)
    ours = {
        "accuracy": None if metrics is None else metrics.j.overall,
        "correct": sum(verdicts.values()) if metrics is not None else None,
        "total_queries": judged if metrics is not None else None,
    }
    figures = []
    for name in FIGURES:
        value = _number(stated.get(name))
        mine = ours.get(name)
        figures.append(
            StatedFigure(
                name=name,
                stated=value,
                recomputed=recomputed[name],
                ours=mine,
                agreement=_agreement(value, recomputed[name]),
                ours_agreement=None if mine is None else _agreement(value, mine),
            )
        )
    names = {c: n for n, c in AMB_CATEGORIES.items()}
    shares = []
    for c in sorted({r.category for r in rows}):
        these = [r for r in rows if r.category == c]
        right = sum(1 for r in these if r.reported["label"])
        share = right / len(these)
        mine = None if metrics is None else metrics.j.by_category.get(str(c))
        shares.append(
            CategoryShare(
                category=c,
                name=BENCHMARK.category_names[c],
                amb_name=names[c],
                rows=len(these),
                correct=right,
                recomputed=share,
                ours=mine,
                agreement="equal" if mine == share else "differs",
            )
        )
    reproduced = all(f.agreement == "equal" and f.ours_agreement in (None, "equal") for f in figures) and all(
        s.agreement == "equal" for s in shares
    )
    return AmbFigures(
        format=fmt,
        system={k: stated[k] for k in SYSTEM if k in stated},
        figures=figures,
        by_category=shares,
        reproduced=reproduced,
        comparability=_comparability(stated, rows, partial, total),
    )


def _comparability(stated: Mapping[str, Any], rows: Sequence[ReleasedRow], partial: Coverage | None, total: int) -> list[str]:
    """Why the file's figure compares with no LoCoMo figure made otherwise: its questions, judge, answers."""
    out = []
    if partial is not None:
        out.append(
            f"partial: {len(rows)} of the {total:,} questions of locomo10, from {', '.join(partial.conversations)} "
            f"({partial.questions} of the {partial.of:,} questions of categories 1-4 AMB asks; category 5 it never asks)"
        )
    judge = stated.get("judge_llm")
    out.append(
        f"another judge: {judge or 'unnamed'} under AMB's dataset/locomo.py prompt (a generous CORRECT/WRONG prompt in "
        "Mem0's words, answered as a boolean), not Mem0's gpt-4o-mini J: re-judge the pack (memorybench autorater) "
        "to set both side by side"
    )
    if stated.get("answer_llm"):
        out.append(
            f"answer model: {stated['answer_llm']} over {stated.get('memory_provider') or 'its memory'}'s retrieved context "
            f"({stated.get('mode') or 'its mode'}), under AMB's dataset/locomo.py answer prompt"
        )
    return out

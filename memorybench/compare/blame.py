"""Per-question blame: where an answer was lost, from the pack's files and the gold evidence.

For every answered question, three facts and one class. The gold answer and the
evidence ids are joined here only, after answering (no model ever saw them); for a pack of
the pinned locomo10.json, a question the outside audit found miscited (dial481/locomo-audit
errors.json, `memorybench.benchmarks.locomo.gold_audit`) takes the audit's corrected evidence ids:

* `evidence_stored`: every gold evidence turn is kept by the memory: a turn `D3:7` is kept
  when a `memory/lineage.jsonl` row of its conversation lists it, or lists its session
  (`session_3`: summaries, graphs), and no writer task that covered it was given up
  (`memory/writer/failures.jsonl`). Null when the row has no evidence id or the dataset
  file is not here.
* `evidence_given`: every gold evidence turn reached this question's answerer. A
  question-dependent memory: the turns of its retrieval hits (`memory/<method>/retrievals.jsonl`,
  through their lineage). A question-independent memory is injected whole, so it equals
  `evidence_stored`, except a text cut by `budget.max_memory_tokens`: then a turn counts
  only when its line (`SPEAKER: TEXT`) is in the text given. A Codex agent reading files:
  every evidence turn was printed by one of its steps (`agent/recall.jsonl` `found`).
* `answer_used_evidence`: of the gold stems that were in what the answerer was given (the
  memory text; for an agent reading files, what its steps printed), none is missing from
  the answer. Stems are LoCoMo's F1 tokens (the lexical scorer's `tokens`; category 3: the gold
  before its first `;`), the gold-token drop of the report's `gold_token_drop` table.
  Null when the prompt held no gold stem, and for category 5 (no gold answer). Another
  benchmark's gold is taken whole (`memorybench.score.rows.PLAIN_RULE`: its kind numbers are
  not LoCoMo's categories, so LongMemEval's type 5 has a gold answer).
* `blame`, the first that holds:
    1. `correct`: the answer is right: the pack's judge (its first in sorted order) gave
       a parsed label on at least one pass and the mean score over those passes is at
       least 0.5; without one (no autorater, category 5, every pass failed) LoCoMo F1 of
       at least 0.5 (`blame_basis` says which: `judge <judge id>` or `locomo_f1>=0.5`; on another
       benchmark, whose score is its judge's, the lexical diagnostic by its own name,
       `stemmed_token_f1>=0.5`: `f1_basis`);
    2. `not_stored`: `evidence_stored` is false (lost when the memory was written);
    3. `not_retrieved`: `evidence_given` is false (kept, but not handed to the answerer);
    4. `wrong_judged`: `answer_used_evidence` is true (the answer carries every gold stem
       it was given, yet it is scored wrong: extra or contradicting content, or a strict
       scorer);
    5. `ignored`: otherwise (the evidence reached the answerer and the answer does not
       carry it). Unknown facts (null) never decide a class: a row without evidence ids
       goes straight to 4 or 5.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memorybench.pack.walk import PackWalker, evidence_ids, qa_index_of
from memorybench.score.scorers import LEXICAL

__all__ = [
    "BASIS_F1",
    "CLASSES",
    "CORRECT_AT",
    "EXAMPLE_COLUMNS",
    "Blame",
    "blame_columns",
    "evidence_ids",
    "f1_basis",
    "pack_blame",
    "question_blame",
]

#: the classes, in the order they are tested after `correct`
CLASSES = ("not_stored", "not_retrieved", "ignored", "wrong_judged", "correct")
#: the score at or above which an answer counts as right (a judge's mean, or LoCoMo F1)
CORRECT_AT = 0.5
BASIS_F1 = f"{LEXICAL}>={CORRECT_AT}"
_SESSION = re.compile(r"^D(\d+):")


@dataclass(frozen=True)
class Blame:
    question_id: str
    blame: str
    #: what decided correctness: `judge <judge id>`, else `f1_basis` (`locomo_f1>=0.5`; another benchmark's `stemmed_token_f1>=0.5`)
    basis: str
    correct: bool
    #: the gold evidence dia_ids (None: unknown)
    evidence: tuple[str, ...] | None
    evidence_stored: bool | None
    evidence_given: bool | None
    answer_used_evidence: bool | None
    #: the evidence turns the memory did not keep / that did not reach the answerer
    not_stored: tuple[str, ...] = ()
    not_given: tuple[str, ...] = ()
    #: gold stems in what the answerer was given, and those of them missing from the answer
    gold_in_prompt: tuple[str, ...] = ()
    gold_dropped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def f1_basis(bench: Any) -> str:
    """The basis of a row no judge decided, named for the pack's benchmark (a `Benchmark`): LoCoMo's
    `locomo_f1>=0.5`; another's lexical score is a diagnostic (`score.rows.diagnostic_name`), never
    LoCoMo F1: `stemmed_token_f1>=0.5`."""
    from memorybench.score.rows import diagnostic_name

    return BASIS_F1 if bench.own_lexical_rules else f"{diagnostic_name(LEXICAL)}>={CORRECT_AT}"


def _session_of(dia_id: str) -> str | None:
    match = _SESSION.match(dia_id)
    return f"session_{match.group(1)}" if match else None


def _kept(dia_id: str, sources: set[str], failed: set[str]) -> bool:
    return dia_id not in failed and (dia_id in sources or _session_of(dia_id) in sources)


def _gold(category: int, gold: Any) -> str | None:
    if category == 5 or gold is None:
        return None
    return str(gold).split(";")[0].strip() if category == 3 else str(gold)


def _gold_errors(walker: PackWalker) -> dict[str, Any]:
    """The known gold errors (the benchmark's gold audit: LoCoMo's for the pinned locomo10.json)
    of a pack's data, else none: their corrected evidence ids replace the dataset's."""
    from memorybench.compare.gold_overlay import gold_audit_of, load_overlay

    sha256 = (walker.meta.get("data") or {}).get("sha256")
    if gold_audit_of(sha256) is None:
        return {}
    return load_overlay([sha256]).errors or {}


class _Blamer:
    """Everything one pack's blame needs, indexed once (the walker has read the files)."""

    def __init__(self, walker: PackWalker, judge_id: str | None) -> None:
        from memorybench.score.scorers import lexical_scorer  # nltk: only when blame is computed

        self.w = walker
        self.stems = lexical_scorer().tokens
        self._stems: dict[str, set[str]] = {}
        self.judge_id = judge_id
        judge = walker.judges().get(judge_id) if judge_id else None
        self.verdicts = judge["verdicts"] if judge else {}
        self.f1 = self._f1()
        self.gold_errors = _gold_errors(walker)
        from memorybench.benchmark import benchmark_of_pack

        bench = benchmark_of_pack(walker.meta)
        #: the category rule of the gold: LoCoMo's own, or the plain rule for every row of another benchmark
        self.rule = None if bench.own_lexical_rules else bench.lexical_rule
        #: the basis of a row without a judge verdict, named for the benchmark
        self.f1_basis = f1_basis(bench)

    def _f1(self) -> dict[str, float]:
        import csv
        import io

        if not self.w.pack.exists("predictions.csv"):
            return {}
        rows = csv.DictReader(io.StringIO(self.w.pack.read_text("predictions.csv"), newline=""))
        return {r["question_id"]: float(r[LEXICAL]) for r in rows if r.get(LEXICAL) not in (None, "")}

    def _text_stems(self, key: str, text: str | None) -> set[str] | None:
        if text is None:
            return None
        if key not in self._stems:
            self._stems[key] = self.stems(text)
        return self._stems[key]

    def evidence(self, qid: str, row: dict[str, Any]) -> tuple[str, ...] | None:
        conversation = (self.w.conversations or {}).get(row["sample_id"])
        qa_index = qa_index_of(qid)
        if conversation is not None and qa_index < len(conversation.questions):
            finding = self.gold_errors.get(qid)
            if finding is not None:  # the audit's corrected evidence (either kind of finding)
                return evidence_ids(finding.corrected_evidence)
            return evidence_ids(conversation.questions[qa_index].evidence)
        recall = self.w.recall.get(qid)  # an agent's pack keeps the ids it scored recall against
        return tuple(recall[1].get("evidence") or ()) if recall else None

    def correct(self, qid: str) -> tuple[bool, str]:
        scores = [r.get("score") for _, r in self.verdicts.get(qid, []) if r.get("status") in ("CORRECT", "WRONG")]
        scores = [s for s in scores if s is not None]
        if scores:
            return sum(scores) / len(scores) >= CORRECT_AT, f"judge {self.judge_id}"
        return self.f1.get(qid, 0.0) >= CORRECT_AT, self.f1_basis

    def blame(self, qid: str) -> Blame:
        _, row = self.w.predictions[qid]
        sample = row["sample_id"]
        evidence = self.evidence(qid, row)
        _, manifest = self.w.manifest.get(sample, (None, None))
        lineage = self.w.lineage.get(sample, [])
        failed = {s for f in self.w.writer_failures.get(sample, []) for s in f.get("sources") or ()}
        sources = {s for item in lineage for s in item.sources}

        stored: bool | None = None
        not_stored: tuple[str, ...] = ()
        if evidence and manifest is not None:
            not_stored = tuple(d for d in evidence if not _kept(d, sources, failed))
            stored = not not_stored
        given, not_given = self._given(qid, row, evidence, manifest, lineage, failed, stored, not_stored)
        used, in_prompt, dropped = self._used(qid, row)
        correct, basis = self.correct(qid)
        if correct:
            cls = "correct"
        elif stored is False:
            cls = "not_stored"
        elif given is False:
            cls = "not_retrieved"
        elif used is True:
            cls = "wrong_judged"
        else:
            cls = "ignored"
        return Blame(qid, cls, basis, correct, evidence, stored, given, used, not_stored, not_given, in_prompt, dropped)

    def _agent_files(self, qid: str) -> bool:
        """An agent that read files (not a prompt-injected one): its recall says what it saw."""
        recall = self.w.recall.get(qid)
        return recall is not None and recall[1].get("memory_recall") is not None

    def _given(
        self,
        qid: str,
        row: dict[str, Any],
        evidence: tuple[str, ...] | None,
        manifest: dict[str, Any] | None,
        lineage: list[Any],
        failed: set[str],
        stored: bool | None,
        not_stored: tuple[str, ...],
    ) -> tuple[bool | None, tuple[str, ...]]:
        if not evidence:
            return None, ()
        if self._agent_files(qid):
            found = set(self.w.recall[qid][1].get("found") or ())
            missing = tuple(d for d in evidence if d not in found)
            return not missing, missing
        if manifest is None:
            return None, ()
        if manifest.get("question_dependent"):
            if qid not in self.w.retrievals:
                return None, ()
            hits = {h.get("item_id") for h in self.w.retrievals[qid][2].get("hits") or ()}
            sources = {s for item in lineage if item.item_id in hits for s in item.sources}
            missing = tuple(d for d in evidence if not _kept(d, sources, failed))
            return not missing, missing
        if not ((manifest.get("metadata") or {}).get("budget") or {}).get("cut"):
            return stored, not_stored
        # a text cut by the budget: a turn counts only when its line is in the text given
        text = self.w.text(self.w.ref_path(row["memory_sha256"]))
        conversation = (self.w.conversations or {}).get(row["sample_id"])
        if text is None or conversation is None:
            return None, ()
        turns = {t.dia_id: t for s in conversation.sessions for t in s.turns}
        missing = tuple(d for d in evidence if d in not_stored or d not in turns or turns[d].render() not in text)
        return not missing, missing

    def _used(self, qid: str, row: dict[str, Any]) -> tuple[bool | None, tuple[str, ...], tuple[str, ...]]:
        gold = _gold(row["category"] if self.rule is None else self.rule(row["category"]), row.get("gold"))
        if gold is None:
            return None, (), ()
        if self._agent_files(qid):
            printed = "\n".join(self._outputs(qid))
            prompt = self._text_stems(f"agent:{qid}", printed)
        else:
            path = self.w.ref_path(row["memory_sha256"])
            prompt = self._text_stems(path or "", self.w.text(path)) if path else None
        if prompt is None:
            return None, (), ()
        in_prompt = self.stems(gold) & prompt
        if not in_prompt:
            return None, (), ()
        dropped = in_prompt - self.stems(str(row.get("prediction") or ""))
        return not dropped, tuple(sorted(in_prompt)), tuple(sorted(dropped))

    def _outputs(self, qid: str) -> list[str]:
        out = []
        for _, event in self.w.events.get(qid, []):
            body = event.get("event") or {}
            item = body.get("item") or {}
            if body.get("type") == "item.completed" and isinstance(item.get("aggregated_output"), str):
                out.append(item["aggregated_output"])
        return out


def _blamer(walker: PackWalker, judge_id: str | None) -> _Blamer:
    judges = sorted(walker.judges())
    return _Blamer(walker, judge_id if judge_id is not None else (judges[0] if judges else None))


def pack_blame(walker: PackWalker, judge_id: str | None = None) -> dict[str, Blame]:
    """Every answered question's blame, in predictions.jsonl order. `judge_id`: the judge whose
    verdicts decide correctness (default: the pack's first finished judge, sorted; none: F1)."""
    blamer = _blamer(walker, judge_id)
    return {qid: blamer.blame(qid) for qid in walker.question_ids()}


def question_blame(walker: PackWalker, question_id: str, judge_id: str | None = None) -> Blame:
    """One answered question's blame (`walker.walk` first: it names an unknown question)."""
    return _blamer(walker, judge_id).blame(question_id)


#: the columns blame adds to every row of collected/examples.parquet (`blame_columns`)
EXAMPLE_COLUMNS = ("blame", "blame_basis", "evidence_stored", "evidence_given", "answer_used_evidence")


def blame_columns(pack: Any, question_ids: Sequence[str]) -> dict[str, Any]:
    """The blame columns of one pack's examples rows, in `question_ids` order (Arrow arrays;
    null for a question the pack did not answer)."""
    import pyarrow as pa

    blames = pack_blame(PackWalker(pack))
    rows = [blames.get(q) for q in question_ids]
    return {
        "blame": pa.array([b.blame if b else None for b in rows], pa.string()),
        "blame_basis": pa.array([b.basis if b else None for b in rows], pa.string()),
        "evidence_stored": pa.array([b.evidence_stored if b else None for b in rows], pa.bool_()),
        "evidence_given": pa.array([b.evidence_given if b else None for b in rows], pa.bool_()),
        "answer_used_evidence": pa.array([b.answer_used_evidence if b else None for b in rows], pa.bool_()),
    }

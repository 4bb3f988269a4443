"""One question's walk through a pack: from its dataset row to every file it touched.

    walker = PackWalker.open("outputs/packs/default/runs/<run_id>")
    walk = walker.walk("conv-26-q-0")        # Walk: typed, nothing rendered
    walker.text(walk.memory.text_path)         # large texts are read on demand

The walk is what `memorybench show` prints, what `TRACE.md` says about the first
question and what `memorybench view` lays out in the browser. It is built from the
pack's own files (with their real paths and line numbers) and, after answering only, the
dataset row the pack names: the gold answer and the evidence turns are shown beside the
walk, never as something a model saw.

Every answerer has the same walk: a reader's prompt is its trace's template and slots
(the memory through REFERENCE_PIN.json); an agent's prompt is its task (template, slots,
footer) and its process: steps, reads, notes, usage.

Journal rows are read as the JSON they are, not validated against their schema records:
this is the tool one opens on a pack that looks wrong, so a row that drifted from its
schema is shown (with its file and line) rather than refused; `memorybench verify` is
what checks them. The walk itself is typed.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memorybench.benchmark import benchmark_of_meta, benchmark_of_pack
from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.reader import PackError, PackReader
from memorybench.pack.walk_records import (
    AgentAction,
    AgentProcess,
    Attempt,
    EvidenceTurn,
    JudgeStep,
    LineageItem,
    Located,
    MemoryStep,
    ModelCall,
    PromptStep,
    RetrievalStep,
    SourceRow,
    Verdict,
    Walk,
)
from memorybench.templates import pinned_reader
from memorybench.records import SchemaError, jsonl_lines, load_json, parse_record, record_type

__all__ = [
    "DIA_ID",
    "AgentAction",
    "AgentProcess",
    "Attempt",
    "EvidenceTurn",
    "JudgeStep",
    "LineageItem",
    "Located",
    "MemoryStep",
    "ModelCall",
    "PackWalker",
    "PromptStep",
    "RetrievalStep",
    "SourceRow",
    "Verdict",
    "Walk",
    "dataset_of",
]

#: a well-formed dia_id; nine released evidence strings are malformed ("D8:6; D9:17"), and
#: every well-formed id inside one counts (the agent's recall reads them the same way)
DIA_ID = re.compile(r"\bD\d+:\d+\b")
#: another benchmark's turn id: its session id and the turn's index (LongMemEval's "answer_280352e9:3")
TURN_ID = re.compile(r"^[A-Za-z0-9_.\-]+:\d+$")


def evidence_ids(evidence: Iterable[str]) -> tuple[str, ...]:
    """The well-formed turn ids of an evidence list: LoCoMo's dia_ids (every one inside a
    malformed string such as "D8:6; D9:17"), or another benchmark's `SESSION:N` ids as they are."""
    out: dict[str, None] = {}
    for e in evidence:
        found = DIA_ID.findall(str(e))
        out.update(dict.fromkeys(found or ([str(e)] if TURN_ID.match(str(e)) else [])))
    return tuple(out)


# -- the dataset a pack names ---------------------------------------------------------
_DATASETS: dict[tuple[str, str | None], Any] = {}


def qa_index_of(question_id: str) -> int:
    """A question's row in its sample: LoCoMo's ids end in it ("conv-26-q-7"); a
    LongMemEval question is its haystack's only one."""
    return int(question_id.rsplit("-q-", 1)[1]) if "-q-" in question_id else 0


def dataset_of(data: dict[str, Any], data_path: str | os.PathLike[str] | None = None) -> tuple[Any, Path | None, str | None]:
    """(conversations, path, note) of the dataset run_meta.json's `data` names: the pin (in
    the pins folder) or its path, checked against the recorded sha256; conversations None
    and a note saying why when the file is not here or not the one the pack was run on."""
    from memorybench.benchmark import benchmark_of_meta
    from memorybench.data.source import dataset_sha256, is_present, load_dataset
    from memorybench.data.pins import pins_dir

    dataset = benchmark_of_meta(data).dataset(str(data.get("name") or benchmark_of_meta(data).dataset_names[0]))
    if data_path is not None:
        path: Path | None = Path(data_path)
    elif data.get("pinned"):
        path = pins_dir() / str(data.get("pin") or dataset.pinned().relpath)
    else:
        path = Path(str(data["path"])).expanduser() if data.get("path") else None
    if path is None:
        return None, None, "run_meta.json names no dataset file"
    if not is_present(dataset, path):
        hint = "run `memorybench fetch` (or set MEMORYBENCH_PINS)" if data.get("pinned") else "put the file back at that path"
        return None, path, f"dataset file {path} is not here; {hint} to join the gold evidence"
    expected = data.get("sha256")
    key = (str(path), expected)
    if key not in _DATASETS:
        actual = dataset_sha256(dataset, path)
        if expected and actual != expected:
            return None, path, f"dataset file {path} has sha256 {actual[:12]}…, the pack was run on {str(expected)[:12]}…"
        _DATASETS[key] = {c.sample_id: c for c in load_dataset(path, data.get("name"))}
    return _DATASETS[key], path, None


def _evidence_turns(conversation: Any, evidence: Iterable[str]) -> tuple[EvidenceTurn, ...]:
    turns = {t.dia_id: (s, t) for s in conversation.sessions for t in s.turns}
    out = []
    for raw in evidence:
        for dia_id in dict.fromkeys(DIA_ID.findall(str(raw)) or ([str(raw)] if TURN_ID.match(str(raw)) else [])):
            session, turn = turns.get(dia_id, (None, None))
            out.append(
                EvidenceTurn(
                    dia_id,
                    session.index if session else None,
                    session.date_time if session else None,
                    turn.speaker if turn else None,
                    turn.render() if turn else None,
                )
            )
    return tuple(out)


# -- reading a pack once, walking any question ----------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _call(
    role: str,
    purpose: str,
    where: Located,
    response: dict[str, Any] | None,
    *,
    requested: str | None = None,
    error: str | None = None,
    attempts: list[dict[str, Any]] | None = None,
) -> ModelCall:
    """A ModelCall from a ChatResult row (`response`), or from a failed call's error and attempts."""
    response = response or {}
    tries = response.get("attempts") or attempts or []
    return ModelCall(
        role=role,
        purpose=purpose,
        where=where,
        model_requested=response.get("model_requested", requested),
        model_answered=response.get("model_answered"),
        attempts=tuple(
            Attempt(
                a.get("n", i + 1),
                a.get("status"),
                a.get("latency_s"),
                a.get("error"),
                a.get("wait_s"),
                bool(a.get("retry_after")),
            )
            for i, a in enumerate(tries)
        ),
        usage=dict(response.get("usage") or {}),
        latency_s=response.get("latency_s"),
        cost_usd=response.get("cost_usd"),
        cache_hit=response.get("cache_hit") if response else None,
        reply=response.get("text"),
        error=error,
    )


#: the journals whose rows the walk scores or judges by: each row must match its schema
SCORED = (layout.PREDICTIONS, layout.READER_TRACES)


def _check_row(where: str, number: int, row: Any) -> None:
    """A row the walk scores by must match its schema (a category "2" is a one-line error,
    not a silent coercion); a row of a schema this code does not know is shown as it is."""
    if not isinstance(row, dict):
        raise PackError(
            f"{where} line {number} is a JSON {type(row).__name__}, not a record; run `memorybench verify` on the pack"
        )
    try:
        record_type(str(row.get("schema")))
    except SchemaError:
        return
    try:
        parse_record(row)
    except SchemaError as e:
        raise PackError(f"{where} line {number}: {e}; run `memorybench verify` on the pack") from None


class PackWalker:
    """Every journal of one pack read once and indexed by question, so that walking all
    1,986 questions of a pack (`memorybench view`) reads each file once."""

    def __init__(self, pack: PackReader, *, data_path: str | os.PathLike[str] | None = None, join_dataset: bool = True) -> None:
        """`data_path`: the dataset file, when not the one run_meta.json names; `join_dataset=False`
        reads no dataset (TRACE.md, written before any scorer-side join, shows no evidence)."""
        self.pack = pack
        self.meta = pack.json_object(layout.RUN_META)
        if join_dataset:
            self.conversations, self.data_path, self.data_note = dataset_of(self.meta.get("data") or {}, data_path)
        else:
            self.conversations, self.data_path, self.data_note = None, Path(data_path) if data_path else None, "not joined"
        self._texts: dict[str, str | None] = {}
        self.predictions: dict[str, tuple[int, dict[str, Any]]] = {}
        for number, row in self._rows(layout.PREDICTIONS):
            self.predictions.setdefault(row["question_id"], (number, row))
        self.csv_lines = self._csv_lines()
        self.reader_traces = self._by_question(layout.READER_TRACES)
        self.manifest = {row["sample_id"]: (number, row) for number, row in self._rows(layout.MEMORY_MANIFEST)}
        self.lineage: dict[str, list[LineageItem]] = defaultdict(list)
        for number, row in self._rows(layout.LINEAGE):
            self.lineage[row["sample_id"]].append(LineageItem(row["item_id"], tuple(row.get("sources") or ()), number))
        self.retrievals: dict[str, tuple[str, int, dict[str, Any]]] = {}
        for relpath in self._retrieval_files():
            for number, row in self._rows(relpath):
                self.retrievals.setdefault(row["question_id"], (relpath, number, row))
        self.writer_calls: dict[str | None, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        for number, row in self._rows(layout.WRITER_CALLS):
            self.writer_calls[row.get("sample_id")].append((number, row))
        self.writer_failures: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for _, row in self._rows(layout.WRITER_FAILURES):
            self.writer_failures[row.get("sample_id")].append(row)
        pin = pack.json(layout.REFERENCE_PIN) if pack.exists(layout.REFERENCE_PIN) else {}
        self.refs: dict[str, str] = {sha: ref["path"] for sha, ref in (pin.get("refs") or {}).items()}
        for _, row in self.manifest.values():  # an agent's pack pins no refs: its memory texts are the manifest's
            if row.get("memory_sha256") and row.get("memory_path"):
                self.refs.setdefault(row["memory_sha256"], row["memory_path"])
        # an agent's files (none for a reader pack)
        self.agent_traces: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        for number, row in self._rows(layout.AGENT_TRACES):
            if row.get("question_id"):
                self.agent_traces[row["question_id"]].append((number, row))
        self.steps = self._grouped(layout.AGENT_TRAJECTORY)
        self.events = self._grouped(layout.AGENT_EVENTS)
        self.notes = self._by_question(layout.AGENT_NOTES)
        self.recall = self._by_question(layout.AGENT_RECALL)
        self._judges: dict[str, dict[str, Any]] | None = None
        #: the known gold errors by question id, or why they could not be read (`_gold_error`)
        self._gold_errors: dict[str, Any] | str | None = None

    @classmethod
    def open(cls, location: str | os.PathLike[str] | PackReader, **kwargs: Any) -> PackWalker:
        return cls(PackReader.open(location), **kwargs)

    # -- reading -----------------------------------------------------------------------
    def _rows(self, relpath: str) -> Iterable[tuple[int, dict[str, Any]]]:
        if not self.pack.exists(relpath):
            return []
        out = []
        for number, line in jsonl_lines(self.pack.read_bytes(relpath)):
            try:
                row = load_json(line)
            except ValueError:
                raise PackError(
                    f"{self.pack.uri(relpath)} line {number} is not valid JSON; run `memorybench verify` on the pack"
                ) from None
            if relpath in SCORED or relpath.endswith(layout.JUDGE_VERDICTS):
                _check_row(self.pack.uri(relpath), number, row)
            out.append((number, row))
        return out

    def _by_question(self, relpath: str) -> dict[str, tuple[int, dict[str, Any]]]:
        out: dict[str, tuple[int, dict[str, Any]]] = {}
        for number, row in self._rows(relpath):
            if row.get("question_id"):
                out.setdefault(row["question_id"], (number, row))
        return out

    def _grouped(self, relpath: str) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        out: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        for number, row in self._rows(relpath):
            if row.get("question_id") and row.get("phase", "answer") == "answer":
                out[row["question_id"]].append((number, row))
        return out

    def _csv_lines(self) -> dict[str, int]:
        if not self.pack.exists(layout.PREDICTIONS_CSV):
            return {}
        out: dict[str, int] = {}
        for number, line in enumerate(self.pack.read_text(layout.PREDICTIONS_CSV).split("\n"), start=1):
            qid = line.split(",", 1)[0]
            if qid in self.predictions and qid not in out:
                out[qid] = number
        return out

    def _retrieval_files(self) -> list[str]:
        methods = {row.get("method") for _, row in self.manifest.values() if row.get("question_dependent")}
        return [f"{layout.MEMORY}/{m}/retrievals.jsonl" for m in sorted(m for m in methods if m)]

    def text(self, relpath: str | None) -> str | None:
        """The UTF-8 text of a pack file, read once; None when there is none."""
        if relpath is None:
            return None
        if relpath not in self._texts:
            self._texts[relpath] = self.pack.read_text(relpath) if self.pack.exists(relpath) else None
        return self._texts[relpath]

    def ref_path(self, sha256: str | None) -> str | None:
        """The pack file that holds the text of a `ref` (REFERENCE_PIN.json, else the manifest, else blobs/)."""
        if not sha256:
            return None
        path = self.refs.get(sha256, layout.blob(sha256))
        return path if self.pack.exists(path) else None

    def question_ids(self) -> list[str]:
        """The answered questions, in predictions.jsonl order."""
        return list(self.predictions)

    def judges(self) -> dict[str, dict[str, Any]]:
        """judge id -> {model, verdicts by question, traces by question}, for every finished judge."""
        if self._judges is None:
            self._judges = {}
            for judge_id in self.pack.judges():
                verdicts: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
                vpath = self.pack.judge_path(judge_id, layout.JUDGE_VERDICTS)
                for number, row in self._rows(vpath):
                    verdicts[row["question_id"]].append((number, row))
                traces: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
                tpath = self.pack.judge_path(judge_id, layout.JUDGE_TRACES)
                for number, row in self._rows(tpath):
                    traces[row["question_id"]].append((number, row))
                meta_path = self.pack.judge_path(judge_id, layout.JUDGE_META)
                meta = self.pack.json(meta_path) if self.pack.exists(meta_path) else {}
                model = meta.get("judge_model_sent") or (meta.get("identity") or {}).get("model")
                self._judges[judge_id] = {
                    "model": model,
                    "verdicts": verdicts,
                    "verdicts_path": vpath,
                    "traces": traces,
                    "traces_path": tpath,
                }
        return self._judges

    # -- one question --------------------------------------------------------------------
    def walk(self, question_id: str) -> Walk:
        if question_id not in self.predictions:
            known = list(self.predictions)
            close = difflib.get_close_matches(question_id, known, n=3)
            hint = (
                f"did you mean {', '.join(repr(c) for c in close)}?"
                if close
                else f"its questions run from {known[0]!r} to {known[-1]!r}"
                if known
                else "it has no answered question"
            )
            raise UserError(f"question {question_id!r} is not answered in {self.pack.uri()} ({len(known)} answered); {hint}")
        line, pred = self.predictions[question_id]
        sample_id = pred["sample_id"]
        qa_index = qa_index_of(question_id)
        trace_line, trace = self.reader_traces.get(question_id, (None, None))
        agent = self._agent(question_id)
        if trace is not None:
            prompt: PromptStep | None = self._reader_prompt(trace_line, trace)
            calls: tuple[ModelCall, ...] = (
                _call("reader", "answer", Located(layout.READER_TRACES, trace_line), trace["response"]),
            )
            reply = trace["response"].get("text")
        else:
            prompt = self._agent_prompt(question_id, pred)
            calls = tuple(self._agent_call(question_id, n, row) for n, row in self.agent_traces.get(question_id, []))
            reply = calls[-1].reply if calls else None
        from memorybench.score.rows import (
            score_row,  # the scorers import nltk: only when a walk is made
        )

        return Walk(
            pack=self.pack.uri(),
            run_id=self.meta.get("run_id", ""),
            config_sha256=self.meta.get("config_sha256", ""),
            choices=dict(self.meta.get("choices") or {}),
            answerer=pred.get("answerer", ""),
            question_id=question_id,
            sample_id=sample_id,
            qa_index=qa_index,
            index=pred["index"],
            category=pred["category"],
            question=pred["question"],
            source=self._source(pred, qa_index),
            memory=self._memory(question_id, pred),
            prompt=prompt,
            calls=calls,
            agent=agent,
            reply=reply,
            prediction=pred["prediction"],
            prediction_at=Located(layout.PREDICTIONS, line),
            csv_at=Located(layout.PREDICTIONS_CSV, self.csv_lines.get(question_id)),
            scores=score_row(pred, benchmark_of_pack(self.meta)),
            judges=self._judge_steps(question_id),
        )

    def _source(self, pred: dict[str, Any], qa_index: int) -> SourceRow:
        data = self.meta.get("data") or {}
        conversation = (self.conversations or {}).get(pred["sample_id"])
        question = None
        if conversation is not None and qa_index < len(conversation.questions):
            question = conversation.questions[qa_index]
        note = self.data_note
        if self.conversations is not None and question is None:
            note = f"the dataset has no row {pred['question_id']}"
        evidence = tuple(question.evidence) if question is not None else None
        gold_error, gold_error_note = self._gold_error(pred["question_id"]) if question is not None else (None, None)
        return SourceRow(
            data_path=str(self.data_path if self.data_path is not None else data.get("path")),
            data_sha256=data.get("sha256"),
            sample_id=pred["sample_id"],
            qa_index=qa_index,
            question=pred["question"],
            category=pred["category"],
            category_name=benchmark_of_meta(data).category_names.get(pred["category"], str(pred["category"])),
            gold=pred.get("gold"),
            adversarial_answer=pred.get("adversarial_answer"),
            evidence=evidence,
            evidence_turns=_evidence_turns(conversation, evidence) if conversation is not None and evidence else (),
            note=note,
            gold_error=gold_error,
            gold_error_note=gold_error_note,
            corrected_evidence_turns=_evidence_turns(conversation, gold_error.corrected_evidence)
            if gold_error is not None
            else (),
        )

    def _gold_error(self, question_id: str) -> tuple[Any, str | None]:
        """(the audit's finding on this question or None, why none was looked up): a benchmark's
        known gold errors (its record's `gold_audit`: LoCoMo's joins the pinned locomo10.json
        only) apply to the one file they join."""
        from memorybench.benchmark import benchmarks, imported

        sha256 = (self.meta.get("data") or {}).get("sha256")
        audits = (imported(b.gold_audit) for b in benchmarks().values() if b.gold_audit)
        audit = next((a for a in audits if a.applies_to(sha256)), None)
        if audit is None or self.data_path is None:
            return None, None
        if self._gold_errors is None:
            try:
                self._gold_errors = audit.known_gold_errors(dataset=self.data_path)
            except UserError as e:
                self._gold_errors = e.message
        if isinstance(self._gold_errors, str):
            return None, f"known gold errors not checked: {self._gold_errors}"
        return self._gold_errors.get(question_id), None

    def _memory(self, question_id: str, pred: dict[str, Any]) -> MemoryStep:
        sample_id = pred["sample_id"]
        manifest_line, manifest = self.manifest.get(sample_id, (None, {}))
        retrieval = None
        if question_id in self.retrievals:
            relpath, number, row = self.retrievals[question_id]
            retrieval = RetrievalStep(
                Located(relpath, number),
                tuple(row.get("hits") or ()),
                row.get("memory_tokens"),
                int(row.get("dropped_by_budget") or 0),
                bool(row.get("cut_by_budget")),
            )
        writer_calls = []
        for number, row in self.writer_calls.get(sample_id, []):
            purpose = f"{row.get('role')}" + (f" session {row['session']}" if row.get("session") is not None else "")
            purpose += f" ({row['attempt']})" if row.get("attempt") == "repair" else ""
            writer_calls.append(
                _call("writer", purpose, Located(layout.WRITER_CALLS, number), row.get("response"), error=row.get("error"))
            )
        return MemoryStep(
            method=manifest.get("method"),
            question_dependent=manifest.get("question_dependent"),
            manifest=Located(layout.MEMORY_MANIFEST, manifest_line) if manifest_line else None,
            memory_path=manifest.get("memory_path"),
            memory_sha256=pred["memory_sha256"],
            text_path=self.ref_path(pred["memory_sha256"]),
            item_count=manifest.get("item_count"),
            metadata=dict(manifest.get("metadata") or {}),
            lineage=tuple(self.lineage.get(sample_id, ())),
            retrieval=retrieval,
            writer_calls=tuple(writer_calls),
            writer_failures=tuple(self.writer_failures.get(sample_id, ())),
        )

    def _slots(self, slots: dict[str, Any]) -> tuple[dict[str, dict[str, str | None]], dict[str, str | None]]:
        """(slot name -> {text | ref, path}, slot name -> its text or None when it cannot be read)."""
        described: dict[str, dict[str, str | None]] = {}
        values: dict[str, str | None] = {}
        for name, slot in slots.items():
            if slot.get("ref"):
                path = self.ref_path(slot["ref"])
                described[name] = {"ref": slot["ref"], "path": path}
                values[name] = self.text(path)
            else:
                described[name] = {"text": slot.get("text")}
                values[name] = slot.get("text")
        return described, values

    def _reader_prompt(self, line: int | None, trace: dict[str, Any]) -> PromptStep:
        request = trace["request"]
        described, values = self._slots(request.get("slots") or {})
        template = self.text(f"{layout.PROMPTS}/{request['template']}")
        message = None
        # a pinned template (`renderer`: Mem0's, rendered with jinja2; LoCoMo's) is rendered as the reader sent it
        pinned = pinned_reader(request.get("renderer"))
        if template is not None and pinned is not None:
            try:
                message = pinned.render(template, {name: value or "" for name, value in values.items()})
            except (KeyError, ValueError):
                message = None  # slots or a prompt file that do not render: verify names what is wrong
        elif template is not None and values.get("memory") is not None and values.get("question") is not None:
            message = _fill(template, values["memory"] or "", values["question"] or "")
        return PromptStep(
            where=Located(layout.READER_TRACES, line),
            template=request.get("template"),
            template_sha256=request.get("template_sha256"),
            slots=described,
            system=request.get("system"),
            footer=None,
            message=message,
            sha256=_sha(message) if message is not None else None,
            recorded_sha256=trace.get("reader_payload_sha256"),
            recorded_as="reader_payload_sha256",
        )

    def _agent_prompt(self, question_id: str, pred: dict[str, Any]) -> PromptStep | None:
        rows = self.agent_traces.get(question_id)
        if not rows:
            return None
        number, row = rows[-1]
        task = row.get("task") or {}
        described, values = self._slots(task.get("slots") or {})
        template = self.text(f"{layout.PROMPTS}/{task['template']}") if task.get("template") else None
        message = None
        if template is not None and all(v is not None for v in values.values()):
            if "memory" in values:
                message = _fill(template, values["memory"] or "", values.get("question") or "")
            else:
                message = template.replace("{question}", values.get("question") or "")
            if task.get("footer"):
                footer = self.text(f"{layout.PROMPTS}/{task['footer']}")
                message = message + footer if footer is not None else None
        return PromptStep(
            where=Located(layout.AGENT_TRACES, number),
            template=task.get("template"),
            template_sha256=task.get("template_sha256"),
            slots=described,
            system=None,
            footer=task.get("footer"),
            message=message,
            sha256=_sha(message) if message is not None else None,
            recorded_sha256=row.get("agent_task_sha256"),
            recorded_as="agent_task_sha256",
        )

    def _agent_call(self, question_id: str, number: int, row: dict[str, Any]) -> ModelCall:
        usage = dict(row.get("usage") or {})
        return ModelCall(
            role="agent",
            purpose=f"codex exec ({row.get('phase', 'answer')})",
            where=Located(layout.AGENT_TRACES, number),
            model_requested=row.get("model"),
            model_answered=None,
            attempts=(),
            usage=usage,
            latency_s=row.get("wall_s"),
            cost_usd=None,
            cache_hit=None,
            reply=row.get("answer"),
            error=row.get("error"),
        )

    def _agent(self, question_id: str) -> tuple[AgentProcess, ...]:
        out = []
        outputs: dict[str, str] = {}
        events = self.events.get(question_id, [])
        for _, event in events:
            item = (event.get("event") or {}).get("item") or {}
            if (
                (event.get("event") or {}).get("type") == "item.completed"
                and item.get("id")
                and item.get("aggregated_output") is not None
            ):
                outputs[item["id"]] = item["aggregated_output"]
        events_at = Located(layout.AGENT_EVENTS, events[0][0]) if events else None
        notes_line, notes = self.notes.get(question_id, (None, None))
        recall_line, recall = self.recall.get(question_id, (None, None))
        actions = tuple(
            AgentAction(
                step=row.get("step", 0),
                kind=row.get("kind", ""),
                status=row.get("status"),
                command=row.get("command"),
                exit_code=row.get("exit_code"),
                reads=tuple(row.get("reads") or ()),
                writes=tuple(row.get("writes") or ()),
                dia_ids=tuple(row.get("dia_ids") or ()),
                where=Located(layout.AGENT_TRAJECTORY, number),
                output=outputs.get(row.get("item_id") or ""),
            )
            for number, row in self.steps.get(question_id, [])
        )
        for number, row in self.agent_traces.get(question_id, []):
            out.append(
                AgentProcess(
                    where=Located(layout.AGENT_TRACES, number),
                    mode=row.get("mode", ""),
                    persist=bool(row.get("persist")),
                    sandbox=row.get("sandbox", ""),
                    status=row.get("status", ""),
                    codex_version=row.get("codex_version", ""),
                    turns=int(row.get("turns") or 0),
                    wall_s=row.get("wall_s"),
                    usage=dict(row.get("usage") or {}),
                    warnings=tuple(row.get("warnings") or ()),
                    findings=tuple(row.get("workspace_findings") or ()),
                    actions=actions,
                    events=events_at,
                    notes=notes,
                    notes_where=Located(layout.AGENT_NOTES, notes_line) if notes else None,
                    recall=recall,
                    recall_where=Located(layout.AGENT_RECALL, recall_line) if recall else None,
                )
            )
        return tuple(out)

    def _judge_steps(self, question_id: str) -> tuple[JudgeStep, ...]:
        out = []
        for judge_id, judge in self.judges().items():
            verdicts = tuple(
                Verdict(
                    pass_=int(row.get("pass", 1)),
                    status=row.get("status", ""),
                    label_raw=row.get("label_raw"),
                    score=row.get("score"),
                    failure=row.get("failure"),
                    error=row.get("error"),
                    mem0_f1=row.get("mem0_f1"),
                    mem0_bleu1=row.get("mem0_bleu1"),
                    where=Located(judge["verdicts_path"], number),
                )
                for number, row in judge["verdicts"].get(question_id, [])
            )
            calls = tuple(
                _call(
                    "judge",
                    f"pass {row.get('pass')}" + (f", {row['part']}" if row.get("part") else ""),
                    Located(judge["traces_path"], number),
                    row.get("response"),
                    requested=row.get("model_requested"),
                    error=row.get("error"),
                    attempts=row.get("attempts"),
                )
                for number, row in judge["traces"].get(question_id, [])
            )
            out.append(JudgeStep(judge_id, judge["model"], verdicts, calls))
        return tuple(out)


def _fill(template: str, memory: str, question: str) -> str:
    """`{memory}` and `{question}` replaced in one pass (REFERENCE_PIN.json's rule; the
    answer layer's `fill_template`, which this layer may not import)."""
    before, _, after = template.partition("{memory}")
    return before.replace("{question}", question) + memory + after.replace("{question}", question)

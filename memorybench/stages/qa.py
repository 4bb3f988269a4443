"""The `qa` stage: one run spec -> one pack.

Questions are answered one at a time in file order (every question of the first
conversation, then the next); question-independent memory is built once per
conversation. Each answer is appended to predictions.jsonl at once; a rerun of the same
run id resumes where it stopped. A memory whose writer failed more than
`memory.max_failed_share` of its tasks stops the run before its first question. Scores
are computed from the stored rows at the end.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memorybench.benchmark import benchmark_of, recorded
from memorybench.config import recorded_config, shown_override
from memorybench.errors import UserError
from memorybench.names import writable_folder
from memorybench.hashing import sha256_file
from memorybench.answer.base import AskedChoice, ConversationView
from memorybench.answer.factory import open_answerer, prompt_chars
from memorybench.data.source import load_dataset, resolve_dataset
from memorybench.data import Conversation, Question, iter_questions
from memorybench.llm.sizing import estimate_tokens, longest_prompt_tokens
from memorybench.memory import build_memory_method, memory_notes, open_build_context
from memorybench.memory.base import BuildContext, BuiltMemory
from memorybench.pack import layout
from memorybench.pack.answered import with_answered_from_journals
from memorybench.pack.journal_keys import inconsistency
from memorybench.pack.location import PackLocation
from memorybench.pack.lock import folder_lock
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack
from memorybench.pack.schemas import LineageRow, MemoryManifestRow, Prediction, QuestionSelection, RunMeta
from memorybench.pack.trace_md import write_trace_md
from memorybench.progress import CALLS, Progress, format_eta, say
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.run_id import plugins_used, run_identity
from memorybench.secrets import clean_config, known_secrets, register, scrub
from memorybench.validate import check_installed


@dataclass
class QaResult:
    #: the folder the pack was written in (a work folder for a gs:// root)
    pack_root: Path
    metrics: dict[str, Any]
    answered_now: int
    #: where the pack is: the same folder, or its gs:// address once published
    pack_uri: str


def select_questions(conversations: Sequence[Conversation], cfg: Any) -> list[Question]:
    """The run's questions in file order: all, the first `max_questions`, the listed
    `question_ids` or a seeded `question_sample` (memorybench.data.selection)."""
    from memorybench.data.selection import select_questions as select

    return select(list(iter_questions(conversations)), cfg)


def run_qa(
    cfg: DictConfig, *, overrides: Sequence[str] = (), choices: dict[str, str] | None = None, progress: bool = True
) -> QaResult:
    """Answer every selected question of `cfg` into its pack; resume a half-done pack.

    One writer per pack: the pack's lock (`memorybench.pack.lock`) is held from before the
    resume until `_SUCCESS` is written and the pack published; a second `qa` of the same run
    id meets it and stops with one line naming the writer, having written nothing.
    """
    register(known_secrets(cfg))  # whatever this run writes or prints is scrubbed of its credentials
    rid, sha = run_identity(cfg)
    data_path, data_info = resolve_dataset(cfg.dataset, cfg.paths.pins)
    conversations = load_dataset(data_path, str(cfg.dataset.name))
    questions = select_questions(conversations, cfg)
    where = PackLocation.of(cfg, rid)
    if where.is_finished():  # read only: a finished pack needs no lock
        return _finished(where)
    check_installed(cfg)  # a missing extra (the embedded model, the offline embedder): one line, nothing written
    # a read-only or missing cache or packs folder is one line, before anything is written
    cache_dir = writable_folder(str(cfg.paths.cache), "paths.cache")
    if where.remote is None:
        writable_folder(where.work_dir.parent, "paths.packs")
    pack = RunPack(where.work_dir)
    pack.open()
    with folder_lock(pack.root, "pack"):
        if where.is_finished():  # finished by the writer that held the lock before us
            return _finished(where)
        return _write(
            cfg,
            rid,
            sha,
            where,
            pack,
            cache_dir,
            data_path,
            data_info,
            conversations,
            questions,
            overrides=overrides,
            choices=choices,
            progress=progress,
        )


def _finished(where: PackLocation) -> QaResult:
    """A pack with `_SUCCESS`: complete only when its journals are those of one writer
    (`memorybench.pack.journal_keys.inconsistency`), so a pack two writers wrote is never
    called complete."""
    problem = inconsistency(where.reader())
    if problem is not None:
        raise UserError(
            f"pack {where.uri} has {layout.SUCCESS} but is inconsistent: {problem}; run `memorybench verify {where.uri}` "
            "for every finding, then move the pack aside and rerun to write it again"
        )
    print(f"pack {where.uri} is complete; nothing to do", file=sys.stderr)
    return QaResult(where.work_dir, where.finished_metrics(), 0, where.uri)


def _write(
    cfg: DictConfig,
    rid: str,
    sha: str,
    where: PackLocation,
    pack: RunPack,
    cache_dir: Path,
    data_path: Path,
    data_info: dict[str, Any],
    conversations: list[Conversation],
    questions: list[Question],
    *,
    overrides: Sequence[str],
    choices: dict[str, str] | None,
    progress: bool,
) -> QaResult:
    """Resume the pack, answer what is left, score it and close it (under the pack's lock)."""
    answered, built = pack.resume()
    done = sum(q.question_id in answered for q in questions)
    if done:
        say(f"resuming: {done} of {len(questions)} already answered", enabled=progress)
    method = build_memory_method(cfg)
    needed = [c for c in conversations if any(q.sample_id == c.sample_id for q in questions)]
    ctx = open_build_context(cfg, pack, cache_dir, method=method, conversations=needed)
    # Software-only memory is built up front (cheap), so that the embedded model's context
    # can be sized from the longest prompt of the run; memory a writer or a retriever makes
    # later is sized from the method's own upper bound.
    memories: dict[str, BuiltMemory] = {}
    if method.software_only and not method.question_dependent:
        memories = {c.sample_id: method.build(c, ctx) for c in needed}
    longest = longest_prompt_tokens(
        (m.text or "" for m in memories.values()), prompt_chars(cfg), method.memory_tokens_bound(needed)
    )
    # URLs as the run id hashes them; an unset question selection left out (as before it existed)
    pack.write_text(layout.CONFIG, OmegaConf.to_yaml(recorded_config(clean_config(cfg))))
    from memorybench.estimate import write_estimate

    write_estimate(cfg, rid, pack)  # calls, tokens and cost as counted before the first call (estimate.json)

    with open_answerer(cfg, pack, cache_dir=cache_dir, longest_prompt_tokens=longest) as answerer:
        meta = _run_meta(
            cfg,
            rid,
            sha,
            pack,
            answerer.models + ctx.models,
            answerer.is_local,
            data_info,
            questions,
            every=list(iter_questions(conversations)),
            overrides=overrides,
            choices=choices,
        )
        pack.write_json(layout.RUN_META, meta)
        bar = Progress("qa", len(questions), initial=len(answered), enabled=progress)
        prefill = PrefillNotes(bar.note, _local_model(answerer.models), method.question_dependent)
        try:
            answered_now = 0
            index_of = {q.question_id: i for i, q in enumerate(questions)}
            for conversation in needed:
                todo = [q for q in conversation.questions if q.question_id in index_of and q.question_id not in answered]
                if not todo:
                    continue
                bar.set_label(f"{conversation.sample_id} (building memory)", detail=build_detail(ctx.writer))
                memory = memories.get(conversation.sample_id) or method.build(conversation, ctx)
                bar.set_label(conversation.sample_id)
                if conversation.sample_id not in built:
                    _store_memory(pack, method, memory)
                    built.add(conversation.sample_id)
                # after the commit (a rerun loads this memory, paying for no writer call twice)
                # and before any question over it: a memory the writer mostly failed to write
                # stops the run instead of being scored as if it were whole
                method.check_writer_failures(pack)
                answerer.start_conversation(
                    ConversationView(
                        conversation.sample_id, conversation.speaker_a, conversation.speaker_b, conversation.sessions
                    )
                )
                prefill.before(conversation.sample_id, memory.text, len(todo))
                for question in todo:
                    _answer(pack, method, ctx, answerer, memory, question, index_of[question.question_id])
                    prefill.after(conversation.sample_id)
                    answered.add(question.question_id)
                    answered_now += 1
                    bar.update(1)
            answerer.finish(questions)
        finally:
            bar.close()
            ctx.close()
            pack.close()
        models = answerer.models + ctx.models

    # every question answered: scores, references, audit walk, then _SUCCESS last
    from memorybench.stages.rescore import write_scores  # scorers import nltk: only when needed

    metrics = write_scores(pack.root)  # this run holds the pack's lock: not `rescore`, which takes it
    method.write_budget(pack)  # memory/budget.json: whether the retrieval budget held, from the rows
    pack.write_json(layout.REFERENCE_PIN, pack.reference_pin())
    models = with_answered_from_journals(pack.root, models)  # a resumed run keeps what earlier attempts saw
    pack.write_json(layout.RUN_META, meta.model_copy(update={"models": models, "ended_at": utc_now()}))
    write_trace_md(pack, data_path)
    pack.mark_success()
    where.publish()
    return QaResult(pack.root, metrics, answered_now, where.uri)


def build_detail(writer: Any) -> Any:
    """How far a memory build has got, for its progress line: the writer calls of this build,
    how many failed (the writer's own count, a wrapped library's reports included) and the
    mean seconds a call; None for a method without a writer, or before its first call."""
    if writer is None:
        return None
    start = (writer.usage.calls, writer.usage.failures, writer.usage.latency_s)

    def detail() -> str | None:
        usage = writer.usage
        calls, failed, seconds = usage.calls - start[0], usage.failures - start[1], usage.latency_s - start[2]
        if calls <= 0:
            return None
        return f"{calls} writer call{'s' if calls != 1 else ''}, {failed} failed, {seconds / calls:.1f} s a call"

    return detail


class PrefillNotes:
    """The phase lines around the first question on a conversation's memory when the embedded
    model answers: `before` says how many tokens it prefills (and for how long, once a
    prefill was timed), `after` how long it took or that the prefill was restored from disk
    (memorybench.llm.local.prefill_store). Nothing for a remote model or question-dependent memory."""

    def __init__(self, note: Any, model: str | None, question_dependent: bool) -> None:
        self.note, self.model = note, (None if question_dependent else model)
        self._waiting: str | None = None
        self._first = "first question"

    def before(self, sample_id: str, text: str | None, questions: int = 2) -> None:
        if self.model is None or not text:
            return
        self._first = "first question" if questions > 1 else "its question"  # LongMemEval: one question a haystack
        tokens = estimate_tokens(text)
        rate = CALLS.prefill_rate(self.model)
        expected = f", expected {format_eta(tokens / rate)}" if rate else ""
        CALLS.forget_last(self.model)
        self._waiting = sample_id
        self.note(f"{sample_id}: prefilling about {tokens} tokens of memory{expected}")

    def after(self, sample_id: str) -> None:
        if self.model is None or self._waiting != sample_id:
            return
        self._waiting = None
        call = CALLS.last(self.model)
        if call is None:  # answered from the response cache: nothing was prefilled
            return
        if call.restored_tokens:
            answer = "first answer" if self._first == "first question" else "its answer"
            self.note(
                f"{sample_id}: prefill of {call.restored_tokens} tokens restored from disk; {answer} in "
                f"{format_eta(call.latency_s)}"
            )
        else:
            self.note(f"{sample_id}: memory prefilled and {self._first} answered in {format_eta(call.latency_s)}")


def _local_model(models: Sequence[Any]) -> str | None:
    """The name the embedded model answers with, when it is the reader."""
    for m in models:
        if getattr(m, "local", False) and getattr(m, "role", None) == "reader" and m.weights:
            return str(m.weights.get("model"))
    return None


def _answer(
    pack: RunPack, method: Any, ctx: BuildContext, answerer: Any, memory: BuiltMemory, question: Question, index: int
) -> None:
    """One question: its memory text (stored once), the answer, the prediction row (the commit)."""
    asked = question.asked()  # no gold, no evidence
    text = method.for_question(memory, asked, ctx)
    memory_sha, _ = pack.store_text(text, _memory_relpath(method, memory))
    if question.adversarial_answer is not None and getattr(answerer, "poses_choice", False):
        # a question posed as a choice (LoCoMo's category 5 under its protocol): the trap, never the gold
        asked = AskedChoice(
            asked.question_id,
            asked.sample_id,
            asked.category,
            asked.question,
            asked.question_date,
            adversarial_answer=question.adversarial_answer,
        )
    answer = answerer.answer(asked, text)
    pack.predictions.append(
        Prediction(
            question_id=question.question_id,
            sample_id=question.sample_id,
            index=index,
            category=question.category,
            question=question.question,
            prediction=answer.prediction,
            gold=question.answer,
            adversarial_answer=question.adversarial_answer,
            reader_payload_sha256=answer.reader_payload_sha256,
            memory_sha256=memory_sha,
            answerer=answerer.name,
            options=answer.options,
            reply=answer.reply,
            choice=answer.choice,
            malformed_reply=answer.malformed_reply,
        )
    )


def _run_meta(
    cfg: DictConfig,
    rid: str,
    sha: str,
    pack: RunPack,
    models: list[Any],
    local: bool,
    data_info: dict[str, Any],
    questions: list[Question],
    *,
    every: list[Question],
    overrides: Sequence[str],
    choices: dict[str, str] | None,
) -> RunMeta:
    """run_meta.json of this run; a resumed run keeps its first start time and counts the resume.
    A run of fewer questions than the dataset's is a prefix (`is_prefix`), whether the first
    `max_questions` or a selection (`selection`: which ids, and how they were chosen)."""
    from memorybench.data.selection import selection_record

    total = len(every)
    selection = selection_record(cfg, every, questions)
    started_at, resumed = utc_now(), 0
    if pack.path(layout.RUN_META).is_file():
        previous = PackReader.open(pack.root).meta()
        started_at, resumed = previous.started_at, previous.resumed + 1
    commit, dirty = git_state()
    return RunMeta(
        run_id=rid,
        name=str(cfg.name),
        config_sha256=sha,
        overrides=[scrub(shown_override(o)) for o in overrides],  # as typed (no Hydra escapes), less any credential
        choices=dict(choices or _choices(cfg)),
        git_commit=commit,
        git_dirty=dirty,
        package_versions=package_versions(),
        data=data_info,
        benchmark=recorded(benchmark_of(str(cfg.dataset.name))),
        prompts=_prompt_hashes(pack),
        models=models,
        started_at=started_at,
        question_count=len(questions),
        questions_total=total,
        is_prefix=len(questions) < total,
        max_questions=cfg.max_questions,
        local_model=local,
        notes=_notes(cfg, local, len(questions), total, selection) + memory_notes(cfg),
        resumed=resumed,
        selection=QuestionSelection.model_validate(selection) if selection is not None else None,
        plugins=plugins_used(OmegaConf.to_container(cfg, resolve=True)),
    )


def _prompt_hashes(pack: RunPack) -> dict[str, str]:
    """sha256 of every prompt file the answerer copied into prompts/."""
    folder = pack.path(layout.PROMPTS)
    return {str(p.relative_to(folder)): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _memory_relpath(method: Any, memory: BuiltMemory) -> str | None:
    """Question-independent memory lives once per conversation under memory/dumps/."""
    return None if method.question_dependent else layout.memory_dump(memory.sample_id)


def _store_memory(pack: RunPack, method: Any, memory: BuiltMemory) -> None:
    """Write a conversation's memory and lineage; the manifest row goes last (the commit)."""
    for item in memory.items:
        pack.lineage.append(LineageRow(sample_id=memory.sample_id, item_id=item.item_id, sources=list(item.sources)))
    lineage = pack.path(layout.LINEAGE)
    if not lineage.exists():  # a memory of no items (a writer that saved nothing) still has its lineage file
        lineage.parent.mkdir(parents=True, exist_ok=True)
        lineage.touch()
    sha = relpath = None
    if not method.question_dependent and memory.text is not None:
        sha, relpath = pack.store_text(memory.text, _memory_relpath(method, memory))
    pack.memory_manifest.append(
        MemoryManifestRow(
            sample_id=memory.sample_id,
            method=method.name,
            question_dependent=method.question_dependent,
            item_count=len(memory.items),
            memory_sha256=sha,
            memory_path=relpath,
            metadata=memory.metadata,
        )
    )


def _choices(cfg: DictConfig) -> dict[str, str]:
    return {g: str(cfg[g].name) for g in ("dataset", "memory", "reader", "writer", "answerer", "judge") if g in cfg}


def _notes(cfg: DictConfig, local: bool, n: int, total: int, selection: dict[str, Any] | None = None) -> list[str]:
    from memorybench.benchmark import benchmark_of

    notes = []
    if local:
        title = benchmark_of(str(cfg.dataset.name)).title
        notes.append(f"Answers from the embedded local model: not comparable with published {title} numbers.")
    if selection is not None:
        notes.append(selection_note(selection, total))
    elif n < total:
        notes.append(f"Prefix run: the first {n} of {total} questions in file order (max_questions={cfg.max_questions}).")
    return notes


def selection_note(selection: dict[str, Any], total: int) -> str:
    """run_meta's note on a selected subset (RunMeta.selection), labelled as a prefix is: a part, not the benchmark."""
    n = len(selection["question_ids"])
    if selection["by"] == "question_ids":
        return f"Subset run: {n} of {total} questions chosen by id (question_ids), asked in file order."
    short = [k for k, (_, of) in selection["by_kind"].items() if of < selection["per_kind"]]
    fewer = f"; every question of kind {', '.join(short)} (fewer than {selection['per_kind']})" if short else ""
    return (
        f"Sample run: {n} of {total} questions, up to {selection['per_kind']} of each of {len(selection['by_kind'])} "
        f"kinds drawn with seed {selection['seed']} (question_sample){fewer}, asked in file order."
    )


def print_summary(result: QaResult) -> None:
    from memorybench.stages.rescore import format_table

    print(format_table(result.metrics))
    print(f"pack: {result.pack_uri}")
    from memorybench.benchmark import benchmark_named

    print(benchmark_named(result.metrics.get("benchmark")).judge_hint.format(pack=result.pack_uri))


__all__ = ["QaResult", "print_summary", "run_qa", "select_questions"]

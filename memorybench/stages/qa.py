"""The `qa` stage: one run spec -> one pack.

Questions are answered one at a time in file order (every question of the first
conversation, then the next); question-independent memory is built once per
conversation. Each answer is appended to predictions.jsonl at once; a rerun of the same
run id resumes where it stopped. Scores are computed from the stored rows at the end.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from memorybench.answer.base import ConversationView
from memorybench.answer.factory import open_answerer, reader_template
from memorybench.data import Conversation, Question, file_sha256, iter_questions, load_locomo
from memorybench.data.pins import LOCOMO10, pin_path
from memorybench.memory import build_memory_method, memory_notes, open_build_context
from memorybench.memory.base import BuildContext, BuiltMemory
from memorybench.pack.run_pack import RunPack, pack_path
from memorybench.pack.schemas import LineageRow, MemoryManifestRow, Prediction, RunMeta
from memorybench.pack.trace_md import write_trace_md
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.run_id import config_sha256, run_id


@dataclass
class QaResult:
    pack_root: Path
    metrics: dict[str, Any]
    answered_now: int


def resolve_dataset(cfg: DictConfig) -> tuple[Path, dict[str, Any]]:
    """The dataset file and its provenance (the pin, or an explicit path and its hash)."""
    if cfg.dataset.get("path"):
        path = Path(str(cfg.dataset.path)).expanduser().resolve()
        return path, {"name": str(cfg.dataset.name), "path": str(path), "sha256": file_sha256(path) if path.is_file() else None, "pinned": False}
    path = pin_path(LOCOMO10, cfg.paths.pins)
    return path, {
        "name": str(cfg.dataset.name),
        "path": str(path),
        "sha256": LOCOMO10.sha256,
        "pinned": True,
        "repository": LOCOMO10.repository,
        "commit": LOCOMO10.commit,
        "source_path": LOCOMO10.source_path,
    }


def select_questions(conversations: Sequence[Conversation], max_questions: int | None) -> list[Question]:
    questions = list(iter_questions(conversations))
    return questions[:max_questions] if max_questions else questions


def _estimate_tokens(text: str) -> int:
    # conservative for small-vocabulary models: about 3 characters per token
    return len(text) // 3 + 1


def run_qa(cfg: DictConfig, *, overrides: Sequence[str] = (), choices: dict[str, str] | None = None, progress: bool = True) -> QaResult:
    rid, sha = run_id(cfg), config_sha256(cfg)
    data_path, data_info = resolve_dataset(cfg)
    conversations = load_locomo(data_path)
    questions = select_questions(conversations, cfg.max_questions)
    total = sum(len(c.questions) for c in conversations)

    remote = _remote_storage(cfg)
    relpath = f"{cfg.name}/runs/{rid}"
    if remote is not None:
        # journals need appends: the pack is built in a local work folder, then published
        if remote.exists(f"{relpath}/_SUCCESS"):
            print(f"pack {cfg.storage.root}/{relpath} is complete; nothing to do", file=sys.stderr)
            return QaResult(Path(str(cfg.storage.root)) / relpath, json.loads(remote.read_bytes(f"{relpath}/metrics.json")), 0)
        pack_dir = Path(str(cfg.paths.cache)).expanduser().resolve() / "work" / relpath
    else:
        pack_dir = pack_path(cfg.storage.root or cfg.paths.packs, str(cfg.name), rid)
    pack = RunPack(pack_dir)
    if pack.is_complete() and remote is None:
        metrics = json.loads(pack.path("metrics.json").read_text("utf-8"))
        print(f"pack {pack.root} is complete; nothing to do", file=sys.stderr)
        return QaResult(pack.root, metrics, 0)
    pack.open()
    answered, built = pack.resume()

    cache_dir = Path(str(cfg.paths.cache)).expanduser().resolve()
    method = build_memory_method(cfg)
    needed = [c for c in conversations if any(q.sample_id == c.sample_id for q in questions)]
    ctx = open_build_context(cfg, pack, cache_dir, method=method, conversations=needed)

    # Software-only memory is built up front (cheap), so that the embedded model's
    # context can be sized from the longest prompt of the run.
    memories: dict[str, BuiltMemory] = {}
    if method.software_only and not method.question_dependent:
        memories = {c.sample_id: method.build(c, ctx) for c in needed}
    template_chars = len(reader_template(cfg).text) if cfg.answerer.name == "reader" else 0
    longest = max((_estimate_tokens(m.text or "") for m in memories.values()), default=0) + template_chars // 3 + 64
    bound = method.memory_tokens_bound(needed)
    if bound:
        # writer and retrieval memory is built later: size the local reader from its upper bound
        longest = max(longest, int(bound * 1.5) + template_chars // 3 + 64)

    started_at = utc_now()
    meta_path = pack.path("run_meta.json")
    resumed = 0
    if meta_path.is_file():
        previous = json.loads(meta_path.read_text("utf-8"))
        started_at, resumed = previous["started_at"], int(previous.get("resumed", 0)) + 1
    pack.write_text("config.resolved.yaml", OmegaConf.to_yaml(cfg))

    answered_now = 0
    with open_answerer(cfg, pack, cache_dir=cache_dir, longest_prompt_tokens=longest) as answerer:
        commit, dirty = git_state()
        meta = RunMeta(
            run_id=rid,
            name=str(cfg.name),
            config_sha256=sha,
            overrides=list(overrides),
            choices=dict(choices or _choices(cfg)),
            git_commit=commit,
            git_dirty=dirty,
            package_versions=package_versions(),
            data=data_info,
            prompts=_prompt_hashes(pack),
            models=answerer.models + ctx.models,
            started_at=started_at,
            question_count=len(questions),
            questions_total=total,
            is_prefix=len(questions) < total,
            max_questions=cfg.max_questions,
            local_model=answerer.is_local,
            notes=_notes(cfg, answerer.is_local, len(questions), total) + memory_notes(cfg),
            resumed=resumed,
        )
        pack.write_json("run_meta.json", meta)
        index_of = {q.question_id: i for i, q in enumerate(questions)}
        bar = tqdm(total=len(questions), initial=len(answered), disable=None if progress else True, desc=rid, unit="q", file=sys.stderr)
        try:
            for conversation in needed:
                todo = [q for q in conversation.questions if q.question_id in index_of and q.question_id not in answered]
                if not todo:
                    continue
                memory = memories.get(conversation.sample_id) or method.build(conversation, ctx)
                if conversation.sample_id not in built:
                    _store_memory(pack, method, memory)
                    built.add(conversation.sample_id)
                answerer.start_conversation(
                    ConversationView(conversation.sample_id, conversation.speaker_a, conversation.speaker_b, conversation.sessions)
                )
                for question in todo:
                    asked = question.asked()
                    text = method.for_question(memory, asked, ctx)
                    memory_sha, _ = pack.store_text(text, _memory_relpath(method, memory))
                    answer = answerer.answer(asked, text)
                    pack.predictions.append(
                        Prediction(
                            question_id=question.question_id,
                            sample_id=question.sample_id,
                            index=index_of[question.question_id],
                            category=question.category,
                            question=question.question,
                            prediction=answer.prediction,
                            gold=question.answer,
                            adversarial_answer=question.adversarial_answer,
                            reader_payload_sha256=answer.reader_payload_sha256,
                            memory_sha256=memory_sha,
                            answerer=answerer.name,
                        )
                    )
                    answered.add(question.question_id)
                    answered_now += 1
                    bar.update(1)
        finally:
            bar.close()
            ctx.close()
            pack.close()
        models = answerer.models + ctx.models

    # every question answered: scores, references, audit walk, then _SUCCESS last
    from memorybench.stages.rescore import rescore  # scorers import nltk: only when needed

    metrics = rescore(pack.root)
    pack.write_json("REFERENCE_PIN.json", pack.reference_pin())
    pack.write_json("run_meta.json", meta.model_copy(update={"models": models, "ended_at": utc_now()}))
    write_trace_md(pack, data_path)
    pack.mark_success()
    if remote is not None:
        from memorybench.storage import publish_pack

        publish_pack(pack.root, remote, relpath)
    return QaResult(pack.root, metrics, answered_now)


def _remote_storage(cfg: DictConfig):  # -> Storage | None
    """The object store behind a `gs://` storage.root, else None (a local folder)."""
    root = cfg.storage.get("root")
    if not root or not str(root).startswith("gs://"):
        return None
    from memorybench.storage import open_storage

    return open_storage(str(root))


def _prompt_hashes(pack: RunPack) -> dict[str, str]:
    """sha256 of every prompt file the answerer copied into prompts/."""
    folder = pack.path("prompts")
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _memory_relpath(method: Any, memory: BuiltMemory) -> str | None:
    """Question-independent memory lives once per conversation under memory/dumps/."""
    return None if method.question_dependent else f"memory/dumps/{memory.sample_id}.txt"


def _store_memory(pack: RunPack, method: Any, memory: BuiltMemory) -> None:
    """Write a conversation's memory and lineage; the manifest row goes last (the commit)."""
    for item in memory.items:
        pack.lineage.append(LineageRow(sample_id=memory.sample_id, item_id=item.item_id, sources=list(item.sources)))
    lineage = pack.path("memory/lineage.jsonl")
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


def _notes(cfg: DictConfig, local: bool, n: int, total: int) -> list[str]:
    notes = []
    if local:
        notes.append("Answers from the embedded local model: not comparable with published LoCoMo numbers.")
    if n < total:
        notes.append(f"Prefix run: the first {n} of {total} questions in file order (max_questions={cfg.max_questions}).")
    if cfg.memory.name == "session_summaries":
        notes.append(f"session_summaries from the {cfg.memory.source} summaries.")
    return notes


def print_summary(result: QaResult) -> None:
    from memorybench.stages.rescore import format_table

    print(format_table(result.metrics))
    print(f"pack: {result.pack_root}")


__all__ = ["QaResult", "print_summary", "run_qa", "select_questions"]

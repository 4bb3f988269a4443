"""How an import writes its pack, for every benchmark's importer (LoCoMo's, LongMemEval's, BEAM's).

The pack is built in a temp folder beside its place and renamed there whole, so a pack at
its place is always finished; an import run again finds the finished pack and writes
nothing. A file's own judge labels become a judge folder of the autorater's records, with
no call made (empty traces).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from pathlib import Path

from omegaconf import OmegaConf

from memorybench.answer.imported import REPRODUCTION, ImportSource, Reproduction
from memorybench.benchmark import recorded
from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.atomic import fsync_dir, write_atomic
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict
from memorybench.pack.reader import PackReader
from memorybench.hashing import sha256_text
from memorybench.pack.schemas import Prediction, RunMeta, dump_line
from memorybench.pack.success import write_success
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.run_id import plugins_used


#: an imported pack's answerer and memory: its answers were made elsewhere, no memory built here
IMPORTED = "imported"
#: every imported answer's memory_sha256: no memory was given to a model here (the sha256 of "")
NO_MEMORY_SHA256 = sha256_text("")


def imported_prediction(question: Any, index: int, prediction: str) -> Prediction:
    """The predictions.jsonl row of a released answer (`prediction`) to `question` (a
    `memorybench.data.Question`), the `index`-th the pack holds."""
    return Prediction(
        question_id=question.question_id,
        sample_id=question.sample_id,
        index=index,
        category=question.category,
        question=question.question,
        prediction=prediction,
        gold=question.answer,
        adversarial_answer=question.adversarial_answer,
        memory_sha256=NO_MEMORY_SHA256,
        answerer=IMPORTED,
    )


def write_import_meta(
    pack: Any,
    cfg: Mapping[str, Any],
    *,
    run_id: str,
    config_sha256: str,
    dataset: str,
    data: Any,
    benchmark: Any,
    question_count: int,
    questions_total: int,
    notes: Sequence[str],
    partial: Any = None,
    **more: Any,
) -> RunMeta:
    """Write an imported pack's config.resolved.yaml and run_meta.json (`pack`, a `RunPack`) and
    return the run_meta record: answerer and memory `imported`, no prompt, no model, every
    question the file answers (never a prefix); `benchmark` is the pack's `Benchmark`, `data`
    run_meta's `data`, `more` any other run_meta field (LoCoMo's `categories`)."""
    commit, dirty = git_state()
    meta = RunMeta(
        run_id=run_id,
        name=str(cfg["name"]),
        config_sha256=config_sha256,
        overrides=[],
        choices={"dataset": dataset, "memory": IMPORTED, "answerer": IMPORTED},
        git_commit=commit,
        git_dirty=dirty,
        package_versions=package_versions(),
        data=data,
        benchmark=recorded(benchmark),
        prompts={},
        models=[],
        started_at=utc_now(),
        question_count=question_count,
        questions_total=questions_total,
        is_prefix=False,
        max_questions=None,
        local_model=False,
        notes=list(notes),
        plugins=plugins_used(cfg),
        partial=partial,
        **more,
    )
    pack.write_text(layout.CONFIG, OmegaConf.to_yaml(OmegaConf.create(cfg)))
    pack.write_json(layout.RUN_META, meta)
    return meta


class AlreadyImported(Exception):
    """The same import finished at `final` while this one was writing (two imports at once)."""

    def __init__(self, final: Path) -> None:
        super().__init__(str(final))
        self.final = final


def finished_pack(final: Path) -> PackReader | None:
    """The finished pack at `final` (an import run again), None where there is none yet; a
    folder there that is not a finished pack is refused."""
    if (final / layout.SUCCESS).is_file():
        return PackReader.open(final)
    if final.exists():
        raise UserError(f"{final} exists but is not a finished pack (no _SUCCESS); move it aside and import again")
    return None


@contextlib.contextmanager
def built_whole(final: Path, rid: str) -> Iterator[Path]:
    """A new temp folder beside `final` to build the pack in: renamed to `final` whole when
    the block ends, removed when it raises."""
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{rid}.", suffix=".importing", dir=final.parent))
    except OSError as e:
        raise UserError(
            f"cannot create the pack under {final.parent} ({e.strerror}); pass --packs DIR, a writable folder"
        ) from None
    try:
        yield work
        try:
            os.replace(work, final)  # whole: a pack at its place is finished
        except OSError as e:
            if (final / layout.SUCCESS).is_file():  # another import of the same files finished first
                raise AlreadyImported(final) from None
            raise UserError(
                f"cannot put the imported pack at {final} ({e.strerror}); move what is there aside and import again"
            ) from None
        fsync_dir(final.parent)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def close_import(root: Path, pack: Any, meta: Any, reproduction: Reproduction, trace_md: Callable[[], str]) -> None:
    """The last writes of every import, in order: its reproduction, its TRACE.md (made after the
    reproduction is on disk: it may read it), run_meta.json with its end time, then `_SUCCESS`
    (the sha256 of every file above)."""
    pack.write_text(REPRODUCTION, reproduction.dump())
    pack.write_text(layout.TRACE_MD, trace_md())
    pack.write_json(layout.RUN_META, meta.model_copy(update={"ended_at": utc_now()}))
    write_success(root)


def write_imported_judge(root: Path, meta: AutoraterMeta, verdicts: Sequence[AutoraterVerdict]) -> None:
    """`autorater/<judge id>/` of labels a file gave: meta, verdicts, no traces (no call was
    made), the metrics computed from the verdicts, then its `_SUCCESS`."""
    from memorybench.stages.autorater_metrics import autorater_metrics

    def write(name: str, text: str) -> None:
        write_atomic(root / layout.autorater_file(meta.judge_id, name), text.encode("utf-8"))

    write(layout.JUDGE_META, meta.dump())
    write(layout.JUDGE_VERDICTS, "".join(dump_line(v) for v in verdicts))
    write(layout.JUDGE_TRACES, "")  # no call was made
    write(layout.JUDGE_METRICS, autorater_metrics(PackReader.open(root), meta.judge_id).dump())
    write_success(root, under=layout.autorater_dir(meta.judge_id))


def trace_head(rid: str, source: ImportSource, question_id: str) -> list[str]:
    """The first lines of an imported pack's TRACE.md: which answer, from which file, no call."""
    results = source.files[0]
    published = f", published at {source.source.repository}@{source.source.commit}:{source.source.path}" if source.source else ""
    return [
        f"# Trace of one imported answer: {question_id}",
        "",
        f"Run `{rid}`: imported from `{results.name}` (format `{source.format}`, sha256 `{results.sha256}`{published}). "
        "No model call was made here. Every path below is relative to this pack.",
        "",
    ]

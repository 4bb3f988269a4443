"""The `autorater` stage: an LLM judge (DESIGN.md 5.2) over a finished pack, resumable.

It reads only the pack's stored `predictions.jsonl`, in saved order, and never reruns
the reader. What is asked and how a reply is read is the judge protocol, a registered
judge (`memorybench.registry.JUDGES`; `judge.protocol`, default `mem0`: Mem0's pinned
ACCURACY_PROMPT, one user message, temperature 0, JSON mode, CORRECT-only scoring,
category 5 skipped; `memorybench.score.judge.Mem0Judge`; or `longmemeval` on a LongMemEval
pack: the authors' per-type prompts, `memorybench.benchmarks.longmemeval.judge`). This module is the loop
around it: what to judge, resuming, journalling verdicts and traces, metrics at the
end. A skipped row gets no request, only a SKIPPED verdict. Nothing the `qa` stage wrote
is touched.

Each judge has its own folder, named by its identity (`JudgeIdentity`: the protocol, the
model as configured, the template's sha256, the temperature, the response format), so
several judges of one pack coexist:

    autorater/<judge id>/autorater_meta.json       autorater_meta.v2: the identity, the config, passes, times
    autorater/<judge id>/prompts/<template>        the templates the traces refer to (one, or one per type)
    autorater/<judge id>/traces.jsonl              judge_trace.v1: request, ChatResult (attempts...) or error
    autorater/<judge id>/autorater_verdicts.jsonl  autorater_verdict.v1: one row per (question, pass)
    autorater/<judge id>/autorater_metrics.json    autorater_metrics.v1: J, Mem0 F1 / BLEU-1, counts
    autorater/<judge id>/_SUCCESS                  written last: success.v1, the sha256 of every file above

The judge id is `<protocol>-<model>-<8 hex>`, e.g. `mem0-gpt-4o-mini-1a2b3c4d`. Where the
judge is served (provider, base URL) and how it is paced are not part of it: the same
model behind a corrected URL is the same judge, in the same folder.

Verdicts and traces are appended as the calls return (the trace first, the verdict as
the commit), so a rerun after a kill resumes: torn lines are dropped, a trace without
its verdict is dropped and redone, done (question, pass) pairs are skipped, and the
verdict file ends equal to an uninterrupted run's. A call that fails after its retries
(`ModelCallError`) and a reply without a readable label are FAILED verdicts: counted,
listed, excluded from J, never scored WRONG; the stage goes on. Five failed calls in a
row, or a run in which no call was answered at all, mean the endpoint is down: those are
dropped again and the stage stops with one line (a rerun resumes there), rather than
writing a FAILED verdict for every row.

What a folder holds binds a rerun only once it holds a verdict of a request: until then
(a wrong URL, a typo) the next start takes the folder over with its own settings. After
that, a rerun with other request settings (`judge_settings`: max_tokens, seed, ...) or
another model sent is refused, so one folder's verdicts come from one judge. Passes:

    --passes N, the folder has N        finished: nothing to do; else resume
    --passes N, the folder has k < N    passes k+1..N are added, then metrics and _SUCCESS rewritten
    --passes N, the folder has k > N    finished: one line, nothing changed; unfinished: refused

A folder that got its passes in steps ends with the same verdicts, traces and metrics
as one judged with all its passes at once (latency aside).

The metrics and the printed table are `memorybench.stages.autorater_metrics`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memorybench.errors import ModelCallError, OneLineParser, UserError, report
from memorybench.llm.endpoints import check_endpoint_installed, open_endpoint
from memorybench.llm.sizing import estimate_tokens
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterMetrics, AutoraterVerdict
from memorybench.pack.journal import Journal
from memorybench.pack.journal_keys import JUDGE_JOURNAL_KEYS, repeated_rows
from memorybench.pack.lock import folder_lock
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import require_pack_folder, write_atomic
from memorybench.pack.schemas import Prediction
from memorybench.pack.success import write_success
from memorybench.progress import Progress
from memorybench.provenance import git_state, package_versions, utc_now
from memorybench.stages.autorater_judge import (
    _judge_one,
    _judge_several,
    _validate_judge,
    check_benchmark,
    configured_judge,
    judge_id_of,
    judge_identity,
    judge_protocol,
    judge_settings,
    pack_benchmark,
    templates_stored_at,
)
from memorybench.stages.autorater_metrics import (
    JUDGED_CATEGORIES,
    autorater_metrics,
    compute_autorater_metrics,
    format_autorater_table,
)

__all__ = [
    "AUTORATER_DIR",
    "JUDGED_CATEGORIES",
    "autorater_main",
    "compute_autorater_metrics",
    "finished_pack",
    "format_autorater_table",
    "judge_id_of",
    "judge_identity",
    "judge_protocol",
    "judge_settings",
    "run_autorater",
    "wave_marker",
]

AUTORATER_DIR = layout.AUTORATER


# -- the pack ---------------------------------------------------------------------------
def finished_pack(pack_root: str | os.PathLike[str]) -> tuple[PackReader, list[Prediction]]:
    """A finished local pack and its stored answers, in saved order (read only)."""
    root = require_pack_folder(pack_root)
    pack = PackReader.open(root)
    if not pack.exists(layout.PREDICTIONS):
        raise UserError(f"{root} is not a pack: it has no predictions.jsonl; pass <packs>/<name>/runs/<run_id>")
    if not pack.is_complete():
        raise UserError(
            f"pack {root} is not finished (no {layout.SUCCESS}); rerun its `memorybench qa` command to finish it, then judge it"
        )
    rows = pack.predictions()
    seen: set[str] = set()
    for row in rows:
        if row.question_id in seen:
            raise UserError(
                f"{pack.uri(layout.PREDICTIONS)}: question {row.question_id} appears twice; run `memorybench verify` on the pack"
            )
        seen.add(row.question_id)
    return pack, rows


# -- the judge: memorybench.stages.autorater_judge -------------------------------------
def _check_settings(previous: AutoraterMeta, settings: dict[str, Any], out: Path) -> None:
    if previous.judge_settings != settings:
        changed = sorted(
            k for k in set(previous.judge_settings) | set(settings) if previous.judge_settings.get(k) != settings.get(k)
        )
        detail = ", ".join(f"{k}={previous.judge_settings.get(k)!r}" for k in changed)
        raise UserError(
            f"{out} holds verdicts of this judge with {detail}; rerun with those settings to resume or add passes, "
            f"or move {out} aside to judge again with the new ones"
        )


def _done_keys(verdicts: Journal, ids: set[str], passes: int, out: Path) -> set[tuple[str, int]]:
    done: set[tuple[str, int]] = set()
    for verdict in verdicts.records(AutoraterVerdict):
        key = (verdict.question_id, verdict.pass_)
        if key in done:
            raise UserError(f"{verdicts.path} has two verdicts for {key}; move {out} aside and judge again")
        if verdict.question_id not in ids or not 1 <= key[1] <= passes:
            raise UserError(f"{verdicts.path} has a verdict {key} that is not in this pack; move {out} aside and judge again")
        done.add(key)
    return done


def _key(row: Mapping[str, Any]) -> tuple[str, int]:
    return row["question_id"], int(row["pass"])


def _binding(verdicts: Journal) -> bool:
    """Whether the folder holds a verdict of a request (a SKIPPED verdict asks nothing, so binds nothing)."""
    return any(row.get("request_sha256") for row in verdicts.rows())


def _done_metrics(pack: PackReader, judge_id: str) -> dict[str, Any]:
    done_metrics = pack.record(layout.autorater_file(judge_id, layout.JUDGE_METRICS), AutoraterMetrics)
    return done_metrics.model_dump(mode="json", by_alias=True)


def _finished_judge(pack: PackReader, judge_id: str, passes: int) -> dict[str, Any] | None:
    """The metrics of a finished judge folder with at least `passes` passes (nothing to do);
    None when passes are to be added. A folder whose journals hold a (question, pass) twice
    (two writers at once) is not called finished: one line sends the user to verify."""
    folder = layout.autorater_dir(judge_id)
    previous = pack.record(layout.autorater_file(judge_id, layout.JUDGE_META), AutoraterMeta)
    if passes > previous.passes:
        return None
    for name, fields in JUDGE_JOURNAL_KEYS.items():
        relpath = layout.autorater_file(judge_id, name)
        for repeat in repeated_rows(enumerate(pack.rows(relpath), start=1), fields):
            raise UserError(
                f"{pack.uri(folder)} has {layout.SUCCESS} but is inconsistent: {name} {repeat.describe()}; run "
                f"`memorybench verify {pack.uri()}` for every finding, then move {pack.uri(folder)} aside and judge again"
            )
    more = f", more than --passes {passes}; nothing changed" if passes < previous.passes else "; nothing to do"
    print(f"{folder} of {pack.uri()} is complete with {previous.passes} passes{more}", file=sys.stderr)
    return _done_metrics(pack, judge_id)


def _write_success(root: Path, judge_id: str) -> None:
    """The judge folder's `_SUCCESS`, written last and create-only, with the sha256 of every
    file of the folder (`memorybench.pack.success`). A folder that gets more passes loses
    its marker before its first new verdict, so a marker never vouches for old bytes."""
    write_success(root, under=layout.autorater_dir(judge_id))


def run_autorater(
    pack_root: str | os.PathLike[str],
    cfg_judge: DictConfig,
    *,
    passes: int = 1,
    pins: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    prices: Mapping[str, Any] | None = None,
    progress: bool = False,
    max_consecutive_failures: int = 5,
) -> dict[str, Any]:
    """Judge a finished pack's stored answers; return the judge's `autorater_metrics.json` content.

    `cfg_judge` is a composed `judge` node (conf/judge/*.yaml). `pins` is the pins folder
    (None: $MEMORYBENCH_PINS, else the user cache), `cache_dir` the response-cache folder
    (used only with judge.cache=true; default `autorater/cache`), `prices` the price table.
    The judge writes `autorater/<judge id>/` (`judge_id_of`). A rerun resumes; a finished
    judge with as many passes is not redone; more passes are added (module docstring).

    A call that fails after its retries is a FAILED verdict and the stage goes on, unless
    `max_consecutive_failures` calls fail in a row, or every call of this run fails: then
    the endpoint is down, not the row, so those verdicts are dropped again and a
    `ModelCallError` stops the stage (a rerun resumes there).
    """
    pack, rows = finished_pack(pack_root)
    root = pack.local_root
    assert root is not None
    node = cfg_judge if isinstance(cfg_judge, DictConfig) else OmegaConf.create(dict(cfg_judge))
    judge_cfg, judge, replaced = configured_judge(node, pins)
    _validate_judge(node, passes)
    check_benchmark(judge, pack_benchmark(pack), str(root))
    if hasattr(judge, "bind"):  # a judge that reads scorer-side gold beyond the rows' (BEAM's rubrics)
        judge.bind(_dataset_path(pack))
    identity = judge_identity(judge_cfg, judge)
    settings = judge_settings(judge_cfg)
    judge_id = identity.judge_id
    folder = layout.autorater_dir(judge_id)
    out = root / folder
    prompts = layout.autorater_file(judge_id, layout.JUDGE_PROMPTS)
    meta_path = root / layout.autorater_file(judge_id, layout.JUDGE_META)
    success = root / layout.autorater_file(judge_id, layout.SUCCESS)

    if success.is_file() and meta_path.is_file():
        done = _finished_judge(pack, judge_id, passes)  # read only: a finished judge needs no lock
        if done is not None:
            return done
    check_endpoint_installed("judge", node)  # judge=local without the local extra: one line, nothing written
    # one writer per judge folder: a second autorater of this judge meets the lock and stops
    # with one line, having written nothing
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out, "judge folder"):
        # only this judge's own folder counts here (a flat-layout judge of the same id is left as it is)
        previous = pack.record(layout.autorater_file(judge_id, layout.JUDGE_META), AutoraterMeta) if meta_path.is_file() else None
        reopen = False
        if success.is_file():  # finished, perhaps by the writer that held the lock before us
            if previous is None:
                raise UserError(f"{out} has {layout.SUCCESS} but no {layout.JUDGE_META}; move {out} aside and judge again")
            done = _finished_judge(pack, judge_id, passes)
            if done is not None:
                return done
            _check_settings(previous, settings, out)
            reopen = True

        verdicts = Journal(out / layout.JUDGE_VERDICTS)
        traces = Journal(out / layout.JUDGE_TRACES)
        verdicts.recover()
        traces.recover()
        bound = previous if previous is not None and _binding(verdicts) else None
        if bound is not None:
            _check_settings(bound, settings, out)
            if passes < bound.passes:
                raise UserError(
                    f"{out} was started with --passes {bound.passes} and is not finished; rerun with --passes {bound.passes} "
                    f"to finish it (then --passes {passes} has nothing to do)"
                )
        else:
            # nothing binds: keep only what asks nothing (SKIPPED verdicts) and is within this run's passes
            verdicts.retain(lambda r: not r.get("request_sha256") and int(r["pass"]) <= passes)
        done = _done_keys(verdicts, {row.question_id for row in rows}, passes, out)
        # a trace written just before a kill, whose verdict never landed, is redone
        traces.retain(lambda r: _key(r) in done)

        for name, template in judge.templates.items():  # the templates the traces name
            copy = f"{prompts}/{name}"
            if not pack.exists(copy) or pack.read_text(copy) != template:
                write_atomic(root / copy, template.encode("utf-8"))

        longest = max((estimate_tokens(judge.prompt_text(r)) for r in rows if not judge.skips(r)), default=0)
        run_meta = pack.meta() if pack.exists(layout.RUN_META) else None
        started_at = bound.started_at if bound else utc_now()
        resumed = bound.resumed + 1 if bound else 0
        cache_path = Path(cache_dir).expanduser().resolve() if cache_dir else root / layout.AUTORATER_CACHE
        with open_endpoint(
            node, "judge", cache_dir=cache_path, prices=prices or {}, longest_prompt_tokens=longest, log_dir=out
        ) as endpoint:
            if bound is not None and bound.judge_model_sent != endpoint.model:
                raise UserError(
                    f"{out} holds verdicts of model {bound.judge_model_sent!r}, this judge now sends {endpoint.model!r}; "
                    f"set judge.model={bound.judge_model_sent} to resume, or move {out} aside to judge again"
                )
            if reopen:
                assert previous is not None
                added = f"{passes}" if passes == previous.passes + 1 else f"{previous.passes + 1}-{passes}"
                print(f"{folder} of {root} has {previous.passes} passes: adding passes {added}", file=sys.stderr)
                success.unlink()  # reopened: not finished again until the new passes are in
            commit, dirty = git_state()
            local = endpoint.is_local
            meta = AutoraterMeta(
                judge_id=judge_id,
                identity=identity,
                run_id=run_meta.run_id if run_meta else None,
                passes=passes,
                judge_config=judge_cfg,
                judge_settings=settings,
                judge=endpoint.identity,
                judge_model_sent=endpoint.model,
                prompt=judge.prompt_info(templates_stored_at(judge, prompts)),
                response_format=None if judge.response_format is None else dict(judge.response_format),
                package_versions=package_versions(),
                git_commit=commit,
                git_dirty=dirty,
                started_at=started_at,
                resumed=resumed,
                local_judge=local,
                notes=_notes(local, run_meta, judge) + replaced,
            )
            write_atomic(meta_path, meta.dump().encode("utf-8"))
            row_scores: dict[str, dict[str, float]] = {}
            bar = Progress(
                "autorater",
                passes * len(rows),
                initial=len(done),
                label=judge_id,
                unit="verdicts",
                rate_unit="verdict",
                enabled=progress,
            )
            # keys appended since the first of the current run of consecutive failed calls
            streak: list[tuple[str, int]] = []
            streak_failures = 0
            answered = 0
            last_error = ""
            try:
                try:
                    for n in range(1, passes + 1):
                        for index, row in enumerate(rows):
                            key = (row.question_id, n)
                            if key in done:
                                continue
                            base = dict(
                                question_id=row.question_id,
                                sample_id=row.sample_id,
                                index=index,
                                category=row.category,
                                pass_=n,
                                judge_prompt_sha256=judge.template_sha256,
                            )
                            if judge.skips(row):
                                verdicts.append(AutoraterVerdict(**base, status="SKIPPED"))
                                if streak:
                                    streak.append(key)
                            else:
                                if row.question_id not in row_scores:
                                    row_scores[row.question_id] = judge.row_scores(row)
                                if getattr(judge, "several_calls", False):  # BEAM: a call per rubric item
                                    several, verdict = _judge_several(
                                        endpoint, judge, row, n, judge_cfg, base, row_scores[row.question_id]
                                    )
                                    for trace in several:
                                        traces.append(trace)
                                else:
                                    trace, verdict = _judge_one(
                                        endpoint, judge, row, n, judge_cfg, base, row_scores[row.question_id]
                                    )
                                    traces.append(trace)
                                verdicts.append(verdict)
                                if verdict.failure == "model_call":
                                    streak.append(key)
                                    streak_failures += 1
                                    last_error = verdict.error or ""
                                    if streak_failures >= max_consecutive_failures:
                                        raise _EndpointDown(set(streak), last_error)
                                else:
                                    answered += 1
                                    streak.clear()
                                    streak_failures = 0
                            done.add(key)
                            bar.update(1)
                    if streak_failures and not answered:
                        # fewer calls than the limit, none answered: the endpoint, not the rows
                        raise _EndpointDown(set(streak), last_error)
                finally:
                    bar.close()
                    verdicts.close()
                    traces.close()
            except _EndpointDown as down:
                # not a row's failure but the endpoint's: drop the run of failures so a rerun redoes it
                dropped, error = down.keys, down.error
                verdicts.retain(lambda r: _key(r) not in dropped)
                traces.retain(lambda r: _key(r) not in dropped)
                raise ModelCallError(
                    f"the judge failed {streak_failures} calls in a row, the last: {error}; they are not kept "
                    "as verdicts: fix the endpoint and rerun the same command to resume"
                ) from None

        metrics = autorater_metrics(pack, judge_id, judge.judged_categories)
        write_atomic(root / layout.autorater_file(judge_id, layout.JUDGE_METRICS), metrics.dump().encode("utf-8"))
        identity_done = meta.judge.model_copy(update={"answered": metrics.judge.models_answered})
        write_atomic(meta_path, meta.model_copy(update={"judge": identity_done, "ended_at": utc_now()}).dump().encode("utf-8"))
        _write_success(root, judge_id)
        return metrics.model_dump(mode="json", by_alias=True)


def _dataset_path(pack: PackReader) -> Path:
    """The dataset the pack was run on, here and unchanged (one line otherwise)."""
    from memorybench.pack.walk import dataset_of

    data = pack.meta().data if pack.exists(layout.RUN_META) else None
    _, path, note = dataset_of(dict(data or {}))
    if note is not None or path is None:
        raise UserError(f"{pack.local_root}: this judge reads the rubrics of the dataset the pack was run on, and {note}")
    return path


class _EndpointDown(Exception):
    def __init__(self, keys: set[tuple[str, int]], error: str) -> None:
        super().__init__(error)
        self.keys = keys
        self.error = error


def _notes(local: bool, run_meta: Any, judge: Any) -> list[str]:
    notes = []
    if local:
        notes.append(f"Judged by the embedded local model: a local label, not comparable with {judge.published}.")
    if run_meta is not None and run_meta.local_model:
        notes.append("Answers from the embedded local model: not comparable with published numbers.")
    if run_meta is not None and run_meta.selection is not None:  # question_ids or question_sample: a part, labelled so
        from memorybench.stages.rescore import selection_label

        notes.append(selection_label(run_meta.selection.model_dump(mode="json")))
    elif run_meta is not None and run_meta.is_prefix:
        notes.append(f"Prefix run: the first {run_meta.question_count} questions only (max_questions).")
    return notes


# -- command line -----------------------------------------------------------------------
_ALLOWED_PREFIXES = ("judge", "paths.", "pricing.", "+pricing.")


def compose_judge(overrides: Sequence[str]) -> DictConfig:
    """Compose the project config with `judge=...`, `judge.KEY=...`, `paths.KEY=...` overrides."""
    from hydra import initialize_config_dir

    from memorybench import CONF_DIR
    from memorybench.plan import compose_spec

    for override in overrides:
        key = override.split("=", 1)[0]
        if "=" not in override or not (key == "judge" or key.startswith(_ALLOWED_PREFIXES)):
            raise UserError(
                f"autorater takes only judge=NAME, judge.KEY=VALUE, paths.KEY=VALUE or pricing.KEY=VALUE overrides, "
                f"got {override!r}; the pack's own config is fixed"
            )
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="memorybench-autorater"):
        spec = compose_spec(list(overrides))
    return spec.cfg


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog="memorybench autorater",
        description="Judge a finished pack's stored answers with an LLM judge: Mem0's (LoCoMo) or the LongMemEval "
        "authors' (writes <pack>/autorater/<judge id>/).",
    )
    parser.add_argument("pack", help="a finished pack folder: <packs>/<name>/runs/<run_id>")
    parser.add_argument(
        "overrides",
        nargs="*",
        help="judge=mem0|strict|longmemeval|openai_compatible|local, judge.KEY=VALUE "
        "(judge.protocol=mem0|strict|longmemeval), paths.KEY=VALUE",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="judge passes over every row (J mean and sd over passes); more than the judge has adds passes",
    )
    parser.add_argument(
        "--pins", help="pins folder with the ACCURACY_PROMPT (default: paths.pins, $MEMORYBENCH_PINS, user cache)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def autorater_main(argv: Sequence[str]) -> int:
    """`memorybench autorater PACK [--passes N] [--pins DIR] [judge=NAME judge.KEY=VALUE ...]`."""
    # cli.main prints a UserError raised here as one line and exits with its code.
    ns = _parser().parse_intermixed_args(list(argv))
    if ns.passes < 1:
        raise UserError(f"--passes {ns.passes} must be at least 1")
    root = Path(ns.pack).expanduser()
    finished_pack(root.resolve())  # a missing or unfinished pack fails before composing anything
    cfg = compose_judge(ns.overrides)
    pins = ns.pins or cfg.paths.pins
    metrics = run_autorater(
        root,
        cfg.judge,
        passes=ns.passes,
        pins=pins,
        cache_dir=cfg.paths.cache,
        prices=OmegaConf.to_container(cfg.pricing) if cfg.get("pricing") is not None else {},
        progress=not ns.quiet,
    )
    print(format_autorater_table(metrics))
    print(f"autorater: {root.resolve() / layout.autorater_dir(judge_id_of(cfg.judge, pins))}")
    return 0


def wave_marker(stage_args: Sequence[str]) -> str | None:
    """The file that says a wave's autorater is done on a pack: the named judge's `_SUCCESS`
    (`autorater/<judge id>/_SUCCESS`). None, so that no pack is skipped and each task decides,
    when --passes asks for more than one pass (a finished judge may have fewer) or when the
    judge cannot be named here (e.g. no pins on this machine)."""
    ns = _parser().parse_intermixed_args(["PACK", *stage_args])
    if ns.passes > 1:
        return None
    try:
        cfg = compose_judge(ns.overrides)
        judge_id = judge_id_of(cfg.judge, ns.pins or cfg.paths.pins)
    except UserError as e:
        print(f"memorybench: autorater wave: the judge cannot be named here ({e.message}); no pack is skipped", file=sys.stderr)
        return None
    return layout.autorater_file(judge_id, layout.SUCCESS)


def _module_main() -> int:
    try:
        return autorater_main(sys.argv[1:])
    except UserError as e:
        return report(e)


if __name__ == "__main__":
    sys.exit(_module_main())

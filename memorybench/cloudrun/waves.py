"""Waves: a later stage run as its own job over finished packs (DESIGN.md 1 and 8).

A wave starts only on packs with `_SUCCESS`. It is one execution with one task per
item, the same worker as a qa sweep (`python -m memorybench.cloudrun.worker`, which reads
a `wave_manifest.v1`), on Cloud Run (`executor="cloudrun"`) or as local processes
(`executor="local"`):

    stage          scope    unit of work                    Cloud Run job
    autorater      pack     one finished pack               memorybench-autorater
    rescore        pack     one finished pack               memorybench-autorater (any job of the image)
    aggregate      design   every finished pack of a name   memorybench-aggregate
    collect-full   design   every finished pack of a name   memorybench-collect-full

The stage is called by name, `<module>:<function>(argv) -> exit code` (registered in
`memorybench.registry.STAGES`, where a plugin may add one), so a
stage that is not installed fails before anything starts, naming what is missing.

A pack-scope task fetches its pack (`fetch_pack`: in place for a local root, a download
for gs://), calls the stage on it, and publishes the files the stage added (markers such
as `autorater/<judge id>/_SUCCESS` last, create-only); a stage never changes what an earlier stage
wrote, so a changed file is reported, not uploaded. A pack whose stage marker exists is
skipped. A design-scope task fetches every finished pack of its experiment name and
publishes what the stage wrote under `<root>/<name>/` (e.g. `<name>/collected/...`).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import Field

from memorybench.cloudrun.executors import ExecutionReport, ExecutionSettings, execute_manifest
from memorybench.cloudrun.manifest import latest_statuses, parse_manifest, write_manifest
from memorybench.cloudrun.records import ExecutionManifest
from memorybench.cloudrun.task import TaskContext, failure_recorded, task_done, task_item
from memorybench.errors import OneLineParser, UserError, did_you_mean
from memorybench.hashing import sha256_file
from memorybench.provenance import utc_now
from memorybench.records import Record
from memorybench.registry import STAGES

WAVES_DIR = "_waves"


@dataclass(frozen=True)
class WaveStage:
    name: str
    #: `module:function`; the function takes argv and returns an exit code (raising UserError on bad input)
    entry: str
    #: pack: one task per finished pack; design: one task per experiment name
    scope: Literal["pack", "design"]
    #: argv template: {pack} (a local pack folder), {packs} (a local packs root), {out} (output folder), {name}
    argv: tuple[str, ...]
    #: the Cloud Run job that runs it (infra/cloudrun/)
    job: str
    #: pack scope: a file inside the pack that says the stage is done (skipped then)
    marker: Optional[str] = None
    #: pack scope: `module:function(stage_args) -> marker or None`, for a marker that depends on
    #: the stage's arguments (the autorater's: the named judge's folder); replaces `marker`
    marker_of: Optional[str] = None


for _stage in (
    WaveStage(
        "autorater",
        "memorybench.stages.autorater:autorater_main",
        "pack",
        ("{pack}",),
        "memorybench-autorater",
        marker_of="memorybench.stages.autorater:wave_marker",
    ),
    WaveStage("rescore", "memorybench.cli:cmd_rescore", "pack", ("{pack}",), "memorybench-autorater"),
    WaveStage(
        "aggregate",
        "memorybench.compare.aggregate:aggregate_main",
        "design",
        ("{packs}", "--out", "{out}", "--experiment", "{name}"),
        "memorybench-aggregate",
    ),
    WaveStage(
        "collect-full",
        "memorybench.compare.collect:collect_main",
        "design",
        ("{packs}", "--out", "{out}", "--experiment", "{name}"),
        "memorybench-collect-full",
    ),
):
    STAGES.add(_stage.name, _stage)


def get_stage(name: str) -> WaveStage:
    if name not in STAGES:
        raise UserError(f"unknown wave stage {name!r}. {did_you_mean(name, STAGES.names())}")
    return STAGES.get(name)


def resolve_entry(entry: str) -> Callable[[Sequence[str]], int]:
    """The stage function named `module:function`, or a one-line error saying what is missing."""
    module_name, _, function = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise UserError(f"wave stage entry {entry}: module {module_name} is not installed in this build") from None
        raise
    fn = getattr(module, function, None)
    if not callable(fn):
        raise UserError(f"wave stage entry {entry}: {module_name} has no function {function}(argv)")
    return fn


class WaveItem(Record):
    index: int
    #: the experiment name (design scope) or the pack's name
    name: str
    #: pack scope: `<name>/runs/<run_id>`; design scope: null
    pack_relpath: Optional[str] = None
    #: design scope: every finished pack of the name
    packs: list[str] = Field(default_factory=list)


class WaveManifest(ExecutionManifest, schema="wave_manifest.v1"):
    """A wave's manifest: one item per task, the stage called by name on each."""

    wave_id: str
    stage: str
    entry: str
    scope: str
    argv: list[str]
    stage_args: list[str]
    marker: Optional[str] = None
    storage_root: str
    items: list[WaveItem]
    #: finished packs left out because their stage marker exists
    already_done: list[str] = Field(default_factory=list)

    @property
    def id(self) -> str:
        return self.wave_id


@dataclass
class WaveResult:
    manifest: WaveManifest | None
    report: ExecutionReport | None
    #: item index -> succeeded | skipped | failed
    states: dict[int, str] = field(default_factory=dict)
    messages: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s != "failed" for s in self.states.values())


# -- driver ------------------------------------------------------------------------------------
def plan_wave(
    stage: WaveStage, storage: Any, *, names: Sequence[str] = (), runs: Sequence[str] = (), force: bool = False
) -> tuple[list[WaveItem], list[str]]:
    """(items, packs already done) for a wave over the finished packs under the storage root."""
    from memorybench.storage import join, list_packs

    finished = list_packs(storage)  # only packs with _SUCCESS
    if names:
        finished = [p for p in finished if p.split("/")[0] in set(names)]
    if runs:
        finished = [p for p in finished if p.rsplit("/", 1)[-1] in set(runs)]
    if stage.scope == "pack":
        done = [p for p in finished if stage.marker and not force and storage.exists(join(p, stage.marker))]
        todo = [p for p in finished if p not in done]
        return [WaveItem(index=i, name=p.split("/")[0], pack_relpath=p) for i, p in enumerate(todo)], done
    by_name: dict[str, list[str]] = {}
    for pack in finished:
        by_name.setdefault(pack.split("/")[0], []).append(pack)
    return [WaveItem(index=i, name=n, packs=ps) for i, (n, ps) in enumerate(sorted(by_name.items()))], []


def run_wave(
    stage_name: str,
    root: str,
    *,
    names: Sequence[str] = (),
    runs: Sequence[str] = (),
    stage_args: Sequence[str] = (),
    executor: str = "local",
    job: str | None = None,
    project: str | None = None,
    region: str = "us-central1",
    api_endpoint: str | None = None,
    transport: str = "rest",
    anonymous: bool = False,
    parallelism: int = 1,
    max_retries: int = 0,
    task_timeout_s: int | None = None,
    poll_interval_s: float = 15.0,
    timeout_s: float | None = None,
    log_dir: str | Path | None = None,
    force: bool = False,
    say: Callable[[str], None] | None = None,
) -> WaveResult:
    """Run one wave of `stage_name` over the finished packs under `root` and wait for it."""
    from memorybench.storage import join, open_storage, storage_uri

    say = say or (lambda text: print(f"[wave] {text}", file=sys.stderr, flush=True))
    stage = get_stage(stage_name)
    resolve_entry(stage.entry)  # not installed: fail here, before any task starts
    if executor not in ("local", "cloudrun"):
        raise UserError(f"wave executor {executor!r} is unknown. {did_you_mean(executor, ('local', 'cloudrun'))}")
    if executor == "cloudrun" and not str(root).startswith("gs://"):
        raise UserError(
            f"a Cloud Run wave reads packs from storage its tasks can reach: pass --root gs://BUCKET/PREFIX, not {root!r}"
        )
    storage = open_storage(root)
    if stage.marker_of:
        stage = replace(stage, marker=resolve_entry(stage.marker_of)(stage_args))  # type: ignore[arg-type]
    items, done = plan_wave(stage, storage, names=names, runs=runs, force=force)
    for pack in done:
        say(f"{pack}: {stage.marker} exists; skipped")
    if not items:
        say(f"{stage.name}: no finished pack to work on under {storage.root}")
        return WaveResult(None, None)

    wave_id = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{stage.name}-{uuid.uuid4().hex[:6]}"
    prefix = join(WAVES_DIR, wave_id)
    job_short = job or stage.job
    if executor == "cloudrun":
        if not project:
            raise UserError("a Cloud Run wave needs --project PROJECT_ID")
        job_name = f"projects/{project}/locations/{region}/jobs/{job_short}"
    else:
        job_name = job_short
    manifest = WaveManifest(
        wave_id=wave_id,
        created_at=utc_now(),
        stage=stage.name,
        entry=stage.entry,
        scope=stage.scope,
        argv=list(stage.argv),
        stage_args=list(stage_args),
        marker=stage.marker,
        storage_root=storage.root,
        control_root=storage.root,
        control_prefix=prefix,
        manifest_uri=storage_uri(storage.root, join(prefix, "manifest.json")),
        launcher=executor,
        job=job_name,
        project=project,
        region=region if executor == "cloudrun" else "local",
        task_count=len(items),
        items=items,
        already_done=done,
    )
    write_manifest(manifest, storage)
    say(f"{stage.name}: {len(items)} task(s); manifest {manifest.manifest_uri}")
    settings = ExecutionSettings(
        remote=executor == "cloudrun",
        api_endpoint=api_endpoint,
        transport=transport,
        anonymous=anonymous,
        poll_interval_s=poll_interval_s,
        timeout_s=timeout_s,
        task_timeout_s=task_timeout_s,
        parallelism=parallelism,
        max_retries=max_retries,
        log_dir=Path(log_dir) if log_dir else None,
    )
    report = execute_manifest(manifest, settings, say)
    result = WaveResult(manifest, report)
    statuses = latest_statuses(manifest)
    for item in items:
        status = statuses.get(item.index)
        result.states[item.index] = status.status if status else "failed"
        result.messages[item.index] = status.message if status else (report.error or "no status record")
    failed = [i for i, s in result.states.items() if s == "failed"]
    say(f"{stage.name}: {len(items) - len(failed)} of {len(items)} task(s) done" + (f"; failed: {failed}" if failed else ""))
    summary = {
        "schema": "wave_execution.v1",
        "wave_id": wave_id,
        "execution": report.to_dict(),
        "states": result.states,
        "messages": result.messages,
    }
    storage.write_text(join(prefix, "execution.json"), _dump(summary))
    return result


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, default=str) + "\n"


# -- worker --------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    return sha256_file(path)


def _snapshot(folder: Path) -> dict[str, str]:
    from memorybench.storage._base import local_files

    return {rel: _sha256(folder / rel) for rel in local_files(folder)}


def _fill(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    return [a.format(**values) for a in argv]


def _call(fn: Callable[[Sequence[str]], int], argv: list[str]) -> int:
    code = fn(argv)
    return 0 if code is None else int(code)


def run_wave_task(data: Mapping[str, Any], ctx: TaskContext) -> int:
    """One task of a wave manifest (called by the worker, memorybench.cloudrun.worker, for `wave_manifest.v1`)."""
    from memorybench.storage import storage_uri

    manifest = parse_manifest(WaveManifest, data, ctx.manifest_uri)
    item = task_item(manifest.items, ctx, "wave")
    # what the task works on: its pack, or (design scope) the experiment's folder
    target = storage_uri(manifest.storage_root, item.pack_relpath or item.name)
    with failure_recorded(manifest, ctx, pack_uri=target):
        state, message = _run_item(manifest, item, ctx)
    return task_done(manifest, ctx, state, message, pack_uri=target)


def _run_item(manifest: WaveManifest, item: WaveItem, ctx: TaskContext) -> tuple[Literal["succeeded", "skipped"], str]:
    from memorybench.storage import SUCCESS, fetch_pack, join, open_storage

    storage = open_storage(manifest.storage_root)
    fn = resolve_entry(manifest.entry)
    work = ctx.work_dir or Path(tempfile.mkdtemp(prefix=f"memorybench-wave-{ctx.index}-"))
    try:
        if manifest.scope == "pack":
            relpath = str(item.pack_relpath)
            if not storage.exists(join(relpath, SUCCESS)):
                raise UserError(f"{storage.uri(relpath)} has no {SUCCESS}: a wave runs only on finished packs")
            if manifest.marker and storage.exists(join(relpath, manifest.marker)):
                return "skipped", f"{manifest.stage}: {storage.uri(join(relpath, manifest.marker))} exists; nothing to do"
            local = fetch_pack(storage, relpath, work / "pack")
            before = _snapshot(local) if storage.is_remote else {}
            code = _call(fn, _fill(manifest.argv, {"pack": str(local), "name": item.name}) + manifest.stage_args)
            if code != 0:
                raise UserError(f"{manifest.stage} on {storage.uri(relpath)} exited with {code}")
            if not storage.is_remote:
                return "succeeded", f"{manifest.stage}: done in place on {local}"
            after = _snapshot(local)
            added = sorted(set(after) - set(before))
            changed = sorted(rel for rel in before if rel in after and after[rel] != before[rel])
            if changed:
                print(
                    f"memorybench: {manifest.stage} changed {len(changed)} existing file(s) of the pack ({', '.join(changed[:3])}); "
                    "a stage never rewrites an earlier stage's files: not uploaded",
                    file=sys.stderr,
                )
            storage.upload_dir(local, relpath, files=added)
            return "succeeded", f"{manifest.stage}: {storage.uri(relpath)}: published {len(added)} new file(s)"
        # design scope: every finished pack of the name, then the stage's outputs under <root>/<name>/
        local_root = storage.local_path()
        if local_root is not None:
            packs_root, out = local_root, local_root / item.name
        else:
            packs_root, out = work / "packs", work / "out"
            for relpath in item.packs:
                fetch_pack(storage, relpath, packs_root / relpath)
        out.mkdir(parents=True, exist_ok=True)
        code = _call(
            fn, _fill(manifest.argv, {"packs": str(packs_root), "out": str(out), "name": item.name}) + manifest.stage_args
        )
        if code != 0:
            raise UserError(f"{manifest.stage} on {item.name} exited with {code}")
        if local_root is not None:
            return "succeeded", f"{manifest.stage}: {item.name}: {len(item.packs)} pack(s) -> {out}"
        from memorybench.storage import AlreadyExists

        try:
            files = storage.upload_dir(out, item.name)
        except AlreadyExists as e:
            print(f"memorybench: {e.message}; kept", file=sys.stderr)
            files = []
        return (
            "succeeded",
            f"{manifest.stage}: {item.name}: {len(item.packs)} pack(s) -> {storage.uri(item.name)} ({len(files)} file(s))",
        )
    finally:
        if ctx.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


# -- command line ----------------------------------------------------------------------------------
def wave_main(argv: Sequence[str]) -> int:
    """`memorybench wave STAGE --root ROOT [options] [-- STAGE ARGS...]`."""
    args = list(argv)
    stage_args: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, stage_args = args[:cut], args[cut + 1 :]
    parser = OneLineParser(
        prog="memorybench wave",
        description="Run a later stage as its own job over finished packs (one task per pack, or per experiment name).",
        epilog="Arguments after -- go to the stage (e.g. -- judge=mem0 --passes 3).",
    )
    parser.add_argument("stage", help=f"one of: {', '.join(STAGES.names())}")
    parser.add_argument(
        "--root", required=True, help="storage root holding <name>/runs/<run_id>/ (a folder or gs://BUCKET/PREFIX)"
    )
    parser.add_argument("--name", action="append", default=[], help="only packs of this experiment name (repeatable)")
    parser.add_argument("--run", action="append", default=[], help="only this run id (repeatable)")
    parser.add_argument("--executor", default="local", choices=("local", "cloudrun"))
    parser.add_argument("--job", help="Cloud Run job (default: the stage's, see infra/cloudrun/)")
    parser.add_argument("--project", help="GCP project (cloudrun)")
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--api-endpoint", help="Cloud Run Admin API endpoint (a stand-in)")
    parser.add_argument("--anonymous-credentials", action="store_true", help="cloudrun: no credentials (a local stand-in only)")
    parser.add_argument("--parallelism", type=int, default=1, help="local: tasks at once")
    parser.add_argument("--max-retries", type=int, default=0, help="local: retries of a failed task")
    parser.add_argument("--poll-interval", type=float, default=15.0, help="cloudrun: seconds between polls")
    parser.add_argument("--force", action="store_true", help="also packs whose stage marker exists")
    ns = parser.parse_args(args)
    result = run_wave(
        ns.stage,
        ns.root,
        names=ns.name,
        runs=ns.run,
        stage_args=stage_args,
        executor=ns.executor,
        job=ns.job,
        project=ns.project or os.environ.get("GOOGLE_CLOUD_PROJECT"),
        region=ns.region,
        api_endpoint=ns.api_endpoint,
        anonymous=ns.anonymous_credentials,
        parallelism=ns.parallelism,
        max_retries=ns.max_retries,
        poll_interval_s=ns.poll_interval,
        force=ns.force,
    )
    for index, state in sorted(result.states.items()):
        print(f"{index}\t{state}\t{result.messages.get(index, '')}")
    return 0 if result.ok else 1

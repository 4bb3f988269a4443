"""MLflow logging of finished packs, from the driver only (DESIGN.md 8).

Workers never log. The driver (the process that ran or launched a sweep, or
`memorybench track`) calls `log_packs` once the packs are written:

* the MLflow experiment is created once (or found) and its id passed on; the global
  `mlflow.set_experiment` is never used;
* one parent run per sweep (found again by its `memorybench.sweep` tag, so logging the
  same sweep twice reuses it);
* one nested run per finished pack (`_SUCCESS`), tagged `memorybench.pack_key` =
  `<run_id>@<config_sha256>`: a pack whose key is already in the experiment is not logged
  again (a run left unfinished by a crash is deleted and logged anew), unless its results
  changed since (a judge added J, a rescore): the run is tagged with the sha256 of what was
  logged (`memorybench.results_sha256`), and a pack whose params and metrics hash
  otherwise gets its new metrics, params and artifacts logged into the same run. Logging
  is therefore idempotent: `track`, `autorater`, `track` puts J into the run of the first.

A nested run holds: params (the chosen options, the flattened `config.resolved.yaml`
without paths/storage/tracking/pricing, hashes of config, data and prompts, model ids
requested and answered, each judge's identity under `judge/<judge id>/...`), metrics
(LoCoMo F1 overall and `locomo_f1_cat1..5`, EM, token F1, Mem0 F1/BLEU-1, calls, tokens
and cost of the build, the answers, the judges and their total, latency p50/p95, and
each judge's J as `j_mean/<judge id>`, `j_cat1/<judge id>`, ...: the run summary's
numbers, `memorybench.compare.summary`, under MLflow's names; a LongMemEval pack's under its
own, `longmemeval_accuracy/<judge id>`, ...: `pack_figures.benchmark_metrics`) and artifacts (the pack's
files under `pack/`, or `pack_uri.txt` when the pack lives on gs://, and
`config.resolved.yaml`).

Several drivers may log to one sqlite store: one at a time, under a lock beside the
database, and a store a kill left half-built is rebuilt (`memorybench.tracking.sqlite_store`).

No secret reaches MLflow: no environment variable is read into a param or tag; the
config holds environment variable *names* only (`api_key_env`), keys that look like
credentials are dropped anyway, every param is scrubbed of known credential values, and URLs
lose any `user:password@` part and query string.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from memorybench.errors import OneLineParser, UserError
from memorybench.hashing import sha256_text
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.tracking.pack_figures import benchmark_metrics, calibration_metrics, interval_metrics
from memorybench.secrets import clean_url, scrub
from memorybench.compare.aggregate import Location, scan_packs
from memorybench.compare.summary import CATEGORIES, JUDGED_CATEGORIES, KIND_SCORERS, SUBSETS, judge_key, run_summary
from memorybench.tracking.sqlite_store import prepare_sqlite_store, sqlite_file, store_lock
from memorybench.score.scorers import kind_column, subset_column

if TYPE_CHECKING:  # mlflow is imported lazily: it takes seconds
    from mlflow.tracking import MlflowClient

__all__ = [
    "TrackedRun",
    "TrackingResult",
    "default_tracking_uri",
    "log_packs",
    "log_run_specs",
    "pack_metrics",
    "pack_params",
    "print_tracking",
    "results_sha256",
    "sweep_name",
    "track_main",
    "tracking_uri_from_config",
]

#: config nodes that are not part of what was run (machine paths, storage, prices)
EXCLUDED_CONFIG = frozenset({"hydra", "paths", "storage", "tracking", "pricing", "launcher"})
#: a config key whose last part looks like a credential is never logged (the config holds
#: env var names only; this is a second guard)
_SECRET_KEY = re.compile(r"(^|_)(api_?key|secret|password|passwd|token|access_key|credentials?)$", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{30,})")
_BAD_KEY_CHARS = re.compile(r"[^A-Za-z0-9_.\-/ ]")

TAG_KIND = "memorybench.kind"
TAG_SWEEP = "memorybench.sweep"
TAG_PACK_KEY = "memorybench.pack_key"
TAG_RESULTS = "memorybench.results_sha256"


@dataclass
class TrackedRun:
    pack: Location
    run_id: str
    mlflow_run_id: str
    #: False when the pack was already in the experiment (see `updated`)
    created: bool
    #: the pack was in the experiment with other results: its new ones were logged into that run
    updated: bool = False

    @property
    def action(self) -> str:
        return "logged" if self.created else "updated" if self.updated else "unchanged"


@dataclass
class TrackingResult:
    tracking_uri: str
    experiment_id: str
    #: the sweep's parent run; None where one pack was logged on its own (no sweep to nest it in)
    parent_run_id: str | None
    experiment_name: str = ""
    runs: list[TrackedRun] = field(default_factory=list)
    unfinished: list[Location] = field(default_factory=list)

    @property
    def created(self) -> list[TrackedRun]:
        return [r for r in self.runs if r.created]

    @property
    def updated(self) -> list[TrackedRun]:
        return [r for r in self.runs if r.updated]

    def runs_url(self, server: str | None = None) -> str:
        """The experiment's runs table in MLflow 3's UI (which otherwise opens on its GenAI
        overview), on `server` (default: where `mlflow ui` serves)."""
        return f"{(server or LOCAL_UI).rstrip('/')}/#/experiments/{self.experiment_id}/runs"

    def ui_address(self, run: TrackedRun | None = None) -> str:
        """Where to look: the experiment's runs (or the run's page) on an MLflow server; for a
        local store, the command that serves its UI (one worker: 2 cores) and the page to open."""
        if self.tracking_uri.startswith(("http://", "https://")):
            server = clean_url(self.tracking_uri).split("#", 1)[0].split("?", 1)[0]  # no credential in a link
            return (
                f"{server.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{run.mlflow_run_id}"
                if run
                else self.runs_url(server)
            )
        return f"{ui_command(self.tracking_uri)}, then open {self.runs_url()}"


# -- where --------------------------------------------------------------------------------
#: where `mlflow ui` serves by default
LOCAL_UI = "http://127.0.0.1:5000"


def ui_command(tracking_uri: str) -> str:
    """`mlflow ui` over a local store, as README.md and docs/comparing.md give it."""
    return f"mlflow ui --backend-store-uri {shlex.quote(tracking_uri)} --workers 1"


def default_tracking_uri(packs_root: str | os.PathLike[str]) -> str:
    """`sqlite:///<output folder>/mlflow.db`, the output folder being the packs root's parent."""
    return f"sqlite:///{Path(packs_root).expanduser().resolve().parent / 'mlflow.db'}"


def tracking_uri_from_config(cfg: Any) -> str | None:
    """The tracking URI a composed config asks for; None when `tracking=none`."""
    tracking = cfg.get("tracking") if hasattr(cfg, "get") else None
    if tracking is None or str(tracking.get("name", "none")) == "none":
        return None
    if tracking.get("uri"):
        return str(tracking.uri)
    return default_tracking_uri(str(cfg.paths.packs))


def _artifact_location(tracking_uri: str) -> str | None:
    """Artifacts of a local sqlite store go beside it (never relative to the cwd)."""
    if tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///") :])
        return (db.parent / "mlartifacts").resolve().as_uri()
    return None


def _quiet_mlflow() -> None:
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    for name in ("alembic", "mlflow.store.db.utils", "mlflow.tracking.fluent", "mlflow.store.sql"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _client(tracking_uri: str) -> MlflowClient:
    """A client of the store; a sqlite store is made whole first (hold `store_lock`)."""
    _quiet_mlflow()
    from mlflow.tracking import MlflowClient

    db = sqlite_file(tracking_uri)
    if db is not None:
        prepare_sqlite_store(db, _artifact_location(tracking_uri))
    return MlflowClient(tracking_uri=tracking_uri)


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None = None) -> str:
    """The id of experiment `name`, created once if it does not exist.

    Race-free: on a sqlite store the caller holds the store's lock (`store_lock`); against a
    server, a create that lost the race to another driver finds the winner's experiment."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        if found.lifecycle_stage == "deleted":
            raise UserError(f"MLflow experiment {name!r} is deleted; restore it in MLflow or track under another name")
        return str(found.experiment_id)
    try:
        # the UI shows a runs table (not the GenAI traces view) for this kind of experiment
        tags = {"memorybench": "1", "mlflow.experimentKind": "custom_model_development"}
        return str(client.create_experiment(name, artifact_location=artifact_location, tags=tags))
    except MlflowException:
        # created by another driver in the meantime
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


# -- what -----------------------------------------------------------------------------
def _param_value(value: Any) -> str:
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, dict)):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    else:
        text = str(value)
    if "://" in text:
        text = clean_url(text, keep_query=False)  # a param's URL is a label: no userinfo, no query
    text = _SECRET_VALUE.sub("[redacted]", text)
    # then known credentials by value, and any URL inside the text cleaned
    # (`memorybench.secrets`: the one definition the pack writers use too)
    text = scrub(text)
    if len(text) > MAX_PARAM_VAL_LENGTH:
        digest = sha256_text(text)[:16]
        suffix = f"... [truncated; sha256 {digest}]"
        text = text[: MAX_PARAM_VAL_LENGTH - len(suffix)] + suffix
    return text


def _param_key(key: str) -> str:
    from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH

    return _BAD_KEY_CHARS.sub("_", key)[:MAX_ENTITY_KEY_LENGTH]


def _flatten(data: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(data, Mapping):
        for key, value in data.items():
            if _SECRET_KEY.search(str(key)):
                continue
            yield from _flatten(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], data


def pack_params(pack: str | os.PathLike[str] | PackReader) -> dict[str, str]:
    """MLflow params of a pack: choices, flattened config, hashes, model ids. No secret."""
    reader = PackReader.open(pack)
    meta = reader.meta()
    config = yaml.safe_load(reader.read_bytes(layout.CONFIG)) or {}
    params: dict[str, Any] = {}
    for key, value in _flatten({k: v for k, v in config.items() if k not in EXCLUDED_CONFIG}):
        params[key] = value
    for group, option in sorted((meta.choices or {}).items()):
        params[f"choice.{group}"] = option
    data = meta.data or {}
    params.update(
        {
            "run_id": meta.run_id,
            "experiment": meta.name,
            "config_sha256": meta.config_sha256,
            "data_sha256": data.get("sha256"),
            "data_pinned": data.get("pinned"),
            "git_commit": meta.git_commit,
            "question_count": meta.question_count,
            "is_prefix": meta.is_prefix,
            "local_model": meta.local_model,
        }
    )
    if data.get("commit"):
        params["data_commit"] = data["commit"]
    for name, sha in sorted((meta.prompts or {}).items()):
        params[f"prompt_sha256.{name}"] = sha
    for model in meta.models:
        params[f"model.{model.role}.provider"] = model.provider
        params[f"model.{model.role}.requested"] = model.requested
        params[f"model.{model.role}.answered"] = ",".join(model.answered) or None
    summary = run_summary(reader)
    # each judge by its id: the identity that names its folder, and the models that answered
    # (params are write-once: the passes, which may grow, are the metric `j_passes/<id>`)
    for judge_id in (summary["judges"] or "").split(","):
        if not judge_id:
            continue
        identity = summary.get(judge_key("judge_identity", judge_id)) or {}
        for name, value in identity.items():
            if name != "schema":
                params[f"judge/{judge_id}/{name}"] = value
        params[f"judge/{judge_id}/models_answered"] = ",".join(summary[judge_key("judge_models_answered", judge_id)]) or None
    return {_param_key(k): _param_value(v) for k, v in params.items()}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) or math.isinf(value) else float(value)


#: MLflow's metric names, each a run-summary key (`memorybench.compare.summary`) under
#: another name where the runs table's column would be ambiguous
METRIC_NAMES: dict[str, str] = {
    "questions": "questions",
    **{name: name for m in KIND_SCORERS for name in (m, *(kind_column(k, m) for k in CATEGORIES))},
    # the overalls over categories 1-4 and, where category 5 was asked, 1-5: never one for the other
    **{subset_column(name): subset_column(name) for name in SUBSETS},
    **{
        name: name
        for name in (
            "build_calls",
            "build_prompt_tokens",
            "build_completion_tokens",
            "build_cost_usd",
            "answer_calls",
            "answer_prompt_tokens",
            "answer_completion_tokens",
            "answer_cached_tokens",
            "answer_cost_usd",
            "judge_calls",
            "judge_cost_usd",
            "total_calls",
            "total_prompt_tokens",
            "total_completion_tokens",
            "total_cost_usd",
            "cost_per_question_usd",
            "memory_failed_tasks",
            # an agent run's gateway counts (absent for a reader run: None is not logged)
            "agent_requests_p50",
            "agent_requests_p95",
            "agent_requests_max",
            "agent_tokens_p50",
            "agent_tokens_p95",
            "agent_tokens_max",
            "agent_budget_exceeded",
            # the retrieval budget (`memorybench.pack.budget`): context tokens per question, search
            # latency, what the system returned at most against budget.top_k (none where unset)
            "context_tokens_mean",
            "context_tokens_p50",
            "context_tokens_p95",
            "retrieval_latency_p50_s",
            "retrieval_latency_p95_s",
            "budget_top_k",
            "budget_returned_max",
        )
    },
    "reader_retries": "retries",
    "reader_cache_hits": "cache_hits",
    "latency_p50_s": "latency_p50_s",
    "latency_p95_s": "latency_p95_s",
    "latency_mean_s": "latency_mean_s",
    "mem0_f1": "mem0_f1",
    "mem0_bleu1": "mem0_bleu1",
}
#: per judge, metric `<name>/<judge id>` (J of two judges never shares a metric)
JUDGE_METRICS = (
    "j_mean",
    "j_sd",
    "j_passes",
    *(f"j_cat{c}" for c in JUDGED_CATEGORIES),
    "j_agreement",
    "judge_failed",
    "judge_calls",
    "judge_cost_usd",
)


def pack_metrics(pack: str | os.PathLike[str] | PackReader) -> dict[str, float]:
    """MLflow metrics of a pack: LoCoMo F1 (+ by category), EM, token F1, cost by stage,
    latency, and each judge's J under its judge id (`j_mean/<judge id>`, `j_pass1/<judge id>`)."""
    summary = run_summary(pack)
    out: dict[str, Any] = {name: summary[key] for name, key in METRIC_NAMES.items()}
    if summary.get("budget_held") is not None:  # 1 where the retrieval budget held, 0 where it did not
        out["budget_held"] = float(summary["budget_held"])
    for judge_id in (summary["judges"] or "").split(","):
        if not judge_id:
            continue
        out.update({judge_key(name, judge_id): summary[judge_key(name, judge_id)] for name in JUDGE_METRICS})
        passes = summary[judge_key("j_per_pass", judge_id)]
        out.update({judge_key(f"j_pass{n}", judge_id): value for n, value in enumerate(passes, start=1)})
    out.update(interval_metrics(pack))
    for judge_id in (summary["judges"] or "").split(","):
        if judge_id:
            out.update(calibration_metrics(judge_id, pack))
    out = benchmark_metrics(pack, out)
    return {k: v for k, v in ((k, _number(v)) for k, v in out.items()) if v is not None}


def _epoch_ms(stamp: str | None) -> int | None:
    if not stamp:
        return None
    try:
        return int(dt.datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return None


def sweep_name(run_ids: Iterable[str], experiment: str) -> str:
    """A stable parent-run name for a set of run ids: the same sweep gets the same parent."""
    digest = sha256_text("\n".join(sorted(set(run_ids))))[:10]
    return f"{experiment} sweep {digest}"


# -- logging --------------------------------------------------------------------------
def _search_one(client: MlflowClient, experiment_id: str, tag: str, value: str) -> Any | None:
    escaped = value.replace("'", "\\'")
    found = client.search_runs([experiment_id], filter_string=f"tags.`{tag}` = '{escaped}'", max_results=5)
    return found[0] if found else None


def _parent_run(client: MlflowClient, experiment_id: str, name: str) -> str:
    existing = _search_one(client, experiment_id, TAG_SWEEP, name)
    if existing is not None:
        return str(existing.info.run_id)
    run = client.create_run(experiment_id, tags={TAG_KIND: "sweep", TAG_SWEEP: name}, run_name=name)
    return str(run.info.run_id)


def _log_batches(
    client: MlflowClient, run_id: str, params: Mapping[str, str], metrics: Mapping[str, float], timestamp: int
) -> None:
    from mlflow.entities import Metric, Param
    from mlflow.utils.validation import MAX_PARAMS_TAGS_PER_BATCH

    items = [Param(k, v) for k, v in sorted(params.items())]
    for start in range(0, len(items), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=items[start : start + MAX_PARAMS_TAGS_PER_BATCH])
    client.log_batch(run_id, metrics=[Metric(k, v, timestamp, 0) for k, v in sorted(metrics.items())])


def _log_artifacts(client: MlflowClient, run_id: str, pack: PackReader) -> None:
    with tempfile.TemporaryDirectory(prefix="memorybench-mlflow-") as tmp:
        config = Path(tmp) / layout.CONFIG
        config.write_bytes(pack.read_bytes(layout.CONFIG))
        client.log_artifact(run_id, str(config))
        if pack.local_root is None:
            link = Path(tmp) / "pack_uri.txt"
            link.write_text(pack.uri() + "\n", "utf-8")
            client.log_artifact(run_id, str(link))
        else:
            client.log_artifacts(run_id, str(pack.local_root), artifact_path="pack")


def results_sha256(params: Mapping[str, str], metrics: Mapping[str, float]) -> str:
    """The sha256 of what a pack logs: two logs of the same results have the same hash."""
    return sha256_text(json.dumps({"params": dict(params), "metrics": dict(metrics)}, sort_keys=True))


def _update(
    client: MlflowClient,
    existing: Any,
    pack: PackReader,
    location: Location,
    params: Mapping[str, str],
    metrics: Mapping[str, float],
    digest: str,
    *,
    artifacts: bool,
) -> TrackedRun:
    """Log a pack's new results into its existing run: every metric (a new value is a new
    point of its history), the params it did not have (a judge's), the artifacts again."""
    run_id = str(existing.info.run_id)
    logged = existing.data.params
    changed = sorted(k for k, v in params.items() if k in logged and logged[k] != v)
    if changed:
        # MLflow params are write-once; a changed one would mean another experiment under this key
        raise UserError(
            f"MLflow run {run_id} of pack {pack.uri()} has other values for params {', '.join(changed[:5])}; "
            "the pack changed identity: delete that MLflow run or track into another experiment"
        )
    meta = pack.meta()
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    _log_batches(client, run_id, {k: v for k, v in params.items() if k not in logged}, metrics, now)
    if artifacts:
        _log_artifacts(client, run_id, pack)
    client.set_tag(run_id, TAG_RESULTS, digest)
    return TrackedRun(location, str(meta.run_id or pack.name), run_id, created=False, updated=True)


def _log_one(
    client: MlflowClient, experiment_id: str, parent_id: str | None, location: Location, *, artifacts: bool
) -> TrackedRun:
    pack = PackReader.open(location)
    meta = pack.meta()
    rid = str(meta.run_id or pack.name)
    key = f"{rid}@{meta.config_sha256}"
    params, metrics = pack_params(pack), pack_metrics(pack)
    digest = results_sha256(params, metrics)
    existing = _search_one(client, experiment_id, TAG_PACK_KEY, key)
    if existing is not None:
        if existing.info.status == "FINISHED":
            if existing.data.tags.get(TAG_RESULTS) == digest:
                return TrackedRun(location, rid, str(existing.info.run_id), created=False)
            return _update(client, existing, pack, location, params, metrics, digest, artifacts=artifacts)
        client.delete_run(existing.info.run_id)  # a crash mid-logging: log it anew
    notes = "\n".join(meta.notes or [])
    tags = {
        **({"mlflow.parentRunId": parent_id} if parent_id is not None else {}),
        TAG_KIND: "run",
        TAG_PACK_KEY: key,
        "memorybench.run_id": rid,
        "memorybench.config_sha256": str(meta.config_sha256),
        "memorybench.experiment": str(meta.name),
        "memorybench.pack_uri": os.fspath(location),
        TAG_RESULTS: digest,
    }
    if notes:
        tags["mlflow.note.content"] = notes
    started = _epoch_ms(meta.started_at)
    run = client.create_run(experiment_id, start_time=started, tags=tags, run_name=rid)
    run_id = str(run.info.run_id)
    _log_batches(client, run_id, params, metrics, _epoch_ms(meta.ended_at) or started or 0)
    if artifacts:
        _log_artifacts(client, run_id, pack)
    client.set_terminated(run_id, "FINISHED", end_time=_epoch_ms(meta.ended_at))
    return TrackedRun(location, rid, run_id, created=True)


def log_packs(
    pack_roots: Sequence[str | os.PathLike[str]],
    *,
    tracking_uri: str,
    experiment_name: str,
    parent_run_name: str | None = None,
    artifacts: bool = True,
) -> TrackingResult:
    """Log every finished pack of `pack_roots` as a nested run under one parent run (a sweep's);
    one pack on its own, without `parent_run_name`, as a run of its own (no sweep to nest it in).

    `pack_roots`: pack folders, or roots scanned like `memorybench aggregate` does.
    `parent_run_name`: names the sweep; None derives a stable name from the run ids. Packs
    already logged in the experiment (same run id and config sha256) are not logged again.
    """
    scan = scan_packs(pack_roots)
    if not scan.finished:
        raise UserError(f"no finished pack in {', '.join(map(str, pack_roots))}: a pack is finished when it has _SUCCESS")
    from mlflow.exceptions import MlflowException

    # one driver at a time on a sqlite store, from its first open to the parent's end: the
    # second finds the first's runs and logs no pack twice
    with store_lock(tracking_uri):
        try:
            client = _client(tracking_uri)
            experiment_id = ensure_experiment(client, experiment_name, _artifact_location(tracking_uri))
        except MlflowException as e:
            message = " ".join(str(e.message).split())[:300]
            raise UserError(
                f"MLflow tracking URI {tracking_uri!r} does not work ({message}); use sqlite:///PATH or http://HOST:PORT"
            ) from None
        parent_id = None
        if parent_run_name is not None or len(scan.finished) > 1:
            if parent_run_name is None:
                parent_run_name = sweep_name((PackReader.open(p).meta().run_id for p in scan.finished), experiment_name)
            parent_id = _parent_run(client, experiment_id, parent_run_name)
        result = TrackingResult(tracking_uri, experiment_id, parent_id, experiment_name, unfinished=scan.unfinished)
        try:
            for pack in scan.finished:
                result.runs.append(_log_one(client, experiment_id, parent_id, pack, artifacts=artifacts))
        finally:
            if parent_id is not None:
                client.log_batch(parent_id, metrics=_parent_metrics(client, experiment_id, parent_id))
                client.set_terminated(parent_id, "FINISHED")
    return result


def _parent_metrics(client: MlflowClient, experiment_id: str, parent_id: str) -> list[Any]:
    from mlflow.entities import Metric

    children = client.search_runs([experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent_id}'", max_results=5000)
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    return [Metric("runs", float(len(children)), now, 0)]


def log_run_specs(specs: Sequence[Any], *, parent_run_name: str | None = None) -> list[TrackingResult]:
    """The driver's hook after `memorybench qa [-m]`: log the finished packs of these run specs.

    `specs` are `memorybench.plan.RunSpec`s (the jobs the sweep composed). Nothing happens
    when their config says `tracking=none`. One parent run per experiment name in the sweep.
    """
    from memorybench.pack.run_pack import pack_path
    from memorybench.storage import pack_relpath, storage_uri

    by_target: dict[tuple[str, str], list[Location]] = {}
    for spec in specs:
        uri = tracking_uri_from_config(spec.cfg)
        if uri is None:
            continue
        root = str(spec.cfg.storage.root or spec.cfg.paths.packs)
        pack: Location
        if root.startswith("gs://"):
            pack = storage_uri(root, pack_relpath(spec.name, spec.run_id))
        else:
            pack = pack_path(root, spec.name, spec.run_id)
            if not pack.is_dir():
                continue
        if PackReader.open(pack).is_complete():
            by_target.setdefault((uri, spec.name), []).append(pack)
    results = []
    for (uri, name), packs in by_target.items():
        results.append(log_packs(packs, tracking_uri=uri, experiment_name=name, parent_run_name=parent_run_name))
    return results


def _default_uri_for(packs: Sequence[Location]) -> str:
    # <packs root>/<name>/runs/<run_id>: the output folder is the packs root's parent
    if not isinstance(packs[0], Path):
        raise UserError(f"{packs[0]} is in a bucket; pass --uri (e.g. sqlite:///PATH/mlflow.db or http://HOST:PORT)")
    return default_tracking_uri(packs[0].parents[2])


def track_main(argv: Sequence[str]) -> int:
    """`memorybench track PACKS... [--uri URI] [--experiment NAME] [--parent NAME] [--no-artifacts]`."""
    parser = OneLineParser(
        prog="memorybench track",
        description="Log finished packs to MLflow: one parent run per sweep, one nested run per pack (idempotent).",
    )
    parser.add_argument("packs", nargs="+", help="pack folders, or roots scanned for <name>/runs/<run_id>/_SUCCESS")
    parser.add_argument("--uri", help="MLflow tracking URI (default: sqlite:///<packs root's parent>/mlflow.db)")
    parser.add_argument("--experiment", help="MLflow experiment name (default: each pack's experiment name)")
    parser.add_argument("--parent", help="parent run name (default: derived from the run ids, stable across reruns)")
    parser.add_argument("--no-artifacts", action="store_true", help="log params and metrics only")
    ns = parser.parse_args(list(argv))
    scan = scan_packs(ns.packs)
    if not scan.finished:
        raise UserError(f"no finished pack in {', '.join(ns.packs)}: a pack is finished when it has _SUCCESS")
    uri = ns.uri or _default_uri_for(scan.finished)
    groups: dict[str, list[Location]] = {}
    for pack in scan.finished:
        name = ns.experiment or str(PackReader.open(pack).meta().name or "memorybench")
        groups.setdefault(name, []).append(pack)
    results = [
        log_packs(packs, tracking_uri=uri, experiment_name=name, parent_run_name=ns.parent, artifacts=not ns.no_artifacts)
        for name, packs in groups.items()
    ]
    for result in results:
        print_tracking(result, hint=False)
    print_hint(results)
    if scan.unfinished:
        print(f"left out {len(scan.unfinished)} unfinished pack(s) (no _SUCCESS)", file=sys.stderr)
    return 0


def print_tracking(result: TrackingResult, *, hint: bool = True) -> None:
    """What was logged and where: one line per pack, then the experiment (and, with `hint`, how to open it)."""
    for run in result.runs:
        print(f"mlflow: {run.action:9} {run.run_id} -> run {run.mlflow_run_id}")
    unchanged = len(result.runs) - len(result.created) - len(result.updated)
    nested = f", parent run {result.parent_run_id}" if result.parent_run_id is not None else ", a run of its own"
    print(
        f"mlflow: experiment {result.experiment_name!r} (id {result.experiment_id}){nested}: "
        f"{len(result.created)} run(s) logged, {len(result.updated)} updated, {unchanged} unchanged"
    )
    if hint:
        print_hint([result])


def print_hint(results: Sequence[TrackingResult]) -> None:
    """How to open what was logged, once for all the experiments of one tracking URI."""
    if not results:
        return
    first = results[0]
    where = first.ui_address() if len(results) == 1 else first.ui_address().rsplit(", then open", 1)[0]
    nested = " (each sweep's packs nested under its parent run)" if any(r.parent_run_id for r in results) else ""
    print(f"mlflow: tracking URI {first.tracking_uri}; runs: {where}{nested}")

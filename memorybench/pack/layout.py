"""Where every file of a pack lives: the one place that names a pack's relative paths.

A pack is `<packs root>/<name>/runs/<run_id>/` (DESIGN.md 4.4); everything below is
relative to that folder, `/`-separated, the same on a local disk and under `gs://`.
Code that reads or writes a pack file names it through these constants; where a pack
lives under a root is `memorybench.storage.pack_relpath`.
"""

from __future__ import annotations

CONFIG = "config.resolved.yaml"
RUN_META = "run_meta.json"
TRACE_MD = "TRACE.md"
PREDICTIONS = "predictions.jsonl"
PREDICTIONS_CSV = "predictions.csv"
METRICS = "metrics.json"
REFERENCE_PIN = "REFERENCE_PIN.json"
SUCCESS = "_SUCCESS"
#: the writer lock of a folder (`memorybench.pack.lock`): the pack's own `.lock`, a judge
#: folder's, `collected/.lock`; never a pack file (`memorybench.storage.local_files` skips it,
#: which holds the same name: storage is below the pack layer)
LOCK_FILE = ".lock"

PROMPTS = "prompts"
SYSTEM_PROMPT = "prompts/system.txt"
PLOTS = "plots"
BLOBS = "blobs"

READER_TRACES = "reader/traces.jsonl"

MEMORY = "memory"
MEMORY_MANIFEST = "memory/manifest.jsonl"
LINEAGE = "memory/lineage.jsonl"
BUILD_COST = "memory/build_cost.jsonl"
MEMORY_DUMPS = "memory/dumps"
WRITER_CALLS = "memory/writer/calls.jsonl"
WRITER_FAILURES = "memory/writer/failures.jsonl"
#: the retrieval budget a run held, from its own rows (`memorybench.pack.budget`)
MEMORY_BUDGET = "memory/budget.json"


def retrievals(method: str) -> str:
    """What a question-dependent method handed the reader, one row per question (`memory_retrieval.v*`)."""
    return f"memory/{method}/retrievals.jsonl"


def library_reports(method: str) -> str:
    """Where a wrapped library's own failure reports of a run lie (`library_report.v1` rows)."""
    return f"memory/{method}/library_reports.jsonl"


AGENT = "agent"
AGENT_EVENTS = "agent/events.jsonl"
AGENT_TRAJECTORY = "agent/trajectory.jsonl"
AGENT_TRACES = "agent/traces.jsonl"
AGENT_REQUESTS = "agent/requests.jsonl"
AGENT_NOTES = "agent/notes.jsonl"
AGENT_RECALL = "agent/recall.jsonl"
AGENT_CLI = "agent/cli.json"
AGENT_COMPARISON = "agent/comparison.json"
AGENT_WORKSPACES = "agent/workspaces"

# The autorater keeps one folder per judge, `autorater/<judge id>/` (DESIGN.md 4.4), so that
# several judges of one pack coexist; the judge id is `JudgeIdentity.judge_id`
# (memorybench.pack.autorater_schemas). Each judge folder holds the files named below.
AUTORATER = "autorater"
JUDGE_VERDICTS = "autorater_verdicts.jsonl"
JUDGE_TRACES = "traces.jsonl"
JUDGE_METRICS = "autorater_metrics.json"
JUDGE_META = "autorater_meta.json"
JUDGE_PROMPTS = "prompts"
#: the judges' response cache (judge.cache=true without a cache folder): content-addressed
#: by request, so every judge of the pack shares it
AUTORATER_CACHE = "autorater/cache"
#: folders directly under autorater/ that are not a judge's: a pack judged before judges had
#: folders (the flat layout, `autorater/autorater_metrics.json`) has these beside its files
AUTORATER_SHARED = ("prompts", "cache")

CLOUDRUN_PROVENANCE = "provenance/cloudrun.json"


def memory_dump(sample_id: str) -> str:
    """A question-independent memory text, stored once per conversation."""
    return f"{MEMORY_DUMPS}/{sample_id}.txt"


def blob(sha256: str) -> str:
    """A repeated large string stored once, named by its sha256 (REFERENCE_PIN.json maps refs to these)."""
    return f"{BLOBS}/{sha256}.txt"


def method_store(method: str, sample_id: str) -> str:
    """What a memory method built for one conversation (`memory/<method>/<sample_id>.json`)."""
    return f"{MEMORY}/{method}/{sample_id}.json"


def autorater_dir(judge_id: str) -> str:
    """One judge's folder (`autorater/<judge id>`)."""
    return f"{AUTORATER}/{judge_id}"


def autorater_file(judge_id: str, name: str) -> str:
    """A file of one judge's folder: `autorater_file(judge_id, JUDGE_METRICS)`, `..., SUCCESS)`."""
    return f"{AUTORATER}/{judge_id}/{name}"


def legacy_autorater_file(name: str) -> str:
    """A file of the flat layout, written before judges had folders (`autorater/<name>`)."""
    return f"{AUTORATER}/{name}"


def judge_of(relpath: str) -> str | None:
    """The judge id whose folder holds `relpath`; None outside autorater/ and for the flat
    layout's files (`autorater/autorater_metrics.json`, `autorater/prompts/...`)."""
    parts = relpath.split("/")
    if len(parts) < 3 or parts[0] != AUTORATER or parts[1] in AUTORATER_SHARED:
        return None
    return parts[1]

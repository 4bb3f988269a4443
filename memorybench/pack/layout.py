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

AGENT = "agent"
AGENT_EVENTS = "agent/events.jsonl"
AGENT_TRAJECTORY = "agent/trajectory.jsonl"
AGENT_TRACES = "agent/traces.jsonl"
AGENT_NOTES = "agent/notes.jsonl"
AGENT_RECALL = "agent/recall.jsonl"
AGENT_CLI = "agent/cli.json"
AGENT_COMPARISON = "agent/comparison.json"
AGENT_WORKSPACES = "agent/workspaces"

AUTORATER = "autorater"
AUTORATER_VERDICTS = "autorater/autorater_verdicts.jsonl"
AUTORATER_TRACES = "autorater/traces.jsonl"
AUTORATER_METRICS = "autorater/autorater_metrics.json"
AUTORATER_META = "autorater/autorater_meta.json"
AUTORATER_SUCCESS = "autorater/_SUCCESS"
AUTORATER_PROMPTS = "autorater/prompts"

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

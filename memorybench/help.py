"""`memorybench qa --help` and `memorybench plan --help`: memorybench's own page.

Hydra's generic page ("hydra_app is powered by Hydra") lists schema nodes as if they were
options and explains none of memorybench's settings. This page is built from `conf/` as
it is on disk (so a plugin's or a user's new option shows up): every config group with
its options, the settings users change most with their defaults, three example commands,
and where packs go. Hydra's own flags (`--cfg job`, `--info`, `-m`, `--hydra-help`) still
reach Hydra.
"""

from __future__ import annotations

from pathlib import Path

from memorybench import CONF_DIR

__all__ = ["SETTINGS", "config_groups", "qa_help"]

#: folders of conf/ that are not groups of a run (analysis designs, one machine's overrides)
NOT_RUN_GROUPS = frozenset({"analysis", "local"})
#: the settings users change most: (key, default, meaning)
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("name", "default", "experiment name: packs go to <paths.packs>/<name>/runs/<run id>/"),
    ("max_questions", "null", "answer only the first N questions in file order (a prefix run, labelled so)"),
    ("question_ids", "null", "answer only these questions ([ID,...] as `plan --questions` lists them), in file order"),
    ("question_sample.per_kind / .seed", "null / 0", "a seeded sample of N questions of each kind (category, type)"),
    ("reader.model", "auto", "the reader's model (reader=local: `auto` picks the embedded model by memory length)"),
    ("reader.base_url", "null", "an OpenAI-compatible server (reader=openai_compatible)"),
    ("reader.prompt", "readers/qa_v1.txt", "the reader template; mem0_rag, mem0_answer, mem0_answer_graph, qa_mem0_v1: Mem0's"),
    ("reader.temperature / reader.seed", "0.0 / 0", "sampling; the seed is a replicate in reports"),
    ("memory.top_k", "4", "raw_chunks, rag: chunks retrieved per question"),
    ("memory.max_failed_share", "0.1", "writer methods: stop before answering when more writer tasks failed"),
    ("paths.packs", "outputs/packs", "where packs are written (storage.root=gs://... for a bucket)"),
    ("tracking", "none", "tracking=mlflow logs every finished pack (tracking.uri, default sqlite beside the packs)"),
    ("hydra/launcher", "basic", "with -m: submitit_local, submitit_slurm or cloudrun run the sweep's jobs"),
)
EXAMPLES = (
    ("memorybench qa memory=session_summaries max_questions=20", "a real QA run on the embedded model"),
    ("memorybench qa -m memory=full_context,raw_chunks reader=openai reader.model=gpt-4o-mini", "a sweep: one pack per memory"),
    ("memorybench plan -m experiment=smoke_matrix", "the run specs and run ids a sweep would make, no model call"),
)


def config_groups(conf_dir: Path = CONF_DIR) -> dict[str, list[str]]:
    """Every config group of a run and its options (schema nodes and non-run folders hidden)."""
    groups: dict[str, list[str]] = {}
    for folder in sorted(p for p in conf_dir.iterdir() if p.is_dir() and p.name not in NOT_RUN_GROUPS):
        options = sorted(p.stem for p in folder.glob("*.yaml") if not p.stem.endswith("_schema"))
        if options:
            groups[folder.name] = options
    return groups


def qa_help(command: str = "qa", conf_dir: Path = CONF_DIR) -> str:
    """The page `memorybench <command> --help` prints."""
    what = (
        "run QA: one pack per run spec (-m sweeps the matrix)"
        if command == "qa"
        else "list the run specs and run ids a run or sweep would make, calling no model"
    )
    lines = [f"memorybench {command} [-m] [GROUP=OPTION ...] [KEY=VALUE ...]: {what}", "", "Config groups (GROUP=OPTION):"]
    groups = config_groups(conf_dir)
    width = max((len(g) for g in groups), default=0)
    lines += [f"  {group:<{width}}  {', '.join(options)}" for group, options in groups.items()]
    lines += ["", "Settings most often changed (KEY=VALUE; default):"]
    key_width = max(len(k) for k, _, _ in SETTINGS)
    lines += [f"  {key:<{key_width}}  {meaning} (default {default})" for key, default, meaning in SETTINGS]
    lines += ["", "Examples:"]
    lines += [f"  {cmd}\n      {why}" for cmd, why in EXAMPLES]
    lines += [
        "",
        "Packs: <paths.packs>/<name>/runs/<run id>/ (config, prompts, memory, traces, predictions, metrics, TRACE.md,",
        "_SUCCESS with the sha256 of every file); `memorybench verify PACK` checks one, `memorybench show PACK QID` walks",
        "one question. A rerun of the same command resumes. Every group's settings: `memorybench qa --cfg job`.",
        "Hydra's own flags: --cfg job|hydra|all, --info, --resolve, -m/--multirun, --hydra-help.",
        "Tab completion of groups, options and keys: `source <(memorybench completion bash)` (zsh, fish: the same).",
    ]
    return "\n".join(lines)

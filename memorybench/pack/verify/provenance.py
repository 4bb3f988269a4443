"""Where the pack came from, recomputed: its config and run id, a launcher's record, the dataset, the prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.hashing import sha256_bytes
from memorybench.pack import layout
from memorybench.pack.verify.context import PROVENANCE_RECORDS, Context
from memorybench.pack.verify.findings import Findings
from memorybench.pack.verify.structure import load_json, validate

__all__ = ["check_cloudrun_provenance", "check_config", "check_dataset", "check_prompts"]


# -- config and run id -----------------------------------------------------------------------


def check_config(ctx: Context, out: Findings) -> None:
    """config.resolved.yaml hashes to run_meta's config_sha256 and gives its run id (into `ctx.cfg`)."""
    ctx.cfg = _config(ctx, out)
    ctx.memory_name = ctx.cfg_get("memory", "name") or (ctx.meta or {}).get("choices", {}).get("memory")


def _config(ctx: Context, out: Findings) -> Any:
    relpath = "config.resolved.yaml"
    if not (ctx.root / relpath).is_file():
        return None
    from memorybench.pack.resolved_config import load_resolved_config
    from memorybench.run_id import HEX_DIGITS, code_identity, run_identity

    try:
        cfg = load_resolved_config(ctx.root / relpath)  # plain data, as OmegaConf reads it
        # the code the run named as run_meta.json records it (its prompts' sha256, its
        # plugins), so a pack verifies the same on any machine; that the prompt files still
        # hash to those values is check_prompts' finding
        meta = ctx.meta if isinstance(ctx.meta, dict) else None
        code = code_identity(
            cfg,
            prompt_sha256=dict(meta.get("prompts") or {}) if meta else None,
            plugins=list(meta.get("plugins") or []) if meta else None,
        )
        rid, sha = run_identity(cfg, code)
    except Exception as e:  # noqa: BLE001  (any YAML/OmegaConf failure is this finding)
        out.add("hash.config", relpath, f"cannot be loaded ({' '.join(str(e).split())[:200]})")
        return None
    meta = ctx.meta
    if meta is None:
        return cfg
    if sha != meta["config_sha256"]:
        out.add(
            "hash.config",
            relpath,
            f"hashes to {sha[:HEX_DIGITS]}…, run_meta.json records config_sha256 {meta['config_sha256'][:HEX_DIGITS]}…",
        )
    if not meta["run_id"].endswith("-" + meta["config_sha256"][:HEX_DIGITS]):
        out.add(
            "hash.config",
            layout.RUN_META,
            f"run_id {meta['run_id']!r} does not end with the config sha256's first {HEX_DIGITS} hex digits",
        )
    elif rid != meta["run_id"]:
        out.add("hash.config", relpath, f"gives run id {rid!r}, run_meta.json records {meta['run_id']!r}")
    if cfg.get("max_questions") != meta["max_questions"]:
        out.add(
            "count",
            layout.RUN_META,
            f"max_questions={meta['max_questions']} but config.resolved.yaml has {cfg.get('max_questions')}",
        )
    return cfg


def check_cloudrun_provenance(ctx: Context, out: Findings) -> None:
    """A launcher's record names this run: its run id, config sha256 and resolved config."""
    for relpath, model in PROVENANCE_RECORDS.items():
        if not (ctx.root / relpath).is_file():
            continue
        record = load_json(ctx, out, relpath)
        if record is None or not validate(out, relpath, None, record, model):
            ctx.bad_files.add(relpath)
            continue
        if ctx.meta is not None:
            for field in ("run_id", "config_sha256"):
                if record[field] != ctx.meta[field]:
                    out.add("hash.config", relpath, f"{field} {record[field]!r} is not run_meta.json's {ctx.meta[field]!r}")
        if ctx.cfg is not None:
            from memorybench.hashing import canonical_json

            resolved = sha256_bytes(canonical_json(ctx.cfg).encode("utf-8"))
            if record["resolved_sha256"] != resolved:
                out.add(
                    "hash.config",
                    relpath,
                    f"resolved_sha256 {record['resolved_sha256'][:12]}… is not config.resolved.yaml's {resolved[:12]}…:"
                    " the config the task ran is not the one in the pack",
                )


# -- dataset ---------------------------------------------------------------------------------

_DATASETS: dict[tuple[str, str], Any] = {}


def _load_dataset(path: Path, sha: str, name: str | None = None) -> Any:
    """The dataset as its benchmark reads it, cached per (path, sha256): verifying many packs
    reads the file once."""
    from memorybench.data.source import load_dataset

    key = (str(path), sha)
    if key not in _DATASETS:
        _DATASETS[key] = load_dataset(path, name)
    return _DATASETS[key]


def check_dataset(ctx: Context, out: Findings) -> None:
    """The dataset run_meta names (the pin, or a path) is here and hashes right (into `ctx.conversations`)."""
    ctx.conversations = _dataset(ctx, out)


def _dataset(ctx: Context, out: Findings) -> Any:
    if ctx.meta is None:
        return None
    from memorybench.benchmark import benchmark_of_meta
    from memorybench.data.pins import pins_dir as resolve_pins
    from memorybench.data.source import dataset_sha256, is_present

    data = ctx.meta.get("data") or {}
    _check_data_claim(ctx, data, out)
    bench = benchmark_of_meta(data)
    name = str(data.get("name") or bench.dataset_names[0])  # a pack made before datasets were named: LoCoMo's
    dataset = bench.dataset(name) if name in bench.dataset_names else bench.datasets[0]
    if data.get("pinned") and dataset.pin is None:
        out.add(
            "hash.data",
            layout.RUN_META,
            f"data.pinned is true, but dataset {name} has no pin; counts, rows and gold were not checked",
        )
        return None
    if data.get("pinned"):
        pinned = dataset.pinned()
        path = resolve_pins(ctx.pins_dir) / pinned.relpath
        expected = pinned.sha256
        if data.get("sha256") != pinned.sha256:
            out.add(
                "hash.data",
                layout.RUN_META,
                f"data.sha256 {str(data.get('sha256'))[:12]}… is not the pinned {pinned.relpath} ({pinned.sha256[:12]}…)",
            )
        where = "pass --pins DIR (or set MEMORYBENCH_PINS) to the pins folder, or run `memorybench fetch`"
    else:
        path = Path(str(data.get("path") or ""))
        expected = data.get("sha256")
        where = "put the file back at that path to verify the rows against it"
    if not str(data.get("path") or "") and not data.get("pinned"):
        out.add("data.missing", layout.RUN_META, "data.path is empty; counts, rows and gold were not checked")
        return None
    if not is_present(dataset, path):
        out.add(
            "data.missing", layout.RUN_META, f"dataset file {path} not found; {where}; counts, rows and gold were not checked"
        )
        return None
    actual = dataset_sha256(dataset, path)
    if actual != expected:
        out.add(
            "hash.data",
            layout.RUN_META,
            f"dataset file {path} has sha256 {actual[:12]}…, run_meta records {str(expected)[:12]}…; counts, rows and gold were not checked",
        )
        return None
    try:
        return _load_dataset(path, actual, name)
    except UserError as e:
        out.add("data.missing", layout.RUN_META, f"dataset file {path} cannot be read: {e.message}")
        return None


def _check_data_claim(ctx: Context, data: dict[str, Any], out: Findings) -> None:
    """What run_meta says the data was agrees with what the config asked for: the pin when
    `dataset.path` is null, else that path (a run_meta switched to an edited copy does not)."""
    if ctx.cfg is None or ctx.cfg_get("dataset", "name") is None:
        return
    asked = ctx.cfg_get("dataset", "path")
    if asked is None and not data.get("pinned"):
        out.add(
            "hash.data",
            layout.RUN_META,
            f"config.resolved.yaml asks for the pinned dataset (dataset.path: null) but run_meta.data names "
            f"{data.get('path')!r}, not the pin",
        )
    elif asked is not None:
        # a relative dataset.path was resolved against the run's folder: compare what is sure
        wanted, claimed = Path(str(asked)).expanduser(), Path(str(data.get("path") or "")).expanduser()
        if (wanted.resolve() != claimed.resolve()) if wanted.is_absolute() else (wanted.name != claimed.name):
            out.add(
                "hash.data",
                layout.RUN_META,
                f"config.resolved.yaml asks for dataset.path {asked!r} but run_meta.data names {data.get('path')!r}",
            )


# -- prompts ---------------------------------------------------------------------------------


def check_prompts(ctx: Context, out: Findings) -> None:
    """Every prompts/ file hashes to run_meta.prompts, and run_meta records every one (into `ctx.templates`)."""
    ctx.templates = {}
    if ctx.meta is None:
        return
    recorded: dict[str, str] = ctx.meta["prompts"]
    for relpath, sha in recorded.items():
        path = ctx.inside(f"prompts/{relpath}")
        if path is None:
            out.add("hash.prompt", layout.RUN_META, f"prompt {relpath!r} points outside the pack")
            continue
        if not path.is_file():
            out.add("hash.prompt", f"prompts/{relpath}", "missing; run_meta.json records its sha256")
            continue
        data = path.read_bytes()
        if sha256_bytes(data) != sha:
            out.add(
                "hash.prompt",
                f"prompts/{relpath}",
                f"hashes to {sha256_bytes(data)[:12]}…, run_meta.json records {sha[:12]}…: the prompt was changed",
            )
            # the project's own copy, when it is the recorded one, still lets the messages be rebuilt
            data = _project_prompt(relpath, sha)
            if data is None:
                continue
        ctx.templates[relpath] = data.decode("utf-8", errors="replace")
    for rel in ctx.rel.values():
        if rel.startswith("prompts/") and rel[len("prompts/") :] not in recorded:
            out.add("hash.prompt", rel, "a prompt file that run_meta.json does not record")


def _project_prompt(relpath: str, sha: str) -> bytes | None:
    from memorybench import PROMPTS_DIR

    path = PROMPTS_DIR / relpath
    data = path.read_bytes() if path.is_file() else None
    return data if data is not None and sha256_bytes(data) == sha else None

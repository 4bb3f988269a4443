"""Run identity: canonical resolved config -> sha256 -> a readable run id.

The hash leaves out what does not change the experiment (DESIGN.md 3): the `hydra` node,
paths, storage, tracking, the price table, the experiment name, and per-endpoint
operational settings (timeouts, retries, pacing, cache). The same experiment gets the
same id on any machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

# the judge belongs to the autorater stage: qa never calls it, so it is not part of a qa run's identity
EXCLUDED_TOP_LEVEL = frozenset({"hydra", "paths", "storage", "tracking", "pricing", "name", "launcher", "judge"})
ENDPOINT_GROUPS = ("reader", "writer", "judge", "embedder")
OPERATIONAL_KEYS = frozenset(
    {"timeout_s", "max_retries", "retry_max_wait_s", "min_request_interval_s", "cache", "api_key_env"}
)
ANSWERER_OPERATIONAL_KEYS = frozenset(
    {"api_key_env", "scratch_dir", "request_max_retries", "stream_max_retries", "timeout_s", "ingest_timeout_s"}
)
HEX_DIGITS = 12


def _data_file_sha256(path: str) -> str | None:
    from memorybench.data.locomo import file_sha256

    p = Path(path).expanduser()
    return file_sha256(p) if p.is_file() else None


def identity_config(cfg: DictConfig | dict[str, Any]) -> dict[str, Any]:
    """The resolved config as plain data, minus everything outside the experiment's identity.

    An explicit `dataset.path` is machine-specific: the identity holds the file's sha256
    instead (the pinned default has no path and is identified by its pin).
    """
    data = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    assert isinstance(data, dict)
    out = {k: v for k, v in data.items() if k not in EXCLUDED_TOP_LEVEL}
    for group in ENDPOINT_GROUPS:
        if isinstance(out.get(group), dict):
            out[group] = {k: v for k, v in out[group].items() if k not in OPERATIONAL_KEYS}
    answerer = out.get("answerer")
    if isinstance(answerer, dict):
        out["answerer"] = {k: v for k, v in answerer.items() if k not in ANSWERER_OPERATIONAL_KEYS}
    dataset = out.get("dataset")
    if isinstance(dataset, dict) and dataset.get("path"):
        digest = _data_file_sha256(str(dataset["path"]))
        out["dataset"] = {k: v for k, v in dataset.items() if k != "path"}
        out["dataset"]["file_sha256"] = digest or f"missing:{dataset['path']}"
    return out


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_sha256(cfg: DictConfig | dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(identity_config(cfg)).encode("utf-8")).hexdigest()


def _identity_sha256(identity: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-").lower() or "x"


def run_id(cfg: DictConfig | dict[str, Any]) -> str:
    """`<memory>-<answerer>-<model>-<12 hex>`: readable, and unique per identity config."""
    data = identity_config(cfg)
    memory = data.get("memory", {}).get("name", "memory")
    answerer = data.get("answerer", {}).get("name", "answerer")
    reader = data.get("reader", {})
    model = reader.get("model") or reader.get("name") or "model"
    if answerer != "reader" and data.get("answerer", {}).get("model"):
        model = data["answerer"]["model"]
    prefix = "-".join(_slug(str(p)) for p in (memory, answerer, model))
    return f"{prefix}-{_identity_sha256(data)[:HEX_DIGITS]}"

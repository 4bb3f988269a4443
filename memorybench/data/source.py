"""Which dataset file a run reads, and its provenance for run_meta.json."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memorybench.data.locomo import file_sha256
from memorybench.names import resolved_path
from memorybench.data.pins import LOCOMO10, pin_path


def path_hint(path: Path) -> str:
    """A file's path as a pack records it: a hint for a reader on the same machine, with the
    home folder written `~` (no user name in a shared pack); the data is named by its pin or
    sha256, never by where it lay."""
    home = Path.home()
    try:
        return str(Path("~") / path.relative_to(home))
    except ValueError:
        return str(path)


def resolve_dataset(dataset: DictConfig, pins: str | os.PathLike[str] | None) -> tuple[Path, dict[str, Any]]:
    """The dataset file and its provenance: the verified pin, or an explicit path and its hash."""
    if dataset.get("path"):
        path = resolved_path(str(dataset.path), "dataset.path")
        return path, {"name": str(dataset.name), "path": path_hint(path), "sha256": file_sha256(path) if path.is_file() else None, "pinned": False}
    path = pin_path(LOCOMO10, pins)
    return path, {
        "name": str(dataset.name),
        "path": path_hint(path),
        "pin": LOCOMO10.relpath,
        "sha256": LOCOMO10.sha256,
        "pinned": True,
        "repository": LOCOMO10.repository,
        "commit": LOCOMO10.commit,
        "source_path": LOCOMO10.source_path,
    }

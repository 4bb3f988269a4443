"""Which dataset file a run reads, and its provenance for run_meta.json."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.data.benchmarks import benchmark_of
from memorybench.data.large_pins import LONGMEMEVAL_DATA, verify_large
from memorybench.data.locomo import file_sha256, regular_file
from memorybench.hashing import sha256_file
from memorybench.names import resolved_path
from memorybench.data.pins import LOCOMO10, pin_path, pins_dir

if TYPE_CHECKING:
    from omegaconf import DictConfig


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
    name = str(dataset.name)
    benchmark_of(name)  # an unknown dataset name is one line naming the known ones
    if dataset.get("path"):
        path = resolved_path(str(dataset.path), "dataset.path")
        if name in LONGMEMEVAL_DATA:
            sha = sha256_file(regular_file(path, max_bytes=3 << 30, expected="a LongMemEval file")) if path.is_file() else None
        else:
            sha = file_sha256(path) if path.is_file() else None
        return path, {"name": name, "path": path_hint(path), "sha256": sha, "pinned": False}
    if name in LONGMEMEVAL_DATA:
        large = LONGMEMEVAL_DATA[name]
        path = verify_large(large, pins_dir(pins) / large.relpath)
        return path, {"name": name, "path": path_hint(path), "pin": large.relpath, "sha256": large.sha256, "pinned": True,
                      "repository": large.repository, "commit": large.revision, "source_path": large.source_path}
    path = pin_path(LOCOMO10, pins)
    return path, {
        "name": name,
        "path": path_hint(path),
        "pin": LOCOMO10.relpath,
        "sha256": LOCOMO10.sha256,
        "pinned": True,
        "repository": LOCOMO10.repository,
        "commit": LOCOMO10.commit,
        "source_path": LOCOMO10.source_path,
    }


def load_dataset(path: str | os.PathLike[str], dataset: str | None) -> list[Any]:
    """The dataset file's samples (`Conversation` records) as its benchmark reads them."""
    return benchmark_of(dataset).load(Path(path))

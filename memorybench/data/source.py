"""Which dataset file a run reads, and its provenance for run_meta.json: the one place.

A dataset config names its dataset (`dataset=locomo10`); its benchmark's `Dataset` record
says which file is pinned for it and how a local copy (`dataset.path`) is checked, so the
run, `plan`, `verify` and the walk all read the same file the same way. A dataset may be a
folder (`Dataset.folder`, BEAM's tiers): its pin is a `data.folders.FolderPin`, verified as a
whole, a local copy is a folder, and either's sha256 is that of the folder's `sha256sum`
manifest (`data.folders`). A dataset without a pin (`Dataset.pin` None) is read from
`dataset.path` only; without one it is refused in one line naming `dataset.path`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.benchmark import Dataset, benchmark_of, dataset_named
from memorybench.data.files import regular_file
from memorybench.data.folders import folder_files, folder_sha256
from memorybench.data.pins import pin_path, pins_dir
from memorybench.hashing import sha256_file
from memorybench.names import resolved_path

if TYPE_CHECKING:
    from omegaconf import DictConfig

__all__ = ["checked", "dataset_sha256", "is_present", "load_dataset", "path_hint", "pinned_path", "resolve_dataset"]


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
    """The dataset file (or folder) and its provenance: the verified pin, or an explicit path and its hash."""
    name = str(dataset.name)
    record = dataset_named(name)  # an unknown dataset name is one line naming the known ones
    if dataset.get("path"):
        path = resolved_path(str(dataset.path), "dataset.path")
        record.check_memory(path)  # a file this machine cannot hold: said before it is read
        sha = dataset_sha256(record, path) if is_present(record, path) else None
        return path, {"name": name, "path": path_hint(path), "sha256": sha, "pinned": False}
    path = pinned_path(record, pins)
    record.check_memory(path)
    provenance = record.provenance()
    return path, {"name": name, "path": path_hint(path), **provenance}


def is_present(record: Dataset, path: Path) -> bool:
    """Whether `path` is there as this dataset's kind of copy: a folder for a folder dataset, else a file."""
    return Path(path).is_dir() if record.folder else Path(path).is_file()


def checked(record: Dataset, path: Path) -> Path:
    """`path` when it is a regular file of a sane size for this dataset (a folder dataset: a
    folder of regular files, of a sane size in all), else one line."""
    if record.folder:
        folder_files(Path(path), max_bytes=record.max_bytes, expected=record.expected)
        return Path(path)
    return regular_file(Path(path), max_bytes=record.max_bytes, expected=record.expected)


def dataset_sha256(record: Dataset, path: Path) -> str:
    """A local copy's sha256, streamed, after the same checks (a folder: its manifest's)."""
    if record.folder:
        return folder_sha256(Path(path), max_bytes=record.max_bytes, expected=record.expected)
    return sha256_file(checked(record, path))


def pinned_path(record: Dataset, pins: str | os.PathLike[str] | None) -> Path:
    """A dataset's pinned file or folder, verified (a missing or altered file is one line; a
    dataset without a pin, one line naming `dataset.path`)."""
    if record.folder:
        return record.pinned().verify(pins)
    if record.large:
        from memorybench.data.large_pins import verify_large

        pin = record.pinned()
        return verify_large(pin, pins_dir(pins) / pin.relpath)
    return pin_path(record.pinned(), pins)


def load_dataset(path: str | os.PathLike[str], dataset: str | None) -> list[Any]:
    """The dataset file's samples (`Conversation` records) as its benchmark reads them."""
    return benchmark_of(dataset).load(Path(path), dataset)

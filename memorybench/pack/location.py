"""Where one run's pack lives: the one place that decides it.

A pack is `<root>/<name>/runs/<run_id>/` (`memorybench.storage.pack_relpath`), where the
root is `storage.root` or, by default, `paths.packs`. A local root holds the pack being
written itself. A `gs://` root cannot take appends, so the pack is written in a local
work folder (`<paths.cache>/work/<name>/runs/<run_id>/`) and published whole when it is
finished: every file, then `_SUCCESS`, create-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memorybench.names import path_component, resolved_path
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.storage import Storage, open_storage, pack_relpath, publish_pack, storage_uri


@dataclass(frozen=True)
class PackLocation:
    #: `<name>/runs/<run_id>`
    relpath: str
    #: the folder the pack is written in (the pack itself for a local root)
    work_dir: Path
    #: the root's address: a local folder or gs://bucket/prefix
    root: str
    #: the object store behind a gs:// root; None for a local one
    remote: Storage | None = None

    @classmethod
    def of(cls, cfg: DictConfig, run_id: str) -> PackLocation:
        # both are folder names under the root: nothing may lead outside it
        name = path_component(cfg.name, "experiment name", "set name=NAME")
        relpath = pack_relpath(name, path_component(run_id, "run id", "it comes from the config; report this as a bug"))
        root = str(cfg.storage.get("root") or cfg.paths.packs)
        if root.startswith("gs://"):
            work = resolved_path(str(cfg.paths.cache), "paths.cache") / "work" / relpath
            return cls(relpath, work, root, open_storage(root))
        local_root = resolved_path(root, "storage.root" if cfg.storage.get("root") else "paths.packs")
        return cls(relpath, local_root / relpath, str(local_root))

    @property
    def uri(self) -> str:
        """The pack's address, as a user would pass it to a later stage."""
        return storage_uri(self.root, self.relpath) if self.remote is not None else str(self.work_dir)

    def is_finished(self) -> bool:
        if self.remote is not None:
            return self.remote.exists(f"{self.relpath}/{layout.SUCCESS}")
        return (self.work_dir / layout.SUCCESS).exists()

    def reader(self) -> PackReader:
        """The pack, read where it is (the bucket once published, else the folder)."""
        return PackReader(self.remote, self.relpath) if self.remote is not None else PackReader.open(self.work_dir)

    def finished_metrics(self) -> dict[str, Any]:
        """metrics.json of the finished pack, wherever it is."""
        return self.reader().json_object(layout.METRICS)

    def publish(self) -> None:
        """Upload a finished work folder to the remote root (nothing to do for a local root)."""
        if self.remote is not None:
            publish_pack(self.work_dir, self.remote, self.relpath)

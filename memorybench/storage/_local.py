"""A local folder as storage: atomic, durable replaces and create-only markers (`memorybench.fs`)."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path

from memorybench.fs import create_only, write_atomic
from memorybench.storage._base import (
    SUCCESS,
    AlreadyExists,
    Storage,
    StorageNotFound,
    clean_relpath,
    join,
    local_files,
    read_tree_file,
    tree_folder,
    upload_order,
)


class LocalStorage(Storage):
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(root).expanduser().resolve()
        self.root = str(self.path)

    def _p(self, relpath: str) -> Path:
        rel = clean_relpath(relpath)
        return self.path / rel if rel else self.path

    def uri(self, relpath: str = "") -> str:
        return str(self._p(relpath))

    def local_path(self, relpath: str = "") -> Path | None:
        return self._p(relpath)

    def read_bytes(self, relpath: str) -> bytes:
        try:
            return self._p(relpath).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise StorageNotFound(self.uri(relpath)) from None

    def write_bytes(self, relpath: str, data: bytes) -> None:
        write_atomic(self._p(relpath), data)

    def create_only(self, relpath: str, data: bytes = b"") -> None:
        try:
            create_only(self._p(relpath), data)  # whole or not at all: a crash leaves no half marker
        except FileExistsError:
            raise AlreadyExists(self.uri(relpath)) from None

    def exists(self, relpath: str) -> bool:
        return self._p(relpath).is_file()

    def list(self, prefix: str = "") -> list[str]:
        rel = clean_relpath(prefix) if prefix.strip("/") else ""
        if prefix.endswith("/") and rel:
            rel += "/"
        # walk the deepest folder the prefix names, then filter by the string prefix
        base = rel.rsplit("/", 1)[0] if "/" in rel else ""
        start = self._p(base)
        if not start.is_dir():
            return []
        found = [join(base, f) for f in local_files(start)]
        return sorted(f for f in found if f.startswith(rel))

    def upload_dir(
        self, local_dir: str | Path, dest_prefix: str, markers: Iterable[str] = (SUCCESS,), files: Sequence[str] | None = None
    ) -> list[str]:
        source = Path(local_dir)
        plain, marks = upload_order(local_files(source) if files is None else list(files), markers)
        for rel in plain:  # read and written without following a link on either side
            self._write_within(join(dest_prefix, rel), read_tree_file(source, clean_relpath(rel)))
        for rel in marks:
            target = join(dest_prefix, rel)
            tree_folder(self.path, posixpath.dirname(target))
            self.create_only(target, read_tree_file(source, clean_relpath(rel)))
        return [join(dest_prefix, r) for r in plain + marks]

    def _write_within(self, relpath: str, data: bytes) -> Path:
        rel = clean_relpath(relpath)
        return write_atomic(tree_folder(self.path, posixpath.dirname(rel)) / posixpath.basename(rel), data)

    def download_dir(self, prefix: str, local_dir: str | Path) -> list[str]:
        dest = Path(local_dir)
        base = clean_relpath(prefix)
        copied = []
        for rel in self.list(base + "/" if base else ""):
            inner = rel[len(base) + 1 :] if base else rel
            data = read_tree_file(self.path, rel)  # never through a link, on either side
            target = write_atomic(tree_folder(dest, posixpath.dirname(inner)) / posixpath.basename(inner), data)
            stamp = os.lstat(self._p(rel))
            os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the copy keeps its write order
            copied.append(inner)
        return copied

"""`_SUCCESS`: the marker a finished pack ends with, and the sha256 of every file it closes.

A marker is a `success.v1` record (`memorybench.pack.schemas.Success`): the sha256 and
size of every file it closes, by path relative to the pack. It is written last and
create-only, so a pack is finished exactly when its marker exists; `memorybench verify`
checks the pack against it by content (`compare`), never by timestamps: a copy, a
download or a byte-exact restore verifies, a changed, missing or added file does not.

Which files a marker closes (`closes`):

- the top `_SUCCESS`: every file of the pack except those under `autorater/`, which a
  later stage adds to a finished pack;
- a marker under `autorater/` (`autorater/_SUCCESS`, `autorater/<judge id>/_SUCCESS`,
  written with `write_success(root, under="autorater/<judge id>")`): every file under its
  folder, except those of a deeper folder that has its own marker.

No marker closes a marker, a `*.part` temp file or a symbolic link: the files of a pack
are the files `publish_pack` uploads (`memorybench.storage.local_files`).

After the run, a closed file changes only when the command that owns it rewrites it
(`memorybench rescore`: predictions.csv and metrics.json, whose content verify checks
against a fresh rescore; the Cloud Run worker: the job's config and its provenance
record): that writer records the new bytes with `reclose`. An empty `_SUCCESS` is the
marker of a pack written before content hashes: `parse_success` returns None for it.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memorybench.errors import UserError
from memorybench.fs import create_only
from memorybench.hashing import sha256_file
from memorybench.pack import layout
from memorybench.pack.atomic import fsync_path, write_atomic
from memorybench.pack.journal import NO_SPACE, disk_full
from memorybench.pack.schemas import ClosedFile, Success
from memorybench.records import parse_record
from memorybench.storage import local_files

__all__ = [
    "LATER_STAGES",
    "Difference",
    "closes",
    "closing_folder",
    "compare",
    "is_marker",
    "marker_folders",
    "marker_path",
    "parse_success",
    "reclose",
    "success_record",
    "write_success",
]

#: Folders a later stage adds to a finished pack, each closed by markers of its own.
LATER_STAGES = (layout.AUTORATER,)


def _in_later_stage(relpath: str) -> bool:
    return any(relpath == stage or relpath.startswith(stage + "/") for stage in LATER_STAGES)


def _folder(under: str) -> str:
    """`under` as a clean folder path: "" (the pack) or a folder of a later stage."""
    text = str(under).replace("\\", "/").strip("/")
    norm = posixpath.normpath(text) if text else ""
    if norm in ("", "."):
        return ""
    if norm.startswith("../") or norm == ".." or not _in_later_stage(norm):
        stages = ", ".join(f"{s}/..." for s in LATER_STAGES)
        raise UserError(f"a _SUCCESS closes the pack (under='') or a later stage's folder ({stages}), not {under!r}")
    return norm


def marker_path(under: str = "") -> str:
    """The marker of folder `under`, relative to the pack."""
    return f"{under}/{layout.SUCCESS}" if under else layout.SUCCESS


def is_marker(relpath: str) -> bool:
    """Whether the file is a marker: the top `_SUCCESS` or one under a later stage's folder."""
    folder, name = posixpath.split(relpath)
    return name == layout.SUCCESS and (folder == "" or _in_later_stage(folder))


def marker_folders(files: Iterable[str]) -> set[str]:
    """The folders (`""` for the pack) that have a marker among `files`."""
    return {posixpath.dirname(f) for f in files if is_marker(f)}


def closing_folder(relpath: str, folders: Iterable[str]) -> str | None:
    """The folder among `folders` whose marker closes `relpath`; None when none does."""
    folders = set(folders)
    if not _in_later_stage(relpath):
        return "" if "" in folders else None
    # the deepest enclosing folder: a judge's folder closes its files, not autorater/_SUCCESS
    enclosing = [f for f in folders if f and relpath.startswith(f + "/")]
    return max(enclosing, key=len) if enclosing else None


def closes(under: str, files: Iterable[str]) -> list[str]:
    """The files among `files` (pack-relative paths) that the marker of `under` closes, sorted."""
    under = _folder(under)
    files = list(files)
    folders = marker_folders(files) | {under}
    return sorted(f for f in files if not is_marker(f) and closing_folder(f, folders) == under)


def _closed(path: Path) -> ClosedFile:
    return ClosedFile(sha256=sha256_file(path), bytes=path.stat().st_size)


def success_record(root: Path, under: str = "") -> Success:
    """The record the marker of `under` would hold now: every file it closes, hashed."""
    return Success(files={rel: _closed(root / rel) for rel in closes(under, local_files(root))})


def write_success(root: str | os.PathLike[str], under: str = "") -> Path:
    """Close the pack (`under=""`) or a later stage's folder: create its `_SUCCESS`, once, last.

    Every other file of the pack (or folder) must be written before: the marker records
    the bytes they have now. A marker that already exists is a UserError (create-only).
    """
    root = Path(root)
    under = _folder(under)
    target = root / marker_path(under)
    record = success_record(root, under)
    for rel in record.files:  # every byte the marker vouches for is on the disk before it
        fsync_path(root / rel)
    _create_only(target, record.dump().encode("utf-8"))  # its folder fsynced too
    return target


def _create_only(target: Path, data: bytes) -> None:
    try:
        create_only(target, data)  # a reader sees no marker or the whole record
    except FileExistsError:
        raise UserError(
            f"{target} already exists: a pack (or stage folder) is closed once; delete it and rerun the stage to close it again"
        ) from None
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
        raise disk_full(target, e) from None


def parse_success(data: bytes) -> Success | None:
    """The record a marker holds; None for an empty one (written before content hashes).

    Raises ValueError when it is not JSON and `memorybench.records.SchemaError` when it is
    not a success.v1 record.
    """
    if not data.strip():
        return None
    record = parse_record(json.loads(data.decode("utf-8")), Success)
    assert isinstance(record, Success)
    return record


@dataclass(frozen=True)
class Difference:
    """How a pack's files differ from what one marker recorded."""

    #: closed files whose bytes are not the recorded ones (size or sha256), or that became a link
    changed: tuple[str, ...] = ()
    #: closed files that are gone
    missing: tuple[str, ...] = ()
    #: files the marker would close that it does not name: added after it was written
    unclosed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.missing or self.unclosed)


def _same(path: Path, closed: ClosedFile) -> bool:
    if path.is_symlink():
        return False  # a link is not the file that was closed, wherever it points
    return path.stat().st_size == closed.bytes and sha256_file(path) == closed.sha256


def compare(root: Path, record: Success, under: str = "", present: Iterable[str] | None = None) -> Difference:
    """The pack's files against the record of the marker of `under`.

    `present` is every file of the pack (pack-relative; default: `local_files(root)`); a
    recorded path that is not among them is missing and never read, so a record naming
    `../x` reads nothing outside the pack.
    """
    files = set(local_files(root) if present is None else present)
    changed = tuple(rel for rel, closed in record.files.items() if rel in files and not _same(root / rel, closed))
    missing = tuple(rel for rel in record.files if rel not in files)
    unclosed = tuple(rel for rel in closes(under, files) if rel not in record.files)
    return Difference(changed, missing, unclosed)


def reclose(root: str | os.PathLike[str], relpaths: Iterable[str]) -> list[str]:
    """Record in the marker that closes each of `relpaths` its bytes as they are now (a
    file that is gone leaves the record); return the markers rewritten.

    Only for the owner of a closed file that rewrote it after the pack was finished
    (rescore, the Cloud Run worker). A file no marker closes yet is left alone (qa scores
    the pack before it closes it), and so is an empty marker: filling in hashes for a pack
    written before them would vouch for files nobody checked.
    """

    root = Path(root)
    present = set(local_files(root))
    folders = marker_folders(present)
    by_marker: dict[str, list[str]] = {}
    for rel in relpaths:
        if is_marker(rel):
            continue  # a marker is not closed: it closes
        under = closing_folder(rel, folders)
        if under is not None:
            by_marker.setdefault(under, []).append(rel)
    rewritten = []
    for under, rels in sorted(by_marker.items()):
        marker = root / marker_path(under)
        record = parse_success(marker.read_bytes())
        if record is None:
            continue
        files = dict(record.files)
        for rel in rels:
            if rel in present:
                files[rel] = _closed(root / rel)
            else:
                files.pop(rel, None)
        updated = Success(files=dict(sorted(files.items())))
        if updated != record:
            write_atomic(marker, updated.dump().encode("utf-8"))
            rewritten.append(marker_path(under))
    return rewritten

"""A dataset that is a folder of files (BEAM's tiers): one sha256 over all of them, and its pin.

A folder is hashed as `sha256sum` lists it: one line `<sha256>  <path>` per regular file under
it, paths relative to the folder (`/`-separated), sorted by path (byte order, as `LC_ALL=C sort`);
the folder's sha256 is the sha256 of those lines (`folder_manifest`, `folder_sha256`). In a shell:

    cd FOLDER && find -L . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum

Every file counts, read or not, so two folders with the same sha256 hold the same bytes under
the same names. A pinned folder (`FolderPin`) is a tuple of one-file pins, its sha256 that of
their manifest: the same number a local copy of it hashes to, which run_meta.json records as the
dataset's sha256 either way. `memorybench fetch` downloads its members with the other pins;
`FolderPin.verify` checks the folder as a whole (no file missing, altered or added).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memorybench.data.pins import Pin, pins_dir
from memorybench.errors import DataError, UserError
from memorybench.hashing import sha256_file, sha256_text

__all__ = ["FolderPin", "folder_files", "folder_manifest", "folder_sha256", "manifest_of"]

#: how many files a dataset folder may hold (BEAM's largest tier has a few hundred)
MAX_FILES = 100_000
#: manifests computed in this process, by the folder and each file's (path, size, mtime)
_MANIFESTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def manifest_of(hashes: dict[str, str]) -> str:
    """`sha256sum`'s lines for files given as relative path -> sha256, sorted by path."""
    return "".join(f"{hashes[p]}  {p}\n" for p in sorted(hashes, key=lambda p: p.encode("utf-8")))


def folder_files(folder: Path, *, max_bytes: int | None = None, expected: str = "the dataset folder") -> dict[str, Path]:
    """Every regular file under `folder` by its relative path (symlinks followed, each folder
    once); a FIFO, socket or device, a folder that is not one, more than `max_bytes` in all:
    one DataError line naming the path and what to point at."""
    try:
        info = folder.stat()
    except FileNotFoundError:
        raise DataError(f"dataset.path {folder} does not exist; run `memorybench fetch` or point it at {expected}") from None
    except OSError as e:
        raise DataError(f"dataset.path {folder} cannot be read ({e.strerror}); point it at {expected}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise DataError(f"dataset.path {folder} is a file, not a folder; this dataset is a folder: point it at {expected}")
    found: dict[str, Path] = {}
    seen: set[tuple[int, int]] = set()
    total = 0
    for top, dirs, files in os.walk(folder, followlinks=True, onerror=_unreadable(expected)):
        here = Path(top)
        st = here.stat()
        if (st.st_dev, st.st_ino) in seen:  # a symlink back up: walked once
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs.sort()
        for name in sorted(files):
            path = here / name
            try:
                file_info = path.stat()
            except OSError as e:
                raise DataError(f"{path} inside dataset.path cannot be read ({e.strerror}); point it at {expected}") from None
            if not stat.S_ISREG(file_info.st_mode):
                kind = (
                    "a FIFO"
                    if stat.S_ISFIFO(file_info.st_mode)
                    else "a socket"
                    if stat.S_ISSOCK(file_info.st_mode)
                    else "a device"
                )
                raise DataError(f"{path} inside dataset.path is {kind}, not a regular file; point it at {expected}")
            total += file_info.st_size
            if max_bytes is not None and total > max_bytes:
                raise DataError(
                    f"dataset folder {folder} holds more than {max_bytes} bytes, more than any such folder; "
                    f"point dataset.path at {expected}"
                )
            found[path.relative_to(folder).as_posix()] = path
            if len(found) > MAX_FILES:
                raise DataError(f"dataset folder {folder} holds more than {MAX_FILES:,} files; point dataset.path at {expected}")
    return found


def _unreadable(expected: str):
    def raise_it(error: OSError) -> None:
        raise DataError(f"{error.filename} inside dataset.path cannot be read ({error.strerror}); point it at {expected}")

    return raise_it


def folder_manifest(folder: Path, *, max_bytes: int | None = None, expected: str = "the dataset folder") -> str:
    """The folder's `sha256sum` lines (each file streamed; remembered per size and mtime in this process)."""
    files = folder_files(Path(folder), max_bytes=max_bytes, expected=expected)
    key = (str(Path(folder).resolve()), tuple((rel, p.stat().st_size, p.stat().st_mtime_ns) for rel, p in files.items()))
    if key not in _MANIFESTS:
        _MANIFESTS[key] = manifest_of({rel: sha256_file(p) for rel, p in files.items()})
    return _MANIFESTS[key]


def folder_sha256(folder: Path, *, max_bytes: int | None = None, expected: str = "the dataset folder") -> str:
    """The folder's sha256: that of its manifest."""
    return sha256_text(folder_manifest(folder, max_bytes=max_bytes, expected=expected))


@dataclass(frozen=True)
class FolderPin:
    """A pinned folder: every file of it a `Pin` of its own (`members`, each stored at its
    `relpath` under the pins folder, inside this one's), its sha256 that of their manifest.

    It has a `Pin`'s provenance fields, so run_meta.json's `data` reads the same for it as for
    a one-file dataset."""

    relpath: str
    repository: str
    commit: str
    source_path: str
    licence: str
    members: tuple[Pin, ...]

    def __post_init__(self) -> None:
        for member in self.members:
            if not (member.relpath.startswith(self.relpath + "/") and member.source_path.startswith(self.source_path + "/")):
                raise ValueError(f"{member.relpath} is not inside the pinned folder {self.relpath}")
            if member.relpath[len(self.relpath) :] != member.source_path[len(self.source_path) :]:
                raise ValueError(f"{member.relpath} is stored under another name than its source {member.source_path}")

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}/tree/{self.commit}/{self.source_path}"

    def member_hashes(self) -> dict[str, str]:
        """Relative path inside the folder -> sha256, for every member."""
        inside = len(self.relpath) + 1
        return {m.relpath[inside:]: m.sha256 for m in self.members}

    def manifest(self) -> str:
        """`sha256sum`'s lines for the members, paths relative to the folder, sorted by path."""
        return manifest_of(self.member_hashes())

    @property
    def sha256(self) -> str:
        return sha256_text(self.manifest())

    def verify(self, pins: str | os.PathLike[str] | None = None) -> Path:
        """The pinned folder, verified as a whole: every member there with its sha256, and no
        other file in it (a file that is not a member would be read as data); else one line."""
        folder = pins_dir(pins) / self.relpath
        if not folder.is_dir():
            raise UserError(
                f"pinned folder {folder} is missing; run `memorybench fetch` (or set MEMORYBENCH_PINS to a folder that has it)"
            )
        try:
            present = folder_files(folder, expected=f"the pinned folder {self.relpath}")
        except DataError as e:
            raise UserError(f"pinned folder {folder}: {e.message}; delete it and run `memorybench fetch`") from None
        extra = sorted(set(present) - set(self.member_hashes()))
        if extra:
            raise UserError(
                f"pinned folder {folder} holds {extra[0]}"
                + (f" and {len(extra) - 1} other file(s)" if len(extra) > 1 else "")
                + ", which its pin does not list; remove it (a copy with other files is read as "
                "dataset.path=FOLDER, hashed as it is)"
            )
        expected = self.member_hashes()
        for rel in sorted(set(expected) - set(present)):
            raise UserError(
                f"pinned file {folder / rel} is missing; run `memorybench fetch` (or set MEMORYBENCH_PINS to a "
                "folder that has it)"
            )
        manifest = folder_manifest(folder)  # every file hashed (again only when its size or mtime changed)
        if manifest != self.manifest():
            actual = {path: sha for sha, path in (line.split("  ", 1) for line in manifest.splitlines())}
            rel = next(r for r in sorted(expected) if actual[r] != expected[r])
            raise UserError(
                f"pinned file {folder / rel} has sha256 {actual[rel]}, expected {expected[rel]}; delete it and "
                "run `memorybench fetch`"
            )
        return folder

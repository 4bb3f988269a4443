"""The storage interface: whole objects under a root, create-only markers, folder copies.

A root is a local folder or `gs://bucket/prefix`. Paths inside a root are relative,
`/`-separated (`<name>/runs/<run_id>/metrics.json`). Objects are written whole: nothing
ever appends to a stored object, so no two tasks can interleave writes into one file.
Journals that need appends live in a local work folder and are uploaded once finished.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path

from memorybench.errors import UserError
from memorybench.fs import TEMP_SUFFIX, LinkRefused, NotRegular, folder_within, read_regular

#: the marker a finished pack (or a finished stage output inside it) ends with: a JSON
#: record of the sha256 of every file it closes, uploaded with its content, create-only
SUCCESS = "_SUCCESS"
#: files a writer leaves while replacing a file atomically (`memorybench.fs`); never uploaded
TEMP_SUFFIXES = (TEMP_SUFFIX,)
#: a folder's writer lock (`memorybench.pack.lock`, `layout.LOCK_FILE`): a process's
#: claim on the folder, not content, so never uploaded, listed or closed by a marker
LOCK_FILE = ".lock"


class AlreadyExists(UserError):
    """A create-only write found the object already there (another writer made it first)."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"{uri} already exists; it is create-only and was made by an earlier or concurrent writer")
        self.uri = uri


class StorageNotFound(UserError, FileNotFoundError):
    """The object does not exist."""

    def __init__(self, uri: str) -> None:
        UserError.__init__(self, f"{uri} does not exist")
        self.uri = uri


def clean_relpath(relpath: str) -> str:
    """A normalised relative object path; refuses `..` and absolute paths."""
    text = str(relpath).replace("\\", "/")
    norm = posixpath.normpath(text) if text not in ("", ".") else ""
    if norm in (".", ""):
        return ""
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise UserError(f"storage path {relpath!r} must be relative and stay inside the root")
    return norm


def join(*parts: str) -> str:
    return clean_relpath("/".join(p.strip("/") for p in parts if p and p.strip("/")))


def is_marker(relpath: str, markers: Iterable[str]) -> bool:
    return posixpath.basename(relpath) in set(markers)


def local_files(local_dir: Path) -> list[str]:
    """Every regular file under `local_dir` as a relative `/` path, sorted; temp files, writer
    locks (`LOCK_FILE`) and links skipped.

    These are the files of a pack: what `publish_pack` uploads and what its markers close
    (`memorybench.pack.success`), so a published pack holds exactly the files they name."""
    out = []
    for path in sorted(local_dir.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.name.endswith(TEMP_SUFFIXES) and path.name != LOCK_FILE:
            out.append(path.relative_to(local_dir).as_posix())
    return out


def read_tree_file(root: Path, relpath: str) -> bytes:
    """A file of a folder being copied (uploaded, downloaded, published), read without
    following a link anywhere below `root` (`memorybench.fs.read_regular`); a link, FIFO or
    device there is one line naming it: a folder copy never carries a host file along."""
    try:
        return read_regular(root, relpath)
    except LinkRefused as e:
        raise UserError(
            f"{root / e.where} is a link; a copied folder holds its own files, never links (one may point at a "
            "host file), so nothing is copied through it: remove the link, then copy again"
        ) from None
    except NotRegular as e:
        raise UserError(
            f"{root / e.where} is not a regular file (a FIFO, a device or a folder); remove it, then copy again"
        ) from None


def tree_folder(root: Path, relpath: str) -> Path:
    """The folder `root/relpath` for a copied file, made without passing through a link
    (`memorybench.fs.folder_within`): a link there is one line naming it."""
    try:
        return folder_within(root, relpath)
    except LinkRefused as e:
        raise UserError(
            f"{root / e.where} is a link; a folder copy writes nothing through a link (it may point outside "
            f"{root}): remove it, or copy into an empty folder"
        ) from None


def upload_order(files: Sequence[str], markers: Iterable[str]) -> tuple[list[str], list[str]]:
    """(ordinary files, markers): markers go last, the deepest first, so `_SUCCESS` at the top is the very last."""
    marker_set = set(markers)
    plain = [f for f in files if not is_marker(f, marker_set)]
    marks = sorted((f for f in files if is_marker(f, marker_set)), key=lambda f: (-f.count("/"), f))
    return plain, marks


class Storage(ABC):
    """One small interface over a local folder and a GCS bucket prefix."""

    #: `gs://bucket/prefix` or an absolute local folder
    root: str

    @abstractmethod
    def uri(self, relpath: str = "") -> str:
        """The full address of `relpath` (a `gs://` URI or an absolute local path)."""

    @abstractmethod
    def read_bytes(self, relpath: str) -> bytes:
        """The whole object; `StorageNotFound` if it is not there."""

    @abstractmethod
    def write_bytes(self, relpath: str, data: bytes) -> None:
        """Replace the whole object (readers see the old or the new bytes, never a mix)."""

    @abstractmethod
    def create_only(self, relpath: str, data: bytes = b"") -> None:
        """Create the object only if it does not exist; else raise `AlreadyExists`."""

    @abstractmethod
    def exists(self, relpath: str) -> bool: ...

    @abstractmethod
    def list(self, prefix: str = "") -> list[str]:
        """Relative paths of every object whose path starts with `prefix` (a string prefix, as GCS), sorted."""

    @abstractmethod
    def upload_dir(
        self, local_dir: str | Path, dest_prefix: str, markers: Iterable[str] = (SUCCESS,), files: Sequence[str] | None = None
    ) -> list[str]:
        """Copy every file of `local_dir` (or only `files`, relative to it) under `dest_prefix`;
        markers last, create-only.

        Returns the relative paths written. A marker that already exists raises
        `AlreadyExists` after every ordinary file is written.
        """

    @abstractmethod
    def download_dir(self, prefix: str, local_dir: str | Path) -> list[str]:
        """Copy every object under `prefix/` into `local_dir`; return the relative paths copied."""

    @abstractmethod
    def local_path(self, relpath: str = "") -> Path | None:
        """The local file behind `relpath` for a local root; None for a remote one."""

    # -- conveniences ------------------------------------------------------------------
    def read_text(self, relpath: str) -> str:
        return self.read_bytes(relpath).decode("utf-8")

    def write_text(self, relpath: str, text: str) -> None:
        self.write_bytes(relpath, text.encode("utf-8"))

    @property
    def is_remote(self) -> bool:
        return self.local_path() is None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r})"

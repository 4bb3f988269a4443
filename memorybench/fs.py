"""Whole-file writes that a crash cannot tear: the one helper every writer of a file that a
later command reads goes through (packs, collected folders, the response cache, pinned
files, prompt files, Hydra's files, a viewer page, storage's local objects).

    write_atomic(path, data)          # temp file beside it, fsync, rename, fsync of the folder
    with atomic_path(path) as tmp:    # a library that writes a path itself (Parquet, SQLite)
        write_parquet(table, tmp)
    create_only(path, data)           # a marker: created once, whole, or FileExistsError
    read_regular(root, "a/b.json")    # a file under root, never through a link, regular only
    folder_within(root, "a/b")        # root/a/b made (or found) without passing through a link

A temp file has a name of its own (`<name>.<pid>.<random>.part`), created exclusively
(`O_EXCL`, never through a link someone left at that name), so two writers never share one
and a crash leaves at most a `*.part` that `verify` flags and uploads skip. A new file gets
the mode a plain `open(path, "wb")` would give it (0666 less the umask). Bytes are written
as given: nothing is encoded, scrubbed or reordered here (`pack.atomic` scrubs pack files).

Three writers keep their own: the embedded model's file, which `gemma.assemble` writes to a
path of ours and which is checked by sha256 before the rename (`llm/local/models.py`), the
prefill store's states, written without fsync on purpose (a state torn by a crash fails
its checksum and is a cache miss; `llm/local/prefill_store.py`), and a large dataset's
download, whose `.part` name is stable so that a killed fetch resumes it, and which is
renamed only once its size and sha256 are right (`data/large_pins.py`). Journals append
(`pack/journal.py`); a pack being imported is built in a temp folder renamed whole.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "NO_SPACE",
    "TEMP_SUFFIX",
    "LinkRefused",
    "NotRegular",
    "atomic_path",
    "create_only",
    "folder_within",
    "fsync_dir",
    "fsync_path",
    "read_regular",
    "replace_durable",
    "temp_beside",
    "write_atomic",
    "write_durable",
]

#: the suffix of every temp file a writer leaves while replacing a file
TEMP_SUFFIX = ".part"
#: errnos that mean the disk, or the user's quota on it, is full
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def fsync_path(path: str | os.PathLike[str]) -> None:
    """Flush a written file's bytes to the disk (a rename or a marker after it must not
    reach the disk before the bytes it names: a crash would leave a named, empty file)."""
    fd = os.open(path, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename or a new file in it) to the disk; a file system
    that cannot fsync a folder is left to its own guarantees."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_beside(target: str | os.PathLike[str]) -> Path:
    """A fresh temp name in `target`'s folder, this writer's alone: `<name>.<pid>.<random>.part`."""
    target = Path(target)
    return target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


def _write_new(path: Path, data: bytes) -> None:
    """`data` in a file created at `path` (never an existing one, never through a link), fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
    with os.fdopen(fd, "wb") as f:
        view = memoryview(data)
        while view:
            view = view[f.write(view) :]
        f.flush()
        os.fsync(f.fileno())


def write_durable(path: str | os.PathLike[str], data: bytes) -> None:
    """`data` written to `path` (created or truncated) and fsynced before returning."""
    with Path(path).open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def replace_durable(tmp: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Put the finished file `tmp` at `target`: its bytes fsynced, renamed over `target`
    (a link at `target` is replaced, never followed), then the folder's entry fsynced."""
    fsync_path(tmp)
    os.replace(tmp, target)
    fsync_dir(Path(target).parent)


def write_atomic(target: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write `data` (text as UTF-8) to `target` atomically and durably: a reader sees the
    old file or the new one, a crash never leaves the name over missing bytes, and no temp
    file stays behind when the write fails (a full disk included). The folder is created."""
    target = Path(target)
    if isinstance(data, str):
        data = data.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(target)
    try:
        _write_new(tmp, data)  # the bytes on disk before the name points at them
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
    return target


def replace_derived(target: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write `data` to `target` atomically but not durably: a reader sees the old file or the
    new one, and no temp file stays behind; nothing is fsynced. Only for a file made again from
    a durable source by the next run (the board's pages from its board.json), where a crash
    costs a rebuild and an fsync per file costs most of the build."""
    target = Path(target)
    if isinstance(data, str):
        data = data.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp path beside `target` for a writer that takes a path (pyarrow, SQLite, a
    library's own copy); when the block ends normally the file is fsynced and renamed over
    `target`, and when it raises the temp file is removed and `target` is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(target)
    try:
        yield tmp
        replace_durable(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def create_only(target: str | os.PathLike[str], data: bytes) -> Path:
    """Create `target` holding `data`, once: `FileExistsError` if it exists (a link there
    included). A reader sees no file or the whole of it: the bytes go to a temp file that is
    hard-linked into place (create-only and atomic); a file system without hard links gets an
    `O_EXCL` create. Both are fsynced, the folder too."""
    target = Path(target)
    if isinstance(data, str):
        data = data.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_beside(target)
    try:
        _write_new(tmp, data)
        try:
            os.link(tmp, target, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as e:
            if e.errno in NO_SPACE:
                raise
            _write_new(target, data)  # a file system without hard links: O_EXCL is create-only too
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return target


# -- reading and making folders without following links ---------------------------------------
class LinkRefused(OSError):
    """A symbolic link where `read_regular` or `folder_within` needed a file or folder of the
    tree itself; `where` is its path relative to the root."""

    def __init__(self, where: str) -> None:
        super().__init__(errno.ELOOP, f"{where} is a link")
        self.where = where


class NotRegular(OSError):
    """`read_regular` found a folder, a FIFO, a socket or a device, not a regular file."""

    def __init__(self, where: str) -> None:
        super().__init__(errno.EINVAL, f"{where} is not a regular file")
        self.where = where


def _parts(relpath: str) -> list[str]:
    parts = str(relpath).replace("\\", "/").split("/")
    if str(relpath).startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{relpath!r} is not a plain relative path (absolute, or '.', '..' or empty segments)")
    return parts


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def read_regular(root: str | os.PathLike[str], relpath: str) -> bytes:
    """The bytes of `root/relpath`, opened component by component with `O_NOFOLLOW`: a link
    anywhere below `root` is `LinkRefused`, a FIFO or device `NotRegular` (opened without
    blocking, never waited on), a missing one `FileNotFoundError`. Tree copies (storage
    uploads and downloads, `collect-full --restore`) and `PackReader` read through here, so
    a link in a tree received from someone else never makes us read a host file."""
    parts = _parts(relpath)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                inner = os.open(part, flags, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
                    raise LinkRefused("/".join(parts[: i + 1])) from None
                if e.errno in (errno.ENOTDIR, errno.EISDIR):
                    raise FileNotFoundError(errno.ENOENT, "not a file", "/".join(parts[: i + 1])) from None
                raise
            os.close(fd)
            fd = inner
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular("/".join(parts))
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def folder_within(root: str | os.PathLike[str], relpath: str) -> Path:
    """`root/relpath` as a folder, each missing component made, none passed through a link
    (`LinkRefused` names the first one): a file written there lands under `root`, whatever a
    tree received from someone else (or left at the destination) holds. `relpath` "" is root;
    root itself is made when missing (it is the caller's, link or not)."""
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    if not relpath:
        return folder
    for i, part in enumerate(parts := _parts(relpath)):
        folder = folder / part
        if folder.is_symlink():
            raise LinkRefused("/".join(parts[: i + 1]))
        try:
            folder.mkdir()
        except FileExistsError:
            if folder.is_symlink():  # made by someone else in between
                raise LinkRefused("/".join(parts[: i + 1])) from None
            if not folder.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder)) from None
    return folder

"""Reading, writing and deleting inside a folder an agent could write, following nothing it left there.

Once a `codex exec` process has ended, the harness reads the agent's notes, puts a
persisted workspace back and deletes per-question workspaces. Whatever is in that folder
may be the agent's doing: a symlink to the dataset (reading it would copy gold into the
notes), a folder replaced by a link to a host folder (restoring would write there,
deleting would delete there), a FIFO (reading would block), a hard link to a host file,
a file of many gigabytes, names with newlines or bytes that are not UTF-8.

So nothing here opens a path in one go. Each operation starts from a descriptor of the
workspace root and goes one name at a time through directory descriptors opened with
`O_NOFOLLOW`: a link is seen (`lstat`) and handled as a link, never traversed, so no
path can leave the root; a file is read only when it is a regular file whose every name
lies in the workspace; what the harness writes is a new inode (`O_CREAT | O_EXCL`), never
a write through a name the agent prepared. The agent's processes are gone by then (the
CLI is PID 1 of its own PID namespace), so nothing races these checks; working from
descriptors keeps them true even if something did.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memorybench.errors import UserError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (a later fstat
# refuses it anyway); O_NOCTTY: a terminal never becomes ours
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: how much of a symlink's target a finding quotes
_TARGET_CHARS = 200


class Refused(Exception):
    """What stood where the harness expected a regular file or a folder; the message names it."""


@dataclass(frozen=True)
class Entry:
    """One name in a walked folder, as `lstat` saw it (a symlink is never followed)."""

    #: file | folder | symlink | FIFO | socket | character device | block device | other
    kind: str
    size: int
    nlink: int
    #: (st_dev, st_ino): names with the same key are hard links of one file
    key: tuple[int, int]
    #: where a symlink points, as stored in the link
    target: str | None = None

    def describe(self) -> str:
        if self.kind == "symlink":
            return f"symlink to {show(self.target or '')}"
        return self.kind


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISLNK, "symlink"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "other"


def show(name: str, limit: int = _TARGET_CHARS) -> str:
    """`name` fit for a JSON record and a one-line message: as is when it is printable UTF-8,
    else as Python's ascii() writes it (a newline, a control or undecodable byte is escaped)."""
    if len(name) > limit:
        name = name[:limit] + "..."
    try:
        name.encode("utf-8")
        plain = name.isprintable()
    except UnicodeEncodeError:  # a byte of a non-UTF-8 name, kept by os as a lone surrogate
        plain = False
    return name if plain else ascii(name)


def parts_of(rel: str) -> list[str]:
    """The names of a path relative to a workspace root; a harness path that could leave it is a bug."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a plain relative path inside a workspace: {rel!r}")
    return parts


# -- descriptors -----------------------------------------------------------------------
def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_dir(dir_fd: int, name: str) -> int:
    """A descriptor of the real folder `name` (a link there fails with ELOOP, a file with ENOTDIR)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        # an agent's `chmod 000` (when the harness is not root): the folder is ours to open
        st = _lstat(dir_fd, name)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


@contextlib.contextmanager
def _root(root: Path) -> Iterator[int]:
    # the root is the harness's own folder; O_NOFOLLOW still refuses a link put in its place
    fd = os.open(root, _DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _parent(root: Path, parts: list[str], *, create: bool) -> Iterator[int | None]:
    """The folder holding the last of `parts`, reached name by name; None when a folder on the
    way is missing. With `create`, missing folders are made and anything else in the way
    (a link, a file, a FIFO) is removed first; without, that raises Refused."""
    with contextlib.ExitStack() as stack:
        fd = stack.enter_context(_root(root))
        for depth, name in enumerate(parts[:-1]):
            st = _lstat(fd, name)
            if st is not None and not stat.S_ISDIR(st.st_mode):
                if not create:
                    where = "/".join(parts[: depth + 1])
                    raise Refused(f"{show(where)}: a {_entry(fd, name, st).describe()}, not a folder")
                os.unlink(name, dir_fd=fd)
                st = None
            if st is None:
                if not create:
                    yield None
                    return
                os.mkdir(name, 0o755, dir_fd=fd)
            sub = _open_dir(fd, name)
            stack.callback(os.close, sub)
            fd = sub
        yield fd


def _entry(dir_fd: int, name: str, st: os.stat_result) -> Entry:
    kind = kind_of(st.st_mode)
    target = None
    if kind == "symlink":
        with contextlib.suppress(OSError):
            target = os.readlink(name, dir_fd=dir_fd)
    return Entry(kind=kind, size=st.st_size, nlink=st.st_nlink, key=(st.st_dev, st.st_ino), target=target)


# -- walking ---------------------------------------------------------------------------
def walk(root: Path) -> dict[str, Entry]:
    """Every name under `root` by its relative path, parents before children; links and
    special files are entries of their own, never looked through."""
    out: dict[str, Entry] = {}
    with _root(root) as fd:
        _walk(fd, "", out)
    return out


def _walk(dir_fd: int, prefix: str, out: dict[str, Entry]) -> None:
    for name in sorted(os.listdir(dir_fd)):
        st = _lstat(dir_fd, name)
        if st is None:
            continue
        entry = _entry(dir_fd, name, st)
        out[prefix + name] = entry
        if entry.kind == "folder":
            sub = _open_dir(dir_fd, name)
            try:
                _walk(sub, f"{prefix}{name}/", out)
            finally:
                os.close(sub)


def links_inside(entries: dict[str, Entry]) -> Counter[tuple[int, int]]:
    """How many names each file has inside the walked folder."""
    return Counter(e.key for e in entries.values() if e.kind == "file")


def outside_link(entry: Entry, inside: Counter[tuple[int, int]]) -> bool:
    """A regular file with more names than the workspace holds: one lies outside it, so its
    content is not the agent's to hand to the harness."""
    return entry.kind == "file" and entry.nlink > inside[entry.key]


# -- reading, writing, removing ----------------------------------------------------------
def read_regular(root: Path, rel: str, *, max_bytes: int, entries: dict[str, Entry] | None = None) -> tuple[bytes, int] | None:
    """The first `max_bytes` of the regular file `rel` and its whole size; None when no such
    name exists. Refused when a link, a special file or a file hard-linked from outside the
    workspace stands there (`entries`: a walk of `root` already made, to count hard links)."""
    parts = parts_of(rel)
    with _parent(root, parts, create=False) as parent:
        if parent is None:
            return None
        st = _lstat(parent, parts[-1])
        if st is None:
            return None
        entry = _entry(parent, parts[-1], st)
        if entry.kind != "file":
            raise Refused(f"{show(rel)}: a {entry.describe()}, not a regular file")
        if entry.nlink > 1 and outside_link(entry, links_inside(entries if entries is not None else walk(root))):
            raise Refused(f"{show(rel)}: a hard link to a file outside the workspace ({entry.nlink} names)")
        fd = os.open(parts[-1], _READ_FLAGS, dir_fd=parent)
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != entry.key or not stat.S_ISREG(now.st_mode):
                raise Refused(f"{show(rel)}: replaced while it was being opened")
            chunks, left = [], max_bytes
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks), now.st_size
        finally:
            os.close(fd)


def write_file(root: Path, rel: str, data: bytes) -> None:
    """`rel` written afresh as a new regular file; whatever stood there or on the way (a
    link, a FIFO, a folder, a hard-linked file) is removed first, never written through."""
    parts = parts_of(rel)
    with _parent(root, parts, create=True) as parent:
        assert parent is not None
        _remove_at(parent, parts[-1])
        fd = os.open(parts[-1], _CREATE_FLAGS, 0o644, dir_fd=parent)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def make_dir(root: Path, rel: str) -> None:
    """`rel` as a real folder (anything else in its place or on the way is removed first)."""
    parts = parts_of(rel)
    with _parent(root, parts, create=True) as parent:
        assert parent is not None
        st = _lstat(parent, parts[-1])
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(parts[-1], dir_fd=parent)
            st = None
        if st is None:
            os.mkdir(parts[-1], 0o755, dir_fd=parent)


def remove(root: Path, rel: str) -> None:
    """Remove `rel` (a folder with everything in it); a link is removed as a link. Nothing
    is removed beyond a link on the way: what lies there is not inside the workspace."""
    parts = parts_of(rel)
    try:
        with _parent(root, parts, create=False) as parent:
            if parent is not None:
                _remove_at(parent, parts[-1])
    except Refused:
        pass


def _remove_at(dir_fd: int, name: str) -> None:
    st = _lstat(dir_fd, name)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    sub = _open_dir(dir_fd, name)
    try:
        for child in os.listdir(sub):
            _remove_at(sub, child)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dir_fd)


def remove_tree(path: Path, *, within: Path) -> None:
    """Delete the folder `path`, which must lie inside `within` (the run's scratch folder),
    and everything in it, following no link: a link at `path` or anywhere below is
    removed as a link, and what it points to is left alone."""
    base = within.resolve()
    parent = path.parent.resolve()
    if path.name in ("", ".", "..") or not parent.is_relative_to(base):
        raise UserError(
            f"refusing to delete {show(str(path))}: it is not inside the run's scratch folder {base}; "
            "a sample or question id must be one plain path component (see memorybench/names.py)"
        )
    if not parent.is_dir():
        return  # nothing was made there yet
    with _root(parent) as fd:
        _remove_at(fd, path.name)


def copy_tree(source: Path, target: Path, *, max_bytes: int) -> list[str]:
    """Copy the folders and regular files of `source` into the new folder `target`; a link,
    a special file, a file hard-linked from outside or one larger than `max_bytes` is left
    out and named in the returned findings."""
    entries = walk(source)
    target.mkdir(parents=True)
    findings: list[str] = []
    for rel, entry in entries.items():  # parents first; nothing under a link was walked
        if entry.kind == "folder":
            make_dir(target, rel)
            continue
        try:
            got = read_regular(source, rel, max_bytes=max_bytes, entries=entries)
        except Refused as e:
            findings.append(f"{e}; not copied")
            continue
        if got is None:
            continue
        data, size = got
        if size > max_bytes:
            findings.append(f"{show(rel)}: {size} bytes, more than {max_bytes}; not copied")
            continue
        write_file(target, rel, data)
    return findings

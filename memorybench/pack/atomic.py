"""Atomic file writes: a reader never sees half a file, a full disk is one line, and no
known credential reaches the disk (every pack file but the journals is written here; the
journals scrub in `Journal.append`)."""

from __future__ import annotations

import os
from pathlib import Path

from memorybench.pack.journal import NO_SPACE, disk_full
from memorybench.secrets import scrub_bytes

__all__ = ["fsync_dir", "fsync_path", "write_atomic", "write_durable"]


def fsync_path(path: Path) -> None:
    """Flush a written file's bytes to the disk (a rename or a marker after it must not
    reach the disk before the bytes it names: a crash would leave a named, empty file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (a rename or a new file in it) to the disk; a file system
    that cannot fsync a folder is left to its own guarantees."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes) -> None:
    """`data` written to `path` (created or truncated) and fsynced before returning."""
    with path.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(target: Path, data: bytes) -> Path:
    """Atomic, durable write (temp file, fsync, rename, fsync of the folder): a reader never
    sees half a file, and a crash never leaves the name over missing bytes. A file that
    already holds exactly `data` is left as it is (rescoring a finished pack touches
    nothing). A full disk is a one-line DiskFullError, with no .part file left behind.
    Known credentials and URL userinfo are scrubbed first (`memorybench.secrets.scrub_bytes`)."""
    data = scrub_bytes(data, yaml=target.suffix in (".yaml", ".yml"))  # a masked YAML value stays YAML
    if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
        return target
    tmp = target.with_name(target.name + ".part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_durable(tmp, data)  # the bytes on disk before the name points at them
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
        tmp.unlink(missing_ok=True)  # its space back
        raise disk_full(target, e) from None
    return target

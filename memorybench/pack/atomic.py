"""Atomic pack-file writes: a reader never sees half a file, a full disk is one line, and no
known credential reaches the disk (every pack file but the journals is written here; the
journals scrub in `Journal.append`). The temp-file-and-rename itself is `memorybench.fs`'s,
the one helper every writer shares."""

from __future__ import annotations

from pathlib import Path

from memorybench.fs import NO_SPACE, fsync_dir, fsync_path, write_durable
from memorybench.fs import write_atomic as _write_atomic
from memorybench.pack.journal import disk_full
from memorybench.secrets import scrub_bytes

__all__ = ["fsync_dir", "fsync_path", "write_atomic", "write_durable"]


def write_atomic(target: Path, data: bytes) -> Path:
    """Atomic, durable write (`memorybench.fs.write_atomic`: a temp file of this writer's own,
    fsync, rename, fsync of the folder): a reader never sees half a file, and a crash never
    leaves the name over missing bytes. A file that already holds exactly `data` is left as
    it is (rescoring a finished pack touches nothing). A full disk is a one-line
    DiskFullError, with no .part file left behind. Known credentials and URL userinfo are
    scrubbed first (`memorybench.secrets.scrub_bytes`)."""
    data = scrub_bytes(data, yaml=target.suffix in (".yaml", ".yml"))  # a masked YAML value stays YAML
    if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
        return target
    try:
        return _write_atomic(target, data)
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
        raise disk_full(target, e) from None

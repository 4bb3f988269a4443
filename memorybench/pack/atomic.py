"""Atomic file writes: a reader never sees half a file, a full disk is one line, and no
known credential reaches the disk (every pack file but the journals is written here; the
journals scrub in `Journal.append`)."""

from __future__ import annotations

import os
from pathlib import Path

from memorybench.pack.journal import NO_SPACE, disk_full
from memorybench.secrets import scrub_bytes

__all__ = ["write_atomic"]


def write_atomic(target: Path, data: bytes) -> Path:
    """Atomic write (temp file then rename): a reader never sees half a file. A file that
    already holds exactly `data` is left as it is (rescoring a finished pack touches
    nothing). A full disk is a one-line DiskFullError, with no .part file left behind.
    Known credentials and URL userinfo are scrubbed first (`memorybench.secrets.scrub_bytes`)."""
    data = scrub_bytes(data)
    if target.is_file() and target.stat().st_size == len(data) and target.read_bytes() == data:
        return target
    tmp = target.with_name(target.name + ".part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        if e.errno not in NO_SPACE:
            raise
        tmp.unlink(missing_ok=True)  # its space back
        raise disk_full(target, e) from None
    return target

"""`memorybench pull PACK_URI DIR`: copy one finished pack from a bucket to a local folder.

    memorybench pull gs://BUCKET/ROOT/<name>/runs/<run_id> outputs/pulled

The pack lands in `DIR/<run_id>` (in `DIR` itself when `DIR` does not exist yet, as `cp -r`
does), byte for byte: its `_SUCCESS` holds the sha256 of every file it closes, so
`memorybench verify` on the copy checks it is the pack that was published. Only a finished
pack (one with `_SUCCESS`) is pulled; an existing non-empty target is never overwritten.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path

from memorybench.errors import OneLineParser, UserError
from memorybench.storage import fetch_pack, open_storage

__all__ = ["pull", "pull_main"]


def _target(uri: str, dest: Path) -> Path:
    run_id = posixpath.basename(uri.rstrip("/"))
    target = dest / run_id if dest.is_dir() else dest
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(f"{target} already exists and is not empty; pass another folder or remove it first")
    return target


def pull(uri: str, dest: str | Path) -> Path:
    """Download the finished pack at `uri` (gs://) into a new local folder; return it."""
    if not uri.startswith("gs://"):
        raise UserError(f"{uri!r} is not a gs:// pack; pull copies a pack from a bucket (a local pack is already here)")
    target = _target(uri, Path(dest).expanduser())
    storage = open_storage(uri.rstrip("/"))
    return fetch_pack(storage, "", target)


def pull_main(argv: Sequence[str]) -> int:
    parser = OneLineParser(prog="memorybench pull", description="Copy a finished pack from gs:// to a local folder.")
    parser.add_argument("pack", help="gs://BUCKET/ROOT/<name>/runs/<run_id>")
    parser.add_argument("dir", help="local folder: the pack goes to DIR/<run_id> (or DIR when it does not exist)")
    ns = parser.parse_args(list(argv))
    target = pull(ns.pack, ns.dir)
    files = sum(1 for p in target.rglob("*") if p.is_file())
    print(f"pulled {files} file(s) from {ns.pack} to {target}")
    print(f"check it: memorybench verify {target}")
    return 0

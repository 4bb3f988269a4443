"""Packs in storage: publish a finished local pack, fetch one back, list the finished ones.

A pack is built in a local work folder (its journals need appends) and published whole
when it is finished: every file first, then `_SUCCESS`, created only if absent. A later
stage (rescore, autorater, aggregate) reads a pack through `fetch_pack`, which returns
the folder itself for a local root and a downloaded copy for a gs:// root.
"""

from __future__ import annotations

import posixpath
import sys
from dataclasses import dataclass
from pathlib import Path

from memorybench.errors import UserError
from memorybench.storage._base import SUCCESS, AlreadyExists, Storage, join
from memorybench.storage._gcs import GCSStorage
from memorybench.storage._local import LocalStorage


def open_storage(root: str, client: object = None) -> Storage:
    """`gs://bucket/prefix` -> GCS (optionally with a given client); anything else -> a local folder."""
    text = str(root)
    if text.startswith("gs://"):
        return GCSStorage(text, client=client)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise UserError(f"storage root {text!r}: scheme {scheme}:// is not supported; use a local folder or gs://BUCKET/PREFIX")
    return LocalStorage(text)


def open_uri(uri: str, client: object = None) -> tuple[Storage, str]:
    """(storage, relpath) for one object's address: `gs://bucket/a/b.json` or a local file path."""
    text = str(uri)
    if text.startswith("gs://"):
        from memorybench.storage._gcs import parse_gs_uri

        bucket, name = parse_gs_uri(text)
        if not name:
            raise UserError(f"{text!r} names a bucket, not an object; write gs://BUCKET/PATH")
        return GCSStorage(f"gs://{bucket}", client=client), name
    path = Path(text).expanduser().resolve()
    return LocalStorage(path.parent), path.name


def storage_uri(root: str, relpath: str = "") -> str:
    """The address of `relpath` under `root` without opening anything (no client, no credentials)."""
    text = str(root)
    if text.startswith("gs://"):
        from memorybench.storage._gcs import parse_gs_uri

        bucket, prefix = parse_gs_uri(text.rstrip("/"))
        name = join(prefix, relpath)
        return f"gs://{bucket}/{name}" if name else f"gs://{bucket}"
    return LocalStorage(text).uri(relpath)


def pack_relpath(name: str, run_id: str) -> str:
    """Where a run's pack lives inside a storage root (DESIGN.md 4.4)."""
    return join(name, "runs", run_id)


@dataclass(frozen=True)
class Published:
    uri: str
    #: relative paths written (empty when nothing was uploaded)
    files: tuple[str, ...]
    #: the pack was already published (its `_SUCCESS` existed, or another writer created it first)
    already: bool = False


def publish_pack(local_pack_dir: str | Path, storage: Storage, relpath: str) -> Published:
    """Upload a finished local pack to `storage/relpath`: every file, then `_SUCCESS` create-only.

    `_SUCCESS` goes up with its content (the sha256 of every file it closes), and the files
    uploaded are the pack's files as its markers count them (`local_files`: no `*.part`, no
    links), so the published pack verifies wherever it is read from.

    A pack whose `_SUCCESS` is already in storage is left as it is (published packs are
    never overwritten). Publishing a local pack onto itself does nothing.
    """
    source = Path(local_pack_dir).resolve()
    if not (source / SUCCESS).is_file():
        raise UserError(f"{source} has no {SUCCESS}: only a finished pack is published; rerun the stage to finish it")
    target = storage.local_path(relpath)
    if target is not None and target.resolve() == source:
        return Published(storage.uri(relpath), (), already=True)
    if storage.exists(join(relpath, SUCCESS)):
        return Published(storage.uri(relpath), (), already=True)
    try:
        files = storage.upload_dir(source, relpath)
    except AlreadyExists as e:
        # a concurrent attempt of the same run id won the marker; its files are the same experiment
        print(f"memorybench: {e.message}; keeping the first writer's {SUCCESS}", file=sys.stderr)
        return Published(storage.uri(relpath), (), already=True)
    return Published(storage.uri(relpath), tuple(files))


def fetch_pack(storage: Storage, relpath: str, local_dir: str | Path, require_success: bool = True) -> Path:
    """A local folder holding the pack at `storage/relpath`.

    For a local root that is the pack folder itself (nothing is copied; `local_dir` is
    unused); for gs:// every object under the pack is downloaded into `local_dir`.
    """
    if require_success and not storage.exists(join(relpath, SUCCESS)):
        raise UserError(f"{storage.uri(relpath)} is not a finished pack (no {SUCCESS}); finish it with `memorybench qa` first")
    local = storage.local_path(relpath)
    if local is not None:
        if not local.is_dir():
            raise UserError(f"pack folder {local} does not exist")
        return local
    dest = Path(local_dir)
    dest.mkdir(parents=True, exist_ok=True)
    if not storage.download_dir(relpath, dest):
        raise UserError(f"{storage.uri(relpath)} holds no files")
    return dest


def list_packs(storage: Storage, name: str | None = None, finished: bool = True) -> list[str]:
    """Relative paths `<name>/runs/<run_id>` of the packs under the root (only finished ones by default)."""
    packs: set[str] = set()
    for rel in storage.list(f"{name}/runs/" if name else ""):
        parts = rel.split("/")
        if len(parts) < 4 or parts[1] != "runs":
            continue
        pack = "/".join(parts[:3])
        if not finished or (len(parts) == 4 and parts[3] == SUCCESS):
            packs.add(pack)
    return sorted(packs)


def parent_of(relpath: str) -> str:
    return posixpath.dirname(relpath.rstrip("/"))

"""`gs://bucket/prefix` through google-cloud-storage (imported only when a gs:// root is opened).

Markers are created with `if_generation_match=0`: GCS refuses the second create with
412 Precondition Failed, which becomes `AlreadyExists`. Ordinary objects are uploaded
whole (single-request uploads up to 8 MiB, resumable above) and retried on transient
errors: overwriting a whole object with the same bytes is idempotent.

The client honours `STORAGE_EMULATOR_HOST` (fake-gcs-server in tests: anonymous
credentials, no project needed).
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memorybench.errors import UserError, needs_extra
from memorybench.fs import atomic_path
from memorybench.storage._base import (
    SUCCESS,
    AlreadyExists,
    Storage,
    StorageNotFound,
    clean_relpath,
    join,
    local_files,
    read_tree_file,
    tree_folder,
    upload_order,
)

#: objects copied at once by upload_dir / download_dir (google's transfer_manager uses threads the same way)
WORKERS = 8
_TYPES = {".jsonl": "application/jsonl", ".md": "text/markdown", ".yaml": "application/yaml", ".txt": "text/plain"}


def parse_gs_uri(uri: str) -> tuple[str, str]:
    """`gs://bucket/a/b` -> ("bucket", "a/b")."""
    if not uri.startswith("gs://"):
        raise UserError(f"{uri!r} is not a gs:// URI; write gs://BUCKET/PREFIX")
    bucket, _, prefix = uri[len("gs://") :].partition("/")
    if not bucket:
        raise UserError(f"{uri!r} has no bucket; write gs://BUCKET/PREFIX")
    return bucket, clean_relpath(prefix)


def _content_type(relpath: str) -> str:
    if Path(relpath).name == SUCCESS:
        return "application/json"  # a success.v1 record (an old, empty marker is served the same)
    suffix = Path(relpath).suffix.lower()
    return _TYPES.get(suffix) or mimetypes.guess_type(relpath)[0] or "application/octet-stream"


def _default_client(gcs: Any) -> Any:
    """google.cloud.storage.Client() with Application Default Credentials, or one line saying how to get them."""
    from google.auth.exceptions import DefaultCredentialsError

    try:
        return gcs.Client()
    except DefaultCredentialsError as e:
        reason = str(e).split(". ")[0].strip().rstrip(".")
        raise UserError(
            f"no Google credentials for gs:// storage ({reason}); run `gcloud auth application-default login` "
            "or set GOOGLE_APPLICATION_CREDENTIALS to a service account key"
        ) from None


class GCSStorage(Storage):
    def __init__(self, uri: str, client: Any = None) -> None:
        self.bucket_name, self.prefix = parse_gs_uri(uri.rstrip("/"))
        with needs_extra("cloud", f"{uri} needs google-cloud-storage", modules=("google.cloud.storage",)):
            from google.cloud import storage as gcs

        self.root = f"gs://{self.bucket_name}" + (f"/{self.prefix}" if self.prefix else "")
        self.client = client if client is not None else _default_client(gcs)
        self.bucket = self.client.bucket(self.bucket_name)

    # -- names -----------------------------------------------------------------------------
    def _name(self, relpath: str) -> str:
        return join(self.prefix, clean_relpath(relpath))

    def uri(self, relpath: str = "") -> str:
        name = self._name(relpath)
        return f"gs://{self.bucket_name}/{name}" if name else f"gs://{self.bucket_name}"

    def local_path(self, relpath: str = "") -> Path | None:
        return None

    # -- objects ---------------------------------------------------------------------------
    def read_bytes(self, relpath: str) -> bytes:
        from google.api_core.exceptions import NotFound

        try:
            return self.bucket.blob(self._name(relpath)).download_as_bytes()
        except NotFound:
            raise StorageNotFound(self.uri(relpath)) from None

    def write_bytes(self, relpath: str, data: bytes) -> None:
        from google.cloud.storage.retry import DEFAULT_RETRY

        blob = self.bucket.blob(self._name(relpath))
        blob.upload_from_string(data, content_type=_content_type(relpath), retry=DEFAULT_RETRY)

    def create_only(self, relpath: str, data: bytes = b"") -> None:
        from google.api_core.exceptions import PreconditionFailed

        blob = self.bucket.blob(self._name(relpath))
        try:
            # generation 0 = "no live object": the server refuses a second create (412)
            blob.upload_from_string(data, content_type=_content_type(relpath), if_generation_match=0)
        except PreconditionFailed:
            raise AlreadyExists(self.uri(relpath)) from None

    def exists(self, relpath: str) -> bool:
        return bool(self.bucket.blob(self._name(relpath)).exists())

    def generation(self, relpath: str) -> int | None:
        """The object's generation (None if absent): tests and audits compare them."""
        blob = self.bucket.get_blob(self._name(relpath))
        return None if blob is None else int(blob.generation)

    def list(self, prefix: str = "") -> list[str]:
        rel = clean_relpath(prefix) if prefix.strip("/") else ""
        if prefix.endswith("/") and rel:
            rel += "/"
        root = self.prefix + "/" if self.prefix else ""
        full, cut = root + rel, len(root)
        names = (b.name for b in self.client.list_blobs(self.bucket_name, prefix=full or None))
        return sorted(n[cut:] for n in names if not n.endswith("/"))

    # -- folders ---------------------------------------------------------------------------
    def upload_dir(
        self, local_dir: str | Path, dest_prefix: str, markers: Iterable[str] = (SUCCESS,), files: Sequence[str] | None = None
    ) -> list[str]:
        from google.cloud.storage.retry import DEFAULT_RETRY

        source = Path(local_dir)
        plain, marks = upload_order(local_files(source) if files is None else list(files), markers)

        def put(rel: str) -> None:
            blob = self.bucket.blob(self._name(join(dest_prefix, rel)))
            data = read_tree_file(source, clean_relpath(rel))  # never through a link (a host file would be uploaded)
            blob.upload_from_string(data, content_type=_content_type(rel), retry=DEFAULT_RETRY)

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(put, plain))  # re-raises the first failure
        for rel in marks:
            self.create_only(join(dest_prefix, rel), read_tree_file(source, clean_relpath(rel)))
        return [join(dest_prefix, r) for r in plain + marks]

    def download_dir(self, prefix: str, local_dir: str | Path) -> list[str]:
        """Download every object under `prefix/` (the client checks each one's checksum); each
        file's mtime is its object's update time, so the local copy keeps the order it was
        written in (`_SUCCESS` newest). Nothing depends on that order: a pack is checked
        against the hashes its `_SUCCESS` holds."""
        dest = Path(local_dir)
        base = clean_relpath(prefix)
        full = join(self.prefix, base) + "/" if (self.prefix or base) else ""
        blobs = [b for b in self.client.list_blobs(self.bucket_name, prefix=full or None) if not b.name.endswith("/")]
        inner = [b.name[len(full) :] for b in blobs]
        for blob, name in zip(blobs, inner, strict=True):
            # an object named `<prefix>/../../x` (or absolute) would land outside `dest`: refuse them all first
            parts = name.replace("\\", "/").split("/")
            if name.startswith("/") or "\x00" in name or any(part in ("", ".", "..") for part in parts):
                raise UserError(
                    f"object {f'gs://{self.bucket_name}/{blob.name}'!r} would be written outside {dest} (an absolute "
                    "name, or '.', '..' or empty segments); nothing was downloaded: remove or rename that "
                    "object in the bucket"
                )

        def get(pair: tuple[Any, str]) -> None:
            blob, local = pair
            # written whole beside its name and renamed, in a folder reached through no link
            target = tree_folder(dest, posixpath.dirname(local)) / posixpath.basename(local)
            with atomic_path(target) as tmp:
                blob.download_to_filename(str(tmp))
            if blob.updated is not None:
                stamp = blob.updated.timestamp()
                os.utime(target, (stamp, stamp))

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(get, zip(blobs, inner, strict=True)))
        return sorted(inner)

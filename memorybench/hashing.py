"""The one place memorybench computes a sha256: of bytes, of text, of a file, of JSON.

Every hash in a pack, a run id, a cache key or a manifest is one of these, so two
places can never disagree on how the same thing is hashed (UTF-8 text; canonical JSON
with sorted keys, no spaces, non-ASCII kept).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Iterable
from typing import Any

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: texts this long are hashed once per process (`_sha256_large`): a memory of a run is hashed
#: for every question (its store, its slot in the reader's trace), the same 80 kB each time
_MEMO_CHARS = 1 << 14


def sha256_text(text: str) -> str:
    """sha256 of the UTF-8 bytes of `text`."""
    if len(text) >= _MEMO_CHARS:
        return _sha256_large(text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=16)
def _sha256_large(text: str) -> str:
    # keyed by the text itself (equal texts hit, whatever object holds them); 16 of them at most
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(_CHUNK), b""):
            digest.update(piece)
    return digest.hexdigest()


def canonical_json(data: Any) -> str:
    """JSON with sorted keys and no spaces: the same text for the same data on any machine."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_object(encoded: dict[str, str]) -> str:
    """`canonical_json` of an object whose values are given already encoded by it: the same
    text (keys sorted, no spaces), so a large value shared by two objects is encoded once."""
    return "{" + ",".join(f"{canonical_json(k)}:{v}" for k, v in sorted(encoded.items())) + "}"


def sha256_json(data: Any) -> str:
    return sha256_text(canonical_json(data))


_FILE_HASHES: dict[tuple[str, int, int], str] = {}
_FILE_HASHES_LOCK = threading.Lock()


def sha256_file_cached(path: str | os.PathLike[str]) -> str:
    """sha256 of a (large) file, computed once per (path, size, mtime) in this process:
    model weights and binaries are hashed for every run's metadata, not re-read each time."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    with _FILE_HASHES_LOCK:
        hit = _FILE_HASHES.get(key)
    if hit is None:
        hit = sha256_file(path)
        with _FILE_HASHES_LOCK:
            _FILE_HASHES[key] = hit
    return hit


def sha256_parts(parts: Iterable[bytes]) -> str:
    """sha256 over several byte strings in order (e.g. each file's name and bytes of a tree)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return digest.hexdigest()

"""The embedded model's prefill kept on disk: a memory's KV state paid once per model and
build, across server processes (used in the server process, beside `prefix_reuse`).

A state is the KV cache of sequence 0 (``llama_state_seq_get_data``) right after the
exact-reuse scheme evaluated a prompt up to its *cut* (the start of its last paragraph:
the question in a reader prompt; see :mod:`memorybench.llm.local.prefix_reuse`). Up to
the cut every chunk boundary is a multiple of ``n_batch``, so the state of ``tokens[:B]``
is the same whatever prompt it was computed for, and a later prompt may start from it
exactly when ``B`` is one of its own boundaries with no other cut below it.

Key: sha256 of the settings (`settings`: the model file's sha256, llama-cpp-python's
version and the sha256 of its native libraries, llama.cpp's system info, the context
settings and thread counts) and of the exact prefix tokens. File:
``<folder>/<key>.kv``::

    MAGIC | u32 header length | header JSON (settings, n_tokens, data sha256) | int32 tokens | state

A file that is short, corrupt, of other settings or other tokens is a miss (and removed),
never an error. Files are written under a unique temporary name and renamed; the folder
is kept under ``max_bytes``, the least recently used first out (a restore touches its file).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import struct
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MAGIC = b"MBPREFILL1\n"
SUFFIX = ".kv"
#: default bound of the folder (MiB); MEMORYBENCH_PREFILL_CACHE_MB overrides, 0 turns the store off
DEFAULT_MAX_MB = 4096
#: a prefix shorter than this is not kept: its prefill costs seconds at most, and a judge's
#: prompt (~500 tokens, its cut after the question and both answers) would only churn the folder
DEFAULT_MIN_TOKENS = 1024
SEQ = 0  # llama-cpp-python evaluates everything in sequence 0


def _log(message: str) -> None:
    print(f"memorybench-prefill: {message}", file=sys.stderr, flush=True)


def build_identity() -> dict[str, Any]:
    """llama-cpp-python's version, the sha256 of its native libraries and llama.cpp's
    system info: a state is only restored by the build that wrote it."""
    import llama_cpp

    lib_dir = Path(llama_cpp.__file__).resolve().parent / "lib"
    libs: dict[str, str] = {}
    if lib_dir.is_dir():
        for path in sorted(lib_dir.iterdir()):
            if path.is_file() and not path.is_symlink():
                libs[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    info = llama_cpp.llama_print_system_info()
    return {
        "llama_cpp_python": llama_cpp.__version__,
        "libs": libs,
        "system_info": info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info),
    }


def settings(model_sha256: str, **context: Any) -> dict[str, Any]:
    """Everything a state depends on besides the tokens (`context`: n_ctx, n_batch, ...)."""
    return {"format": 1, "model_sha256": model_sha256, "build": build_identity(), "context": dict(sorted(context.items()))}


class PrefillStore:
    """States of prefixes under `folder` for one model, build and context `settings`."""

    def __init__(self, folder: Path, settings: dict[str, Any], *, max_bytes: int, min_tokens: int = DEFAULT_MIN_TOKENS):
        self.folder = Path(folder)
        self.settings = settings
        self.settings_json = json.dumps(settings, sort_keys=True, separators=(",", ":"))
        self.settings_sha256 = hashlib.sha256(self.settings_json.encode()).hexdigest()
        self.max_bytes = int(max_bytes)
        self.min_tokens = int(min_tokens)

    # -- keys -----------------------------------------------------------------------------
    def keys(self, tokens: Sequence[int], points: Sequence[int]) -> dict[int, str]:
        """The key of ``tokens[:b]`` for every b in `points` (one pass over the tokens)."""
        h = hashlib.sha256(self.settings_sha256.encode())
        out: dict[int, str] = {}
        done = 0
        for b in sorted(points):
            h.update(struct.pack(f"<{b - done}i", *tokens[done:b]))
            done = b
            out[b] = h.copy().hexdigest()
        return out

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    # -- restore --------------------------------------------------------------------------
    def restore(self, llama: Any, tokens: Sequence[int], candidates: Sequence[int]) -> int:
        """Load the longest stored prefix among `candidates` into `llama`'s KV cache;
        the prefix length, or 0 (nothing restored, the cache left empty or untouched)."""
        points = [b for b in candidates if b >= self.min_tokens]
        if not points:
            return 0
        keys = self.keys(tokens, points)
        for b in sorted(points, reverse=True):
            path = self.path(keys[b])
            if not path.is_file():
                continue
            data = self._read(path, tokens[:b])
            if data is None:
                continue
            if self._load(llama, data, b, tokens):
                try:
                    os.utime(path)  # recently used: the last one out
                except OSError:
                    pass
                return b
            _log(f"{path.name}: llama.cpp refused the state; evaluating instead")
            return 0
        return 0

    def _read(self, path: Path, prefix: Sequence[int]) -> Any:
        try:
            with path.open("rb") as f:
                if f.read(len(MAGIC)) != MAGIC:
                    raise ValueError("not a state file")
                (n_header,) = struct.unpack("<I", f.read(4))
                header = json.loads(f.read(n_header).decode("utf-8"))
                if header.get("settings") != self.settings or header.get("n_tokens") != len(prefix):
                    raise ValueError("other settings")
                stored = f.read(4 * len(prefix))
                if stored != struct.pack(f"<{len(prefix)}i", *prefix):
                    raise ValueError("other tokens")
                size = int(header["data_bytes"])
                buf = bytearray(size)
                if f.readinto(buf) != size or f.read(1):
                    raise ValueError("wrong length")
            if hashlib.sha256(buf).hexdigest() != header["data_sha256"]:
                raise ValueError("checksum mismatch")
            return buf
        except (OSError, ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as e:
            _log(f"{path.name}: unusable ({e}); removed, evaluating instead")
            path.unlink(missing_ok=True)
            return None

    @staticmethod
    def _load(llama: Any, data: bytearray, n_tokens: int, tokens: Sequence[int]) -> bool:
        import llama_cpp
        import numpy as np

        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        llama.n_tokens = 0
        buf = (ctypes.c_uint8 * len(data)).from_buffer(data)
        if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buf, len(data), SEQ) != len(data):
            llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # whatever half of it landed
            return False
        llama.input_ids[:n_tokens] = np.asarray(tokens[:n_tokens], dtype=np.intc)
        llama.n_tokens = n_tokens
        llama._requires_eval = True  # no logits come with the state
        return True

    # -- save -----------------------------------------------------------------------------
    def save(self, llama: Any, prefix: Sequence[int]) -> Path | None:
        """Write the KV state of `llama` (holding exactly `prefix`) unless it is there."""
        import llama_cpp

        n = len(prefix)
        if n < self.min_tokens or self.max_bytes <= 0:
            return None
        path = self.path(self.keys(prefix, [n])[n])
        if path.is_file():
            return None
        size = int(llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, SEQ))
        buf = (ctypes.c_uint8 * size)()
        written = int(llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, buf, size, SEQ))
        if written <= 0 or written > size:
            return None
        data = memoryview(buf)[:written]
        header = json.dumps(
            {
                "settings": self.settings,
                "n_tokens": n,
                "data_bytes": written,
                "data_sha256": hashlib.sha256(data).hexdigest(),
            },
            sort_keys=True,
        ).encode()
        total = len(MAGIC) + 4 + len(header) + 4 * n + written
        if total > self.max_bytes:
            return None
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as f:
                f.write(MAGIC + struct.pack("<I", len(header)) + header)
                f.write(struct.pack(f"<{n}i", *prefix))
                f.write(data)
            # no fsync: a crash that leaves the name over missing bytes is a checksum miss
            os.replace(tmp, path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            _log(f"could not keep the prefill of {n} tokens ({e}); going on without it")
            return None
        self.prune(keep=path)
        return path

    def prune(self, keep: Path | None = None) -> None:
        """Remove the least recently used states until the folder holds at most max_bytes."""
        entries = []
        try:
            for p in self.folder.iterdir():
                if p.suffix == SUFFIX or p.name.endswith(".part"):
                    try:
                        st = p.stat()
                    except OSError:
                        continue
                    if p.name.endswith(".part") and time.time() - st.st_mtime < 3600:
                        continue  # another process may be writing it
                    entries.append((st.st_mtime, st.st_size, p))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes:
                break
            if p == keep:
                continue
            try:
                p.unlink()
            except OSError:
                continue
            total -= size

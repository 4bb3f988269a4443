"""The embedder base class: unit-length float32 vectors, a content-hash cache, usage."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memorybench.hashing import sha256_text
from memorybench.llm.records import Attempt
from memorybench.llm.usage import UsageMeter


@dataclass
class EmbedUsage(UsageMeter):
    """What embedding cost so far (a snapshot can be subtracted from a later one)."""

    #: requests to a model (an HTTP request, or one batch through a local model)
    calls: int = 0
    #: texts asked for, cached or not
    texts: int = 0
    cache_hits: int = 0
    #: tokens the provider billed (openai); 0 for local models
    tokens: int = 0
    #: USD; None once any call had no price in the table (unknown is not free)
    cost_usd: float | None = 0.0
    #: seconds spent embedding (cache look-ups included)
    latency_s: float = 0.0
    #: tries beyond the first, over all batches (an embedder that retries: openai)
    retries: int = 0
    #: each batch that took more than one try, in order: {"texts": N, "attempts": [...]}, its
    #: attempts recorded as a chat call's are (`memorybench.llm.records.Attempt`: status,
    #: error, the seconds waited and whether Retry-After set them); the last one failed when
    #: the batch did
    retried_batches: tuple[dict[str, Any], ...] = ()


def text_sha256(text: str) -> str:
    return sha256_text(text)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def rank(matrix: np.ndarray, query: np.ndarray, k: int | None = None) -> list[tuple[int, float]]:
    """(row, cosine) of the k rows most similar to `query`, best first; ties by row order."""
    if len(matrix) == 0:
        return []
    scores = np.asarray(matrix, dtype=np.float32) @ np.asarray(query, dtype=np.float32)
    order = np.argsort(-scores, kind="stable")
    if k is not None:
        order = order[:k]
    return [(int(i), float(scores[i])) for i in order]


class EmbeddingCache:
    """sha256(text) -> vector, in one SQLite file (safe for concurrent runs on one machine)."""

    def __init__(self, path: Path, dim: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=60.0)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (sha TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._db.commit()

    def get_many(self, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(shas))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            for sha, blob in self._db.execute(f"SELECT sha, vec FROM vectors WHERE sha IN ({marks})", part):
                found[sha] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO vectors (sha, vec) VALUES (?, ?)",
            [(sha, np.asarray(vec, dtype=np.float32).tobytes()) for sha, vec in items],
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()


class Embedder:
    """Unit-length float32 vectors for texts. Subclasses implement `_embed_batch`.

    `identity` (recorded in the pack) says exactly which model made the vectors; `key`,
    its hash, names the cache file, so vectors of two models never mix.
    """

    #: the conf/embedder option name
    name: str = ""
    #: the provider (openai, sentence_transformers, hashing)
    provider: str = ""
    #: True when the vectors come from a semantic model (False for the hashing baseline)
    semantic: bool = True
    batch_size: int = 64
    use_cache: bool = True

    def __init__(self, name: str, cache_dir: Path | None) -> None:
        self.name = name
        self.usage = EmbedUsage()
        #: the tries of the batch being embedded, when the subclass retries (`_embed_batch` fills it)
        self._batch_attempts: list[Attempt] = []
        self._cache_dir = cache_dir
        self._cache: EmbeddingCache | None = None

    # -- what subclasses provide -----------------------------------------------------
    @property
    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def _embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int, float | None]:
        """(vectors, billed tokens, cost in USD or None when unknown) for one batch. A
        subclass that retries appends each try to `self._batch_attempts`."""
        raise NotImplementedError

    # -- public ----------------------------------------------------------------------
    @property
    def key(self) -> str:
        blob = json.dumps(self.identity, sort_keys=True, separators=(",", ":"))
        return sha256_text(blob)[:16]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) unit-length float32 rows, in the order of `texts`."""
        texts = [str(t) for t in texts]
        started = time.perf_counter()
        self.usage.texts += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        shas = [text_sha256(t) for t in texts]
        cache = self._open_cache()
        found = cache.get_many(shas) if cache is not None else {}
        self.usage.cache_hits += sum(1 for s in shas if s in found)
        missing = list(dict.fromkeys(t for t, s in zip(texts, shas) if s not in found))
        for start in range(0, len(missing), max(1, self.batch_size)):
            batch = missing[start : start + max(1, self.batch_size)]
            self._batch_attempts = []
            try:
                vectors, tokens, cost = self._embed_batch(batch)
            finally:  # a batch that failed after its retries is recorded too
                self._record_attempts(len(batch))
            vectors = normalize_rows(vectors)
            self.usage.calls += 1
            self.usage.tokens += tokens
            self.usage.cost_usd = None if cost is None or self.usage.cost_usd is None else round(self.usage.cost_usd + cost, 10)
            pairs = [(text_sha256(t), v) for t, v in zip(batch, vectors)]
            found.update(pairs)
            if cache is not None:
                cache.put_many(pairs)
        out = np.stack([found[s] for s in shas]).astype(np.float32, copy=False)
        self.usage.latency_s += time.perf_counter() - started
        return out

    def _record_attempts(self, texts: int) -> None:
        attempts = self._batch_attempts
        if len(attempts) > 1:
            self.usage.retries += len(attempts) - 1
            rows = [a.model_dump(mode="json") for a in attempts]
            self.usage.retried_batches = (*self.usage.retried_batches, {"texts": texts, "attempts": rows})

    @property
    def dim(self) -> int:
        return int(self.identity.get("dimensions") or 0)

    @property
    def model_identity(self) -> Any:
        """The embedder as a run_meta.json `models` entry (role `embedder`)."""
        from memorybench.llm.records import ModelIdentity

        identity = self.identity
        return ModelIdentity(
            role="embedder",
            provider=self.provider,
            requested=identity.get("model"),
            answered=sorted(getattr(self, "answered", ()) or ()),
            base_url=identity.get("base_url"),
            weights={k: v for k, v in identity.items() if k not in ("provider", "model", "base_url")},
        )

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def _open_cache(self) -> EmbeddingCache | None:
        if not self.use_cache or self._cache_dir is None:
            return None
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_dir / "embeddings" / f"{self.provider}-{self.key}.sqlite")
        return self._cache

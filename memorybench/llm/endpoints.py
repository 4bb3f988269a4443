"""Open a configured model endpoint (reader, writer or judge) as a ready `ChatClient`.

A provider is a base URL plus credentials from the environment: `openai`,
`openai_compatible` (any server that speaks Chat Completions), or `local` (the embedded
llama.cpp model, started here and stopped when the block ends). Keys are read from the
environment variable the config names, never from the config itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memorybench.errors import UserError
from memorybench.llm.cache import ResponseCache
from memorybench.llm.client import ChatClient
from memorybench.pack.schemas import ModelIdentity


@dataclass
class Endpoint:
    client: ChatClient
    #: the model id sent in requests
    model: str
    identity: ModelIdentity
    #: stop sequences the model needs (the embedded base model stops at a newline)
    stop: tuple[str, ...] = ()

    @property
    def is_local(self) -> bool:
        return self.identity.local


def api_key_for(node: DictConfig, role: str) -> str | None:
    env = node.get("api_key_env")
    if not env:
        return None
    key = os.environ.get(str(env))
    if not key and node.provider == "openai":
        raise UserError(f"{env} is not set; export {env}=... for {role}={node.name}, or use {role}=local (no key needed)")
    return key or None


def secret_values(*nodes: DictConfig) -> list[str]:
    """The values of every credential variable the run uses, for redaction and scans."""
    values = []
    for node in nodes:
        env = node.get("api_key_env") if node is not None else None
        if env and os.environ.get(str(env)):
            values.append(os.environ[str(env)])
    return values


@contextlib.contextmanager
def open_endpoint(
    node: DictConfig,
    role: str,
    *,
    cache_dir: Path,
    prices: Mapping[str, Any],
    longest_prompt_tokens: int = 0,
    log_dir: Path | None = None,
) -> Iterator[Endpoint]:
    """Yield a ready endpoint; a local server lives exactly as long as the block."""
    cache = ResponseCache(cache_dir / "responses") if node.get("cache") else None
    common = dict(
        timeout_s=float(node.timeout_s),
        max_retries=int(node.max_retries),
        retry_max_wait_s=float(node.retry_max_wait_s),
        min_request_interval_s=float(node.min_request_interval_s),
        cache=cache,
        prices=prices,
    )
    if node.provider == "local":
        # heavy imports only when the embedded model is used
        from memorybench.llm.local import LocalServer, choose_local_model

        spec, n_ctx, reason = choose_local_model(
            longest_prompt_tokens + int(node.max_tokens), str(node.model or "auto")
        )
        if node.get("n_ctx"):
            n_ctx = int(node.n_ctx)
        weights = spec.path()
        log_path = (log_dir / f"llama_server_{role}.log") if log_dir else None
        with LocalServer(spec, n_ctx, log_path=log_path) as server:
            client = ChatClient(base_url=server.base_url, api_key=None, **common)
            identity = ModelIdentity(
                role=role,
                provider="local",
                requested=str(node.model),
                base_url=None,
                local=True,
                weights={
                    "model": spec.name,
                    "package": spec.package,
                    "sha256": spec.sha256,
                    "file": weights.name,
                    "n_ctx": n_ctx,
                    "choice_reason": reason,
                },
            )
            try:
                yield Endpoint(client, server.model_id, identity, tuple(spec.stop))
            finally:
                client.close()
        return
    if node.provider not in ("openai", "openai_compatible"):
        raise UserError(f"{role}.provider={node.provider} is unknown; choose openai, openai_compatible or local")
    client = ChatClient(base_url=str(node.base_url), api_key=api_key_for(node, role), **common)
    identity = ModelIdentity(role=role, provider=str(node.provider), requested=str(node.model), base_url=str(node.base_url))
    try:
        yield Endpoint(client, str(node.model), identity)
    finally:
        client.close()

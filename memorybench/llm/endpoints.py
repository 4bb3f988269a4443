"""Open a configured model endpoint (reader, writer or judge) as a ready `ChatClient`.

A provider (registered in `memorybench.registry.CHAT_PROVIDERS` by its `provider`
name) is a base URL plus credentials from the environment: `openai`,
`openai_compatible` (any server that speaks Chat Completions), or `local` (the embedded
llama.cpp model, started here and stopped when the block ends). A provider has
`check(group, node)`, `open(node, role, settings, ...)`, a context manager yielding
an `Endpoint`, and may have `check_installed(group, node)`: the packages it imports
are there (`local`: the `local` extra), else one line naming the extra. Keys are read from the
environment variable the config names, never from the config itself; a key or a user and
password in `base_url`'s userinfo are sent as credentials (`memorybench.secrets.split_url`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.errors import UserError, did_you_mean, require_extra
from memorybench.registry import CHAT_PROVIDERS
from memorybench.secrets import clean_url

if TYPE_CHECKING:  # the openai SDK is imported when a client is made, not by config checks;
    # the call records (pydantic) when an endpoint is opened, not when plan checks a config;
    # OmegaConf names the nodes' type only (verify looks a provider up without it)
    from omegaconf import DictConfig

    from memorybench.llm.cache import ResponseCache
    from memorybench.llm.client import ChatClient
    from memorybench.llm.records import ModelIdentity


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
    # stripped where it is read: a key pasted from a file ends with a newline, which httpx
    # refuses in a header (and its error would quote the whole key)
    key = (os.environ.get(str(env)) or "").strip()
    if not key and node.provider == "openai":
        raise UserError(f"{env} is not set; export {env}=... for {role}={node.name}, or use {role}=local (no key needed)")
    return key or None


#: the reply room an embedded model is sized for when the request sends no max_tokens
UNLIMITED_REPLY_TOKENS = 1024


def validate_endpoint(group: str, node: DictConfig) -> None:
    """Checks every chat endpoint (reader, writer, judge) passes before any model call."""
    provider = CHAT_PROVIDERS.get(str(node.provider)) if node.provider in CHAT_PROVIDERS else None
    if provider is None:
        raise UserError(
            f"{group}.provider={node.provider!r} is unknown. {did_you_mean(str(node.provider), CHAT_PROVIDERS.names())}"
        )
    provider.check(group, node)
    if node.get("max_tokens") is not None and int(node.max_tokens) < 1:  # null: no limit sent (BEAM's judge)
        raise UserError(f"{group}.max_tokens={node.max_tokens} must be at least 1")
    if node.get("max_answer_chars") is not None and int(node.max_answer_chars) < 1:
        raise UserError(f"{group}.max_answer_chars={node.max_answer_chars} must be at least 1 (characters of an answer kept)")
    if float(node.temperature) < 0:
        raise UserError(f"{group}.temperature={node.temperature} must be >= 0")
    if int(node.max_retries) < 0:
        raise UserError(f"{group}.max_retries={node.max_retries} must be >= 0")
    if float(node.timeout_s) <= 0:
        raise UserError(f"{group}.timeout_s={node.timeout_s} must be > 0")
    if float(node.min_request_interval_s) < 0:
        raise UserError(f"{group}.min_request_interval_s={node.min_request_interval_s} must be >= 0")
    for bound in ("json_max_items", "json_max_chars"):
        if bound in node and int(node[bound]) < 1:
            raise UserError(f"{group}.{bound}={node[bound]} must be at least 1")


def check_endpoint_installed(group: str, node: DictConfig) -> None:
    """The packages `node`'s provider imports are installed (`check_installed`, where a provider
    has one), else one line naming the extra: called before a stage writes anything."""
    provider = CHAT_PROVIDERS.get(str(node.provider)) if node.provider in CHAT_PROVIDERS else None
    check = getattr(provider, "check_installed", None)
    if check is not None:
        check(group, node)


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
    """Yield a ready endpoint of the provider `node.provider` names; a local server lives
    exactly as long as the block."""
    from memorybench.llm.cache import ResponseCache

    cache = ResponseCache(cache_dir / "responses") if node.get("cache") else None
    settings = ClientSettings(
        timeout_s=float(node.timeout_s),
        max_retries=int(node.max_retries),
        retry_max_wait_s=float(node.retry_max_wait_s),
        min_request_interval_s=float(node.min_request_interval_s),
        cache=cache,
        prices=prices,
    )
    provider = CHAT_PROVIDERS.get(str(node.provider))
    with provider.open(
        node, role, settings, longest_prompt_tokens=longest_prompt_tokens, log_dir=log_dir, cache_dir=cache_dir
    ) as endpoint:
        yield endpoint


@dataclass(frozen=True)
class ClientSettings:
    """How a ChatClient behaves (not what it asks): the same for every provider."""

    timeout_s: float
    max_retries: int
    retry_max_wait_s: float
    min_request_interval_s: float
    cache: ResponseCache | None
    prices: Mapping[str, Any]

    def client(self, base_url: str, api_key: str | None) -> ChatClient:
        from memorybench.llm.client import ChatClient

        return ChatClient(
            base_url=base_url,
            api_key=api_key,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            retry_max_wait_s=self.retry_max_wait_s,
            min_request_interval_s=self.min_request_interval_s,
            cache=self.cache,
            prices=self.prices,
        )


class RemoteProvider:
    """`openai` and `openai_compatible`: a base URL, a model id, a key from the environment."""

    @staticmethod
    def check(group: str, node: DictConfig) -> None:
        if not node.get("base_url"):
            raise UserError(
                f"{group}.base_url is required for provider {node.provider}; add {group}.base_url=http://HOST:PORT/v1"
            )
        if not node.get("model"):
            raise UserError(f"{group}.model is required for provider {node.provider}; add {group}.model=MODEL_ID")

    @staticmethod
    @contextlib.contextmanager
    def open(node: DictConfig, role: str, settings: ClientSettings, **_: Any) -> Iterator[Endpoint]:
        from memorybench.llm.records import ModelIdentity

        client = settings.client(str(node.base_url), api_key_for(node, role))
        # the URL as recorded in run_meta.json: no userinfo, secret query values masked
        identity = ModelIdentity(
            role=role, provider=str(node.provider), requested=str(node.model), base_url=clean_url(str(node.base_url))
        )
        try:
            yield Endpoint(client, str(node.model), identity)
        finally:
            client.close()


class LocalProvider:
    """`local`: the embedded llama.cpp model, started here on 127.0.0.1 (no key, no network)."""

    @staticmethod
    def check(group: str, node: DictConfig) -> None:
        """A local model needs no URL or model id (`auto` picks one by the prompt's length)."""

    @staticmethod
    def check_installed(group: str, node: DictConfig) -> None:
        """llama-cpp-python's server and the GGUF package of the model `node` runs (every
        local model's when `auto` cannot tell yet) are installed: found, not imported (the
        server imports them in its own process), else one line naming the `local` extra."""
        from memorybench.llm.local.models import LOCAL_MODELS, static_choice

        chosen = static_choice(str(node.get("model") or "auto"))
        specs = [LOCAL_MODELS[chosen]] if chosen in LOCAL_MODELS else list(LOCAL_MODELS.values())
        packages = [spec.package.replace("-", "_") for spec in specs if spec.gguf_path is None]
        server = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
        remote = "judge=mem0" if group == "judge" else f"{group}=openai"  # a judge option names its protocol: mem0's is on OpenAI
        require_extra(
            "local",
            f"{group}=local needs the embedded model",
            f"use {remote} or {group}=openai_compatible",
            modules=(*server, *packages),
        )

    @staticmethod
    def resolved_model(node: Mapping[str, Any]) -> str | None:
        """The embedded model `node` runs, from the pinned models alone (nothing started):
        a named one, or what `auto` picks for every prompt it can run (None when the choice
        would depend on the prompt's length). For the run id, tables and Parquet."""
        from memorybench.llm.local.models import static_choice

        return static_choice(str(node.get("model") or "auto"))

    @staticmethod
    @contextlib.contextmanager
    def open(
        node: DictConfig,
        role: str,
        settings: ClientSettings,
        *,
        longest_prompt_tokens: int = 0,
        log_dir: Path | None = None,
        cache_dir: Path | None = None,
    ) -> Iterator[Endpoint]:
        LocalProvider.check_installed(role, node)  # one line naming the extra, not the server's traceback in its log
        # heavy imports only when the embedded model is used
        from memorybench.llm.local import LocalServer, choose_local_model

        # a judge that sends no limit (BEAM's) is sized for a reply of UNLIMITED_REPLY_TOKENS
        reply = UNLIMITED_REPLY_TOKENS if node.get("max_tokens") is None else int(node.max_tokens)
        spec, n_ctx, reason = choose_local_model(longest_prompt_tokens + reply, str(node.model or "auto"), role=role)
        if node.get("n_ctx"):
            n_ctx = int(node.n_ctx)
        weights = spec.path()
        log_path = (log_dir / f"llama_server_{role}.log") if log_dir else None
        # memory prefixes' KV states, shared by every run on this cache (never a pack's own autorater/cache)
        prefill_dir = cache_dir / "prefill" if cache_dir is not None and cache_dir.parts[-2:] != ("autorater", "cache") else None
        from memorybench.progress import format_eta, say

        say(f"loading the model {spec.name} for the {role} (n_ctx {n_ctx})")  # a minute on a small CPU: not a hang
        with LocalServer(spec, n_ctx, log_path=log_path, prefill_dir=prefill_dir) as server:
            say(f"model {spec.name} loaded in {format_eta(server.startup_s or 0)}")
            client = settings.client(server.base_url, None)
            from memorybench.llm.records import ModelIdentity

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


CHAT_PROVIDERS.add("openai", RemoteProvider)
CHAT_PROVIDERS.add("openai_compatible", RemoteProvider)
CHAT_PROVIDERS.add("local", LocalProvider)

